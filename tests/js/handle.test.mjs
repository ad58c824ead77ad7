// The agent handle of both modes (web/handle.mjs, runtime.mjs's wrapAgent, remote.mjs over the
// worker's handlers on a real MessageChannel), down to the call into Python, which a fake
// PageAgent records (fake-runtime.mjs): the same names, and the same calls reach Python.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { RUN_OPTIONS, START_OPTIONS, refOf } from "../../web/handle.mjs";
import { pageHandle, workerSide } from "./fake-runtime.mjs";

const isOptionsError = (words) => (e) => e.name === "AerixError" && e.kind === "options" && e.message.includes(words);

async function drain(events) {
  const all = [];
  for await (const ev of events) all.push(ev);
  return all;
}

/** Each mode: a handle, and what reached "Python" (the calls of its fake PageAgent). */
const MODES = {
  page: async () => {
    const calls = [];
    return { agent: pageHandle(calls, "page-ref"), calls };
  },
  worker: async () => {
    const calls = [];
    const side = await workerSide(calls);
    const agent = side.agent({ name: "w" });
    await agent.ready;
    return { agent, calls, close: side.close };
  },
};

describe("the agent handle of both modes", () => {
  test("has the same names in both", async () => {
    const page = await MODES.page();
    const remote = await MODES.worker();
    try {
      assert.deepEqual(Object.keys(remote.agent).sort(), Object.keys(page.agent).sort());
      assert.deepEqual(Object.keys(remote.agent.state).sort(), Object.keys(page.agent.state).sort());
      assert.deepEqual(Object.keys(remote.agent.state.collection("c")).sort(), Object.keys(page.agent.state.collection("c")).sort());
      for (const name of ["asTool", "state", "getRun"]) assert.ok(name in page.agent, name);
    } finally {
      remote.close();
    }
  });

  for (const [mode, make] of Object.entries(MODES)) {
    test(`${mode}: every run option reaches Python's run, concurrencyKey included; an unknown one is refused`, async () => {
      const { agent, calls, close } = await make();
      try {
        const given = Object.fromEntries(RUN_OPTIONS.filter((k) => k !== "signal").map((k) => [k, `v-${k}`]));
        const events = await drain(agent.run("hello", given));
        assert.deepEqual(events.map((e) => e.type), ["final"]);
        const [name, prompt, signal, ...rest] = calls.find((c) => c[0] === "run");
        assert.equal(name, "run");
        assert.equal(prompt, "hello");
        assert.ok(signal === null || signal instanceof AbortSignal);
        // PageAgent.run(prompt, signal, run_id, idempotency_key, invoker, attachments, source, concurrency_key)
        assert.deepEqual(rest, ["runId", "idempotencyKey", "invoker", "attachments", "source", "concurrencyKey"].map((k) => `v-${k}`));
        assert.throws(() => agent.run("hello", { concurrency_key: "k" }), isOptionsError('unknown run option(s) ["concurrency_key"]'));
      } finally {
        close?.();
      }
    });

    test(`${mode}: system and schema are the agent's the conversation is with, after a run that handed it over`, async () => {
      const { agent, close } = await make();
      try {
        assert.deepEqual([agent.system, agent.schema], ["system", null]);
        await drain(agent.run("hello"));
        assert.deepEqual([agent.system, agent.schema], ["the target's system", { title: "the target's schema" }]);
      } finally {
        close?.();
      }
    });

    test(`${mode}: traces() is one call into Python's traces, its spans as plain data`, async () => {
      const { agent, calls, close } = await make();
      try {
        const traces = await agent.traces();
        assert.deepEqual(traces, [[{ name: "invoke_agent a", spanId: "1", parentId: null, startMs: 1.5, durationMs: 2 }]]);
        assert.deepEqual(calls.filter((c) => c[0] === "traces"), [["traces"]]);
      } finally {
        close?.();
      }
    });

    test(`${mode}: prefill is one call into Python's prefill with the signal (or null)`, async () => {
      const { agent, calls, close } = await make();
      try {
        await agent.prefill();
        await agent.prefill({ signal: new AbortController().signal });
        const made = calls.filter((c) => c[0] === "prefill");
        assert.equal(made.length, 2);
        assert.equal(made[0][1], null);
        assert.ok(made[1][1] instanceof AbortSignal);
      } finally {
        close?.();
      }
    });

    test(`${mode}: start takes concurrencyKey; getRun asks Python`, async () => {
      const { agent, calls, close } = await make();
      try {
        assert.deepEqual(await agent.start("p", { runId: "r1", concurrencyKey: "inbox" }), { id: "r1", status: "queued" });
        assert.deepEqual(calls.find((c) => c[0] === "start"), ["start", "p", "r1", null, null, "inbox"]);
        assert.equal(await agent.getRun("r1"), null);
        assert.deepEqual(calls.find((c) => c[0] === "get_run"), ["get_run", "r1"]);
        assert.throws(() => agent.start("p", { signal: null }), isOptionsError('unknown start option(s) ["signal"]'));
        assert.deepEqual([...START_OPTIONS].sort(), ["concurrencyKey", "idempotencyKey", "invoker", "runId"]);
      } finally {
        close?.();
      }
    });

    test(`${mode}: agent.state's methods are one call each into Python's state_call, as promises`, async () => {
      const { agent, calls, close } = await make();
      try {
        const state = agent.state;
        const todos = state.collection("todos");
        const made = [state.load(), state.get("theme", "light"), state.set("theme", { dark: true }), state.delete("theme"), state.tainted("theme"),
          todos.list(), todos.get("t1"), todos.upsert({ id: "t1", title: "Milk" }), todos.remove("t1"), todos.tainted("t1")];
        assert.ok(made.every((p) => p instanceof Promise));
        await Promise.all(made);
        assert.deepEqual(calls.filter((c) => c[0] === "state"), [
          ["state", "load", null, []],
          ["state", "get", null, ["theme", "light"]],
          ["state", "set", null, ["theme", { dark: true }]],
          ["state", "delete", null, ["theme"]],
          ["state", "tainted", null, ["theme"]],
          ["state", "list", "todos", []],
          ["state", "get", "todos", ["t1"]],
          ["state", "upsert", "todos", [{ id: "t1", title: "Milk" }]],
          ["state", "remove", "todos", ["t1"]],
          ["state", "tainted", "todos", ["t1"]],
        ]);
      } finally {
        close?.();
      }
    });

    test(`${mode}: asTool gives plain data naming the agent; its options are checked`, async () => {
      const { agent, close } = await make();
      try {
        const taint = () => true;
        const made = agent.asTool("research", "Look things up.", { trust: { taint } });
        assert.deepEqual(made, { name: "research", description: "Look things up.", agent: refOf(agent), trust: { taint } });
        assert.equal(typeof made.agent.aerixAgent, "string");
        assert.deepEqual(agent.asTool("research", "Look things up."), { name: "research", description: "Look things up.", agent: refOf(agent) });
        assert.deepEqual(agent.asTool("research", "Look things up.", { parallel: true }), { name: "research", description: "Look things up.", agent: refOf(agent), parallel: true });
        assert.throws(() => agent.asTool("research", "Look things up.", { effect: true }), isOptionsError('unknown asTool("research") option(s) ["effect"]'));
      } finally {
        close?.();
      }
    });
  }

  test("worker: an asTool value crosses to the worker's agent as plain data, under the page's id", async () => {
    const calls = [];
    const side = await workerSide(calls);
    try {
      const helper = side.agent({ name: "helper" });
      const boss = side.agent({ name: "boss", tools: [helper.asTool("help", "Helps.")] });
      await boss.ready;
      const made = calls.filter((c) => c[0] === "agent");
      assert.equal(made.length, 2);
      const [[, helperOptions, helperRef], [, bossOptions, bossRef]] = made;
      assert.deepEqual(helperOptions, { name: "helper" });
      assert.deepEqual(refOf(helper), { aerixAgent: helperRef });
      assert.deepEqual(refOf(boss), { aerixAgent: bossRef });
      assert.deepEqual(bossOptions.tools, [{ name: "help", description: "Helps.", agent: { aerixAgent: helperRef } }]);
    } finally {
      side.close();
    }
  });

  test("refOf names only handles; ids differ between handles", () => {
    assert.throws(() => refOf({ run() {} }), isOptionsError("expected an agent made by ai.agent()"));
    assert.notEqual(refOf(pageHandle([], "a")).aerixAgent, refOf(pageHandle([], "b")).aerixAgent);
  });
});
