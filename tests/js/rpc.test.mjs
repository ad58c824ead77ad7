// The message channel between the page and the worker runtime (web/rpc.mjs), over a real
// MessageChannel: what the worker mode relies on, without a browser.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { connect, transfer } from "../../web/rpc.mjs";

function pair(left = {}, right = {}) {
  const { port1, port2 } = new MessageChannel();
  const a = connect(port1, left);
  const b = connect(port2, right);
  return { a, b, close: () => (port1.close(), port2.close()) };
}

const tick = (ms = 5) => new Promise((resolve) => setTimeout(resolve, ms));

describe("rpc", () => {
  test("a call gets the handler's value; an error keeps its name, kind and reason", async () => {
    const { a, close } = pair({}, {
      add: (x, y) => x + y,
      fail: () => {
        throw Object.assign(new Error("busy now"), { name: "AerixError", kind: "busy", reason: "lease" });
      },
      plain: () => {
        throw new TypeError("bad");
      },
    });
    try {
      assert.equal(await a.call("add", 2, 3), 5);
      await assert.rejects(a.call("fail"), (e) => e.name === "AerixError" && e.kind === "busy" && e.reason === "lease" && e.message === "busy now");
      await assert.rejects(a.call("plain"), (e) => e.name === "TypeError" && e.kind === undefined);
      await assert.rejects(a.call("missing"), /no handler "missing"/);
    } finally {
      close();
    }
  });

  test("a function passed runs on its own side, with its arguments and result crossing back", async () => {
    const seen = [];
    const { a, close } = pair({}, { useTool: async (tool) => (await tool({ city: "Porto" }, { callId: "c1" })) + "!" });
    try {
      const value = await a.call("useTool", async (input, ctx) => {
        seen.push([input, ctx]);
        return `sunny in ${input.city}`;
      });
      assert.equal(value, "sunny in Porto!");
      assert.deepEqual(seen, [[{ city: "Porto" }, { callId: "c1" }]]);
    } finally {
      close();
    }
  });

  test("functions passed for one call are released when it ends; kept ones stay", async () => {
    let held = null;
    const { a, close } = pair({}, { hold: (fn) => void (held = fn), callHeld: () => held() });
    try {
      await a.call("hold", () => "once");
      await assert.rejects(a.call("callHeld"), /passed for one call, which has ended/);
      await a.keep("hold", () => "kept");
      assert.equal(await a.call("callHeld"), "kept");
    } finally {
      close();
    }
  });

  test("a class instance crosses with its methods (a store object)", async () => {
    class Store {
      constructor() {
        this.items = ["x"];
      }
      count() {
        return this.items.length;
      }
    }
    const { a, close } = pair({}, { size: async (store) => store.count() });
    try {
      assert.equal(await a.call("size", new Store()), 1);
    } finally {
      close();
    }
  });

  test("an abort signal crosses: the other side's copy aborts when the original does", async () => {
    const { a, close } = pair({}, {
      wait: (signal) =>
        new Promise((resolve) => {
          if (signal.aborted) resolve("aborted before");
          signal.addEventListener("abort", () => resolve(`aborted: ${signal.reason}`));
        }),
    });
    try {
      const controller = new AbortController();
      const waiting = a.call("wait", controller.signal);
      await tick();
      controller.abort("stop");
      assert.equal(await waiting, "aborted: stop");
      assert.equal(await a.call("wait", AbortSignal.abort()), "aborted before");
    } finally {
      close();
    }
  });

  test("a stream yields the items, then its return value; Blobs and bytes cross", async () => {
    const { a, close } = pair({}, {
      async *count(n) {
        for (let i = 0; i < n; i++) yield { i, bytes: new Uint8Array([i]) };
        return { done: n };
      },
      blob: () => new Blob(["hello"], { type: "text/plain" }),
    });
    try {
      const stream = a.stream("count", 3);
      const items = [];
      let step;
      while (!(step = await stream.next()).done) items.push(step.value);
      assert.deepEqual(items.map((x) => [x.i, [...x.bytes]]), [[0, [0]], [1, [1]], [2, [2]]]);
      assert.deepEqual(step.value, { done: 3 });
      const blob = await a.call("blob");
      assert.equal(await blob.text(), "hello");
      assert.equal(blob.type, "text/plain");
    } finally {
      close();
    }
  });

  test("leaving a stream early closes the iterator on the other side", async () => {
    let closed = false;
    const { a, close } = pair({}, {
      async *forever() {
        try {
          for (let i = 0; ; i++) {
            yield i;
            await tick(1);
          }
        } finally {
          closed = true;
        }
      },
    });
    try {
      const got = [];
      for await (const i of a.stream("forever")) {
        got.push(i);
        if (got.length === 3) break;
      }
      assert.deepEqual(got, [0, 1, 2]);
      assert.equal(closed, true);
    } finally {
      close();
    }
  });

  test("an error inside a stream rejects the reader after the items before it", async () => {
    const { a, close } = pair({}, {
      async *broken() {
        yield 1;
        throw Object.assign(new Error("store failed"), { name: "AerixError", kind: "store", reason: null });
      },
    });
    try {
      const got = [];
      await assert.rejects(
        (async () => {
          for await (const i of a.stream("broken")) got.push(i);
        })(),
        (e) => e.kind === "store",
      );
      assert.deepEqual(got, [1]);
    } finally {
      close();
    }
  });

  test("transfer() hands a buffer over: it arrives whole and the sender's copy is detached", async () => {
    const bytes = new Uint8Array([1, 2, 3]);
    const { a, close } = pair({}, { take: () => transfer({ bytes }, [bytes.buffer]) });
    try {
      const got = await a.call("take");
      assert.deepEqual([...got.bytes], [1, 2, 3]);
      assert.equal(bytes.byteLength, 0, "the sender's buffer was copied, not transferred");
    } finally {
      close();
    }
  });

  test("close() fails the calls in flight with its error, and later ones", async () => {
    const { a, close } = pair({}, { never: () => new Promise(() => {}) });
    try {
      const inFlight = a.call("never");
      a.close(new Error("the worker died"));
      await assert.rejects(inFlight, /the worker died/);
      await assert.rejects(a.call("never"), /the worker died/);
    } finally {
      close();
    }
  });
});
