/**
 * The aerix runtime in this realm, the page or the worker (worker.mjs): Python (Pyodide + the
 * aerix wheel) and the engine booted in parallel, from the site's origin, and the agents built on
 * them as JavaScript sees them. aerix.mjs documents the API; this module is what runs it.
 *
 * @module runtime
 */

import { loadEngine } from "./engine.mjs";
import { RUN_OPTIONS, START_OPTIONS, agentState, agentTool, checked, mcpToolsOver, named, newRef, withHandoffRefs } from "./handle.mjs";
import { openStore } from "./store.mjs";

const HERE = new URL("./", import.meta.url);

/**
 * The options of aerix.mjs's `boot` that a realm takes (`worker` decided already).
 * @typedef {object} BootOptions
 * @property {string|Blob} [model]
 * @property {boolean} [cache]
 * @property {string} [cacheKey]
 * @property {string|URL} [base]
 * @property {Record<string, any>} [engine] `loadEngine`'s options, or an OpenAI-compatible server's `{baseUrl, model, apiKey, params}`
 * @property {(p: {phase: string, loaded?: number, total?: number, ms?: number, cached?: boolean}) => void} [onProgress]
 */

/**
 * How an agent's runs are started and answered (the agent below documents each).
 * @typedef {{signal?: AbortSignal, runId?: string, idempotencyKey?: string, invoker?: object, attachments?: any[], source?: string, concurrencyKey?: string}} RunOptions
 * @typedef {{runId?: string, idempotencyKey?: string, invoker?: object, concurrencyKey?: string}} StartOptions
 * @typedef {{reason?: string, signal?: AbortSignal, approver?: object}} ApproveOptions
 * @typedef {{signal?: AbortSignal, topLogprobs?: number}} ChooseOptions
 */

/**
 * Boot Python and the engine in parallel, here (the options of aerix.mjs's `boot`, without
 * `worker`; URLs already resolved against the page when the worker runs this).
 * @param {BootOptions} [options]
 */
export async function bootHere({ model, cache = true, cacheKey, base = HERE, engine: engineOptions = {}, onProgress = () => {} } = {}) {
  const server = engineOptions?.baseUrl ? engineOptions : null;
  if (!server && (model === undefined || model === null)) throw new Error("boot({ model }) needs a model: a GGUF URL or a Blob");
  const root = new URL(base, location.href);
  const started = performance.now();
  /** @type {Record<string, number>} */
  const timings = {};
  const time = (/** @type {string} */ phase) => {
    const ms = Math.round(performance.now() - started);
    timings[phase] = ms;
    onProgress({ phase, ms });
  };
  const python = loadPython(root, time);
  const engine = (
    server
      ? openServer(server)
      : loadEngine({
          wllamaBase: new URL("wllama/", root).href,
          manifest: new URL("models/models.json", root).href,
          ...engineOptions,
          model: typeof model === "string" ? new URL(model, location.href).href : model,
          cache,
          ...(cacheKey === undefined ? {} : { cacheKey }),
          onProgress: (p) => onProgress(p),
        })
  ).then((e) => (time("engine"), e));
  // Both must succeed; if either fails, report that failure rather than hang on the other.
  const [pyodide, eng] = await Promise.all([python, engine]);
  // Values cross to Python as they are: aerix.page converts them, once, on its side.
  const page = pyodide.pyimport("aerix.page");
  // a server's options go to Python as given (page.py's SERVER_OPTIONS: any other is refused)
  const jsModel = server ? readable(page.server_model)({ ...server, baseUrl: eng.baseUrl }) : pyodide.pyimport("aerix.engines.js").JsModel(eng);
  pyodide.registerJsModule("aerix_page", { engine: eng, openStore, ...(server ? { server: jsModel } : {}) });
  time("ready");
  return {
    pyodide,
    engine: eng,
    timings,
    worker: false,
    /**
     * Build an agent; the options are those of `aerix.Agent`, in camelCase where they differ.
     * (`ref`: the id its handle goes by, handle.mjs; the worker passes the page's.)
     */
    agent: (options = {}, ref = newRef()) =>
      wrapAgent(readable(page.create_agent)(jsModel, withContext(withModuleTools(withHandoffRefs(options)), eng), ref), !!(options.durable || options.store), ref),
    /** Run Python code in this runtime; its value as plain JavaScript (dicts as objects). */
    runPython: async (code) => plain(await pyodide.runPythonAsync(String(code))),
    /** An MCP server's tools for an agent's `tools`, with `close()` (handle.mjs's `mcpToolsOver`; Python's `mcp_tools` runs here). */
    mcpTools: mcpToolsOver(async (url, options) => {
      const mcp = pyodide.pyimport("aerix.page_mcp");
      const { tools, session } = await readable(mcp.mcp_tools_js)(url, options);
      return { tools, close: () => readable(mcp.mcp_close_js)(session) };
    }),
  };
}

