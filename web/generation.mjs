/**
 * The generation bridge: one generation as an async iterator of deltas over wllama's streaming
 * callback (`chat`), the errors a caller tells apart, and the queue that gives one wllama
 * instance one generation at a time (`EngineQueue`). engine.mjs builds an engine on these.
 *
 * ONE AT A TIME. llama.cpp's server core in wllama has parallel slots: two requests sent together
 * are decoded interleaved on one model, each slowed by the other, sharing one KV cache. So every
 * request an engine sends (an agent's turn, `choose`'s log-probability request, a compaction
 * summary: each is an `engine.chat`) waits for its turn in the engine's queue, in the order they
 * asked. A request aborted while it waits leaves the queue at once (its iterator throws the
 * abort) and never reaches the engine; one that fails frees the engine for the next. The engine
 * is free again when wllama's request settles (after an abort, once llama.cpp has cancelled it),
 * not when its reader stops reading: a reader that leaves its deltas unread holds up no one.
 * The queue lives where the engine does, so it holds in both modes (in worker mode the engine
 * runs in the worker). An OpenAI-compatible server (`engine: {baseUrl}`) is not behind it: a
 * server queues (or batches) its own requests.
 *
 * @module generation
 */

import { buildRequest } from "./prompt.mjs";

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
  /** @param {unknown} cause */
  constructor(cause) {
    super(
      "the engine produced bytes that are not valid UTF-8 and could not return its reply " +
        `(${/** @type {Error} */ (cause)?.message ?? cause})`,
    );
    this.name = "EngineBadOutput";
    this.cause = cause;
  }
}

/** Requests to one engine, one at a time, in the order they asked (see ONE AT A TIME). */
export class EngineQueue {
  /** @type {{start: () => void, cancel: () => void}[]} */
  #waiting = [];
  #busy = false;

  /** How many requests wait for the engine (the one it runs not counted). */
  get waiting() {
    return this.#waiting.length;
  }

  /**
   * Wait for the engine. Resolves with the function that frees it (call it once the request has
   * settled; a second call does nothing); rejects with EngineAbortError, leaving the queue, when
   * `signal` aborts first.
   * @param {AbortSignal} signal
   * @returns {Promise<() => void>}
   */
  acquire(signal) {
    if (signal.aborted) return Promise.reject(new EngineAbortError());
    return new Promise((resolve, reject) => {
      if (!this.#busy) {
        this.#busy = true;
        resolve(this.#freer());
        return;
      }
      const waiter = {
        start: () => {
          signal.removeEventListener("abort", waiter.cancel);
          resolve(this.#freer());
        },
        cancel: () => {
          this.#waiting.splice(this.#waiting.indexOf(waiter), 1);
          reject(new EngineAbortError());
        },
      };
      signal.addEventListener("abort", waiter.cancel, { once: true });
      this.#waiting.push(waiter);
    });
  }

  /** @returns {() => void} */
  #freer() {
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const next = this.#waiting.shift();
      if (next) next.start();
      else this.#busy = false;
    };
  }
}

/**
 * @typedef {object} ChatOptions
 * @property {number} [max_tokens]
 * @property {object|null} [constraint] a JSON Schema every reply must match (llama.cpp turns it into a grammar)
 * @property {AbortSignal} [signal] stops the generation when it aborts (or takes it out of the queue)
 * @property {object} [generation] sampling settings passed to the engine as they are (temperature, top_p, seed, ...)
 * @property {number} [top_logprobs] ask for log-probabilities: each generated token's `top_logprobs` likeliest
 *   tokens (llama.cpp's `n_probs`, the model's own distribution before sampling), yielded as `logprobs` deltas
 * @property {number} [batchMs=0] wait at least this long between two text deltas, joining the text that
 *   arrives meanwhile (the first delta and the last are never held back). For consumers that pay for
 *   each delta: the Python bridge does, one crossing into Python and one back out per delta.
 */

/**
 * @typedef {{token: string, logprob: number, top_logprobs: {token: string, logprob: number}[]}} TokenLogprobs
 * @typedef {{prompt_tokens: number, completion_tokens: number, cached_tokens: number}} Usage
 * @typedef {{type: "text", text: string}
 *   | {type: "logprobs", content: TokenLogprobs[]}
 *   | {type: "done", finish_reason: "stop"|"length", usage: Usage}} Delta
 */

/**
 * What a generation needs of its engine.
 * @typedef {object} Bridge
 * @property {import("@wllama/wllama").Wllama} wllama
 * @property {EngineQueue} queue
 * @property {{push: (request: object) => unknown}|undefined} requests where each request sent is recorded
 * @property {Promise<"text"|"chat">} promptMode
 * @property {boolean} thinks the template can think (Qwen 3): it is asked not to
 */

/**
 * One generation as an async iterator of deltas. The messages are copied when it is called, so
 * a caller that changes its array afterwards does not change this generation.
 * @param {Bridge} bridge
 * @param {{role: string, content: string}[]} messages
 * @param {ChatOptions} [options]
 * @returns {AsyncGenerator<Delta, void, undefined>}
 */
export function chat(bridge, messages, options) {
  const opts = options ?? {};
  const turns = Array.from(messages, (m) => ({ role: String(m.role), content: String(m.content) }));
  return (async function* () {
    const request = buildRequest(turns, opts, await bridge.promptMode, bridge.thinks);
    yield* generate(bridge, request, opts.signal, Number(opts.batchMs) || 0, opts.top_logprobs > 0);
  })();
}

/**
 * wllama's chunks of one request as they arrive, and a way to wait for more.
 * @typedef {object} Inbox
 * @property {any[]} chunks received, not yet read
 * @property {boolean} settled wllama's request has ended (all its chunks are in `chunks`)
 * @property {unknown} failure why it failed, if it did
 * @property {(ms?: number) => Promise<void>} wait until a chunk arrives, the request settles, the
 *   signal aborts, or `ms` pass
 * @property {() => void} notify end the current `wait`
 */

