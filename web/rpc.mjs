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
 * @param {{postMessage: Function, addEventListener: Function}} port
 * @param {Record<string, Function>} handlers what the other side may call by name; a handler
 *   may return a value, a promise, or (for `stream`) an async iterable. `this` is the peer.
 */
export function connect(port, handlers = {}) {
  const local = new Map(); // id -> a function of ours the other side holds a reference to
  const unlinks = new Map(); // id -> removes the listener that forwards a signal of ours
  const pending = new Map(); // call id -> {resolve, reject, onItem}
  const iterators = new Map(); // call id -> the iterator a stream of ours is reading
  const signals = new Map(); // their signal id -> our AbortController
  let next = 1;
  let closed = null;

  const post = (message, buffers = []) => port.postMessage(message, buffers);

  // -- values out and in ---------------------------------------------------------------------

  function out(value, scope, buffers) {
    if (typeof value === "function") return ref("fn", value, scope);
    if (value === null || typeof value !== "object") return value;
    if (value[TAG] === "transfer") {
      buffers.push(...value.buffers);
      return out(value.value, scope, buffers);
    }
    if (globalThis.AbortSignal && value instanceof AbortSignal) return signalRef(value, scope);
    if (value instanceof Error) {
      return { [TAG]: "error", name: value.name, message: value.message, stack: value.stack, kind: value.kind, reason: value.reason };
    }
    if (ArrayBuffer.isView(value) || CLONEABLE.some((type) => value instanceof type)) return value;
    if (Array.isArray(value)) return value.map((v) => out(v, scope, buffers));
    const copy = {};
    for (const key of Object.keys(value)) copy[key] = out(value[key], scope, buffers);
    // an instance of a class: its methods too, bound to it (a store or channel object)
    for (let proto = Object.getPrototypeOf(value); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const key of Object.getOwnPropertyNames(proto)) {
        if (key !== "constructor" && !(key in copy) && typeof value[key] === "function") copy[key] = ref("fn", value[key].bind(value), scope);
      }
    }
    return copy;
  }

  function ref(kind, fn, scope) {
    const id = next++;
    local.set(id, fn);
    scope?.push(id);
    return { [TAG]: kind, id };
  }

  function signalRef(signal, scope) {
    const id = next++;
    const onAbort = () => post({ t: "abort", signal: id, reason: String(signal.reason ?? "aborted") });
    signal.addEventListener("abort", onAbort, { once: true });
    unlinks.set(id, () => signal.removeEventListener("abort", onAbort));
    scope?.push(id);
    return { [TAG]: "signal", id, aborted: signal.aborted };
  }

  function release(scope) {
    for (const id of scope ?? []) {
      local.delete(id);
      unlinks.get(id)?.();
      unlinks.delete(id);
    }
    if (scope?.length) post({ t: "release", ids: scope });
  }

  function inn(value) {
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value) || CLONEABLE.some((type) => value instanceof type)) return value;
    if (Array.isArray(value)) return value.map(inn);
    switch (value[TAG]) {
      case "fn":
        return remoteFunction(value.id);
      case "signal":
        return remoteSignal(value);
      case "error":
        return Object.assign(new Error(value.message), { name: value.name, stack: value.stack }, value.kind === undefined ? {} : { kind: value.kind, reason: value.reason ?? null });
    }
    const copy = {};
    for (const key of Object.keys(value)) copy[key] = inn(value[key]);
    return copy;
  }

  function remoteFunction(id) {
    return (...args) => request({ t: "call", fn: id }, args, [], null)[1];
  }

  function remoteSignal({ id, aborted }) {
    const controller = new AbortController();
    if (aborted) controller.abort();
    else signals.set(id, controller);
    return controller.signal;
  }

  // -- calls out -----------------------------------------------------------------------------

  /** Send a call: [its id, a promise of its result]; `scope` collects the refs made for its
   * arguments, released when it settles (null: kept). */
  function request(head, args, scope, onItem) {
    const id = next++;
    if (closed) return [id, Promise.reject(closed)];
    const buffers = [];
    const message = { ...head, id, args: out(args, scope, buffers) };
    const settled = new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, onItem, scope });
      post(message, buffers);
    });
    return [id, settled];
  }

  const peer = {
    /** Call the other side's handler `name`; resolves with what it returns. */
    call: (name, ...args) => request({ t: "call", name }, args, [], null)[1],
    /** The same, keeping the functions and signals passed for the peer's life. */
    keep: (name, ...args) => request({ t: "call", name }, args, null, null)[1],
    /** An async iterator over the other side's handler `name` (which returns an async iterable);
     * its `return` value ends up as the iterator's final value. */
    stream: (name, ...args) => remoteStream(name, args),
    /** Fail every call in flight (the other side died) and refuse new ones. */
    close(error) {
      closed = error ?? new Error("the aerix worker has stopped");
      for (const { reject } of pending.values()) reject(closed);
      pending.clear();
    },
  };

  function remoteStream(name, args) {
    const items = [];
    let wake = null;
    let finished = false;
    const [id, settled] = request({ t: "stream", name }, args, [], (item) => {
      items.push(item);
      wake?.();
    });
    let outcome = null;
    settled.then(
      (value) => (outcome = { value }),
      (error) => (outcome = { error }),
    ).finally(() => wake?.());
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

  async function answer(message) {
    const { id } = message;
    try {
      const target = message.fn !== undefined ? local.get(message.fn) : handlers[message.name];
      if (typeof target !== "function") {
        throw new Error(message.fn !== undefined ? "this function was passed for one call, which has ended" : `no handler ${JSON.stringify(message.name)}`);
      }
      const value = await target.apply(peer, inn(message.args));
      if (message.t === "stream") {
        const iterator = value[Symbol.asyncIterator]();
        iterators.set(id, iterator);
        let step;
        while (!(step = await iterator.next()).done) {
          const buffers = [];
          post({ t: "item", id, value: out(step.value, null, buffers) }, buffers);
        }
        return reply(id, step.value);
      }
      reply(id, value);
    } catch (error) {
      post({ t: "err", id, error: out(error instanceof Error ? error : new Error(String(error)), null, []) });
    } finally {
      iterators.delete(id);
    }
  }

  // a function in a result (not something aerix returns) stays callable for the peer's life
  function reply(id, value) {
    const buffers = [];
    post({ t: "ok", id, value: out(value, null, buffers) }, buffers);
  }

  port.addEventListener("message", ({ data }) => {
    switch (data?.t) {
      case "call":
      case "stream":
        answer(data);
        break;
      case "item": {
        const call = pending.get(data.id);
        call?.onItem?.(inn(data.value));
        break;
      }
      case "ok":
      case "err": {
        const call = pending.get(data.id);
        if (!call) break;
        pending.delete(data.id);
        release(call.scope);
        if (data.t === "ok") call.resolve(inn(data.value));
        else call.reject(inn(data.error));
        break;
      }
      case "close":
        iterators.get(data.id)?.return?.();
        break;
      case "abort":
        signals.get(data.signal)?.abort(data.reason);
        signals.delete(data.signal);
        break;
      case "release":
        for (const id of data.ids) signals.delete(id);
        break;
    }
  });
  port.start?.();
  return peer;
}
