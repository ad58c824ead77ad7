/**
 * The in-page engine: llama.cpp (through @wllama/wllama 3.13) behind the aerix model protocol.
 *
 *   const engine = await loadEngine({ model: "./models/tiny.gguf" });
 *   for await (const delta of engine.chat(messages, { max_tokens: 256, constraint: schema })) {
 *     // { type: "text", text } ... then one { type: "done", finish_reason, usage }
 *   }
 *
 * A model a person picks from their disk is kept in this browser for the next visit:
 *
 *   const model = await keepModel(file, `${file.name}:${file.size}:${file.lastModified}`);  // "aerix-local:..."
 *   const engine = await loadEngine({ model });   // now, or on a later visit, with no file picked
 *
 * The aerix Python side calls this through Pyodide and converts its values before they cross
 * (py/aerix/_js.py): what arrives here is plain JavaScript, the signal a real AbortSignal.
 *
 * Errors a caller can tell apart by `name`:
 *   "AbortError"       the caller's signal fired (or the caller stopped iterating)
 *   "EngineBadOutput"  the engine produced bytes that are not valid UTF-8; the engine is still usable
 *
 * Its parts: generation.mjs (one generation as deltas, and the queue that runs an engine's
 * requests one at a time: two agents on one engine take turns), prompt.mjs (PROMPT MODES: who
 * renders the chat template) and model-cache.mjs (MODEL CACHE: the models this browser keeps).
 *
 * @module engine
 */

import { factsFrom, ggufParameters } from "./facts.mjs";
import { chat, EngineAbortError, EngineBadOutputError, EngineQueue } from "./generation.mjs";
import { checkMagic, openSource, pageUrl } from "./model-cache.mjs";
import { choosePromptMode } from "./prompt.mjs";

export { EngineAbortError, EngineBadOutputError };
export { cachedModels, forgetModel, keepModel } from "./model-cache.mjs";

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d]; // "\0asm"

/**
 * @typedef {import("@wllama/wllama").Wllama} Wllama
 * @typedef {import("./generation.mjs").ChatOptions} ChatOptions
 * @typedef {import("./generation.mjs").Delta} Delta
 * @typedef {{debug: (...args: any[]) => void, log: (...args: any[]) => void, warn: (...args: any[]) => void, error: (...args: any[]) => void}} Logger
 */

