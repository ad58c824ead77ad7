/**
 * The page's side of the worker runtime (`boot({ worker: true })`): the same objects in-page mode
 * gives (runtime.mjs), each method a message to the worker (worker.mjs) through rpc.mjs.
 *
 * Differences a page may notice, all forced by the thread boundary:
 * - `agent()` returns at once and the worker builds the agent meanwhile: a bad option rejects
 *   `agent.ready` and every call, not `agent()` itself; `system` and `schema` are there once
 *   `ready` has resolved (any run awaits it).
 * - `messages`, `system` and `schema` are the worker's as of the last call or run that ended (after
 *   a handoff, the system message and schema of the agent the conversation went to).
 * - `pyodide` and `agent.python` are null (Python lives in the worker); `runPython(code)` runs
 *   code there and gives its value as plain JavaScript. `engine.chat` streams from the worker's
 *   engine; `engine.wllama` is not here.
 *
 * @module remote
 */

import { RUN_OPTIONS, START_OPTIONS, agentState, agentTool, checked, mcpToolsOver, named, newRef, withHandoffRefs } from "./handle.mjs";
import { connect } from "./rpc.mjs";
import { ending } from "./runtime.mjs";

/**
 * Start the worker and boot it; resolves like runtime.mjs's `bootHere`.
 * @param {URL} root
 * @param {import("./runtime.mjs").BootOptions} options
 */
export async function bootWorker(root, { model, onProgress = () => {}, engine: engineOptions = {}, ...options }) {
  const started = performance.now();
  /** @type {Record<string, number>} */
  const timings = {};
  const worker = new Worker(new URL("worker.mjs", root), { type: "module", name: "aerix" });
  const peer = connect(worker);
  const died = new Promise((_, reject) => {
    worker.addEventListener("error", (e) => {
      const error = new Error(`the aerix worker failed: ${e.message || "it could not start (see the console)"}`);
      peer.close(error);
      reject(error);
    });
  });
  died.catch(() => {});
  // `recorder: true` keeps the worker engine's requests here, in `engine.requests`
  const requests = engineOptions.recorder === true ? [] : undefined;
  const info = {};
  const booted = await Promise.race([
    died,
    peer.keep("boot", {
      ...options,
      model: typeof model === "string" ? new URL(model, location.href).href : model,
      base: root.href,
      engine: { ...engineOptions, ...(requests ? { recorder: { push: (request) => void requests.push(request) } } : {}) },
      // the worker's phases, timed here, from this call
      onProgress: (p) => {
        if (p.ms !== undefined) p = { ...p, ms: (timings[p.phase] = Math.round(performance.now() - started)) };
        onProgress(p);
      },
      onInfo: (settled) => Object.assign(info, settled),
    }),
  ]);
  Object.assign(info, booted.info ?? {});
  timings.ready = Math.round(performance.now() - started);
  globalThis.addEventListener?.("pagehide", () => peer.call("interrupt").catch(() => {}));
  return {
    pyodide: null,
    worker: true,
    timings,
    engine: booted.server ?? { info, requests, chat: (messages, options) => peer.stream("engineChat", messages, options) },
    agent: (options = {}) => remoteAgent(peer, withHandoffRefs(options)),
    runPython: (code) => peer.call("runPython", String(code)),
    // `keep`: a trust flag given as a function is called for as long as the tools live; their
    // `close` comes back as a function the worker keeps (worker.mjs's `mcpTools`)
    mcpTools: mcpToolsOver((url, options) => peer.keep("mcpTools", url, options)),
    /** Stop the worker (and the engine with it); this object is of no use afterwards. */
    terminate() {
      peer.close(new Error("the aerix worker was terminated"));
      worker.terminate();
    },
  };
}

/**
 * The agent as the page sees it in worker mode: each method a message to the worker's agent
 * (the one runtime.mjs's `wrapAgent` makes there), under the id this side chose for it
 * (handle.mjs). Exported for tests/js, which build one over a fake peer.
 */
export function remoteAgent(peer, options, ref = newRef()) {
  const state = { id: null, system: undefined, schema: undefined, messages: [] };
  const ready = peer.keep("agent", options, ref).then((made) => void Object.assign(state, made));
  ready.catch(() => {}); // the rejection is the first call's (or `ready`'s) to report
  const call = async (method, ...args) => {
    await ready;
    const { value, ...now } = await peer.call("agentCall", state.id, method, args);
    Object.assign(state, now); // messages, system, schema (worker.mjs's `current`)
    return value;
  };
  async function* stream(method, ...args) {
    await ready;
    const events = peer.stream("agentStream", state.id, method, args);
    let step;
    try {
      while (!(step = await events.next()).done) yield step.value;
      Object.assign(state, step.value); // messages, system, schema
    } finally {
      if (!step?.done) await events.return();
    }
  }
  const handle = {
    ready,
    run: (/** @type {string} */ prompt, /** @type {import("./runtime.mjs").RunOptions} */ options) => stream("run", prompt, { ...checked("run option(s)", options, RUN_OPTIONS) }),
    async ask(prompt, opts = {}) {
      const all = [];
      for await (const ev of this.run(prompt, opts)) all.push(ev);
      return ending(all);
    },
    start: (/** @type {string} */ prompt, /** @type {object} */ options) => call("start", prompt, { ...checked("start option(s)", options, START_OPTIONS) }),
    getRun: (/** @type {string} */ runId) => call("getRun", runId),
    resume: (/** @type {string} */ runId, /** @type {{signal?: AbortSignal}} */ { signal } = {}) => stream("resume", runId, { signal }),
    approve: (/** @type {string} */ runId, /** @type {string} */ approvalId, /** @type {boolean} */ approved, /** @type {import("./runtime.mjs").ApproveOptions} */ { reason, signal, approver } = {}) =>
      stream("approve", runId, approvalId, approved, { reason, signal, approver }),
    artifact: (id) => call("artifact", id),
    artifacts: (runId) => call("artifacts", runId),
    choose: (question, options, opts = {}) => call("choose", question, options, opts),
    prefill: (opts = {}) => call("prefill", opts),
    drain: () => call("drain"),
    runs: () => call("runs"),
    recover: () => call("recover"),
    reset: () => call("reset"),
    load: (messages) => call("load", messages),
    reopen: () => call("reopen"),
    transcript: () => call("transcript"),
    traces: () => call("traces"),
    get messages() {
      return state.messages;
    },
    get system() {
      return state.system;
    },
    get schema() {
      return state.schema;
    },
    state: agentState(async (method, collection, args) => {
      await ready;
      return peer.call("agentState", state.id, method, collection, args);
    }),
    asTool: (name, description, opts) => agentTool(handle, name, description, opts),
    python: null,
  };
  return named(handle, ref);
}