/**
 * `limits.contextTokens` defaults to the in-page engine's context (`n_ctx`), so a long chat is
 * compacted before it overflows (aerix.compaction); `contextTokens: null` turns that off.
 */
function withContext(options, engine) {
  const nCtx = engine?.info?.n_ctx;
  if (!(nCtx > 0) || options?.limits?.contextTokens !== undefined) return options;
  return { ...options, limits: { ...(options.limits ?? {}), contextTokens: nCtx } };
}

/** A Python value as plain JavaScript, the proxy released. */
function plain(value) {
  if (typeof value?.toJs !== "function") return value;
  try {
    return value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
  } finally {
    value.destroy?.();
  }
}

/**
 * Tools given as `{module, export}` instead of `run`: the module is imported where the runtime
 * runs (in the worker, in worker mode), on the tool's first call, and its export (the tool's
 * name by default) is the tool's `run`.
 */
function withModuleTools(options) {
  if (!Array.isArray(options?.tools) || !options.tools.some((t) => t?.module !== undefined)) return options;
  const tools = options.tools.map((spec) => {
    if (spec?.module === undefined) return spec;
    if (spec.run !== undefined) throw Object.assign(new Error(`tool ${JSON.stringify(spec.name)}: give run or module, not both`), { name: "AerixError", kind: "options", reason: null });
    const url = new URL(String(spec.module), location.href).href;
    const name = spec.export ?? spec.name;
    let found = null;
    const run = async (input, ctx) => {
      found ??= import(url).then((m) => {
        if (typeof m[name] !== "function") throw new Error(`tool ${JSON.stringify(spec.name)}: ${url} exports no function ${JSON.stringify(name)}`);
        return m[name];
      });
      return (await found)(input, ctx);
    };
    const { module: _module, export: _export, ...rest } = spec;
    return { ...rest, run };
  });
  return { ...options, tools };
}

/**
 * An OpenAI-compatible server in place of the engine: reachable from this page (CORS
 * included) and what it serves, from `GET {baseUrl}/models`. The key is not kept here.
 * @param {Record<string, any>} server boot's `engine` option: `{baseUrl, model, apiKey}`
 */
async function openServer({ baseUrl, model, apiKey, headers }) {
  if (typeof model !== "string" || !model) {
    throw new Error("boot({ engine: { baseUrl, model } }) needs the name of a model the server serves");
  }
  const url = new URL(baseUrl, location.href).href.replace(/\/+$/, "");
  let response;
  try {
    response = await fetch(`${url}/models`, { headers: { ...(headers ?? {}), ...(apiKey ? { Authorization: `Bearer ${apiKey}` } : {}) } });
  } catch (error) {
    throw new Error(`could not reach the server at ${url} (${error.message}): is it running, and does it allow this page's origin (CORS)?`);
  }
  if (!response.ok) throw new Error(`the server at ${url} answered ${response.status} ${response.statusText} to GET /models`);
  const listed = await response.json().catch(() => ({}));
  return { kind: "openai", baseUrl: url, model, models: (listed.data ?? []).map((m) => m.id) };
}

async function loadPython(root, time) {
  const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", root).href);
  const pyodide = await loadPyodide({
    indexURL: new URL("pyodide/", root).href,
    lockFileURL: new URL("pyodide-lock.json", root).href,
    packageBaseUrl: root.href,
  });
  time("python");
  const loaded = await pyodide.loadPackage(["aerix"], { messageCallback: () => {}, errorCallback: (m) => console.warn(m) });
  // loadPackage does not throw when a wheel fails (a bad sha256 is only logged): check it.
  if (!loaded.some((p) => p.name === "aerix")) {
    throw new Error(`could not load the aerix wheel from ${root.href} (loaded: ${loaded.map((p) => p.name).join(", ") || "nothing"})`);
  }
  time("packages");
  // pydantic's first import costs about a second; pay it now, while the engine loads.
  await pyodide.runPythonAsync("import aerix, aerix.page, aerix.engines.js, pydantic, jinja2");
  time("imports");
  return pyodide;
}