/**
 * Fetch a model, start wllama on it and return an engine.
 *
 * @param {object} options
 * @param {string|Blob} options.model URL of a .gguf file (relative to the page), its bytes, or
 *   a model kept in this browser ("aerix-local:...", from `keepModel` or `cachedModels`).
 * @param {boolean} [options.cache=true] keep a model fetched from a URL in this browser and load it
 *   from there next time (model-cache.mjs, MODEL CACHE); false: neither read nor write the cache (and a
 *   kept "aerix-local:" model cannot load). A Blob is cached only with `cacheKey`.
 * @param {string} [options.cacheKey] with a Blob: keep its bytes in this browser under this key
 *   (once they load), as `keepModel(blob, cacheKey)` does; the next boot loads them with
 *   `model: "aerix-local:" + encodeURIComponent(cacheKey)`.
 * @param {string} [options.manifest] URL of a `models.json` ({models: [{file, size, sha256}]}, `file`
 *   relative to it) that gives the current version of the models it lists.
 * @param {string} [options.wllamaBase="./wllama/"] folder (relative to the page) holding wllama's
 *   `index.js` and `wllama.wasm`.
 * @param {number} [options.nCtx=4096] context size; wllama would otherwise use 1024 whatever the model says.
 * @param {number} [options.nThreads] threads when the page is cross-origin isolated
 *   (default: navigator.hardwareConcurrency, at most 8: THREADS below); always 1 when it is not.
 * @param {number} [options.nBatch] llama.cpp's `n_batch`: the most prompt tokens one decode call
 *   takes (default: llama.cpp's, 2048). `info.n_batch` says what it used.
 * @param {number} [options.nUbatch] llama.cpp's `n_ubatch`: the prompt tokens computed in one pass
 *   of the model (default: llama.cpp's, 512; never above `n_batch`). `info.n_ubatch` says what it used.
 * @param {"f32"|"f16"|"q8_0"|"q5_1"|"q5_0"|"q4_1"|"q4_0"} [options.cacheTypeK] llama.cpp's `cache_type_k`:
 *   how the KV cache keeps keys (default on the CPU: f32, CPU ATTENTION below; on WebGPU llama.cpp's,
 *   f16). `info.cache_type_k` says what was asked.
 * @param {"f32"|"f16"|"q8_0"|"q5_1"|"q5_0"|"q4_1"|"q4_0"} [options.cacheTypeV] the same for values.
 * @param {boolean} [options.flashAttn] llama.cpp's flash attention: true "auto" (llama.cpp turns it on
 *   where the backend has it), false off (default on the CPU: off; on WebGPU llama.cpp's, auto).
 * @param {"auto"|"off"|"require"} [options.gpu="auto"] WebGPU: "auto" offloads the model's layers
 *   when the browser gives a WebGPU adapter and runs on the CPU otherwise; "off" never offloads;
 *   "require" fails loading, naming why, when there is no adapter. `info.backend` says which runs
 *   ("webgpu" or "cpu"), `info.gpuLayers` what llama.cpp reported offloading ("N/M", or null).
 * @param {number} [options.nGpuLayers] layers to offload to WebGPU; default 0 when the browser has
 *   no WebGPU, else wllama's default (all).
 * @param {(p: {phase: "model", loaded: number, total: number|undefined, cached: boolean}) => void} [options.onProgress]
 *   `cached`: the bytes come from this browser's cache, not the network.
 * @param {number} [options.seed] fixed sampling seed; it overrides every per-request seed.
 * @param {boolean|{push: (request: object) => unknown}} [options.recorder] keep every request sent to the engine in
 *   `engine.requests`, or hand each to `recorder.push` (the worker runtime sends them to the page).
 * @param {string} [options.template] the model's chat template (Jinja text, or "chatml"), for a GGUF
 *   that carries none or the wrong one; without either, loading fails (llama.cpp would silently
 *   lay every conversation out as ChatML).
 * @param {"auto"|"text"|"chat"} [options.prompt="auto"] who renders the chat template (prompt.mjs, PROMPT
 *   MODES): "text" renders it here and sends the prompt as text, "chat" lets llama.cpp render it;
 *   "auto" takes "text" when the model's template is one this module renders identically.
 * @param {Logger} [options.logger]
 *   wllama's logger (it also gets llama.cpp's log); default keeps only errors.
 * @returns {Promise<Engine>}
 */