/** @returns {Inbox} */
function inbox() {
  /** @type {(() => void)|null} */
  let wake = null;
  /** @type {Inbox} */
  const box = {
    chunks: [],
    settled: false,
    failure: null,
    notify: () => {
      const resume = wake;
      wake = null;
      resume?.();
    },
    wait: (ms) =>
      new Promise((resolve) => {
        wake = resolve;
        if (ms !== undefined) setTimeout(box.notify, ms);
      }),
  };
  return box;
}

/**
 * Send `request` to wllama (its chat endpoint, or its completion endpoint for a text prompt),
 * its chunks into `box`; resolves when it settles, never rejects (a failure is `box.failure`).
 * @param {import("@wllama/wllama").Wllama} wllama
 * @param {Record<string, any>} request
 * @param {AbortSignal} signal
 * @param {Inbox} box
 * @returns {Promise<void>}
 */
function send(wllama, request, signal, box) {
  const create = request.prompt === undefined ? wllama.createChatCompletion : wllama.createCompletion;
  // The callback form lets us own the queue: wllama's own iterator leaves a rejected promise
  // unhandled when its reader stops early.
  const onData = (/** @type {any} */ chunk) => {
    box.chunks.push(chunk);
    box.notify();
  };
  const settle = (/** @type {unknown} */ failure) => {
    box.settled = true;
    box.failure = failure;
    box.notify();
  };
  return create.call(wllama, { ...request, abortSignal: signal, onData }).then(() => settle(null), settle);
}

/**
 * The chunks that arrived as one text and the log-probabilities they carry; notes the finish
 * reason and usage in `state` as they come.
 * @param {any[]} chunks
 * @param {boolean} withLogprobs
 * @param {{finish_reason: string|null, usage: any}} state
 */
function merge(chunks, withLogprobs, state) {
  let text = "";
  /** @type {TokenLogprobs[]} */
  const logprobs = [];
  for (const chunk of chunks) {
    // Chat chunks: the first carries only the role (content null). Text chunks carry `text`.
    // The usage chunk may have no choices.
    const choice = chunk.choices?.[0];
    if (choice?.finish_reason) state.finish_reason = choice.finish_reason;
    if (chunk.usage) state.usage = chunk.usage;
    text += choice?.delta?.content ?? choice?.text ?? "";
    // Only when the caller asked (top_logprobs): each token's chunk carries them, on both endpoints.
    if (withLogprobs && Array.isArray(choice?.logprobs?.content)) logprobs.push(...choice.logprobs.content);
  }
  return { text, logprobs };
}

/**
 * One request, from its turn in the queue to its `done` delta. The engine stops only through its
 * abort signal: leaving the loop early (which calls `return()`) must abort too, or llama.cpp
 * keeps generating in the background and slows every later call.
 * @param {Bridge} bridge
 * @param {Record<string, any>} request
 * @param {AbortSignal|undefined} signal
 * @param {number} batchMs
 * @param {boolean} withLogprobs
 * @returns {AsyncGenerator<Delta, void, undefined>}
 */
async function* generate({ wllama, queue, requests }, request, signal, batchMs, withLogprobs) {
  const controller = new AbortController();
  const unlink = linkSignal(signal, controller);
  const box = inbox();
  controller.signal.addEventListener("abort", box.notify);
  const state = { finish_reason: null, usage: null };
  let free = () => {};
  try {
    free = await queue.acquire(controller.signal);
    if (controller.signal.aborted) throw new EngineAbortError();
    requests?.push(structuredClone(request));
    send(wllama, request, controller.signal, box).finally(free);
    free = () => {}; // the engine is free once wllama's request settles

    let lastYield = -Infinity;
    for (;;) {
      if (controller.signal.aborted) throw new EngineAbortError();
      const hold = lastYield + batchMs - performance.now();
      if (box.chunks.length === 0 || (hold > 0 && !box.settled)) {
        if (box.chunks.length === 0 && box.settled) break;
        await box.wait(box.chunks.length > 0 ? hold : undefined);
        continue;
      }
      // Whatever arrived while the consumer was busy goes out as one delta: each delta costs a
      // crossing into Python and back, so a slow consumer gets fewer, larger deltas.
      const { text, logprobs } = merge(box.chunks.splice(0), withLogprobs, state);
      if (text) {
        yield { type: "text", text };
        lastYield = performance.now();
      }
      if (logprobs.length > 0) yield { type: "logprobs", content: logprobs };
    }
    if (box.failure) throw engineError(box.failure);
    const { usage } = state;
    yield {
      type: "done",
      finish_reason: state.finish_reason === "length" ? "length" : "stop",
      usage: {
        prompt_tokens: usage?.prompt_tokens ?? 0,
        completion_tokens: usage?.completion_tokens ?? 0,
        cached_tokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
      },
    };
  } finally {
    unlink();
    controller.signal.removeEventListener("abort", box.notify);
    if (!box.settled) controller.abort();
    free();
  }
}

/**
 * Make `controller` follow the caller's AbortSignal (Python sends one too: the run's signal,
 * made real per generation by aerix's JS edge).
 * @param {AbortSignal|undefined} signal
 * @param {AbortController} controller
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

/** @param {any} err */
function engineError(err) {
  if (err?.name === "AbortError") return new EngineAbortError();
  const message = String(err?.message ?? err);
  if (err instanceof RangeError || /Invalid typed array length/.test(message)) {
    return new EngineBadOutputError(err);
  }
  return err instanceof Error ? err : new Error(message);
}
