/**
 * In-page half of `make bench`: what bench/run.py calls, one measurement per call, through
 * Playwright. Each function does one side of one pair (an "A" or a "B") and returns its numbers;
 * the pairing, the interleaving and the statistics are done in run.py.
 *
 * The page is bench/page.html, served next to the site so it has the same origin (and the
 * COOP/COEP headers that give wllama its threads).
 */

import { boot } from "/aerix.mjs";
import { loadEngine } from "/engine.mjs";

const S = { engines: {} };

/** The tools of the P1/P2 agent: the demo's three, written in JavaScript. */
const TOOLS = [
  {
    name: "weather",
    description: "Today's forecast for a city.",
    input: { city: { type: "string", description: "City name", required: true } },
    run: async ({ city }) => `${city}: showers, 19°C`,
  },
  {
    name: "clock",
    description: "The current time in UTC.",
    input: {},
    run: async () => "12:00 UTC",
  },
  {
    name: "convert",
    description: "Convert a temperature between Celsius and Fahrenheit.",
    input: {
      value: { type: "number", required: true },
      to: { type: "string", enum: ["c", "f"], required: true },
    },
    run: async ({ value, to }) => (to === "f" ? `${(value * 9) / 5 + 32}°F` : `${(((value - 32) * 5) / 9).toFixed(1)}°C`),
  },
];

/** For profiling from the console: the engines by name. */
export const engines = S.engines;

/**
 * P7: how long the page's main thread was unavailable while `fn` ran: the longest task the Long
 * Tasks API reports (it reports those over 50 ms only) and the worst lateness of a 5 ms timer
 * (which bounds shorter ones). Returns fn's value with `mainThread: {longestTaskMs, longTasks, lateMs}`.
 */
async function watchMainThread(fn) {
  const tasks = [];
  const observer = new PerformanceObserver((list) => tasks.push(...list.getEntries().map((e) => e.duration)));
  observer.observe({ type: "longtask" });
  let late = 0;
  let running = true;
  let due = performance.now() + 5;
  const tick = () => {
    const now = performance.now();
    late = Math.max(late, now - due);
    due = now + 5;
    if (running) setTimeout(tick, 5);
  };
  setTimeout(tick, 5);
  try {
    const value = await fn();
    return { ...value, mainThread: { longestTaskMs: Math.max(0, ...tasks), longTasks: tasks.length, lateMs: late } };
  } finally {
    running = false;
    observer.disconnect();
  }
}

/** Boot aerix on `model`; the booted engine is engine "main". */
export async function setup({ model, nThreads = 1 }) {
  const started = performance.now();
  S.ai = await boot({ model, engine: { recorder: true, nThreads } });
  S.engines.main = S.ai.engine;
  S.py = {
    page: S.ai.pyodide.pyimport("aerix.page"),
    engines: S.ai.pyodide.pyimport("aerix.engines.js"),
  };
  const code = await (await fetch("/bench/inpage.py")).text();
  S.ai.pyodide.FS.writeFile("/home/pyodide/aerix_bench.py", code);
  await S.ai.pyodide.runPythonAsync("import sys; sys.path.insert(0, '/home/pyodide'); import aerix_bench");
  S.bench = S.ai.pyodide.pyimport("aerix_bench");
  return { ms: performance.now() - started, timings: S.ai.timings, info: S.ai.engine.info };
}

/** Boot aerix in worker mode (boot({worker: true})) on `model`: the "worker" runtime. */
export async function setupWorker({ model, nThreads = 1 }) {
  const started = performance.now();
  S.w = await boot({ model, worker: true, engine: { recorder: true, nThreads } });
  return { ms: performance.now() - started, timings: S.w.timings, info: S.w.engine.info };
}

/** Load one more engine, named `name` (same site, same options as boot's). */
export async function addEngine({ name, model, nThreads = 1, prompt = "auto" }) {
  const started = performance.now();
  S.engines[name] = await loadEngine({ model, wllamaBase: "/wllama/", recorder: true, nThreads, prompt });
  return { ms: performance.now() - started, info: S.engines[name].info };
}

export async function closeEngine({ name }) {
  await S.engines[name].close();
  delete S.engines[name];
}

/** An aerix agent on engine `name`, built as boot()'s agent() builds one. */
function agentOn(name, options) {
  const model = S.py.engines.JsModel(S.engines[name]);
  const agent = S.py.page.create_agent(model, options);
  model.destroy();
  return agent;
}