export async function loadEngine(options) {
  if (typeof options !== "object" || options === null) throw new TypeError("loadEngine: give it its options, {model, ...}");
  const { model, cache = true, cacheKey, manifest, wllamaBase = "./wllama/", nCtx = 4096, nThreads, nGpuLayers, gpu = "auto" } = options;
  const { onProgress, seed, recorder = false, prompt = "auto", template, logger = QUIET_LOGGER } = options;
  const named = tuningParams(options);
  if (!["auto", "text", "chat"].includes(prompt)) throw new TypeError(`loadEngine: prompt must be "auto", "text" or "chat", got ${prompt}`);
  if (typeof cache !== "boolean") throw new TypeError(`loadEngine: cache must be true or false, got ${cache}`);
  if (!["auto", "off", "require"].includes(gpu)) throw new TypeError(`loadEngine: gpu must be "auto", "off" or "require", got ${gpu}`);
  const adapter = await gpuAdapter(gpu);
  const started = performance.now();
  const label = typeof model === "string" ? model : "the model blob";
  if (cacheKey !== undefined && !(model instanceof Blob)) throw new TypeError("loadEngine: `cacheKey` goes with a Blob `model`");
  const source = await openSource(model, { cache, cacheKey, manifest, onProgress });
  const { blob, cached } = source;
  if (!(blob instanceof Blob)) {
    throw new TypeError("loadEngine: `model` must be a URL string or a Blob");
  }
  await checkMagic(blob, label).catch((err) => source.drop().then(() => Promise.reject(err)));
  const saved = source.keep(); // written while wllama loads; a file llama.cpp refuses is dropped below
  const fetchMs = performance.now() - started;
  const counting = ggufParameters(blob); // the parameter count, read while wllama loads

  const { wllama, log } = await startWllama(new URL(wllamaBase, pageUrl()), logger);
  // Threads need SharedArrayBuffer, i.e. COOP/COEP; without them wllama would fall back silently.
  const isolated = globalThis.crossOriginIsolated === true;
  const threads = isolated ? Math.max(1, nThreads ?? defaultThreads()) : 1;
  const loadStarted = performance.now();
  const offloads = Boolean(adapter) && nGpuLayers !== 0;
  const tuning = { ...(offloads ? {} : CPU_ATTENTION), ...named };
  const params = { n_ctx: nCtx, n_threads: threads, n_gpu_layers: adapter ? nGpuLayers : 0, ...tuning, ...(seed === undefined ? {} : { seed }), ...(template ? { chat_template: template } : {}) };
  const ctx = await loadModel(wllama, blob, params, source, (why, cause) => new Error(`the engine could not load ${label}: ${[why, ...log.complaints].join("; ")}`, { cause }));
  const chatTemplate = template || wllama.getChatTemplate?.() || "";
  if (!chatTemplate) {
    await wllama.exit().catch(() => {});
    throw noTemplate(label);
  }
  const loadMs = performance.now() - loadStarted;
  await saved;
  // Checked in the background: its two small requests would otherwise wait for the page's main
  // thread (busy booting Pyodide) and delay the engine by seconds. The first chat waits for it.
  const promptMode = choosePromptMode(wllama, prompt, chatTemplate);
  /** @type {EngineInfo} */
  const info = {
    prompt: prompt === "chat" ? "chat" : "pending",
    n_ctx: ctx.n_ctx,
    n_vocab: ctx.n_vocab,
    n_threads: wllama.getNumThreads(),
    n_batch: ctx.n_batch,
    n_ubatch: ctx.n_ubatch,
    cache_type_k: tuning.cache_type_k ?? "f16",
    cache_type_v: tuning.cache_type_v ?? "f16",
    flash_attn: tuning.flash_attn ?? "auto",
    isolated,
    backend: offloads && !log.gpuLayers?.startsWith("0/") ? "webgpu" : "cpu",
    gpuLayers: log.gpuLayers,
    cached,
    fetchMs,
    loadMs,
    n_ctx_train: ctx.n_ctx_train,
    ...(await modelFacts(wllama, chatTemplate, counting)),
  };
  promptMode.then((mode) => (info.prompt = mode), () => {});
  return engineOf(wllama, info, promptMode, recorder, /enable_thinking/.test(chatTemplate));
}

/*
 * THREADS. Without `nThreads` a cross-origin isolated page gets one engine thread per logical core
 * the browser reports, at most 8. The cap is read from the engine, not measured (this project's
 * machine has 2 vCPUs): wllama starts one Web Worker per thread before the model loads, each
 * instantiating the 10 MB wasm module (emscripten's pthread pool, sized by `n_threads`), so every
 * thread costs start-up time; and llama.cpp's CPU backend splits each operation of the graph
 * across all threads and waits for the slowest at its end, so a thread that shares its core with
 * the page (or with Python in the worker) holds the others up, and a 135M model's small matrices
 * give little work per thread to pay for that wait. wllama's own default is half the cores
 * (floor(hardwareConcurrency / 2)), which would give 1 thread on a 2-core machine, where 2
 * measured 1.8× faster (bench/README.md, "threads"): up to 8 cores nothing changes.
 */
const MAX_DEFAULT_THREADS = 8;

/** The engine's threads when the caller names none (THREADS). */
function defaultThreads() {
  return Math.min(MAX_DEFAULT_THREADS, Math.max(1, navigator.hardwareConcurrency || 1));
}

const CACHE_TYPES = ["f32", "f16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0"];

