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
 *   anything else      the engine's own error, message passed through
 *
 * @module engine
 */

import { factsFrom, ggufParameters } from "./facts.mjs";

/** Thrown when a generation is aborted. `name` is "AbortError", as for fetch. */
export class EngineAbortError extends Error {
  constructor(message = "generation aborted") {
    super(message);
    this.name = "AbortError";
  }
}

/**
 * Thrown when llama.cpp emitted bytes that are not valid UTF-8.
 *
 * Its JSON-schema grammar accepts such bytes inside strings, then its server
 * fails to encode its own reply and wllama reads a garbage length
 * (`RangeError: Invalid typed array length`). Only that request fails.
 */
export class EngineBadOutputError extends Error {
  constructor(cause) {
    super(
      "the engine produced bytes that are not valid UTF-8 and could not return its reply " +
        `(${cause?.message ?? cause})`,
    );
    this.name = "EngineBadOutput";
    this.cause = cause;
  }
}

const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"
const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d]; // "\0asm"

/**
 * Fetch a model, start wllama on it and return an engine.
 *
 * @param {object} options
 * @param {string|Blob} options.model URL of a .gguf file (relative to the page), its bytes, or
 *   a model kept in this browser ("aerix-local:...", from `keepModel` or `cachedModels`).
 * @param {boolean} [options.cache=true] keep a model fetched from a URL in this browser and load it
 *   from there next time (see MODEL CACHE below); false: neither read nor write the cache (and a
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
 *   (default: navigator.hardwareConcurrency); always 1 when it is not.
 * @param {"auto"|"off"|"require"} [options.gpu="auto"] WebGPU: "auto" offloads the model's layers
 *   when the browser gives a WebGPU adapter and runs on the CPU otherwise; "off" never offloads;
 *   "require" fails loading, naming why, when there is no adapter. `info.backend` says which runs
 *   ("webgpu" or "cpu"), `info.gpuLayers` what llama.cpp reported offloading ("N/M", or null).
 * @param {number} [options.nGpuLayers] layers to offload to WebGPU; default 0 when the browser has
 *   no WebGPU, else wllama's default (all).
 * @param {(p: {phase: "model", loaded: number, total: number|undefined, cached: boolean}) => void} [options.onProgress]
 *   `cached`: the bytes come from this browser's cache, not the network.
 * @param {number} [options.seed] fixed sampling seed; it overrides every per-request seed.
 * @param {boolean|{push: Function}} [options.recorder] keep every request sent to the engine in
 *   `engine.requests`, or hand each to `recorder.push` (the worker runtime sends them to the page).
 * @param {string} [options.template] the model's chat template (Jinja text, or "chatml"), for a GGUF
 *   that carries none or the wrong one; without either, loading fails (llama.cpp would silently
 *   lay every conversation out as ChatML).
 * @param {"auto"|"text"|"chat"} [options.prompt="auto"] who renders the chat template (see PROMPT MODES
 *   below): "text" renders it here and sends the prompt as text, "chat" lets llama.cpp render it;
 *   "auto" takes "text" when the model's template is one this module renders identically.
 * @param {{debug: Function, log: Function, warn: Function, error: Function}} [options.logger]
 *   wllama's logger (it also gets llama.cpp's log); default keeps only errors.
 * @returns {Promise<Engine>}
 */