/** Run an agent (a PyProxy as aerix.mjs's run() does, or a worker-mode agent); `onEvent(ev, now)` sees each event. */
async function runAgent(agent, prompt, onEvent) {
  if (agent.ready) {
    for await (const ev of agent.run(prompt)) onEvent(ev, performance.now());
    return;
  }
  const stream = agent.run(prompt, null);
  try {
    for await (const ev of stream) onEvent(ev, performance.now());
  } finally {
    stream.destroy?.();
  }
}

/**
 * P1 A side (and P2): an aerix agent run of `turns` generations on engine `name`. The
 * instructions start with `session`, so no run finds another's conversation in the engine's cache.
 * Every final is answered with another user message (onFinal), so the run always makes `turns`
 * generations. Returns its wall time, the usage of each generation and the requests it sent.
 */
export async function agentRun({ name, session, turns, maxTokens, seed = 1, worker = false, onEvent = () => {} }) {
  const engine = worker ? S.w.engine : S.engines[name];
  const before = engine.requests.length;
  const options = {
    instructions: `Session ${session}. You are a travel helper. Use the tools when they help, then answer briefly.`,
    tools: TOOLS,
    limits: { turns, retries: turns, maxTokens, repeatCalls: null }, // every run makes `turns` generations
    generation: { temperature: 0.7, seed },
    hooks: { onFinal: () => ({ continue: "Thanks. And what about tomorrow?" }) },
  };
  const agent = worker ? S.w.agent(options) : agentOn(name, options);
  if (worker) await agent.ready;
  const usage = [];
  const kinds = {};
  return watchMainThread(async () => {
    const started = performance.now();
    await runAgent(agent, "Do I need an umbrella in Lisbon today?", (ev, now) => {
      onEvent(ev, now);
      kinds[ev.type] = (kinds[ev.type] ?? 0) + 1;
      if (ev.type === "usage") usage.push([ev.promptTokens, ev.cachedTokens, ev.completionTokens]);
    });
    const ms = performance.now() - started;
    agent.destroy?.();
    return { ms, usage, kinds, requests: engine.requests.slice(before) };
  });
}

/** One request straight to wllama, streamed; what a JavaScript caller with no Python would do. */
async function direct(wllama, request) {
  const create = request.prompt === undefined ? wllama.createChatCompletion : wllama.createCompletion;
  const started = performance.now();
  let first = null;
  let last = null;
  let usage = null;
  let timings = null;
  let text = "";
  await create.call(wllama, {
    ...request,
    onData: (chunk) => {
      const choice = chunk.choices?.[0];
      const piece = choice?.delta?.content ?? choice?.text ?? "";
      if (piece) {
        const now = performance.now();
        first ??= now;
        last = now;
        text += piece;
      }
      if (chunk.usage) usage = chunk.usage;
      if (chunk.timings) timings = chunk.timings;
    },
  });
  const end = performance.now();
  return {
    ms: end - started,
    firstMs: first === null ? null : first - started,
    lastMs: last === null ? null : last - started,
    usage: usage && [usage.prompt_tokens, usage.prompt_tokens_details?.cached_tokens ?? 0, usage.completion_tokens],
    timings,
    chars: text.length,
  };
}

/** P1 B side: the same requests, in order, from JavaScript straight to wllama on engine `name`. */
export async function replay({ name, requests }) {
  const wllama = S.engines[name].wllama;
  const usage = [];
  const started = performance.now();
  for (const request of requests) usage.push((await direct(wllama, request)).usage);
  return { ms: performance.now() - started, usage };
}

/**
 * P5 A side: tokens per second seen by an aerix `text` consumer. One generation of exactly
 * `maxTokens` tokens (no schema, `ignore_eos`), the same prompt every time (cached after the
 * first). Rate = tokens ÷ (last text event − start of the run).
 */
export async function streamAerix({ name, maxTokens, worker = false }) {
  const engine = worker ? S.w.engine : S.engines[name];
  const before = engine.requests.length;
  const options = {
    instructions: "Write freely.",
    constrain: false,
    limits: { turns: 1, retries: 0, maxTokens },
    generation: { temperature: 0.7, seed: 1, ignore_eos: true },
  };
  const agent = worker ? S.w.agent(options) : agentOn(name, options);
  if (worker) await agent.ready;
  let last = 0;
  let events = 0;
  let tokens = 0;
  const started = performance.now();
  await runAgent(agent, "Tell me a long story.", (ev, now) => {
    if (ev.type === "text") {
      last = now;
      events += 1;
    }
    if (ev.type === "usage") tokens = ev.completionTokens;
  });
  agent.destroy?.();
  const seconds = (last - started) / 1000;
  return { tokPerS: tokens / seconds, tokens, events, ms: last - started, request: engine.requests[before] };
}

