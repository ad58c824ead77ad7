// The chat store (web/chat.mjs) under Node's own test runner: `node --test tests/js/`.
// Its reducer is fed the events of real runs of the aerix loop (tests/js/events.json, recorded on
// CPython by record_events.py) and a few written here; the store runs over a fake agent that
// replays them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { chat, initialState, reduce } from "../../web/chat.mjs";

const RUNS = JSON.parse(readFileSync(new URL("./events.json", import.meta.url), "utf8"));

/** The states after a prompt and each of a run's events (the first is after the prompt). */
function states(events, state = initialState, prompt = "a prompt") {
  const seen = [prompt === null ? state : reduce(state, { type: "chat.send", text: prompt })];
  for (const ev of events) seen.push(reduce(seen.at(-1), ev));
  return seen;
}
const last = (list) => list.at(-1);
const sum = (events, key) => events.filter((e) => e.type === "usage").reduce((n, e) => n + e[key], 0);
const usageOf = (events) => ({ promptTokens: sum(events, "promptTokens"), completionTokens: sum(events, "completionTokens"), cachedTokens: sum(events, "cachedTokens") });

/** Every object in the state is frozen, all the way down to the events it keeps. */
function assertFrozen(value, path = "state") {
  if (value === null || typeof value !== "object") return;
  assert.ok(Object.isFrozen(value), `${path} is not frozen`);
  for (const [key, inner] of Object.entries(value)) if (key !== "input" && key !== "output") assertFrozen(inner, `${path}.${key}`);
}