export async function loadEngine({
  model,
  cache = true,
  cacheKey,
  manifest,
  wllamaBase = "./wllama/",
  nCtx = 4096,
  nThreads,
  nGpuLayers,
  gpu = "auto",
  onProgress,
  seed,
  recorder = false,
  prompt = "auto",
  template,
  logger = QUIET_LOGGER,
} = {}) {
  if (!["auto", "text", "chat"].includes(prompt)) throw new TypeError(`loadEngine: prompt must be "auto", "text" or "chat", got ${prompt}`);
  if (typeof cache !== "boolean") throw new TypeError(`loadEngine: cache must be true or false, got ${cache}`);
  if (!["auto", "off", "require"].includes(gpu)) throw new TypeError(`loadEngine: gpu must be "auto", "off" or "require", got ${gpu}`);
  const adapter = gpu === "off" ? null : await webgpuAdapter();
  if (gpu === "require" && !adapter) {
    throw new Error(
      "the engine needs WebGPU (engine: { gpu: \"require\" }) and this browser gives no WebGPU adapter: " +
        (globalThis.navigator?.gpu ? "navigator.gpu is there but requestAdapter() found none (no GPU, or it is blocked: headless Chromium needs a GPU and --enable-unsafe-webgpu)" : "navigator.gpu is missing (WebGPU needs a secure context and a browser that has it)") +
        '; use gpu: "auto" to run on the CPU instead',
    );
  }
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

  const base = new URL(wllamaBase, pageUrl());
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
  const complaints = [];
  const remember = (args) => {
    if (complaints.length < 3) complaints.push(args.join(" ").trim());
  };
  let gpuLayers = null; // llama.cpp's "offloaded N/M layers to GPU", from its log
  const offloaded = (args) => {
    const found = /offloaded (\d+\/\d+) layers to GPU/.exec(args.join(" "));
    if (found) gpuLayers = found[1];
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

  // Threads need SharedArrayBuffer, i.e. COOP/COEP; without them wllama would fall back silently.
  const isolated = globalThis.crossOriginIsolated === true;
  const threads = isolated ? Math.max(1, nThreads ?? navigator.hardwareConcurrency ?? 1) : 1;
  const loadStarted = performance.now();
  const failed = (why, cause) =>
    new Error(`the engine could not load ${label}: ${[why, ...complaints].join("; ")}`, { cause });
  try {
    await wllama.loadModel([blob], {
      n_ctx: nCtx,
      n_threads: threads,
      n_gpu_layers: adapter ? nGpuLayers : 0,
      ...(seed === undefined ? {} : { seed }),
      ...(template ? { chat_template: template } : {}),
    });
  } catch (err) {
    await source.drop();
    throw failed(err?.message ?? String(err), err);
  }
  // loadModel resolves even when llama.cpp rejected the file; the next call would then kill the module.
  const ctx = wllama.getLoadedContextInfo();
  if (!(ctx?.n_vocab > 0)) {
    await wllama.exit().catch(() => {});
    await source.drop();
    throw failed("llama.cpp reported no vocabulary");
  }
  const chatTemplate = template || wllama.getChatTemplate?.() || "";
  if (!chatTemplate) {
    await wllama.exit().catch(() => {});
    throw Object.assign(
      new Error(
        `the engine cannot use ${label}: this model has no chat template (its GGUF has no tokenizer.chat_template), and without one ` +
          `llama.cpp would quietly lay every conversation out as ChatML. Pass the template the model was trained with, ` +
          `boot({ engine: { template: "<Jinja text>" } }) (template: "chatml" if it speaks ChatML), or use a model whose GGUF carries one.`,
      ),
      { name: "EngineNoTemplateError" },
    );
  }
  const loadMs = performance.now() - loadStarted;
  await saved;
  // Checked in the background: its two small requests would otherwise wait for the page's main
  // thread (busy booting Pyodide) and delay the engine by seconds. The first chat waits for it.
  const promptMode = choosePromptMode(wllama, prompt, chatTemplate);
  const info = {
    prompt: prompt === "chat" ? "chat" : "pending",
    n_ctx: ctx.n_ctx,
    n_vocab: ctx.n_vocab,
    n_threads: wllama.getNumThreads(),
    isolated,
    backend: adapter && nGpuLayers !== 0 && !gpuLayers?.startsWith("0/") ? "webgpu" : "cpu",
    gpuLayers,
    cached,
    fetchMs,
    loadMs,
    n_ctx_train: ctx.n_ctx_train,
    ...(await modelFacts(wllama, chatTemplate, counting)),
  };
  promptMode.then((mode) => (info.prompt = mode), () => {});
  const requests = typeof recorder?.push === "function" ? recorder : recorder ? [] : undefined;
  return {
    wllama,
    info,
    /** `info` once the prompt mode is known */
    settled: promptMode.then(() => info, () => info),
    requests,
    chat: (messages, options) => chat(wllama, requests, messages, options, promptMode, /enable_thinking/.test(chatTemplate)),
    close: () => wllama.exit(),
  };
}

/*
 * MODEL FACTS: what `info` says the model is, for a picker to show (facts.mjs names them): the
 * GGUF's key/values as llama.cpp read them, and the parameter count from the file's tensor table
 * (read while wllama loads). Which backend runs it is `info.backend`, from llama.cpp's log.
 */

/** The facts of the loaded model (facts.mjs's `factsFrom`); never fails, an unknown is "unknown". */
async function modelFacts(wllama, template, counting) {
  const nParams = await counting;
  let metadata = {};
  try {
    metadata = wllama.getModelMetadata()?.meta ?? {};
  } catch {}
  return factsFrom({ metadata, template, nParams });
}

/**
 * @typedef {object} Engine
 * @property {object} wllama the Wllama instance, for what this module does not cover
 * @property {{prompt: "text"|"chat"|"pending", n_ctx: number, n_vocab: number, n_threads: number, isolated: boolean, cached: boolean, fetchMs: number, loadMs: number,
 *   n_ctx_train: number, name: string, architecture: string, parameters: string, n_params: number|null, quantisation: string,
 *   template: string, backend: "cpu"|"webgpu", gpuLayers: string|null}} info
 *   `cached`: the model's bytes came from this browser's cache. `n_ctx_train`: the context the model
 *   was trained for. What the model is (MODEL FACTS): `name` and `architecture` (the GGUF's
 *   general.name and general.architecture), `parameters` ("3.7M": its general.size_label, else
 *   counted from its tensor table; `n_params` the count), `quantisation` (general.file_type by
 *   llama.cpp's name, "Q4_K_M"), `template` (the chat template's family: "chatml", "qwen3",
 *   "llama3", "gemma", "mistral", "phi", "other"). Unknown facts read "unknown". `backend` and
 *   `gpuLayers`: see the `gpu` option.
 * @property {Promise<object>} settled `info` once its prompt mode is known
 * @property {object[]|undefined} requests with `recorder`: every request sent, without its abort signal
 * @property {(messages: {role: string, content: string}[], options?: ChatOptions) => AsyncGenerator<Delta>} chat
 * @property {() => Promise<void>} close unloads the model and stops its worker
 */

/**
 * @typedef {object} ChatOptions
 * @property {number} [max_tokens]
 * @property {object|null} [constraint] a JSON Schema every reply must match (llama.cpp turns it into a grammar)
 * @property {AbortSignal} [signal] stops the generation when it aborts
 * @property {object} [generation] sampling settings passed to the engine as they are (temperature, top_p, seed, ...)
 * @property {number} [top_logprobs] ask for log-probabilities: each generated token's `top_logprobs` likeliest
 *   tokens (llama.cpp's `n_probs`, the model's own distribution before sampling), yielded as `logprobs` deltas
 * @property {number} [batchMs=0] wait at least this long between two text deltas, joining the text that
 *   arrives meanwhile (the first delta and the last are never held back). For consumers that pay for
 *   each delta: the Python bridge does, one crossing into Python and one back out per delta.
 */

/**
 * @typedef {{type: "text", text: string}
 *   | {type: "logprobs", content: {token: string, logprob: number, top_logprobs: {token: string, logprob: number}[]}[]}
 *   | {type: "done", finish_reason: "stop"|"length",
 *      usage: {prompt_tokens: number, completion_tokens: number, cached_tokens: number}}} Delta
 */

/**
 * One generation as an async iterator of deltas. The messages are copied when it is called, so
 * a caller that changes its array afterwards does not change this generation.
 */
function chat(wllama, requests, messages, options, promptMode, thinks) {
  const opts = options ?? {};
  const turns = Array.from(messages, (m) => ({ role: String(m.role), content: String(m.content) }));
  return (async function* () {
    const request = buildRequest(turns, opts, await promptMode, thinks);
    yield* generate(wllama, requests, request, opts.signal, Number(opts.batchMs) || 0, opts.top_logprobs > 0);
  })();
}

/**
 * The engine stops only through its abort signal: leaving the loop early (which
 * calls `return()`) must abort too, or llama.cpp keeps generating in the
 * background and slows every later call.
 */
async function* generate(wllama, requests, request, signal, batchMs, withLogprobs = false) {
  const controller = new AbortController();
  const unlink = linkSignal(signal, controller);
  const chunks = [];
  let settled = false;
  let failure = null;
  let wake = null;
  const notify = () => {
    const resume = wake;
    wake = null;
    resume?.();
  };
  controller.signal.addEventListener("abort", notify);

  let finish_reason = null;
  let usage = null;
  try {
    if (controller.signal.aborted) throw new EngineAbortError();
    requests?.push(structuredClone(request));
    const create = request.prompt === undefined ? wllama.createChatCompletion : wllama.createCompletion;
    create
      .call(wllama, {
        ...request,
        abortSignal: controller.signal,
        // The callback form lets us own the queue: wllama's own iterator leaves a
        // rejected promise unhandled when its reader stops early.
        onData: (chunk) => {
          chunks.push(chunk);
          notify();
        },
      })
      .then(
        () => {
          settled = true;
          notify();
        },
        (err) => {
          settled = true;
          failure = err;
          notify();
        },
      );

    let lastYield = -Infinity;
    for (;;) {
      if (controller.signal.aborted) throw new EngineAbortError();
      const hold = lastYield + batchMs - performance.now();
      if (chunks.length === 0 || (hold > 0 && !settled)) {
        if (chunks.length === 0 && settled) break;
        await new Promise((resolve) => {
          wake = resolve;
          if (chunks.length > 0) setTimeout(notify, hold);
        });
        continue;
      }
      // Whatever arrived while the consumer was busy goes out as one delta: each delta costs a
      // crossing into Python and back, so a slow consumer gets fewer, larger deltas.
      let text = "";
      const logprobs = [];
      for (const chunk of chunks.splice(0)) {
        // Chat chunks: the first carries only the role (content null). Text chunks carry `text`.
        // The usage chunk may have no choices.
        const choice = chunk.choices?.[0];
        if (choice?.finish_reason) finish_reason = choice.finish_reason;
        if (chunk.usage) usage = chunk.usage;
        text += choice?.delta?.content ?? choice?.text ?? "";
        // Only when the caller asked (top_logprobs): each token's chunk carries them, on both endpoints.
        if (withLogprobs && Array.isArray(choice?.logprobs?.content)) logprobs.push(...choice.logprobs.content);
      }
      if (text) {
        yield { type: "text", text };
        lastYield = performance.now();
      }
      if (logprobs.length > 0) yield { type: "logprobs", content: logprobs };
    }
    if (failure) throw engineError(failure);
    yield {
      type: "done",
      finish_reason: finish_reason === "length" ? "length" : "stop",
      usage: {
        prompt_tokens: usage?.prompt_tokens ?? 0,
        completion_tokens: usage?.completion_tokens ?? 0,
        cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      },
    };
  } finally {
    unlink();
    controller.signal.removeEventListener("abort", notify);
    if (!settled) controller.abort();
  }
}

function buildRequest(turns, { max_tokens, constraint: schema, generation, top_logprobs }, promptMode, thinks = false) {
  const request = {
    ...(generation ?? {}),
    ...(promptMode === "text" ? { prompt: chatmlPrompt(turns) } : { messages: alternating(turns) }),
    stream: true,
    cache_prompt: true,
    stream_options: { include_usage: true },
  };
  if (max_tokens != null) request.max_tokens = max_tokens;
  // a template that can think (Qwen 3) is asked not to, unless the caller says otherwise: hidden
  // thinking would spend tokens the reply never shows, and the turn schema wants the JSON at once
  if (thinks && promptMode !== "text" && request.chat_template_kwargs === undefined) request.chat_template_kwargs = { enable_thinking: false };
  if (top_logprobs > 0) {
    // llama.cpp reads n_probs on both endpoints; its chat endpoint wants the OpenAI pair as well
    request.n_probs = top_logprobs;
    if (promptMode !== "text") Object.assign(request, { logprobs: true, top_logprobs });
  }
  if (schema && promptMode === "text") {
    request.json_schema = schema; // the completion endpoint ignores response_format
  } else if (schema) {
    request.response_format = { type: "json_schema", json_schema: { name: "turn", schema, strict: true } };
  }
  return request;
}

/*
 * PROMPT MODES. Under `response_format`, llama.cpp's chat path lets the model wrap its JSON in a
 * Markdown fence (```json ... ```) and strips the fence from the reply it returns. A noise model
 * takes the fence on most turns (about 11 hidden tokens of 50 on bench.gguf), a real model when it
 * likes fences. Those tokens cost generation time, and the next prompt, rendered from the reply as
 * it was returned, leaves the engine's cache right at the start of that reply: measured, turn 2
 * reused exactly turn 1's prompt and nothing of the reply. So where we can render the model's
 * template ourselves we do, and send the text with `json_schema` to the completion endpoint, whose
 * grammar is the schema and nothing else. What is left: a reply whose sampled tokens differ from
 * how its text tokenizes is processed again from the first difference (wllama 3.13 takes prompts
 * as text only: a token array fails in the server core with json type_error.302).
 */

const CHATML_START = "<|im_start|>";
const CHATML_END = "<|im_end|>";

/**
 * The chat endpoint's messages: two in a row of one role joined into one, with a blank line
 * between. aerix sends two user messages in a row after a refused or cut turn (its note follows
 * the prompt), and the templates of Gemma and Mistral refuse that ("roles must alternate").
 * Joining keeps the text of later turns the same, so prefix reuse is kept.
 */
function alternating(turns) {
  const out = [];
  for (const m of turns) {
    const last = out[out.length - 1];
    if (last && last.role === m.role && m.role !== "system") last.content = `${last.content}\n\n${m.content}`;
    else out.push({ ...m });
  }
  return out;
}

/** A conversation in ChatML, ready for the assistant's reply. */
function chatmlPrompt(messages) {
  let text = "";
  for (const m of messages) text += `${CHATML_START}${m.role}\n${m.content}${CHATML_END}\n`;
  return `${text}${CHATML_START}assistant\n`;
}

/**
 * "text" when the model's template is ChatML and our rendering gives exactly the tokens of
 * llama.cpp's own (the same probe through both paths: the second must reuse all but the last
 * token of the first); otherwise "chat".
 */
async function choosePromptMode(wllama, wanted, template) {
  if (wanted === "chat") return "chat";
  let same = false;
  if (template.includes(CHATML_START) && template.includes(CHATML_END)) {
    const probe = [
      { role: "system", content: "aerix probe" },
      { role: "user", content: "one" },
      { role: "assistant", content: '{"a": 2}' },
      { role: "user", content: "three" },
    ];
    try {
      await wllama.createChatCompletion({ messages: probe, max_tokens: 1, temperature: 0, cache_prompt: true });
      const { usage } = await wllama.createCompletion({ prompt: chatmlPrompt(probe), max_tokens: 1, temperature: 0, cache_prompt: true });
      same = usage?.prompt_tokens > 1 && usage.prompt_tokens_details?.cached_tokens === usage.prompt_tokens - 1;
    } catch {
      same = false;
    }
  }
  if (wanted === "text" && !same) throw new Error("loadEngine: prompt \"text\" needs a ChatML model whose template renders as ChatML");
  return same ? "text" : "chat";
}

/** The browser's WebGPU adapter, or null (no WebGPU, no GPU, or a blocked one). */
async function webgpuAdapter() {
  try {
    return (await globalThis.navigator?.gpu?.requestAdapter?.()) ?? null;
  } catch {
    return null;
  }
}

/**
 * Make `controller` follow the caller's AbortSignal (Python sends one too: the run's signal,
 * made real per generation by aerix's JS edge).
 * @returns {() => void} stops following it
 */
function linkSignal(signal, controller) {
  if (!signal) return () => {};
  if (typeof signal.addEventListener !== "function") throw new TypeError("engine.chat: `signal` must be an AbortSignal");
  const abort = () => controller.abort();
  if (signal.aborted) abort();
  else signal.addEventListener("abort", abort, { once: true });
  return () => signal.removeEventListener("abort", abort);
}

function engineError(err) {
  if (err?.name === "AbortError") return new EngineAbortError();
  const message = String(err?.message ?? err);
  if (err instanceof RangeError || /Invalid typed array length/.test(message)) {
    return new EngineBadOutputError(err);
  }
  return err instanceof Error ? err : new Error(message);
}

/*
 * MODEL CACHE. A model fetched from a URL is kept in the Cache API (cache "aerix-models", one entry
 * per URL) and the next boot loads it from there with no request for it. The Cache API rather than
 * OPFS: `put` commits a whole response or nothing (a download cut by a reload leaves no half file),
 * the entry carries its version in its headers (no metadata file to keep in step), the cached
 * body comes back as a Blob backed by the disk (wllama reads it as it reads a downloaded one), and
 * it works the same in a page and in a worker.
 *
 * How a boot knows the file changed without asking for it: the site's manifest (`models.json`, the
 * build writes it: each model's file, size and sha256) is read once per boot, a small request. A
 * listed model's entry is used while its sha256 is the manifest's, with no request for the model;
 * a changed sha256 fetches the file again and replaces the entry (kept only when its size is the
 * manifest's). A model the manifest does not list is revalidated with a conditional request
 * (If-None-Match / If-Modified-Since from the entry): a 304 has no body and loads the entry; one
 * that its server gives no ETag or Last-Modified is not kept. `cache: false` neither reads nor writes.
 * The page does not hash the bytes (that would hold a second copy of a large model in memory): a
 * site whose files and manifest are swapped apart can leave a same-size wrong copy until the next
 * change. The browser may evict the cache under storage pressure; the next boot then downloads.
 *
 * A model from the person's disk (a Blob) has no URL to fetch again, so it is kept under a key the
 * page chooses (`keepModel(blob, key)`, or `loadEngine({model: blob, cacheKey: key})`), as the
 * entry of a URL that is never fetched, `/aerix-local/<key>` on this origin (the same for the
 * page and its worker), and named `aerix-local:<key>` (the key URI-encoded) as a `model`. Such an
 * entry is checked by its size only: kept again under the same key with the same size it is left
 * as it is, and one whose bytes are not all there any more is dropped. Evicted, it cannot come
 * back: loading it fails with an error named "ModelNotKept", and the person picks the file again.
 */

const MODEL_CACHE = "aerix-models";
const VERSION_HEADER = "X-Aerix-Sha256"; // the manifest's sha256 of the bytes an entry holds

/**
 * A model given as a Blob: nothing to keep or drop.
 * @returns {ModelSource}
 */
function given(blob) {
  return { blob, cached: false, keep: () => Promise.resolve(), drop: () => Promise.resolve() };
}

/** The model `loadEngine` was given: a URL (or a kept "aerix-local:" model), or a Blob. */
async function openSource(model, { cache, cacheKey, manifest, onProgress }) {
  if (typeof model !== "string") return cacheKey === undefined || !cache ? given(model) : keptGiven(model, cacheKey);
  if (model.startsWith(LOCAL)) return openKept(model, { cache, onProgress });
  return openModel(model, { cache, manifest, onProgress });
}

const LOCAL = "aerix-local:"; // a `model` kept from a Blob: LOCAL + encodeURIComponent(key)
const LOCAL_PATH = "/aerix-local/"; // where its entry's URL is, on this origin

/** The URL of the entry that keeps the Blob of `key` (never fetched: only the cache's key). */
function localEntry(key) {
  if (typeof key !== "string" || key === "") throw new TypeError(`a kept model's key must be a non-empty string, got ${JSON.stringify(key)}`);
  return new URL(`${LOCAL_PATH}${encodeURIComponent(key)}`, pageUrl()).href;
}

/**
 * Keep a model's bytes in this browser under `key`, without loading them, and give the `model`
 * that loads them from there, on this visit or a later one: `boot({ model: await keepModel(file, key) })`.
 * The key names the file (its name, size and date, say): kept again under the same key with the
 * same size, the entry is left as it is.
 * Rejects when the bytes are not GGUF, or when this browser keeps nothing for the page (a private
 * window, storage turned off, the quota).
 * @param {Blob} blob
 * @param {string} key
 * @returns {Promise<string>} `"aerix-local:" + encodeURIComponent(key)`
 */
export async function keepModel(blob, key) {
  const url = localEntry(key);
  if (!(blob instanceof Blob)) throw new TypeError("keepModel: the model must be a Blob (a File)");
  await checkMagic(blob, JSON.stringify(key));
  const store = await openCache();
  if (!store) throw new Error("this browser keeps no files for this page (a private window, or site data turned off): the model cannot be kept");
  await putLocal(store, url, blob);
  return LOCAL + encodeURIComponent(key);
}

/**
 * The models this browser keeps for this origin (the cache "aerix-models"), in the order they were
 * kept, the last kept last: `{model, size, local}` each, `model` what `loadEngine`/`boot` take (a
 * URL, or "aerix-local:..." with its `key` for a model kept from a Blob). [] without a cache.
 * @returns {Promise<{model: string, size: number|null, local: boolean, key?: string}[]>}
 */
export async function cachedModels() {
  const store = await openCache();
  if (!store) return [];
  const out = [];
  for (const request of await store.keys()) {
    const entry = await store.match(request).catch(() => undefined);
    const size = Number(entry?.headers.get("content-length")) || null;
    const { origin, pathname } = new URL(request.url);
    if (origin === new URL(pageUrl()).origin && pathname.startsWith(LOCAL_PATH)) {
      const key = decodeURIComponent(pathname.slice(LOCAL_PATH.length));
      out.push({ model: LOCAL + encodeURIComponent(key), key, size, local: true });
    } else {
      out.push({ model: request.url, size, local: false });
    }
  }
  return out;
}

/**
 * Remove a model from this browser's cache: a URL, or an "aerix-local:" model.
 * @returns {Promise<boolean>} whether there was one
 */
export async function forgetModel(model) {
  const store = await openCache();
  if (!store) return false;
  const url = String(model).startsWith(LOCAL) ? localEntry(keyOf(model)) : new URL(model, pageUrl()).href.split("#")[0];
  return store.delete(url);
}

function keyOf(model) {
  try {
    return decodeURIComponent(model.slice(LOCAL.length));
  } catch {
    throw new TypeError(`${model} is not a kept model's name ("aerix-local:" and a URI-encoded key)`);
  }
}

/** Write a Blob to its entry, unless the entry holds as many bytes already (checked by size only). */
async function putLocal(store, url, blob) {
  const entry = await store.match(url).catch(() => undefined);
  if (entry && Number(entry.headers.get("content-length")) === blob.size) return;
  const headers = { "Content-Type": "application/octet-stream", "Content-Length": String(blob.size) };
  await store.put(url, new Response(blob, { headers }));
}

/**
 * A Blob given with `cacheKey`: loaded as given, and kept for next time once it loads.
 * @returns {Promise<ModelSource>}
 */
async function keptGiven(blob, key) {
  const url = localEntry(key);
  const store = await openCache();
  if (!store || !(blob instanceof Blob)) return given(blob);
  let saving = null;
  const put = () => putLocal(store, url, blob).catch((err) => console.warn(`aerix: the model was not kept: ${err?.message ?? err}`));
  return {
    blob,
    cached: false,
    keep: () => (saving ??= put()),
    drop: () => Promise.resolve(saving).then(() => store.delete(url)).then(noop, noop),
  };
}

/**
 * A model kept from a Blob ("aerix-local:<key>"): its entry's bytes, if they are all there.
 * @returns {Promise<ModelSource>}
 */
async function openKept(model, { cache, onProgress }) {
  const key = keyOf(model);
  const url = localEntry(key);
  const store = cache ? await openCache() : null;
  if (!store) {
    throw new Error(`${model} is a model kept in this browser's cache, which ${cache ? "this page cannot open" : "cache: false turns off"}`);
  }
  const entry = await store.match(url).catch(() => undefined);
  const size = Number(entry?.headers.get("content-length"));
  onProgress?.({ phase: "model", loaded: 0, total: size || undefined, cached: true });
  const blob = entry ? await entry.blob().catch(() => null) : null;
  const drop = () => store.delete(url).then(noop, noop);
  if (!blob || blob.size !== size) {
    if (entry) await drop();
    throw Object.assign(
      new Error(`the model ${JSON.stringify(key)} is not kept in this browser any more (removed, or evicted to make room): load its file again`),
      { name: "ModelNotKept" },
    );
  }
  onProgress?.({ phase: "model", loaded: blob.size, total: blob.size, cached: true });
  return { blob, cached: true, keep: () => Promise.resolve(), drop };
}

/**
 * @typedef {object} ModelSource
 * @property {Blob} blob the model's bytes
 * @property {boolean} cached they came from this browser's cache
 * @property {() => Promise<void>} keep write them to the cache, for a download that is worth
 *   keeping (never rejects: a full quota only costs the next boot a download)
 * @property {() => Promise<void>} drop remove the entry (bytes that turned out not to load)
 */

/**
 * The model at `url`: from the cache when it holds the current version, else downloaded.
 * @returns {Promise<ModelSource>}
 */
async function openModel(url, { cache, manifest, onProgress }) {
  const report = (cached) => (loaded, total) => onProgress?.({ phase: "model", loaded, total, cached });
  const store = cache ? await openCache() : null;
  if (!store) return given(await download(url, {}, report(false)));
  const key = new URL(url, pageUrl()).href.split("#")[0];
  const [listed, entry] = await Promise.all([listedVersion(manifest, key), store.match(key).catch(() => undefined)]);
  const drop = () => store.delete(key).then(noop, noop);
  // The entry's body is a Blob on disk: reading it costs nothing until wllama does. An entry that
  // cannot be read any more is dropped and the file downloaded.
  const fromEntry = async () => {
    const total = Number(entry.headers.get("content-length")) || undefined;
    report(true)(0, total);
    const blob = await entry.blob().catch(() => null);
    if (!blob) return drop().then(() => download(url, { cache: "no-store" }, report(false))).then(given);
    report(true)(blob.size, blob.size);
    return { ...given(blob), cached: true, drop };
  };
  if (entry && listed && entry.headers.get(VERSION_HEADER) === listed.sha256) return fromEntry();

  // Not the cache's copy: the network's. An unlisted model the cache holds is asked for only if it changed.
  const ask = {};
  if (entry && !listed) {
    if (entry.headers.has("etag")) ask["If-None-Match"] = entry.headers.get("etag");
    if (entry.headers.has("last-modified")) ask["If-Modified-Since"] = entry.headers.get("last-modified");
  }
  // "no-store": the HTTP cache would hold a second copy of what the Cache API keeps.
  const response = await get(url, { cache: "no-store", headers: ask });
  if (response.status === 304 && Object.keys(ask).length > 0) {
    await response.arrayBuffer(); // no body: this ends the request, which otherwise stays open
    return fromEntry();
  }
  const headers = { "Content-Type": "application/octet-stream" };
  for (const name of ["etag", "last-modified"]) if (response.headers.has(name)) headers[name] = response.headers.get(name);
  const blob = await readBody(url, response, report(false));
  headers["Content-Length"] = String(blob.size);
  if (listed) headers[VERSION_HEADER] = listed.sha256;
  // A listed file of another size is not the manifest's (a site half deployed); an unlisted one
  // without validators could never be checked. Either is loaded, not kept.
  const worth = listed ? blob.size === listed.size : "etag" in headers || "last-modified" in headers;
  const put = () => store.put(key, new Response(blob, { headers })).catch((err) => console.warn(`aerix: the model was not cached: ${err?.message ?? err}`));
  let saving = null;
  return {
    blob,
    cached: false,
    keep: () => (saving ??= worth ? put() : Promise.resolve()),
    drop: () => Promise.resolve(saving).then(drop),
  };
}

/** The cache, or null where this browser has none for the page (an insecure origin, storage off). */
async function openCache() {
  try {
    return (await globalThis.caches?.open(MODEL_CACHE)) ?? null;
  } catch {
    return null;
  }
}

/**
 * `{sha256, size}` of the model at `key` in the manifest, or null: no manifest, the model is not
 * in its folder or not listed, or the manifest cannot be read (then the model is revalidated).
 */
async function listedVersion(manifest, key) {
  if (!manifest) return null;
  const where = new URL(manifest, pageUrl());
  if (!key.startsWith(new URL("./", where).href)) return null;
  try {
    const response = await fetch(where);
    if (!response.ok) return null;
    const { models } = await response.json();
    const found = models.find((m) => new URL(m.file, where).href === key);
    return typeof found?.sha256 === "string" && Number.isInteger(found.size) ? { sha256: found.sha256, size: found.size } : null;
  } catch {
    return null;
  }
}

async function download(url, init, report) {
  return readBody(url, await get(url, init), report);
}

async function get(url, init) {
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new Error(`could not fetch the model ${url}: ${err?.message ?? err}`, { cause: err });
  }
  if (!response.ok && response.status !== 304) {
    throw new Error(`could not fetch the model ${url}: HTTP ${response.status} ${response.statusText}`.trimEnd());
  }
  return response;
}

