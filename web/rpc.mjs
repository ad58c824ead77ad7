/**
 * One message channel between the page and the worker runtime (worker.mjs), used the same way
 * from both ends: call a named handler on the other side, stream an async iterator from it, and
 * pass functions and abort signals as if they were local.
 *
 *   const peer = connect(worker, { add: (a, b) => a + b, *count(n) { for (let i = 0; i < n; i++) yield i; } });
 *   await peer.call("add", 1, 2);                  // 3, from the other side's handlers
 *   for await (const i of peer.stream("count", 3)) ...
 *
 * What crosses:
 * - values as structured clone does (Blobs, Files and typed arrays included; Blobs by reference);
 *   `transfer(value, [buffers])` hands buffers over instead of copying them (a result the sender
 *   made for the receiver only: never a buffer someone else still holds);
 * - a function (anywhere in plain objects and arrays, or a method of a class instance) as a
 *   reference: calling it calls the original on its side and resolves with what it returns;
 * - an AbortSignal as a reference: the other side gets a signal of its own that aborts when the
 *   original does;
 * - an Error with its name, message, `kind`, `reason` and stack.
 * The references a call passes live until the call settles (a stream: until it ends), so a
 * tool's `ctx` is released with the tool call; `keep()` them instead for the peer's life (an
 * agent's tools). Calling a released function rejects, naming why.
 * Leaving a stream early (`break`, `return()`) closes the iterator on the other side.
 *
 * @module rpc
 */

const TAG = "__aerix_rpc__";
const CLONEABLE = [globalThis.Blob, globalThis.ArrayBuffer, globalThis.Date, globalThis.RegExp, globalThis.Map, globalThis.Set].filter(Boolean);

/** A value to send with its buffers transferred, not copied. */
export function transfer(value, buffers) {
  return { [TAG]: "transfer", value, buffers };
}

/**
 * The peer at the other end of `port` (a Worker, the worker's `self`, or a MessagePort).
 * @param {Port} port
 * @param {Record<string, Function>} handlers what the other side may call by name; a handler
 *   may return a value, a promise, or (for `stream`) an async iterable. `this` is the peer.
 */
export function connect(port, handlers = {}) {
  return new Channel(port, handlers).peer;
}

/** @typedef {{postMessage: Function, addEventListener: Function, start?: () => void}} Port */

/** One end of the channel: the references it holds for the other side, and its calls in flight. */
class Channel {
  local = new Map(); // id -> a function of ours the other side holds a reference to
  unlinks = new Map(); // id -> removes the listener that forwards a signal of ours
  /** @type {Map<number, {resolve: (value: any) => void, reject: (error: any) => void, onItem: ((item: any) => void)|null, scope: number[]|null}>} */
  pending = new Map(); // call id -> {resolve, reject, onItem, scope}
  iterators = new Map(); // call id -> the iterator a stream of ours is reading
  signals = new Map(); // their signal id -> our AbortController
  next = 1;
  /** @type {Error|null} */
  closed = null;

  /**
   * @param {Port} port
   * @param {Record<string, Function>} handlers
   */
  constructor(port, handlers) {
    this.port = port;
    this.handlers = handlers;
    this.peer = {
      /** Call the other side's handler `name`; resolves with what it returns. */
      call: (/** @type {string} */ name, /** @type {any[]} */ ...args) => this.request({ t: "call", name }, args, [], null)[1],
      /** The same, keeping the functions and signals passed for the peer's life. */
      keep: (/** @type {string} */ name, /** @type {any[]} */ ...args) => this.request({ t: "call", name }, args, null, null)[1],
      /** An async iterator over the other side's handler `name` (which returns an async iterable);
       * its `return` value ends up as the iterator's final value. */
      stream: (/** @type {string} */ name, /** @type {any[]} */ ...args) => this.remoteStream(name, args),
      /** Fail every call in flight (the other side died) and refuse new ones. */
      close: (/** @type {Error} */ error) => {
        this.closed = error ?? new Error("the aerix worker has stopped");
        for (const { reject } of this.pending.values()) reject(this.closed);
        this.pending.clear();
      },
    };
    port.addEventListener("message", (/** @type {MessageEvent} */ { data }) => this.receive(data));
    port.start?.();
  }