describe("reduce, on recorded runs", () => {
  test("a run with calls, results, a file, a taint and a streamed answer", () => {
    const events = RUNS.tools;
    const all = states(events, initialState, "Umbrella for Lisbon and Porto?");
    const end = last(all);
    const final = last(events);
    assert.equal(final.type, "final");
    assert.deepEqual(end.messages, [
      { role: "user", text: "Umbrella for Lisbon and Porto?" },
      { role: "assistant", text: final.text },
    ]);
    assert.deepEqual(end.calls, [
      { id: "call_1", tool: "weather", input: { city: "Lisbon" }, result: "Rain in Lisbon, 80%", error: false },
      { id: "call_2", tool: "convert", input: { value: 3 }, result: "error: no such unit", error: true },
      { id: "call_3", tool: "weather", input: { city: "Porto" }, result: "Rain in Porto, 80%", error: false },
    ]);
    const files = events.filter((e) => e.type === "artifact");
    assert.deepEqual(end.artifacts, [
      { id: files[0].id, mediaType: "text/csv", filename: "rain.csv", size: 20, callId: "call_1" },
      { id: files[1].id, mediaType: "text/csv", filename: "rain.csv", size: 19, callId: "call_3" },
    ]);
    assert.deepEqual(end.taint, { type: "taint", source: "weather", at: "call_1" });
    assert.deepEqual(end.usage, usageOf(events));
    assert.ok(end.usage.cachedTokens > 0);
    assert.equal(end.status, "idle");
    assert.deepEqual(end.ending, final);
    assert.equal(end.answer, "", "the answer moved into messages");
    assert.equal(end.thought, "rain both");
    assert.deepEqual(end.approvals, []);
    assertFrozen(end);
  });

  test("calls are announced by their turn, then filled in by their results", () => {
    const all = states(RUNS.tools);
    const afterTurn = all[1 + RUNS.tools.findIndex((e) => e.type === "turn")];
    assert.deepEqual(afterTurn.calls, [
      { id: "call_1", tool: "weather", input: { city: "Lisbon" } },
      { id: "call_2", tool: "convert", input: { value: 3 } },
    ]);
    assert.equal(afterTurn.thought, "look it up");
    assert.equal(afterTurn.status, "running");
  });

  test("final_delta texts join into the answer as it streams, and equal the final's text", () => {
    for (const [name, events] of Object.entries(RUNS)) {
      const all = states(events);
      events.forEach((ev, i) => {
        const before = all[i]; // the state this event is applied to
        if (ev.type === "final_delta") {
          const after = all[i + 1];
          assert.equal(after.answer, before.answer + ev.text, name);
          assert.notEqual(after, before);
        }
        if (ev.type === "final" && events.some((e) => e.type === "final_delta")) assert.equal(before.answer, ev.text, `${name}: the answer streamed whole`);
      });
    }
    // the tools run streams its answer in many pieces, each state a longer prefix
    const answers = [...new Set(states(RUNS.tools).map((s) => s.answer).filter(Boolean))];
    assert.ok(answers.length >= 10, answers);
    const text = last(RUNS.tools).text;
    answers.forEach((a, i) => {
      assert.ok(text.startsWith(a), a);
      if (i) assert.ok(a.length > answers[i - 1].length);
    });
  });

  test("without final_delta (structured output) the message falls back to the final's text", () => {
    const events = RUNS.output;
    assert.ok(!events.some((e) => e.type === "final_delta"));
    const all = states(events);
    assert.ok(all.every((s) => s.answer === ""));
    const final = last(events);
    assert.deepEqual(last(all).messages.at(-1), { role: "assistant", text: final.text, output: { city: "Lisbon", rain: true } });
  });

  test("a retry drops the answer the refused turn streamed", () => {
    const events = RUNS.retry;
    const all = states(events);
    const at = events.findIndex((e) => e.type === "retry");
    assert.equal(all[at].answer, "A very long ans");
    assert.equal(all[at + 1].answer, "");
    assert.deepEqual(last(all).messages.at(-1), { role: "assistant", text: "Short." });
    assert.deepEqual(last(all).usage, usageOf(events));
  });

  test("output holds the answer object as it streams; a retry drops it; the final moves it into messages", () => {
    const events = RUNS.output_retry;
    const all = states(events);
    assert.equal(all[0].output, null); // nothing streamed yet
    const at = events.findIndex((e) => e.type === "retry");
    events.forEach((ev, i) => {
      if (ev.type === "output_delta") assert.deepEqual(all[i + 1].output, ev.output); // the latest object, whole
      if (ev.type === "text") assert.equal(all[i + 1], all[i]);
    });
    assert.deepEqual(all[at].output, { city: "Porto", hours: [{ at: "9:00", mm: "lots" }] }); // the refused answer
    assert.equal(all[at + 1].output, null); // gone with the retry
    const again = events.findIndex((e, i) => i > at && e.type === "output_delta");
    assert.deepEqual(all[again + 1].output, {}); // the next generation starts from nothing
    const final = last(events);
    const lastDelta = events.findLast((e) => e.type === "output_delta");
    assert.deepEqual(lastDelta.output, final.output); // the last object is the answer
    assert.equal(last(all).output, null);
    assert.ok(all.every((s) => s.answer === ""));
    assert.deepEqual(last(all).messages.at(-1), { role: "assistant", text: final.text, output: { city: "Porto", hours: [{ at: "9:00", mm: 2.5 }, { at: "10:00", mm: 0 }] } });
  });

  test("the object that streamed before an end stays, and a new send clears it", () => {
    const partial = RUNS.output_retry.filter((e) => e.type === "output_delta").slice(0, 3);
    const ended = last(states([...partial, { type: "end", reason: "abort", message: "stopped" }]));
    assert.deepEqual(ended.output, partial.at(-1).output);
    assert.equal(reduce(ended, { type: "chat.send", text: "again" }).output, null);
  });

  test("a second prompt: the conversation and usage go on, the run's calls start again, the taint stays", () => {
    const first = last(states(RUNS.tools, initialState, "Umbrella for Lisbon and Porto?"));
    const second = last(states(RUNS.again, first, "Both?"));
    assert.deepEqual(second.messages.map((m) => [m.role, m.text]), [
      ["user", "Umbrella for Lisbon and Porto?"],
      ["assistant", last(RUNS.tools).text],
      ["user", "Both?"],
      ["assistant", "Yes, in both."],
    ]);
    assert.deepEqual(second.usage, usageOf([...RUNS.tools, ...RUNS.again]));
    assert.deepEqual(second.calls, []);
    assert.deepEqual(second.artifacts, []);
    assert.equal(second.taint, first.taint);
    assert.deepEqual(second.ending, last(RUNS.again));
  });

  test("a waiting approval, then its answer continues the run", () => {
    const waiting = last(states(RUNS.waiting, initialState, "Remind me to call Anna."));
    assert.equal(waiting.status, "waiting");
    assert.equal(waiting.ending, null, "waiting is not an ending");
    assert.deepEqual(waiting.approvals, [{ runId: "r-note", approvalId: "call_1.1", title: "Save the note 'call Anna'?", body: '{"text": "call Anna"}' }]);
    assert.deepEqual(waiting.calls, [{ id: "call_1", tool: "save_note", input: { text: "call Anna" } }], "the call waits, with no result");
    assert.deepEqual(waiting.messages, [{ role: "user", text: "Remind me to call Anna.", runId: "r-note" }], "the prompt learns its run");
    assertFrozen(waiting);

    const answered = reduce(waiting, { type: "chat.approve", approvalId: "call_1.1" });
    assert.equal(answered.status, "running");
    assert.deepEqual(answered.approvals, []);
    const end = last(states(RUNS.approved, answered, null));
    assert.equal(end.status, "idle");
    assert.deepEqual(end.calls, [{ id: "call_1", tool: "save_note", input: { text: "call Anna" }, result: "note saved: call Anna", error: false }]);
    assert.deepEqual(end.messages.at(-1), { role: "assistant", text: "Saved.", runId: "r-note" });
    assert.deepEqual(end.usage, usageOf([...RUNS.waiting, ...RUNS.approved]));
  });

  test("a denied call is a refused result; the run still answers", () => {
    const waiting = last(states(RUNS.gated, initialState, "Oslo?"));
    assert.equal(waiting.approvals[0].title, "Run weather?");
    const end = last(states(RUNS.denied, reduce(waiting, { type: "chat.approve", approvalId: "call_1.1" }), null));
    assert.deepEqual(end.calls, [{ id: "call_1", tool: "weather", input: { city: "Oslo" }, result: "refused: not now", error: true }]);
    assert.equal(end.ending.type, "final");
  });

  test("an abort while the answer streams: end abort, idle, what streamed stays", () => {
    const end = last(states(RUNS.abort));
    assert.deepEqual(end.ending, { type: "end", reason: "abort", message: "the run was aborted during a generation" });
    assert.equal(end.status, "idle");
    assert.equal(end.answer, "One tw");
    assert.deepEqual(end.messages, [{ role: "user", text: "a prompt" }]);
  });

  test("an engine failure: end error, status error", () => {
    const end = last(states(RUNS.error));
    assert.equal(end.status, "error");
    assert.equal(end.ending.reason, "error");
    assert.match(end.ending.message, /the engine went away/);
  });
});

