// A fake of what the agent handles stand on, for Node: Python's PageAgent (py/aerix/page.py) as
// a JS object that records each call, and a boot of the worker's handlers (web/worker.mjs) that
// builds agents over it with runtime.mjs's own wrapAgent. So the handles of both modes
// (runtime.mjs's wrapAgent, remote.mjs's remoteAgent over a real MessageChannel) run their own
// code down to the Python call, which is recorded here.
import { mcpToolsOver } from "../../web/handle.mjs";
import { connect } from "../../web/rpc.mjs";
import { remoteAgent } from "../../web/remote.mjs";
import { wrapAgent } from "../../web/runtime.mjs";
import { workerHandlers } from "../../web/worker.mjs";

/** A PageAgent: every method records `[name, ...args]` in `calls`; `state` echoes what it got. */
export function fakePageAgent(calls = []) {
  const record = (name) => (...args) => (calls.push([name, ...args]), null);
  async function* events(name, args) {
    calls.push([name, ...args]);
    yield { type: "final", text: "ok", thought: null };
  }
  return {
    calls,
    run: (...args) => events("run", args),
    resume: (...args) => events("resume", args),
    approve: (...args) => events("approve", args),
    start: async (...args) => (calls.push(["start", ...args]), { id: args[1] ?? "run_1", status: "queued" }),
    get_run: async (...args) => (calls.push(["get_run", ...args]), null),
    state: async (method, collection, args) => (calls.push(["state", method, collection, args]), { method, collection, args }),
    ...Object.fromEntries(["choose", "prefill", "artifact", "artifacts", "drain", "runs", "recover", "interrupt", "reset", "load", "reopen", "transcript"].map((n) => [n, record(n)])),
    // `tracer: {keep: true}`'s traces, as page.py's span_view shows them
    traces: () => (calls.push(["traces"]), [[{ name: "invoke_agent a", spanId: "1", parentId: null, startMs: 1.5, durationMs: 2 }]]),
    messages: () => [],
    // a run hands the conversation over (aerix.handoffs): the system message and schema change
    system: () => (calls.some((c) => c[0] === "run") ? "the target's system" : "system"),
    schema: () => (calls.some((c) => c[0] === "run") ? { title: "the target's schema" } : null),
  };
}

/** An agent handle of in-page mode over a fake PageAgent; `calls` records what reached "Python". */
export function pageHandle(calls = [], ref) {
  return wrapAgent(fakePageAgent(calls), false, ref);
}

/**
 * An agent handle of worker mode: remote.mjs's, over a MessageChannel to worker.mjs's handlers,
 * whose agents are page handles over fake PageAgents; `calls` records what reached "Python".
 */
export async function workerSide(calls = []) {
  const { port1, port2 } = new MessageChannel();
  const fakeBoot = async () => ({
    engine: { info: null },
    timings: {},
    agent: (options, ref) => (calls.push(["agent", options, ref]), pageHandle(calls, ref)),
    // the worker's ai.mcpTools (runtime.mjs's) over a fake of Python's page_mcp: mcp_tools_js lists one
    // tool, what it got recorded (a trust function kept callable); mcp_close_js records each close
    mcpTools: mcpToolsOver(async (url, options) => {
      calls.push(["mcpTools", url, options]);
      return { tools: [{ name: "docs_search", description: "Search the docs.", mcp: { aerixMcp: "m1" } }], close: async () => void calls.push(["mcpClose", "s1"]) };
    }),
  });
  connect(port2, workerHandlers(fakeBoot));
  const peer = connect(port1);
  await peer.call("boot", {});
  return {
    agent: (options = {}) => remoteAgent(peer, options),
    mcpTools: mcpToolsOver((url, options) => peer.keep("mcpTools", url, options)), // as remote.mjs's bootWorker
    close: () => (port1.close(), port2.close()),
  };
}
