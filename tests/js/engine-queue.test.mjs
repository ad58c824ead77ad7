// One engine, one generation at a time (web/generation.mjs, ONE AT A TIME): two chats started
// together on one engine take turns on its wllama instead of interleaving on it; a queued chat that
// is aborted leaves the queue at once and never reaches the engine; a failed one does not hold up
// the next. Under Node: the engine's own code over a fake wllama that streams its replies a chunk
// per timer tick and records when each request starts and ends (the approach of
// kept-models.test.mjs). tests/e2e/test_agent_in_page.py runs two agents on one real engine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";

import { loadEngine } from "../../web/engine.mjs";
import { defineGlobal, fakeWllama, savedGlobals } from "./fake-wllama.mjs";

const MODEL = readFileSync(new URL("../../models/aerix-tools.gguf", import.meta.url));

// wllama as the engine drives it. A request's last user message names it ("A"); its reply is three
// text chunks, one per tick, unless the name holds "fail" (then it fails after the first). It ends
// at once when its abortSignal fires, as wllama's does (at its next poll).
const FAKE_WLLAMA = `
const tick = () => new Promise((resolve) => setTimeout(resolve, 2));
export class Wllama {
  setCompat() {}
  async loadModel() {}
  getLoadedContextInfo() { return { n_vocab: 1024, n_ctx: 4096, n_ctx_train: 2048 }; }
  getChatTemplate() { return "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"; }
  getModelMetadata() { return { meta: {} }; }
  getNumThreads() { return 1; }
  async exit() {}
  async createCompletion(options) { return this.createChatCompletion(options); }
  async createChatCompletion({ messages, abortSignal, onData }) {
    const llama = globalThis.llama;
    const name = messages.at(-1).content;
    llama.log.push("start " + name);
    llama.active += 1;
    llama.most = Math.max(llama.most, llama.active);
    try {
      onData({ choices: [{ delta: { role: "assistant", content: null } }] });
      for (let i = 1; i <= 3; i++) {
        await tick();
        if (abortSignal.aborted) throw Object.assign(new Error("aborted"), { name: "AbortError" });
        if (name.includes("fail") && i === 2) throw new Error("the engine broke on " + name);
        onData({ choices: [{ delta: { content: name + i } }] });
      }
      onData({ choices: [{ delta: {}, finish_reason: "stop" }] });
      onData({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 3 } });
    } finally {
      llama.active -= 1;
      llama.log.push("end " + name);
    }
  }
}
`;

let wllama, globals;

before(() => {
  wllama = fakeWllama(FAKE_WLLAMA);
  globals = savedGlobals(["location", "navigator", "fetch"]);
  defineGlobal("location", { href: "http://site.test/index.html" });
  defineGlobal("navigator", { hardwareConcurrency: 2 });
  defineGlobal("fetch", async () => new Response(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]))); // wllama's wasm
});

after(() => {
  wllama.remove();
  globals.restore();
});

beforeEach(() => {
  globalThis.llama = { log: [], active: 0, most: 0 };
});
afterEach(() => delete globalThis.llama);

const engine = () =>
  loadEngine({ model: new Blob([MODEL]), cache: false, prompt: "chat", recorder: true, wllamaBase: wllama.base });

/** Read one chat to its end into the shared `log`: "A text A1", ..., "A done"; "A threw <name>" if it throws. */
async function read(eng, name, log, options = {}) {
  try {
    for await (const delta of eng.chat([{ role: "user", content: name }], options)) {
      log.push(delta.type === "text" ? `${name} text ${delta.text}` : `${name} ${delta.type}`);
    }
  } catch (err) {
    log.push(`${name} threw ${err.name}: ${err.message}`);
  }
}

const sent = (eng) => eng.requests.map((r) => r.messages.at(-1).content);

describe("one engine, one generation at a time", () => {
  test("two chats started together: the second reaches the engine, and its first text comes, only after the first finished", async () => {
    const eng = await engine();
    const log = [];
    await Promise.all([read(eng, "A", log), read(eng, "B", log)]);
    assert.deepEqual(globalThis.llama.log, ["start A", "end A", "start B", "end B"]);
    assert.equal(globalThis.llama.most, 1);
    assert.deepEqual(log, ["A text A1", "A text A2", "A text A3", "A done", "B text B1", "B text B2", "B text B3", "B done"]);
  });

  test("many at once run in the order they asked", async () => {
    const eng = await engine();
    const log = [];
    await Promise.all(["A", "B", "C", "D"].map((name) => read(eng, name, log)));
    assert.deepEqual(globalThis.llama.log.filter((l) => l.startsWith("start")), ["start A", "start B", "start C", "start D"]);
    assert.equal(globalThis.llama.most, 1);
    assert.equal(log.filter((l) => l.endsWith("done")).length, 4);
  });

  test("a queued chat that is aborted throws the abort at once and never reaches the engine", async () => {
    const eng = await engine();
    const log = [];
    const stop = new AbortController();
    const first = read(eng, "A", log);
    const second = read(eng, "B", log, { signal: stop.signal });
    const third = read(eng, "C", log);
    await new Promise((resolve) => setTimeout(resolve, 1)); // A runs, B and C wait
    stop.abort();
    await second;
    assert.deepEqual(log, ["B threw AbortError: generation aborted"]); // before A's first text
    assert.deepEqual(globalThis.llama.log, ["start A"]);
    await Promise.all([first, third]);
    assert.deepEqual(globalThis.llama.log, ["start A", "end A", "start C", "end C"]);
    assert.deepEqual(sent(eng), ["A", "C"]);
  });

  test("aborting the running chat frees the engine for the next, once the engine has stopped", async () => {
    const eng = await engine();
    const log = [];
    const stop = new AbortController();
    const first = read(eng, "A", log, { signal: stop.signal });
    const second = read(eng, "B", log);
    await new Promise((resolve) => setTimeout(resolve, 1));
    stop.abort();
    await Promise.all([first, second]);
    assert.ok(log.includes("A threw AbortError: generation aborted"));
    assert.equal(log.at(-1), "B done");
    assert.deepEqual(globalThis.llama.log, ["start A", "end A", "start B", "end B"]);
  });

  test("a chat that fails does not hold up the next", async () => {
    const eng = await engine();
    const log = [];
    await Promise.all([read(eng, "A fail", log), read(eng, "B", log)]);
    assert.deepEqual(log, ["A fail text A fail1", "A fail threw Error: the engine broke on A fail", "B text B1", "B text B2", "B text B3", "B done"]);
    assert.deepEqual(globalThis.llama.log, ["start A fail", "end A fail", "start B", "end B"]);
  });

  test("a reader that stops reading holds up no one: the engine is free when its request ends", async () => {
    const eng = await engine();
    const log = [];
    const idle = eng.chat([{ role: "user", content: "A" }]);
    await idle.next(); // A reaches the engine, then nobody reads it
    await read(eng, "B", log);
    assert.equal(log.at(-1), "B done");
    assert.deepEqual(globalThis.llama.log, ["start A", "end A", "start B", "end B"]);
    await idle.return();
  });
});
