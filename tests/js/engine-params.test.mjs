// What loadEngine's options become in wllama's load parameters (web/engine.mjs): the thread count
// (THREADS: the cores the browser reports, at most 8, and 1 when the page is not cross-origin
// isolated), llama.cpp's batch sizes (`nBatch`/`nUbatch` → `n_batch`/`n_ubatch`) and its KV cache and
// flash attention (on the CPU f32 and off unless named: CPU ATTENTION; `boot({engine})`
// hands its options to loadEngine as they are, in both modes). Under Node: the
// engine's own code over a fake wllama that records what `loadModel` was given (the approach of
// kept-models.test.mjs). How they change prompt speed is measured in the browser (bench/README.md,
// issue 30).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";

import { loadEngine } from "../../web/engine.mjs";
import { defineGlobal, fakeWllama, savedGlobals } from "./fake-wllama.mjs";

const MODEL = readFileSync(new URL("../../models/aerix-tools.gguf", import.meta.url));

// wllama as the engine drives it: `loadModel` records its parameters; the context it reports has
// the batch sizes llama.cpp would use (theirs, or llama.cpp's defaults), n_ubatch never above n_batch.
const FAKE_WLLAMA = `
export class Wllama {
  setCompat() {}
  async loadModel(_blobs, params) {
    globalThis.llama.loads.push(params);
    this.params = params;
  }
  getLoadedContextInfo() {
    const n_batch = this.params.n_batch ?? 2048;
    return { n_vocab: 1024, n_ctx: 4096, n_ctx_train: 2048, n_batch, n_ubatch: Math.min(n_batch, this.params.n_ubatch ?? 512) };
  }
  getChatTemplate() { return "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"; }
  getModelMetadata() { return { meta: {} }; }
  getNumThreads() { return this.params.n_threads; }
  async exit() {}
}
`;

let wllama, globals;

before(() => {
  wllama = fakeWllama(FAKE_WLLAMA);
  globals = savedGlobals(["location", "navigator", "fetch", "crossOriginIsolated"]);
});

after(() => {
  wllama.remove();
  globals.restore();
});

beforeEach(() => {
  defineGlobal("location", { href: "http://site.test/index.html" });
  defineGlobal("navigator", { hardwareConcurrency: 2 }); // no `gpu`: the CPU
  defineGlobal("crossOriginIsolated", true);
  defineGlobal("fetch", async () => new Response(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])));
  globalThis.llama = { loads: [] };
});

afterEach(() => delete globalThis.llama);

/** Load the bundled model with `options`; what wllama's loadModel got, and the engine's info. */
async function load(options = {}) {
  const engine = await loadEngine({ model: new Blob([MODEL]), cache: false, wllamaBase: wllama.base, prompt: "chat", ...options });
  return { params: globalThis.llama.loads.at(-1), info: engine.info };
}

describe("threads", () => {
  test("by default, one per core the browser reports", async () => {
    defineGlobal("navigator", { hardwareConcurrency: 4 });
    const { params, info } = await load();
    assert.equal(params.n_threads, 4);
    assert.equal(info.n_threads, 4);
  });

  test("by default, at most 8, however many cores the browser reports", async () => {
    defineGlobal("navigator", { hardwareConcurrency: 32 });
    assert.equal((await load()).params.n_threads, 8);
    defineGlobal("navigator", {}); // a browser that reports none
    assert.equal((await load()).params.n_threads, 1);
  });

  test("nThreads is taken as given, above the cap too", async () => {
    defineGlobal("navigator", { hardwareConcurrency: 32 });
    assert.equal((await load({ nThreads: 16 })).params.n_threads, 16);
    assert.equal((await load({ nThreads: 2 })).params.n_threads, 2);
  });

  test("one when the page is not cross-origin isolated, whatever was asked", async () => {
    defineGlobal("crossOriginIsolated", false);
    assert.equal((await load({ nThreads: 4 })).params.n_threads, 1);
  });
});