describe("agents as tools: a sub-run's events, nested under the calling call", () => {
  const own = (events) => events.filter((e) => e.type !== "subagent");
  const inner = (events) => events.filter((e) => e.type === "subagent").map((e) => e.event);

  test("the call holds the sub-run as a state of its own; the run's own state is as without it", () => {
    const events = RUNS.subagent;
    const all = states(events, initialState, "Umbrella?");
    const end = last(all);
    assert.equal(end.status, "idle");
    assert.deepEqual(end.messages.at(-1), { role: "assistant", text: "Take an umbrella." });
    const [call] = end.calls;
    assert.deepEqual([call.id, call.tool, call.input, call.result, call.error], ["call_1", "forecast", { task: "Will it rain in Lisbon?" }, "Rain in Lisbon.", false]);
    const sub = call.subagent;
    assert.equal(sub.agent, "forecaster");
    assert.equal(sub.status, "idle");
    assert.deepEqual(sub.calls, [{ id: "call_1", tool: "weather", input: { city: "Lisbon" }, result: "Rain in Lisbon, 80%", error: false }]);
    assert.deepEqual(sub.messages, [{ role: "assistant", text: "Rain in Lisbon." }]);
    assert.equal(sub.ending.type, "final");
    assert.deepEqual(sub.usage, usageOf(inner(events)), "the sub-run's usage is its own");
    assert.deepEqual(end.usage, usageOf(own(events)));
    const [file] = inner(events).filter((e) => e.type === "artifact");
    assert.deepEqual(sub.artifacts, [{ id: file.id, mediaType: "text/csv", filename: "rain.csv", size: 20, callId: "call_1" }]);
    assert.deepEqual(end.artifacts, [], "the sub-run's files are in its own state");
    assert.deepEqual(end.taint, { type: "taint", source: "forecast", at: "call_1" }, "the sub-run's taint reached the run");
    assert.deepEqual(end.ending, last(events), "the run's ending is its own");
    assertFrozen(end);
  });

  test("the sub-run's state grows as its events come: running, then its answer streams", () => {
    const events = RUNS.subagent;
    const all = states(events, initialState, "Umbrella?");
    const first = events.findIndex((e) => e.type === "subagent");
    assert.equal(all[first + 1].calls[0].subagent.status, "running");
    const deltas = events.map((e, i) => [e, i]).filter(([e]) => e.type === "subagent" && e.event.type === "final_delta");
    assert.ok(deltas.length > 1);
    const [, i] = deltas[1];
    assert.equal(all[i + 1].calls[0].subagent.answer, deltas[0][0].event.text + deltas[1][0].event.text);
    assert.equal(all[i + 1].answer, "", "the run's own answer has not started");
  });

  test("a sub-run that waits: the run waits for its approval; approved, the sub-run goes on where it stood", () => {
    const waiting = last(states(RUNS.subagent_waiting, initialState, "Remind me to call Anna."));
    assert.equal(waiting.status, "waiting");
    assert.deepEqual(waiting.approvals.map((a) => [a.runId, a.approvalId]), [["r-sub", "call_1/call_1.1"]]);
    const sub = waiting.calls[0].subagent;
    assert.equal(sub.status, "waiting");
    assert.deepEqual(sub.calls, [{ id: "call_1", tool: "save_note", input: { text: "call Anna" } }]);
    const answered = reduce(waiting, { type: "chat.approve", approvalId: "call_1/call_1.1" });
    const all = states(RUNS.subagent_approved, answered, null);
    const end = last(all);
    assert.equal(end.status, "idle");
    assert.deepEqual(end.approvals, []);
    const after = end.calls[0].subagent;
    assert.deepEqual([after.status, after.approvals, after.ending.text], ["idle", [], "Saved it."]);
    assert.deepEqual(after.calls, [{ id: "call_1", tool: "save_note", input: { text: "call Anna" }, result: "note saved: call Anna", error: false }]);
    assert.equal(inner(RUNS.subagent_approved).filter((e) => e.type === "turn").length, 1, "the resumed sub-run shows only its new turn");
    assert.deepEqual(end.messages.at(-1), { role: "assistant", text: "Noted.", runId: "r-sub" });
  });

  test("by hand: a sub-run's text delta changes nothing; nested sub-runs nest again", () => {
    const sent = reduce(initialState, { type: "chat.send", text: "hi" });
    const called = reduce(sent, { type: "call", id: "call_1", tool: "mid", input: { task: "go" } });
    const started = reduce(called, { type: "subagent", callId: "call_1", tool: "mid", agent: "mid", event: { type: "turn", turn: 1, thought: "ask leaf", calls: [] } });
    assert.equal(reduce(started, { type: "subagent", callId: "call_1", tool: "mid", agent: "mid", event: { type: "text", text: "{" } }), started);
    const leafCall = { type: "call", id: "call_1", tool: "leaf", input: { task: "find" } };
    const deep = { type: "subagent", callId: "call_1", tool: "leaf", agent: "leaf", event: { type: "final", text: "found", thought: null } };
    let state = reduce(started, { type: "subagent", callId: "call_1", tool: "mid", agent: "mid", event: leafCall });
    state = reduce(state, { type: "subagent", callId: "call_1", tool: "mid", agent: "mid", event: deep });
    const leaf = state.calls[0].subagent.calls[0].subagent;
    assert.deepEqual([leaf.agent, leaf.status, leaf.ending.text], ["leaf", "idle", "found"]);
    assert.equal(state.calls[0].subagent.status, "running");
    assert.equal(state.status, "running");
    assertFrozen(state);
  });
});