/*
 * CPU ATTENTION. On the CPU (no WebGPU adapter, or nGpuLayers 0) the page asks llama.cpp for an f32
 * KV cache and no flash attention unless the caller names them. Measured (bench/README.md, "The
 * engine sweep": SmolLM2-135M Q8_0, 2 threads, a 786-token prompt): llama.cpp's defaults (f16,
 * flash attention "auto", which turns it on) generate 12.9-15.8 tokens/s after a long prompt;
 * f32 without flash attention 27.4-27.9, the prompt as fast (42-46 tok/s). ggml's CPU flash-attention
 * kernel walks the cache one position at a time per query row, slow in wasm and slower the longer
 * the context; f16 without it is slower than f32 (no f16 arithmetic in wasm). The cost: the KV
 * cache takes twice the memory (SmolLM2-135M, n_ctx 4096: 189 MB instead of 94 MB).
 * WebGPU keeps llama.cpp's defaults (not measured here: no GPU).
 */
const CPU_ATTENTION = { cache_type_k: "f32", cache_type_v: "f32", flash_attn: false };

/**
 * llama.cpp's batch sizes, KV cache types and flash attention for the options given, checked;
 * only those given (on the CPU, CPU ATTENTION fills in the attention ones left out).
 * @param {{nBatch?: unknown, nUbatch?: unknown, cacheTypeK?: unknown, cacheTypeV?: unknown, flashAttn?: unknown}} options
 * @returns {{n_batch?: number, n_ubatch?: number, cache_type_k?: string, cache_type_v?: string, flash_attn?: boolean}}
 */
function tuningParams({ nBatch, nUbatch, cacheTypeK, cacheTypeV, flashAttn }) {
  /** @type {{n_batch?: number, n_ubatch?: number, cache_type_k?: string, cache_type_v?: string, flash_attn?: boolean}} */
  const out = {};
  for (const [name, key, value] of /** @type {const} */ ([["nBatch", "n_batch", nBatch], ["nUbatch", "n_ubatch", nUbatch]])) {
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) throw new TypeError(`loadEngine: ${name} must be a whole number of tokens ≥ 1, got ${value}`);
    out[key] = value;
  }
  for (const [name, key, value] of /** @type {const} */ ([["cacheTypeK", "cache_type_k", cacheTypeK], ["cacheTypeV", "cache_type_v", cacheTypeV]])) {
    if (value === undefined) continue;
    if (typeof value !== "string" || !CACHE_TYPES.includes(value)) throw new TypeError(`loadEngine: ${name} must be one of ${CACHE_TYPES.join(", ")}, got ${value}`);
    out[key] = value;
  }
  if (flashAttn !== undefined) {
    if (typeof flashAttn !== "boolean") throw new TypeError(`loadEngine: flashAttn must be true or false, got ${flashAttn}`);
    out.flash_attn = flashAttn;
  }
  return out;
}

/**
 * The engine object around a loaded wllama: its generations go through one queue.
 * @param {Wllama} wllama
 * @param {EngineInfo} info
 * @param {Promise<"text"|"chat">} promptMode
 * @param {boolean|{push: (request: object) => unknown}} recorder
 * @param {boolean} thinks
 * @returns {Engine}
 */
function engineOf(wllama, info, promptMode, recorder, thinks) {
  const requests = typeof recorder === "object" && typeof recorder?.push === "function" ? recorder : recorder ? [] : undefined;
  const bridge = { wllama, queue: new EngineQueue(), requests, promptMode, thinks };
  return {
    wllama,
    info,
    settled: promptMode.then(() => info, () => info),
    requests,
    chat: (messages, options) => chat(bridge, messages, options),
    close: () => wllama.exit(),
  };
}

/**
 * The browser's WebGPU adapter for `gpu` ("off": none); "require" without one fails, naming why.
 * @param {"auto"|"off"|"require"} gpu
 */
async function gpuAdapter(gpu) {
  const adapter = gpu === "off" ? null : await webgpuAdapter();
  if (gpu === "require" && !adapter) {
    throw new Error(
      "the engine needs WebGPU (engine: { gpu: \"require\" }) and this browser gives no WebGPU adapter: " +
        (navigatorGpu() ? "navigator.gpu is there but requestAdapter() found none (no GPU, or it is blocked: headless Chromium needs a GPU and --enable-unsafe-webgpu)" : "navigator.gpu is missing (WebGPU needs a secure context and a browser that has it)") +
        '; use gpu: "auto" to run on the CPU instead',
    );
  }
  return adapter;
}