describe("batch sizes", () => {
  test("nBatch and nUbatch reach wllama as n_batch and n_ubatch; info says what llama.cpp used", async () => {
    const { params, info } = await load({ nBatch: 1024, nUbatch: 128 });
    assert.equal(params.n_batch, 1024);
    assert.equal(params.n_ubatch, 128);
    assert.equal(info.n_batch, 1024);
    assert.equal(info.n_ubatch, 128);
  });

  test("without them, wllama gets neither key and llama.cpp keeps its defaults", async () => {
    const { params, info } = await load();
    assert.ok(!("n_batch" in params) && !("n_ubatch" in params), JSON.stringify(params));
    assert.equal(info.n_batch, 2048);
    assert.equal(info.n_ubatch, 512);
  });

  test("one without the other", async () => {
    const { params } = await load({ nUbatch: 256 });
    assert.equal(params.n_ubatch, 256);
    assert.ok(!("n_batch" in params));
  });

  test("a size that is not a whole number ≥ 1 is refused, naming the option, before anything loads", async () => {
    for (const [option, value] of [["nBatch", 0], ["nUbatch", 1.5], ["nBatch", "512"], ["nUbatch", -8], ["nBatch", null]]) {
      await assert.rejects(load({ [option]: value }), (e) => e instanceof TypeError && e.message.includes(option), `${option}: ${value}`);
    }
    assert.equal(globalThis.llama.loads.length, 0);
  });
});

describe("KV cache types and flash attention", () => {
  test("cacheTypeK, cacheTypeV and flashAttn reach wllama as llama.cpp's keys; info says what was asked", async () => {
    const { params, info } = await load({ cacheTypeK: "f32", cacheTypeV: "q8_0", flashAttn: false });
    assert.equal(params.cache_type_k, "f32");
    assert.equal(params.cache_type_v, "q8_0");
    assert.equal(params.flash_attn, false);
    assert.deepEqual([info.cache_type_k, info.cache_type_v, info.flash_attn], ["f32", "q8_0", false]);
  });

  test("without them, on the CPU: an f32 KV cache and no flash attention (CPU ATTENTION); info says so", async () => {
    const { params, info } = await load();
    assert.deepEqual([params.cache_type_k, params.cache_type_v, params.flash_attn], ["f32", "f32", false]);
    assert.deepEqual([info.cache_type_k, info.cache_type_v, info.flash_attn], ["f32", "f32", false]);
    const kept = await load({ flashAttn: true, cacheTypeV: "f16" }); // what the caller names wins, the rest stays
    assert.deepEqual([kept.params.cache_type_k, kept.params.cache_type_v, kept.params.flash_attn], ["f32", "f16", true]);
  });

  test("without them, with a WebGPU adapter: none of the keys, llama.cpp's defaults; with nGpuLayers 0 the CPU's", async () => {
    defineGlobal("navigator", { hardwareConcurrency: 2, gpu: { requestAdapter: async () => ({}) } });
    const { params, info } = await load();
    for (const key of ["cache_type_k", "cache_type_v", "flash_attn"]) assert.ok(!(key in params), key);
    assert.deepEqual([info.cache_type_k, info.cache_type_v, info.flash_attn], ["f16", "f16", "auto"]);
    assert.equal((await load({ nGpuLayers: 0 })).params.flash_attn, false);
  });

  test("a type llama.cpp has not, or a flashAttn that is not a boolean, is refused by name before anything loads", async () => {
    for (const [option, value] of [["cacheTypeK", "f8"], ["cacheTypeV", 16], ["flashAttn", "auto"], ["flashAttn", 1]]) {
      await assert.rejects(load({ [option]: value }), (e) => e instanceof TypeError && e.message.includes(option), `${option}: ${value}`);
    }
    assert.equal(globalThis.llama.loads.length, 0);
  });
});
