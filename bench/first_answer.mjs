/**
 * P10's page: what a person waits for before the first word of an answer (bench/first_answer.py
 * opens it in a fresh browser context per load, so nothing of an earlier load is cached).
 *
 *   /bench/first_answer.html?model=/models/smollm2-q8_0.gguf&worker=1&threads=2&task=...&task=...
 *     [&nBatch=N&nUbatch=N&cacheTypeK=T&cacheTypeV=T&flashAttn=0|1&system=compact&instructions=last&prefill=1]
 *
 * It boots aerix (page mode, or `worker=1`: boot({worker: true})) on `model` with `threads` engine
 * threads, then builds the demo's agent (web/demo-tools.mjs: its instructions and five tools) and
 * sends the first `task` ("cold": the engine has seen nothing yet), then builds a second agent with
 * the same instructions and tools and sends the second `task` ("warm": the system message is in the
 * engine's cache), then a third agent with the same tools and other instructions (OTHER, the same
 * request in other words) on the first `task` ("other": with the default turn format it shares only
 * `<|im_start|>system\n` with the cache; with `instructions=last`, turnFormat.instructions "last", all
 * of the system message before its instructions). With `prefill=1` the cold agent calls
 * `agent.prefill()` and awaits it before its send (as a page does while the person types):
 * `prefillMs` and `prefill` (its usage) beside its times. Per agent, in ms from its send: the first `text` event (the engine's first
 * token), the first `final_delta` (the answer's first words; `answerGeneration`: in which
 * generation of the run), the end of the run; and each
 * generation's usage [prompt, cached, completion] (prompt − cached: the prompt tokens the engine
 * processed). Times are performance.now() (ms since navigation started); the result lands in
 * window.result.
 */
import { boot } from "/aerix.mjs";
import { INSTRUCTIONS, tools } from "/demo-tools.mjs";

const params = new URLSearchParams(location.search);
const at = () => performance.now();
const LIMIT_MS = 240_000; // an agent that has not answered by then is stopped (its answer: null)

/** The engine options of the query: threads, and the batch sizes, KV cache types and flash attention only when given. */
function engineOptions() {
  const out = { nThreads: Number(params.get("threads") ?? 2) };
  for (const name of ["nBatch", "nUbatch"]) if (params.has(name)) out[name] = Number(params.get(name));
  for (const name of ["cacheTypeK", "cacheTypeV"]) if (params.has(name)) out[name] = params.get(name);
  if (params.has("flashAttn")) out.flashAttn = params.get("flashAttn") === "1";
  return out;
}

/** The agents' turn format: the compact system message with `system=compact`, the instructions last with `instructions=last`, else aerix's default. */
const FORMAT = {
  ...(params.get("system") === "compact" ? { system: "compact" } : {}),
  ...(params.get("instructions") === "last" ? { instructions: "last" } : {}),
};
const TURN_FORMAT = Object.keys(FORMAT).length ? { turnFormat: FORMAT } : {};
/** The third agent's instructions: the demo's request in other words. */
const OTHER = "You are a helper in a web page. When a tool fits, use it; then reply with one sentence quoting what it returned.";

/** One agent's first task: build it, send `prompt`, time its events until the run ends. */
async function firstAnswer(ai, prompt, instructions = INSTRUCTIONS, prefill = false) {
  const built = at();
  const agent = ai.agent({ instructions, tools, limits: { turns: 4, maxTokens: 256 }, ...TURN_FORMAT });
  await agent.ready;
  const ahead = prefill ? { prefill: await agent.prefill(), prefillMs: at() - built } : {};
  const sent = at();
  const out = { prompt, ...ahead, agentMs: sent - built, sentAt: sent, firstTokenMs: null, firstAnswerMs: null, answerGeneration: null, usage: [], calls: [], ending: null };
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), LIMIT_MS);
  try {
    for await (const ev of agent.run(prompt, { signal: stop.signal })) {
      const ms = at() - sent;
      if (ev.type === "text" && out.firstTokenMs === null) out.firstTokenMs = ms;
      if (ev.type === "final_delta" && out.firstAnswerMs === null) {
        out.firstAnswerMs = ms;
        out.answerGeneration = out.usage.length + 1; // a generation's usage comes when it ends
      }
      if (ev.type === "usage") out.usage.push([ev.promptTokens, ev.cachedTokens, ev.completionTokens]);
      if (ev.type === "call") out.calls.push(ev.tool);
      if (ev.type === "final") out.ending = "final";
      if (ev.type === "end") out.ending = `end ${ev.reason}`;
    }
  } finally {
    clearTimeout(timer);
  }
  out.ms = at() - sent;
  agent.destroy?.();
  return out;
}

const result = { start: at() };
try {
  const ai = await boot({ model: params.get("model"), worker: params.get("worker") === "1", engine: engineOptions() });
  result.ready = at();
  const info = ai.engine.info;
  result.engine = { n_threads: info.n_threads, n_batch: info.n_batch, n_ubatch: info.n_ubatch, isolated: info.isolated, fetchMs: info.fetchMs, loadMs: info.loadMs };
  const [cold, warm] = params.getAll("task");
  result.cold = await firstAnswer(ai, cold, INSTRUCTIONS, params.get("prefill") === "1");
  result.warm = await firstAnswer(ai, warm);
  result.other = await firstAnswer(ai, cold, OTHER);
  result.engine.prompt = ai.engine.info.prompt;
  result.ok = true;
} catch (e) {
  result.error = String(e?.stack ?? e);
}
window.result = result;