/**
 * wllama, imported from `base` (its `index.js` and `wllama.wasm`), with a logger that keeps what
 * loading needs of llama.cpp's log: its first complaints and the layers it offloaded.
 * @param {URL} base
 * @param {Logger} logger
 * @returns {Promise<{wllama: Wllama, log: {complaints: string[], gpuLayers: string|null}}>}
 */
async function startWllama(base, logger) {
  /** @type {typeof import("@wllama/wllama").Wllama} */
  let Wllama;
  try {
    ({ Wllama } = await import(new URL("index.js", base).href));
  } catch (err) {
    throw new Error(`could not load wllama from ${base.href}: ${err?.message ?? err}`, { cause: err });
  }
  const wasmUrl = new URL("wllama.wasm", base).href;
  await checkWasm(wasmUrl);
  // llama.cpp explains a rejected model only in its log. Keep its first complaints for the
  // error: they carry the cause ("failed to read key-value pairs"); later ones repeat it.
  /** @type {{complaints: string[], gpuLayers: string|null}} */
  const log = { complaints: [], gpuLayers: null };
  const remember = (/** @type {any[]} */ args) => {
    if (log.complaints.length < 3) log.complaints.push(args.join(" ").trim());
  };
  const offloaded = (/** @type {any[]} */ args) => {
    const found = /offloaded (\d+\/\d+) layers to GPU/.exec(args.join(" ")); // llama.cpp's "offloaded N/M layers to GPU"
    if (found) log.gpuLayers = found[1];
  };
  const wllama = new Wllama(
    { default: wasmUrl },
    {
      logger: {
        ...logger,
        debug: (...args) => (offloaded(args), logger.debug(...args)),
        log: (...args) => (offloaded(args), logger.log(...args)),
        warn: (...args) => (remember(args), logger.warn(...args)),
        error: (...args) => (remember(args), logger.error(...args)),
      },
    },
  );
  // Without this, browsers lacking JSPI or memory64 would fetch a "compat" build from a CDN.
  wllama.setCompat(null);
  return { wllama, log };
}

/**
 * Load the model's bytes into wllama and check llama.cpp took them: `loadModel` resolves even when
 * it rejected the file, and the next call would then kill the module. Bytes it refuses are dropped
 * from the cache.
 * @param {Wllama} wllama
 * @param {Blob} blob
 * @param {object} params
 * @param {{drop: () => Promise<void>}} source
 * @param {(why: string, cause?: unknown) => Error} failed
 */
async function loadModel(wllama, blob, params, source, failed) {
  try {
    await wllama.loadModel([blob], params);
  } catch (err) {
    await source.drop();
    throw failed(err?.message ?? String(err), err);
  }
  const ctx = wllama.getLoadedContextInfo();
  if (!(ctx?.n_vocab > 0)) {
    await wllama.exit().catch(() => {});
    await source.drop();
    throw failed("llama.cpp reported no vocabulary");
  }
  return ctx;
}

/** @param {string} label */
function noTemplate(label) {
  return Object.assign(
    new Error(
      `the engine cannot use ${label}: this model has no chat template (its GGUF has no tokenizer.chat_template), and without one ` +
        `llama.cpp would quietly lay every conversation out as ChatML. Pass the template the model was trained with, ` +
        `boot({ engine: { template: "<Jinja text>" } }) (template: "chatml" if it speaks ChatML), or use a model whose GGUF carries one.`,
    ),
    { name: "EngineNoTemplateError" },
  );
}

/*
 * MODEL FACTS: what `info` says the model is, for a picker to show (facts.mjs names them): the
 * GGUF's key/values as llama.cpp read them, and the parameter count from the file's tensor table
 * (read while wllama loads). Which backend runs it is `info.backend`, from llama.cpp's log.
 */

/**
 * The facts of the loaded model (facts.mjs's `factsFrom`); never fails, an unknown is "unknown".
 * @param {Wllama} wllama
 * @param {string} template
 * @param {Promise<number|null>} counting
 */
