/**
 * What the agent handle of both modes shares (runtime.mjs in the page, remote.mjs over the
 * worker): the options its methods take, `agent.state`, `agent.asTool`, and the reference that
 * names the Python Agent behind a handle.
 *
 * A handle is named across the edge (to Python, through the worker) by `{aerixAgent: id}`, an
 * id chosen here when `ai.agent()` makes it and kept by Python with the Agent it built
 * (py/aerix/page_options.py, `agent_of`). So a handle's reference is known at once in both modes,
 * and a tool from `asTool` is plain data that crosses like any option.
 *
 * @module handle
 */

/** `agent.run(prompt, options)`'s options (Python's `Agent.run` keywords, camelCased); any other is refused. */
export const RUN_OPTIONS = Object.freeze(["signal", "runId", "idempotencyKey", "invoker", "attachments", "source", "concurrencyKey"]);
/** `agent.start(prompt, options)`'s options (Python's `Agent.start`). */
export const START_OPTIONS = Object.freeze(["runId", "idempotencyKey", "invoker", "concurrencyKey"]);
/** `agent.asTool(name, description, options)`'s options (Python's `Agent.as_tool`). */
export const AS_TOOL_OPTIONS = Object.freeze(["trust", "parallel"]);

/** `ai.mcpTools(url, options)`'s options (Python's `mcp_tools` keywords, camelCased; its `transport` is the page's fetch). */
export const MCP_OPTIONS = Object.freeze(["headers", "timeoutS", "prefix", "tools", "trust"]);

/** An Error as an aerix error from Python reads in JavaScript (runtime.mjs's `aerixError`). */
export function aerixError(kind, message, reason = null) {
  return Object.assign(new Error(message), { name: "AerixError", kind, reason });
}

/** `options` (an object, or nothing) when it holds only `known` names; else an AerixError "options". */
export function checked(what, options, known) {
  if (options === undefined || options === null) return {};
  if (typeof options !== "object" || Array.isArray(options)) throw aerixError("options", `${what} must be an object, got ${Array.isArray(options) ? "an array" : typeof options}`);
  const unknown = Object.keys(options).filter((k) => !known.includes(k)).sort();
  if (unknown.length) throw aerixError("options", `unknown ${what} ${JSON.stringify(unknown)}; known: ${JSON.stringify([...known].sort())}`);
  return options;
}

// -- references ----------------------------------------------------------------------------------

const PREFIX = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");
let made = 0;
const refs = new WeakMap(); // handle -> its id

/** A new agent id: unique in this realm, and unlike those of any other page or worker. */
export function newRef() {
  return `${PREFIX}-${++made}`;
}

/** `handle`, named `id` for `refOf`. */
export function named(handle, id) {
  refs.set(handle, id);
  return handle;
}

/**
 * `{aerixAgent: id}`: what names a handle made by `ai.agent()` to the Python side (which finds
 * the Agent with page_options.agent_of); anything else is an AerixError "options".
 */
export function refOf(handle) {
  const id = refs.get(handle);
  if (id === undefined) throw aerixError("options", "expected an agent made by ai.agent()");
  return { aerixAgent: id };
}

/**
 * `agent.asTool(name, description, { trust, parallel })`: a tool for another agent's `tools` (of
 * the same `ai`) that runs this agent on the task it is given, as Python's `as_tool`
 * (aerix.subagents): input `{task}`, result its final answer; `trust: { taint, guardWhenTainted }`
 * and `parallel: true` (its calls may run together with other parallel calls) as a JS tool's.
 */
export function agentTool(handle, name, description, options) {
  const { trust, parallel } = checked(`asTool(${JSON.stringify(name)}) option(s)`, options, AS_TOOL_OPTIONS);
  return { name, description, agent: refOf(handle), ...(trust === undefined ? {} : { trust }), ...(parallel === undefined ? {} : { parallel }) };
}

/**
 * `ai.agent(options)`'s options with `handoffs: [handle, ...]` (agents of the same `ai`, Python's
 * `Agent(handoffs=...)`, aerix.handoffs) as their references, which cross to Python in either mode.
 * @param {object} options
 */
export function withHandoffRefs(options) {
  if (!options || options.handoffs === undefined || options.handoffs === null) return options;
  if (!Array.isArray(options.handoffs)) throw aerixError("options", `handoffs must be an array of agents made by ai.agent(), got ${typeof options.handoffs}`);
  // a reference already (the worker gets the page's) crosses as it is
  const ref = (h) => (typeof h?.aerixAgent === "string" && !refs.has(h) ? { aerixAgent: h.aerixAgent } : refOf(h));
  return { ...options, handoffs: options.handoffs.map(ref) };
}

