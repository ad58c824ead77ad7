/**
 * The worker runtime: Python, the aerix wheel and the engine's client in a module Web Worker,
 * so the page's main thread only draws. aerix.mjs starts it for `boot({ worker: true })` and
 * speaks to it through rpc.mjs; what the page gets looks the same as in-page mode (remote.mjs).
 *
 * Handlers, called by the page: `boot`, `agent`, `agentCall`, `agentStream`, `agentState`,
 * `engineChat`, `runPython`, `mcpTools`, `interrupt`. A JS tool, hook or channel written in the page arrives as a function
 * reference, so calling it runs it in the page (where the DOM is); a tool given as `{module}`
 * runs here.
 *
 * @module worker
 */

import { connect } from "./rpc.mjs";
import { bootHere, interruptDurable } from "./runtime.mjs";

// methods of the agent facade the page may call, and which of them stream events
const CALLS = new Set(["start", "getRun", "artifact", "artifacts", "choose", "prefill", "drain", "runs", "recover", "reset", "load", "reopen", "transcript", "traces", "interrupt"]);
const STREAMS = new Set(["run", "resume", "approve"]);

/**
 * What the page keeps of a worker's agent, sent after each call and run: its messages, and the
 * system message and turn schema of the agent the conversation is with (a handoff changes them).
 * @param {any} agent
 */
function current(agent) {
  return { messages: agent.messages, system: agent.system, schema: agent.schema };
}

/**
 * The handlers the page calls, over `boot` (runtime.mjs's `bootHere`; tests/js give a fake one
 * that builds agents over fakes of Python's).
 */
export function workerHandlers(boot = bootHere) {
  let ai = null;
  const agents = new Map(); // id -> the agent as runtime.mjs wraps it
  let nextAgent = 1;

  const agentOf = (id) => {
    const agent = agents.get(id);
    if (!agent) throw new Error(`no agent ${id} in the worker`);
    return agent;
  };
  const built = () => {
    if (!ai) throw new Error("the aerix worker is not booted yet");
    return ai;
  };

  return {
    async boot(options) {
      if (ai) throw new Error("the aerix worker is booted already");
      ai = await boot(options);
      const info = ai.engine.info;
      // the engine picks its prompt mode in the background: tell the page when it has
      ai.engine.settled?.then((settled) => options.onInfo?.({ ...settled }));
      // on an OpenAI-compatible server the engine is what openServer found: plain data
      return { timings: ai.timings, info: info ? { ...info } : null, server: ai.engine.kind === "openai" ? { ...ai.engine } : null };
    },

    /** Build an agent under the id the page chose for it (`ref`, handle.mjs). */
    agent(options, ref) {
      const agent = built().agent(options, ref);
      const id = nextAgent++;
      agents.set(id, agent);
      return { id, ...current(agent) };
    },

    /** One of CALLS; the agent's messages, system message and schema come back with the value. */
    async agentCall(id, method, args) {
      if (!CALLS.has(method)) throw new Error(`agent has no method ${JSON.stringify(method)}`);
      const agent = agentOf(id);
      const value = await agent[method](...args);
      return { value, ...current(agent) };
    },

    /** One of STREAMS: its events, then the agent's messages, system message and schema as its return value. */
    async *agentStream(id, method, args) {
      if (!STREAMS.has(method)) throw new Error(`agent has no method ${JSON.stringify(method)}`);
      const agent = agentOf(id);
      yield* agent[method](...args);
      return current(agent);
    },

    /** `agent.state.<method>(...args)`, or of `collection(name)`: handle.mjs's `agentState`, here. */
    agentState(id, method, collection, args) {
      const state = agentOf(id).state;
      const target = collection === null ? state : state.collection(collection);
      if (method === "collection" || !Object.hasOwn(target, method) || typeof target[method] !== "function") {
        throw new Error(`agent.state has no method ${JSON.stringify(method)}`);
      }
      return target[method](...args);
    },

    engineChat(messages, options) {
      return built().engine.chat(messages, options);
    },

    runPython(code) {
      return built().runPython(code);
    },

    /** `ai.mcpTools(url, options)` (the URL resolved by the page): the tools as plain data, and their `close` (rpc keeps it callable). */
    async mcpTools(url, options) {
      const tools = await built().mcpTools(url, options);
      return { tools: [...tools], close: tools.close };
    },

    interrupt() {
      interruptDurable();
    },
  };
}

// in a worker (not when tests/js import this module)
const WorkerScope = /** @type {any} */ (globalThis).WorkerGlobalScope;
if (WorkerScope !== undefined && self instanceof WorkerScope) connect(self, workerHandlers());