async function modelFacts(wllama, template, counting) {
  const nParams = await counting;
  /** @type {Record<string, string>} */
  let metadata = {};
  try {
    metadata = wllama.getModelMetadata()?.meta ?? {};
  } catch {}
  return factsFrom({ metadata, template, nParams });
}

/**
 * What `engine.info` says. `cached`: the model's bytes came from this browser's cache.
 * `n_ctx_train`: the context the model was trained for. What the model is (MODEL FACTS): `name`
 * and `architecture` (the GGUF's general.name and general.architecture), `parameters` ("3.7M": its
 * general.size_label, else counted from its tensor table; `n_params` the count), `quantisation`
 * (general.file_type by llama.cpp's name, "Q4_K_M"), `template` (the chat template's family:
 * "chatml", "qwen3", "llama3", "gemma", "mistral", "phi", "other"). Unknown facts read "unknown".
 * `backend` and `gpuLayers`: see the `gpu` option.
 * `n_batch`/`n_ubatch`: llama.cpp's batch sizes (see the options of the same names).
 * @typedef {{prompt: "text"|"chat"|"pending", n_ctx: number, n_vocab: number, n_threads: number, n_batch: number, n_ubatch: number, cache_type_k: string, cache_type_v: string, flash_attn: boolean|"auto", isolated: boolean, cached: boolean, fetchMs: number, loadMs: number,
 *   n_ctx_train: number, name: string, architecture: string, parameters: string, n_params: number|null, quantisation: string,
 *   template: string, backend: "cpu"|"webgpu", gpuLayers: string|null}} EngineInfo
 */

/**
 * @typedef {object} Engine
 * @property {Wllama} wllama the Wllama instance, for what this module does not cover
 * @property {EngineInfo} info
 * @property {Promise<EngineInfo>} settled `info` once its prompt mode is known
 * @property {object[]|{push: (request: object) => unknown}|undefined} requests with `recorder: true`: every
 *   request sent, without its abort signal (with a `recorder` object: that object)
 * @property {(messages: {role: string, content: string}[], options?: ChatOptions) => AsyncGenerator<Delta, void, undefined>} chat
 *   one generation; an engine runs its generations one at a time, in the order they asked
 *   (generation.mjs, ONE AT A TIME)
 * @property {() => Promise<void>} close unloads the model and stops its worker
 */
/**
 * `navigator.gpu` where the browser has WebGPU (TypeScript's DOM types do not carry it yet).
 * @returns {{requestAdapter?: () => Promise<object|null>}|undefined}
 */
function navigatorGpu() {
  return /** @type {{gpu?: {requestAdapter?: () => Promise<object|null>}}|undefined} */ (globalThis.navigator)?.gpu;
}

/** The browser's WebGPU adapter, or null (no WebGPU, no GPU, or a blocked one). */
async function webgpuAdapter() {
  try {
    return (await navigatorGpu()?.requestAdapter?.()) ?? null;
  } catch {
    return null;
  }
}
/**
 * wllama hangs for good when its wasm is missing (its worker's error report
 * crashes), so look at the file's first bytes before handing it over.
 */
async function checkWasm(url) {
  let response;
  try {
    // Only the first bytes: a whole fetch cut short would show as an aborted request, and a
    // server without range support just sends the file (the browser caches it for wllama).
    response = await fetch(url, { headers: { Range: "bytes=0-7" } });
  } catch (err) {
    throw new Error(`could not fetch wllama's wasm ${url}: ${err?.message ?? err}`, { cause: err });
  }
  if (!response.ok) {
    throw new Error(`could not fetch wllama's wasm ${url}: HTTP ${response.status} ${response.statusText}`.trimEnd());
  }
  const value = new Uint8Array(await response.arrayBuffer()).subarray(0, WASM_MAGIC.length);
  if (!WASM_MAGIC.every((byte, i) => value?.[i] === byte)) {
    throw new Error(`${url} is not a WebAssembly file`);
  }
}

const noop = () => {};
// llama.cpp logs every request, and warns each time a prompt is repeated word for word.
const QUIET_LOGGER = {
  debug: noop,
  log: noop,
  warn: noop,
  error: (...args) => console.error(...args),
};