// -- agent.state ---------------------------------------------------------------------------------

/**
 * `agent.state` over `call(method, collection, args)` (one call into Python, page.py's
 * `state_call`): Python's `agent.state` (aerix.agent_state) method for method, each returning a
 * promise, values as plain objects. `collection(name)` answers at once; a name the agent has
 * no collection for rejects each of its calls.
 */
export function agentState(call) {
  const collection = (name) =>
    Object.freeze({
      /** Every document, in the order first upserted. */
      list: () => call("list", name, []),
      /** The document with this id, or undefined. */
      get: (id) => call("get", name, [id]),
      /** Add a document (checked by the collection's field map), or replace the one with its id; the document as kept. */
      upsert: (doc) => call("upsert", name, [doc]),
      /** Remove the document with this id; whether there was one. */
      remove: (id) => call("remove", name, [id]),
      /** The taint mark `{source, at}` of the document with this id, or undefined. */
      tainted: (id) => call("tainted", name, [id]),
    });
  return Object.freeze({
    /** Read the state from the store (each run does this at its start). */
    load: () => call("load", null, []),
    /** The value kept under `key`, or `fallback`; rejects until the state is loaded (`load()`, a run, a write). */
    get: (key, fallback) => call("get", null, [key, fallback]),
    /** Keep `value` (JSON) under `key`. */
    set: (key, value) => call("set", null, [key, value]),
    /** Forget the value kept under `key`. */
    delete: (key) => call("delete", null, [key]),
    /** The taint mark `{source, at}` of the value under `key`, or undefined. */
    tainted: (key) => call("tainted", null, [key]),
    collection,
  });
}

// -- ai.mcpTools ---------------------------------------------------------------------------------

/**
 * One tool `ai.mcpTools` listed, as plain data for an agent's `tools` (aerix.page_mcp keeps the tool under `mcp.aerixMcp`).
 * @typedef {{name: string, description: string, mcp: {aerixMcp: string}}} McpTool
 */
/**
 * What `ai.mcpTools` gives: an array of the tools, with `close()` (not enumerable, so the array
 * crosses and serializes as the plain data it holds), and `Symbol.asyncDispose` where the runtime
 * has it (`await using`).
 * @typedef {McpTool[] & {close: () => Promise<void>}} McpTools
 */

/**
 * `ai.mcpTools(url, { headers, timeoutS, prefix, tools, trust })` over `call(url, options)` (one
 * call into Python, aerix.page_mcp's `mcp_tools_js`, in this realm or the worker, resolving to
 * `{tools, close}`): the tools of the MCP server at `url` as plain data, `[{name, description,
 * mcp: {aerixMcp: id}}]`, for any agent's `tools` of the same `ai`, with `close()` (see
 * `closable`). `url` is resolved against the page, so `"/mcp/docs"` (the proxy's path,
 * `python -m aerix serve --proxy-mcp docs=URL`) means the page's origin in both modes.
 * @param {(url: string, options: object) => Promise<{tools: McpTool[], close: () => Promise<unknown>}>} call
 * @returns {(url: string, options?: object) => Promise<McpTools>}
 */
export function mcpToolsOver(call) {
  return async (url, options) => {
    if (typeof url !== "string" || !url) throw aerixError("options", `mcpTools(url): url must be a non-empty string, got ${typeof url}`);
    const opts = checked(`mcpTools(${JSON.stringify(url)}) option(s)`, options, MCP_OPTIONS);
    const { tools, close } = await call(new URL(url, globalThis.location?.href).href, { ...opts });
    return closable(tools, close);
  };
}

/**
 * `tools` with `close()`: it ends the MCP session they share (`close`, Python's
 * `McpTools.aclose`: one DELETE with its `Mcp-Session-Id`) once, however often it is called
 * (each call the same promise); the tools stay, and a call of one is then the error result naming
 * the ended session. Not enumerable: `[...tools]`, `JSON.stringify` and the worker see the tools only.
 * @param {McpTool[]} tools
 * @param {() => Promise<unknown>} close
 * @returns {McpTools}
 */
export function closable(tools, close) {
  /** @type {Promise<void>|null} */
  let ended = null;
  const end = () => (ended ??= Promise.resolve().then(() => close()).then(() => undefined));
  Object.defineProperty(tools, "close", { value: end });
  const dispose = /** @type {any} */ (Symbol).asyncDispose;
  if (dispose) Object.defineProperty(tools, dispose, { value: end });
  return /** @type {McpTools} */ (tools);
}