// Durable agents of this page, told when it goes away so their running run is marked
// interrupted (best effort: the next boot's recover() catches what this misses).
const durableAgents = new Set();
/** Mark the running runs of this realm's durable agents interrupted: the page is going away. */
export function interruptDurable() {
  for (const py of durableAgents) py.interrupt();
}
globalThis.addEventListener?.("pagehide", interruptDurable);

/**
 * An aerix error from Python as JavaScript sees it: an Error named "AerixError" with `kind`
 * ("options", "busy", "store", ...), `reason` where it has one, and the message alone. Pyodide
 * hands over a PythonError whose message is the whole traceback; its last line is marked
 * `[aerix:<kind>[:<reason>]] <message>` (py/aerix/_js.py). Other errors pass unchanged.
 */
function aerixError(e) {
  const lines = String(e?.message ?? "").split("\n").reverse();
  for (const line of lines) {
    const found = /\[aerix:([a-z]+)(?::([A-Za-z0-9_]+))?\] (.*)/.exec(line);
    if (found) return Object.assign(new Error(found[3]), { name: "AerixError", kind: found[1], reason: found[2] ?? null });
  }
  return e;
}

/** `fn`, with an aerix error it throws (or its promise rejects with) made readable. */
function readable(fn) {
  return (...args) => {
    try {
      const value = fn(...args);
      return typeof value?.then === "function" ? value.then(undefined, (e) => Promise.reject(aerixError(e))) : value;
    } catch (e) {
      throw aerixError(e);
    }
  };
}

/** A Python async iterator of events as a JS one; leaving the loop early closes the Python side. */
async function* events(stream) {
  let done = false;
  try {
    for await (const ev of stream) yield ev;
    done = true;
  } catch (e) {
    throw aerixError(e);
  } finally {
    if (!done) await stream.return?.();
    stream.destroy?.();
  }
}

/** What `ask` gives for a run's events: the answer, or an AerixEndError naming the ending. */
export function ending(events) {
  const last = events[events.length - 1];
  if (last.type === "final") return { text: last.text, thought: last.thought ?? null, output: last.output ?? null, events };
  const why = {
    waiting: () => `the run waits for approval ${last.approvalId}: ${last.title}`,
    interrupted: () => `the run was interrupted: ${last.message}`,
  }[last.type]?.() ?? `the run ended without an answer (${last.reason}): ${last.message}`;
  const error = new Error(why);
  error.name = "AerixEndError";
  const reason = last.type === "waiting" || last.type === "interrupted" ? last.type : last.reason;
  throw Object.assign(error, { reason, events });
}

/**
 * An agent handle's durable-run methods (agents made with `durable: true` or a `store`), over
 * the Python agent `py` (wrapAgent's readable proxy).
 * @param {any} py
 */
function durableMethods(py) {
  return {
    /** Create a run (or find the one with this idempotency key); `resume` runs it. Options: `{ runId, idempotencyKey, invoker, concurrencyKey }`. */
    start(/** @type {string} */ prompt, /** @type {StartOptions} */ options) {
      const { runId, idempotencyKey, invoker, concurrencyKey } = checked("start option(s)", options, START_OPTIONS);
      return py.start(prompt, runId ?? null, idempotencyKey ?? null, invoker ?? null, concurrencyKey ?? null);
    },
    /** One run of the store (as `runs()` lists them), or null. */
    getRun: (/** @type {string} */ runId) => py.get_run(runId),
    /** Continue a run from its last checkpoint; a run already ended gives its ending. */
    resume: (/** @type {string} */ runId, /** @type {{signal?: AbortSignal}} */ { signal } = {}) => events(py.resume(runId, signal ?? null)),
    /** Answer a waiting run's approval (`approver`: who answers) and continue it. */
    approve: (/** @type {string} */ runId, /** @type {string} */ approvalId, /** @type {boolean} */ approved, /** @type {ApproveOptions} */ { reason, signal, approver } = {}) =>
      events(py.approve(runId, approvalId, approved, reason ?? null, signal ?? null, approver ?? null)),
    /** Take no new run; the running one stops at its next checkpoint; resolves when none runs. */
    drain: () => py.drain(),
    /** Every run in the store, oldest first: `{id, prompt, status, approval, ending, ...}`. */
    runs: () => py.runs(),
    /** After a reload: runs left running are marked interrupted; returns those that can be resumed. */
    recover: () => py.recover(),
  };
}

/**
 * The agent as JavaScript sees it, over the Python `PageAgent` (page.py); `ref` the id it goes by
 * (handle.mjs). Exported for tests/js, which build one over a fake.
 */