/** The body as a Blob, reporting the bytes as they arrive. */
async function readBody(url, response, report) {
  if (response.status === 304) throw new Error(`could not fetch the model ${url}: HTTP 304 to a request that asked for the file`);
  const total = Number(response.headers.get("content-length")) || undefined;
  if (!response.body) return response.blob();
  const parts = [];
  let loaded = 0;
  report(loaded, total);
  for (const reader = response.body.getReader(); ; ) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    loaded += value.byteLength;
    report(loaded, total);
  }
  return new Blob(parts);
}

async function checkMagic(blob, label) {
  const head = new Uint8Array(await blob.slice(0, 4).arrayBuffer());
  if (!GGUF_MAGIC.every((byte, i) => head[i] === byte)) {
    const seen = Array.from(head, (b) => b.toString(16).padStart(2, "0")).join(" ") || "nothing";
    throw new Error(`${label} is not a GGUF file (it starts with ${seen}, not "GGUF")`);
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

function pageUrl() {
  return globalThis.document?.baseURI ?? globalThis.location?.href;
}

const noop = () => {};
// llama.cpp logs every request, and warns each time a prompt is repeated word for word.
const QUIET_LOGGER = {
  debug: noop,
  log: noop,
  warn: noop,
  error: (...args) => console.error(...args),
};