describe("reduce, by hand", () => {
  const sent = reduce(initialState, { type: "chat.send", text: "hi" });

  test("it is pure: the state given is never changed, and a new one is made per change", () => {
    const before = JSON.stringify(sent);
    const after = reduce(sent, { type: "usage", promptTokens: 5, completionTokens: 2, cachedTokens: 1 });
    assert.equal(JSON.stringify(sent), before);
    assert.notEqual(after, sent);
    assert.equal(after.messages, sent.messages, "what did not change is shared");
    assert.equal(after.calls, sent.calls);
    assert.deepEqual(after.usage, { promptTokens: 5, completionTokens: 2, cachedTokens: 1 });
  });

  test("a text delta, or an event it does not know, changes nothing", () => {
    assert.equal(reduce(sent, { type: "text", text: "{\"thought\"" }), sent);
    assert.equal(reduce(sent, { type: "something_new" }), sent);
    assert.equal(reduce(sent, {}), sent);
  });

  test("send starts a run: running, the prompt kept, the last run's answer and calls gone", () => {
    const done = last(states(RUNS.tools, initialState, "first"));
    const again = reduce(done, { type: "chat.send", text: "second", runId: "r9" });
    assert.equal(again.status, "running");
    assert.deepEqual(again.messages.at(-1), { role: "user", text: "second", runId: "r9" });
    assert.deepEqual([again.answer, again.ending, again.calls, again.artifacts, again.thought], ["", null, [], [], null]);
    assert.equal(again.usage, done.usage);
  });

  test("a failure the agent threw: status error, kept as data", () => {
    const failed = reduce(sent, { type: "chat.error", error: { name: "AerixError", kind: "busy", message: "agent is running" } });
    assert.equal(failed.status, "error");
    assert.deepEqual(failed.error, { name: "AerixError", kind: "busy", reason: null, message: "agent is running" });
    assert.equal(reduce(reduce(failed, { type: "chat.send", text: "again" }), { type: "chat.done" }).error, null);
  });

  test("the events stopping leaves a running state idle, and nothing else", () => {
    assert.equal(reduce(sent, { type: "chat.done" }).status, "idle");
    const waiting = reduce(sent, { type: "waiting", runId: "r1", approvalId: "call_1.1", title: "Run x?", body: "{}" });
    assert.equal(reduce(waiting, { type: "chat.done" }), waiting);
  });

  test("interrupted (a drained agent): idle, no ending", () => {
    const out = reduce(sent, { type: "interrupted", runId: "r2", message: "drained" });
    assert.deepEqual([out.status, out.ending, out.messages[0].runId], ["idle", null, "r2"]);
  });

  test("the same approval twice is pending once; another run's stays when one is answered", () => {
    const a = { type: "waiting", runId: "r1", approvalId: "call_1.1", title: "Run x?", body: "{}" };
    const b = { type: "waiting", runId: "r2", approvalId: "call_1.1.b", title: "Run y?", body: "{}" };
    const both = [a, a, b].reduce(reduce, sent);
    assert.deepEqual(both.approvals.map((x) => x.approvalId), ["call_1.1", "call_1.1.b"]);
    const one = reduce(both, { type: "chat.approve", approvalId: "call_1.1.b" });
    assert.deepEqual(one.approvals.map((x) => x.runId), ["r1"]);
    assert.equal(one.runId, "r2");
  });

  test("a run recovered after a reload: its prompt, then its approval", () => {
    const recovered = [{ type: "chat.recovered", runId: "r7", prompt: "Pay it" }, { type: "waiting", runId: "r7", approvalId: "call_1.1", title: "Pay?", body: null }].reduce(reduce, initialState);
    assert.equal(recovered.status, "waiting");
    assert.deepEqual(recovered.messages, [{ role: "user", text: "Pay it", runId: "r7" }]);
    const resumed = reduce(initialState, { type: "chat.resume", runId: "r8", prompt: "Go on" });
    assert.deepEqual([resumed.status, resumed.messages], ["running", [{ role: "user", text: "Go on", runId: "r8" }]]);
  });

  test("reset gives the initial state back", () => {
    assert.equal(reduce(last(states(RUNS.tools)), { type: "chat.reset" }), initialState);
    assertFrozen(initialState);
  });
});