export function wrapAgent(agent, durable, ref) {
  if (durable) durableAgents.add(agent);
  // every call into Python gives an aerix error as an Error named "AerixError" with its `kind`
  const py = new Proxy(agent, { get: (target, name) => (typeof target[name] === "function" ? readable((...args) => target[name](...args)) : target[name]) });
  const handle = {
    /** Resolves when the agent is built (at once here; in worker mode when the worker has built it). */
    ready: Promise.resolve(),
    /**
     * An async iterator of events; stop it with `{ signal }` (an AbortSignal) or by breaking out.
     * `{ invoker: {id, kind, name, permissions} }` says who starts it (tools see `ctx.invoker`).
     * `{ attachments: [File | Blob | {data, mediaType, filename}] }`: files kept as the run's first
     * artifacts (an `artifact` event each) and listed to the model after the prompt.
     * A durable agent also takes `{ runId, idempotencyKey, concurrencyKey }` (runs that share a
     * `concurrencyKey` execute one at a time; another is refused "busy"). Any other option is refused.
     */
    run(/** @type {string} */ prompt, /** @type {RunOptions} */ options) {
      const { signal, runId, idempotencyKey, invoker, attachments, source, concurrencyKey } = checked("run option(s)", options, RUN_OPTIONS);
      return events(py.run(prompt, signal ?? null, runId ?? null, idempotencyKey ?? null, invoker ?? null, attachments ?? null, source ?? null, concurrencyKey ?? null));
    },
    /** Run to the ending: `{ text, thought, events }` on a final; otherwise throws with `reason` and `events`. */
    async ask(prompt, options = {}) {
      const all = [];
      for await (const ev of this.run(prompt, options)) all.push(ev);
      return ending(all);
    },
    ...durableMethods(py),
    /**
     * An artifact of any of this agent's runs: `{ meta: {id, runId, mediaType, filename, size, sha256},
     * blob }`, the Blob of its bytes (`URL.createObjectURL(blob)` makes a download link). A missing
     * id rejects with an Error named "AerixError", `reason` "artifact_not_found".
     */
    async artifact(id) {
      const found = await py.artifact(id);
      if (found == null) {
        throw Object.assign(new Error(`artifact_not_found: no artifact ${JSON.stringify(id)}`), { name: "AerixError", kind: "options", reason: "artifact_not_found" });
      }
      return { meta: found.meta, blob: new Blob([found.data], { type: found.meta.mediaType }) };
    },
    /** `{option: score}`: each option's probability as the answer, summing to 1 (docs/agents.md, "Routing by scores"). */
    choose: (/** @type {string} */ question, /** @type {string[]} */ options, /** @type {ChooseOptions} */ { signal, topLogprobs } = {}) => py.choose(question, options, signal ?? null, topLogprobs ?? null),
    /** The engine reads the system message (and turns kept) now: `{promptTokens, cachedTokens, completionTokens}` or null (docs/page.md). */
    prefill: (/** @type {{signal?: AbortSignal}} */ { signal } = {}) => py.prefill(signal ?? null),
    /** The artifacts of one run, in put order (its attachments first). */
    artifacts: (runId) => py.artifacts(runId),
    reset: () => py.reset(),
    /**
     * Restore an exported conversation (`messages` as `agent.messages` gives them); a bad one
     * rejects with an AerixError of kind "options" naming what is wrong.
     */
    load: (messages) => py.load(messages),
    /** With `conversationId` and a store: the kept conversation, back after a reload (its messages). */
    reopen: () => py.reopen(),
    /** The conversation as a person reads it: `[{role, text, output?}]`, prompts and answers only. */
    transcript: () => py.transcript(),
    /** With `tracer: { keep: true }`: its runs' traces, oldest first, each a list of plain spans (docs/traces.md). */
    traces: () => py.traces(),
    get messages() {
      return py.messages();
    },
    get system() {
      return py.system();
    },
    get schema() {
      return py.schema();
    },
    /**
     * What this agent keeps between runs (Python's `agent.state`, aerix.agent_state): `get(key,
     * fallback)`, `set`, `delete`, `load`, `tainted`, and `collection(name)`'s `list`, `get`,
     * `upsert`, `remove`, `tainted`; each returns a promise (handle.mjs).
     */
    state: agentState((method, collection, args) => py.state(method, collection, args)),
    /** This agent as a tool for another agent of the same `ai` (Python's `as_tool`): `{ trust, parallel }`. */
    asTool: (name, description, options) => agentTool(handle, name, description, options),
    /** The Python agent (a PyProxy), for code that wants to reach into Python. */
    python: agent,
  };
  return named(handle, ref);
}