/** P5 B side and the threads row: the same request consumed directly in JavaScript. */
export async function streamDirect({ name, request }) {
  const out = await direct(S.engines[name].wllama, request);
  return { tokPerS: out.usage[2] / (out.lastMs / 1000), tokens: out.usage[2], ms: out.lastMs };
}

/** The turn schema for n bench tools (built by aerix in Python). */
export function schema({ tools }) {
  return JSON.parse(S.bench.schema_json(tools));
}

/**
 * P3: one generation on engine `name` from `prompt`, under `schema` (or none: then `ignore_eos`
 * and exactly `maxTokens` tokens). Decode rate from the engine's own timings (sampling and
 * grammar included); time to first token from here.
 */
export async function generate({ name, prompt, schema, maxTokens, seed }) {
  const request = { prompt, stream: true, cache_prompt: true, max_tokens: maxTokens, temperature: 0.7, seed, stream_options: { include_usage: true } };
  if (schema) request.json_schema = schema;
  else request.ignore_eos = true;
  const out = await direct(S.engines[name].wllama, request);
  const t = out.timings;
  return {
    tokens: out.usage[2],
    tokPerS: t ? (t.predicted_n / t.predicted_ms) * 1000 : out.usage[2] / ((out.lastMs - out.firstMs) / 1000),
    firstMs: out.firstMs,
    promptMs: t?.prompt_ms ?? null,
    cached: out.usage[1],
  };
}

/**
 * The per-delta cost of the bridge, engine excluded: a fake engine that yields `deltas` one-token
 * text deltas as fast as they are read, run through JsModel → Agent → PageAgent → a JS consumer.
 * Returns ms per delta.
 */
export async function deltaCost({ deltas }) {
  const reply = `{"thought":"${"a".repeat(deltas - 13)}","final":"ok"}`;
  const fake = {
    chat: async function* () {
      for (const ch of reply) yield { type: "text", text: ch };
      yield { type: "done", finish_reason: "stop", usage: { prompt_tokens: 1, completion_tokens: reply.length, cached_tokens: 0 } };
    },
  };
  const model = S.py.engines.JsModel(fake);
  const agent = S.py.page.create_agent(model, { instructions: "x", limits: { maxTokens: 10_000 } });
  model.destroy();
  let n = 0;
  const started = performance.now();
  await runAgent(agent, "go", (ev) => (n += ev.type === "text"));
  const ms = performance.now() - started;
  agent.destroy();
  return { msPerDelta: ms / n, deltas: n };
}

/** P6: ms per turn of the Python loop, engine excluded, for 1, 8 and 32 tools. */
export async function p6({ rounds }) {
  return JSON.parse(await S.bench.p6(rounds));
}

/** The page's Pyodide, for profiling from the console. */
export const pyodide = () => S.ai.pyodide;

/**
 * P9 wasm side: prompt processing and generation rates of `model` on `nThreads` threads, from
 * llama.cpp's own timings, `runs` completions of `prompt` (a new prompt each: nothing cached)
 * and exactly `n` generated tokens. The engine is loaded for this and closed after. The other
 * options (`nBatch`, `nUbatch`, `cacheTypeK`, `cacheTypeV`, `flashAttn`: loadEngine's; absent:
 * loadEngine's defaults) are for bench/first_answer.py's batch sweep and bench/engine_sweep.py.
 */
export async function p9Wasm({ model, nThreads, prompt, n, runs, ...tuning }) {
  const engine = await loadEngine({ model, wllamaBase: "/wllama/", nThreads, ...tuning, manifest: "/models/models.json" });
  const out = [];
  try {
    for (let i = 0; i < runs; i++) {
      let timings = null;
      await engine.wllama.createCompletion({
        prompt: `${prompt} (${i})`, stream: true, max_tokens: n, temperature: 0, ignore_eos: true, cache_prompt: false,
        stream_options: { include_usage: true }, onData: (chunk) => (timings = chunk.timings ?? timings),
      });
      out.push(timings);
    }
    return { timings: out, info: { ...engine.info } };
  } finally {
    await engine.close();
  }
}