// -- the store, over a fake agent that replays recorded events -----------------------------------

function fakeAgent(script) {
  const calls = [];
  const replay = (events, signal) =>
    (async function* () {
      for (const ev of events) {
        await new Promise((ok) => setTimeout(ok, 0));
        if (signal?.aborted) {
          yield { type: "end", reason: "abort", message: "the run was aborted" };
          return;
        }
        yield ev;
      }
    })();
  return {
    calls,
    run(prompt, options) {
      calls.push(["run", prompt, options]);
      const next = script.shift();
      if (next instanceof Error) throw next;
      return replay(next, options.signal);
    },
    approve(runId, approvalId, approved, options) {
      calls.push(["approve", runId, approvalId, approved, options]);
      return replay(script.shift(), options.signal);
    },
    resume(runId, options) {
      calls.push(["resume", runId]);
      return replay(script.shift(), options.signal);
    },
    async recover() {
      return script.shift();
    },
    reset() {
      calls.push(["reset"]);
    },
  };
}

describe("chat(agent)", () => {
  test("send: subscribers see each change, the run's events fold in, send resolves with the state", async () => {
    const agent = fakeAgent([RUNS.tools]);
    const seen = [];
    const events = [];
    const store = chat(agent, { onEvent: (ev) => events.push(ev) });
    const unsubscribe = store.subscribe((s) => seen.push(s));
    const done = store.send("Umbrella?", { runId: "r1" });
    assert.equal(store.getState().status, "running", "running at once");
    const state = await done;
    assert.equal(state, store.getState());
    assert.deepEqual(events, RUNS.tools, "onEvent sees every event");
    assert.deepEqual(state, last(states(RUNS.tools, reduce(initialState, { type: "chat.send", text: "Umbrella?", runId: "r1" }), null)));
    assert.equal(agent.calls[0][2].runId, "r1");
    assert.ok(agent.calls[0][2].signal instanceof AbortSignal);
    const textEvents = RUNS.tools.filter((e) => e.type === "text").length;
    assert.equal(seen.length, 1 + RUNS.tools.length - textEvents, "one notice per change, none for text deltas");
    assert.equal(new Set(seen).size, seen.length, "a new object per change");
    unsubscribe();
    await store.reset();
    assert.equal(seen.length, 1 + RUNS.tools.length - textEvents, "no notice after unsubscribe");
    assert.equal(store.getState(), initialState);
    assert.deepEqual(agent.calls.at(-1), ["reset"]);
  });

  test("a second send while one runs is refused busy; stop aborts the running run", async () => {
    const store = chat(fakeAgent([RUNS.tools]));
    const first = store.send("one");
    await assert.rejects(store.send("two"), { name: "AerixError", kind: "busy" });
    store.stop();
    const state = await first;
    assert.equal(state.ending.reason, "abort");
    assert.equal(state.status, "idle");
  });

  test("a caller's signal stops the run too", async () => {
    const store = chat(fakeAgent([RUNS.tools]));
    const controller = new AbortController();
    const done = store.send("one", { signal: controller.signal });
    controller.abort();
    assert.equal((await done).ending.reason, "abort");
  });

  test("approve continues the waiting run with its run id, then the run answers", async () => {
    const agent = fakeAgent([RUNS.waiting, RUNS.approved]);
    const store = chat(agent);
    await assert.rejects(store.approve("nope", true), { kind: "options" });
    const waiting = await store.send("Remind me to call Anna.");
    assert.equal(waiting.status, "waiting");
    const done = store.approve("call_1.1", true);
    assert.equal(store.getState().status, "running");
    const state = await done;
    assert.deepEqual(agent.calls[1].slice(0, 4), ["approve", "r-note", "call_1.1", true]);
    assert.deepEqual(state.messages.map((m) => m.text), ["Remind me to call Anna.", "Saved."]);
    assert.deepEqual(state.approvals, []);
    assert.equal(state.status, "idle");
  });

  test("approve called while the waiting run's events are still closing waits for them", async () => {
    const agent = fakeAgent([RUNS.gated, RUNS.denied]);
    const store = chat(agent);
    const first = store.send("Oslo?");
    await new Promise((ok) => store.subscribe((s) => s.status === "waiting" && ok()));
    const done = store.approve("call_1.1", false, "not now");
    await first;
    const state = await done;
    assert.deepEqual(agent.calls[1].slice(0, 4), ["approve", "r-gate", "call_1.1", false]);
    assert.equal(agent.calls[1][4].reason, "not now");
    assert.equal(state.calls[0].result, "refused: not now");
  });

  test("a failure the agent throws is in the state, not a rejection", async () => {
    const busy = Object.assign(new Error("agent is running"), { name: "AerixError", kind: "busy" });
    const state = await chat(fakeAgent([busy])).send("hi");
    assert.equal(state.status, "error");
    assert.equal(state.error.kind, "busy");
  });

  test("a prompt the agent refuses before its run begins leaves the messages and stays in the error", async () => {
    const tooLong = Object.assign(new Error("the prompt takes about 900 tokens, the room left 300"), { name: "AerixError", kind: "options" });
    const store = chat(fakeAgent([RUNS.tools, tooLong, RUNS.again]));
    await store.send("first");
    const before = store.getState().messages;
    const refused = await store.send("x".repeat(5000));
    assert.equal(refused.status, "error");
    assert.deepEqual(refused.messages, before); // the conversation as the agent keeps it: without the prompt
    assert.deepEqual([refused.error.kind, refused.error.prompt], ["options", "x".repeat(5000)]);
    const after = await store.send("third"); // the chat goes on
    assert.deepEqual(after.messages.slice(0, before.length), before);
    assert.deepEqual(after.messages[before.length], { role: "user", text: "third" });
  });

  test("a failure after the run's first event keeps the prompt: the run began", async () => {
    const store = chat(fakeAgent([[{ type: "turn", turn: 1, thought: "", calls: [] }]]));
    const agent = store.agent;
    const run = agent.run;
    agent.run = (prompt, options) => (async function* () {
      yield* run.call(agent, prompt, options);
      throw Object.assign(new Error("lost"), { name: "AerixError", kind: "store" });
    })();
    const state = await store.send("kept");
    assert.deepEqual([state.status, state.messages.at(-1).text, state.error.prompt], ["error", "kept", undefined]);
  });

  test("recover: a waiting run joins the state, an interrupted one can be resumed with its prompt", async () => {
    const runs = [
      { id: "r-note", prompt: "Remind me to call Anna.", status: "waiting", approval: { id: "call_1.1", title: "Save?", body: "{}" } },
      { id: "r-old", prompt: "Both?", status: "interrupted", approval: null },
    ];
    const agent = fakeAgent([runs, RUNS.again]);
    const store = chat(agent);
    assert.equal(await store.recover(), runs);
    const state = store.getState();
    assert.equal(state.status, "waiting");
    assert.deepEqual(state.approvals, [{ runId: "r-note", approvalId: "call_1.1", title: "Save?", body: "{}" }]);
    const resumed = await store.resume("r-old");
    assert.deepEqual(agent.calls[0], ["resume", "r-old"]);
    assert.deepEqual(resumed.messages.slice(-2), [{ role: "user", text: "Both?", runId: "r-old" }, { role: "assistant", text: "Yes, in both.", runId: "r-old" }]);
    assert.equal(resumed.approvals.length, 1, "the other run still waits");
  });

  test("a subscriber that throws stops neither the run nor the others", async () => {
    const store = chat(fakeAgent([RUNS.again]));
    let calls = 0;
    const thrown = [];
    const report = globalThis.reportError;
    globalThis.reportError = (e) => thrown.push(e); // what a browser has; Node 20 has not
    store.subscribe(() => {
      throw new Error("a bad view");
    });
    store.subscribe(() => calls++);
    let state;
    try {
      state = await store.send("Both?");
    } finally {
      if (report) globalThis.reportError = report;
      else delete globalThis.reportError;
    }
    assert.equal(state.ending.type, "final");
    assert.ok(calls > 3);
    assert.ok(thrown.length > 0 && thrown.every((e) => e.message === "a bad view"));
  });
});