  /**
   * @param {any} message
   * @param {Transferable[]} [buffers]
   */
  post(message, buffers = []) {
    this.port.postMessage(message, buffers);
  }

  // -- values out and in ---------------------------------------------------------------------

  /**
   * A value as it crosses: functions and signals as references (their ids pushed on `scope`,
   * released with it; null: kept), errors as data, transferred buffers pushed on `buffers`.
   * @param {any} value
   * @param {number[]|null} scope
   * @param {Transferable[]} buffers
   * @returns {any}
   */
  out(value, scope, buffers) {
    if (typeof value === "function") return this.ref("fn", value, scope);
    if (value === null || typeof value !== "object") return value;
    if (value[TAG] === "transfer") {
      buffers.push(...value.buffers);
      return this.out(value.value, scope, buffers);
    }
    if (globalThis.AbortSignal && value instanceof AbortSignal) return this.signalRef(value, scope);
    if (value instanceof Error) {
      const { kind, reason } = /** @type {Error & {kind?: string, reason?: unknown}} */ (value);
      return { [TAG]: "error", name: value.name, message: value.message, stack: value.stack, kind, reason };
    }
    if (ArrayBuffer.isView(value) || CLONEABLE.some((type) => value instanceof type)) return value;
    if (Array.isArray(value)) return value.map((v) => this.out(v, scope, buffers));
    /** @type {Record<string, any>} */
    const copy = {};
    for (const key of Object.keys(value)) copy[key] = this.out(value[key], scope, buffers);
    // an instance of a class: its methods too, bound to it (a store or channel object)
    for (let proto = Object.getPrototypeOf(value); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const key of Object.getOwnPropertyNames(proto)) {
        if (key !== "constructor" && !(key in copy) && typeof value[key] === "function") copy[key] = this.ref("fn", value[key].bind(value), scope);
      }
    }
    return copy;
  }

  /**
   * @param {string} kind
   * @param {Function} fn
   * @param {number[]|null} scope
   */
  ref(kind, fn, scope) {
    const id = this.next++;
    this.local.set(id, fn);
    scope?.push(id);
    return { [TAG]: kind, id };
  }

  /**
   * @param {AbortSignal} signal
   * @param {number[]|null} scope
   */
  signalRef(signal, scope) {
    const id = this.next++;
    const onAbort = () => this.post({ t: "abort", signal: id, reason: String(signal.reason ?? "aborted") });
    signal.addEventListener("abort", onAbort, { once: true });
    this.unlinks.set(id, () => signal.removeEventListener("abort", onAbort));
    scope?.push(id);
    return { [TAG]: "signal", id, aborted: signal.aborted };
  }

  /** @param {number[]|null} scope */
  release(scope) {
    for (const id of scope ?? []) {
      this.local.delete(id);
      this.unlinks.get(id)?.();
      this.unlinks.delete(id);
    }
    if (scope?.length) this.post({ t: "release", ids: scope });
  }

  /**
   * A value as it arrives: references become functions and signals of ours, errors Errors.
   * @param {any} value
   * @returns {any}
   */
  inn(value) {
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value) || CLONEABLE.some((type) => value instanceof type)) return value;
    if (Array.isArray(value)) return value.map((v) => this.inn(v));
    switch (value[TAG]) {
      case "fn":
        return (/** @type {any[]} */ ...args) => this.request({ t: "call", fn: value.id }, args, [], null)[1];
      case "signal":
        return this.remoteSignal(value);
      case "error":
        return Object.assign(new Error(value.message), { name: value.name, stack: value.stack }, value.kind === undefined ? {} : { kind: value.kind, reason: value.reason ?? null });
    }
    /** @type {Record<string, any>} */
    const copy = {};
    for (const key of Object.keys(value)) copy[key] = this.inn(value[key]);
    return copy;
  }

  /** @param {{id: number, aborted: boolean}} ref */
  remoteSignal({ id, aborted }) {
    const controller = new AbortController();
    if (aborted) controller.abort();
    else this.signals.set(id, controller);
    return controller.signal;
  }

  // -- calls out -----------------------------------------------------------------------------

  /**
   * Send a call: [its id, a promise of its result]; `scope` collects the refs made for its
   * arguments, released when it settles (null: kept).
   * @param {object} head
   * @param {any[]} args
   * @param {number[]|null} scope
   * @param {((item: any) => void)|null} onItem
   * @returns {[number, Promise<any>]}
   */
  request(head, args, scope, onItem) {
    const id = this.next++;
    if (this.closed) return [id, Promise.reject(this.closed)];
    /** @type {Transferable[]} */
    const buffers = [];
    const message = { ...head, id, args: this.out(args, scope, buffers) };
    const settled = new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onItem, scope });
      this.post(message, buffers);
    });
    return [id, settled];
  }

  /**
   * @param {string} name
   * @param {any[]} args
   * @returns {AsyncIterableIterator<any>}
   */
  remoteStream(name, args) {
    /** @type {any[]} */
    const items = [];
    /** @type {((value?: unknown) => void)|null} */
    let wake = null;
    let finished = false;
    const [id, settled] = this.request({ t: "stream", name }, args, [], (item) => {
      items.push(item);
      wake?.();
    });
    /** @type {{value?: any, error?: any}|null} */
    let outcome = null;
    settled.then(
      (value) => (outcome = { value }),
      (error) => (outcome = { error }),
    ).finally(() => wake?.());
    const post = (/** @type {any} */ message) => this.post(message);
    return {
      [Symbol.asyncIterator]() {
        return this;
      },
      async next() {
        while (!items.length && !outcome) await new Promise((resolve) => (wake = resolve));
        wake = null;
        if (items.length) return { value: items.shift(), done: false };
        finished = true;
        if (outcome.error) throw outcome.error;
        return { value: outcome.value, done: true };
      },
      async return(value) {
        if (!finished && !outcome) {
          finished = true;
          post({ t: "close", id });
          await settled.catch(() => {});
        }
        return { value, done: true };
      },
    };
  }

  // -- calls in ------------------------------------------------------------------------------

  /** @param {{t: string, id: number, fn?: number, name?: string, args: any}} message */
  async answer(message) {
    const { id } = message;
    try {
      const target = message.fn !== undefined ? this.local.get(message.fn) : this.handlers[message.name];
      if (typeof target !== "function") {
        throw new Error(message.fn !== undefined ? "this function was passed for one call, which has ended" : `no handler ${JSON.stringify(message.name)}`);
      }
      const value = await target.apply(this.peer, this.inn(message.args));
      if (message.t === "stream") {
        const iterator = value[Symbol.asyncIterator]();
        this.iterators.set(id, iterator);
        let step;
        while (!(step = await iterator.next()).done) {
          /** @type {Transferable[]} */
          const buffers = [];
          this.post({ t: "item", id, value: this.out(step.value, null, buffers) }, buffers);
        }
        return this.reply(id, step.value);
      }
      this.reply(id, value);
    } catch (error) {
      this.post({ t: "err", id, error: this.out(error instanceof Error ? error : new Error(String(error)), null, []) });
    } finally {
      this.iterators.delete(id);
    }
  }

  /**
   * A function in a result (not something aerix returns) stays callable for the peer's life.
   * @param {number} id
   * @param {any} value
   */
  reply(id, value) {
    /** @type {Transferable[]} */
    const buffers = [];
    this.post({ t: "ok", id, value: this.out(value, null, buffers) }, buffers);
  }

  /** @param {any} data one message from the other side */
  receive(data) {
    switch (data?.t) {
      case "call":
      case "stream":
        this.answer(data);
        break;
      case "item":
        this.pending.get(data.id)?.onItem?.(this.inn(data.value));
        break;
      case "ok":
      case "err": {
        const call = this.pending.get(data.id);
        if (!call) break;
        this.pending.delete(data.id);
        this.release(call.scope);
        if (data.t === "ok") call.resolve(this.inn(data.value));
        else call.reject(this.inn(data.error));
        break;
      }
      case "close":
        this.iterators.get(data.id)?.return?.();
        break;
      case "abort":
        this.signals.get(data.signal)?.abort(data.reason);
        this.signals.delete(data.signal);
        break;
      case "release":
        for (const id of data.ids) this.signals.delete(id);
        break;
    }
  }
}