describe("long chats: compaction and reopen", () => {
  test("each compact event of a recorded run is counted, and the messages stay whole", () => {
    const seen = states(RUNS.compact);
    const count = RUNS.compact.filter((e) => e.type === "compact").length;
    assert.ok(count >= 1, "the recorded run compacts");
    assert.equal(last(seen).compactions, count);
    assert.equal(reduce(last(seen), { type: "chat.reset" }).compactions, 0);
  });

  test("reopen() puts the agent's transcript in messages after a reload", async () => {
    const transcript = [{ role: "user", text: "Umbrella?" }, { role: "assistant", text: "Yes." }, { role: "assistant", text: "{\"a\":1}", output: { a: 1 } }];
    const called = [];
    const agent = { reopen: async () => called.push("reopen"), transcript: async () => (called.push("transcript"), transcript) };
    const store = chat(agent);
    const state = await store.reopen();
    assert.deepEqual(called, ["reopen", "transcript"]);
    assert.deepEqual(state.messages, transcript);
    assertFrozen(state);
  });
});

test("a recovered or resumed run whose prompt the reopened conversation ends with is not shown twice", () => {
  let state = reduce(initialState, { type: "chat.reopened", messages: [{ role: "user", text: "Hi" }, { role: "assistant", text: "Hello." }, { role: "user", text: "Save a note" }] });
  state = reduce(state, { type: "chat.recovered", runId: "r2", prompt: "Save a note" });
  assert.deepEqual(state.messages.map((m) => [m.role, m.text, m.runId]), [["user", "Hi", undefined], ["assistant", "Hello.", undefined], ["user", "Save a note", "r2"]]);
  state = reduce(state, { type: "chat.resume", runId: "r2", prompt: "Save a note" });
  assert.equal(state.messages.length, 3);
  assert.equal(state.status, "running");
  // a prompt the conversation does not end with is appended
  state = reduce(state, { type: "chat.resume", runId: "r3", prompt: "Another" });
  assert.deepEqual(state.messages.at(-1), { role: "user", text: "Another", runId: "r3" });
});
