// Models kept in this browser from a file the person picked (web/model-cache.mjs, MODEL CACHE, through web/engine.mjs), and the
// facts `info` gives, under Node: the engine's own code over fakes of what only a browser has (the
// Cache API, the page's location, wllama and its wasm), with the bundled model's real bytes.
// tests/e2e/test_model_picker.py does the same in a browser, on the real engine.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, afterEach, before, beforeEach, describe, test } from "node:test";

import { cachedModels, forgetModel, keepModel, loadEngine } from "../../web/engine.mjs";
import { defineGlobal, fakeWllama, savedGlobals } from "./fake-wllama.mjs";

const ROOT = new URL("../../", import.meta.url);
const MODEL = readFileSync(new URL("models/aerix-tools.gguf", ROOT));
const CARD = JSON.parse(readFileSync(new URL("models/aerix-tools.json", ROOT), "utf8"));
const PAGE = "http://site.test/index.html";
const KEY = "aerix-tools.gguf:3937088:1733000000000";
const file = () => new Blob([MODEL]);

/** The Cache API as the engine uses it: one cache, entries by URL in the order they were put. */
class FakeCache {
  entries = new Map();
  puts = 0;
  url = (request) => (typeof request === "string" ? request : request.url);
  async match(request) {
    const entry = this.entries.get(this.url(request));
    return entry && new Response(entry.blob, { headers: entry.headers });
  }
  async put(request, response) {
    this.puts += 1;
    const entry = { blob: await response.blob(), headers: Object.fromEntries(response.headers) };
    this.entries.delete(this.url(request));
    this.entries.set(this.url(request), entry);
  }
  async delete(request) {
    return this.entries.delete(this.url(request));
  }
  async keys() {
    return [...this.entries.keys()].map((url) => ({ url }));
  }
}

// wllama as the engine drives it; `llama` says what llama.cpp would do with the bytes.
const FAKE_WLLAMA = `
export class Wllama {
  setCompat() {}
  async loadModel([blob], params) {
    globalThis.llama.loads.push({ size: blob.size, params });
  }
  getLoadedContextInfo() { return { n_vocab: globalThis.llama.refuse ? 0 : 1024, n_ctx: 4096, n_ctx_train: 2048 }; }
  getChatTemplate() { return "{% for m in messages %}<|im_start|>{{ m.role }}\\n{{ m.content }}<|im_end|>\\n{% endfor %}"; }
  getModelMetadata() { return { hparams: {}, meta: { "general.architecture": "llama", "general.name": "aerix-tools", "general.file_type": "7" } }; }
  getNumThreads() { return 1; }
  async exit() {}
}
`;

let wllama, globals;
let cache;

before(() => {
  wllama = fakeWllama(FAKE_WLLAMA);
  globals = savedGlobals(["caches", "location", "navigator", "fetch"]);
});

after(() => {
  wllama.remove();
  globals.restore();
});

beforeEach(() => {
  cache = new FakeCache();
  defineGlobal("caches", { open: async (name) => (assert.equal(name, "aerix-models"), cache) });
  defineGlobal("location", { href: PAGE });
  defineGlobal("navigator", { hardwareConcurrency: 2 }); // no `gpu`: the CPU
  // only wllama's wasm is fetched here (its first bytes, to check them)
  defineGlobal("fetch", async (url) => {
    assert.match(String(url), /wllama\.wasm$/);
    return new Response(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  });
  globalThis.llama = { loads: [], refuse: false };
});

afterEach(() => delete globalThis.llama);

function load(model, options = {}) {
  const progress = [];
  const engine = loadEngine({ model, wllamaBase: wllama.base, prompt: "chat", onProgress: (p) => progress.push(p), ...options });
  return engine.then((e) => ({ info: { ...e.info }, progress }));
}

describe("a picked file kept for the next visit", () => {
  test("keepModel keeps it under its key and names the model that loads it from the cache", async () => {
    const model = await keepModel(file(), KEY);
    assert.equal(model, `aerix-local:${encodeURIComponent(KEY)}`);
    assert.deepEqual([...cache.entries.keys()], [`http://site.test/aerix-local/${encodeURIComponent(KEY)}`]);
    assert.deepEqual(await cachedModels(), [{ model, key: KEY, size: MODEL.length, local: true }]);

    const { info, progress } = await load(model);
    assert.equal(info.cached, true);
    assert.deepEqual(globalThis.llama.loads.map((l) => l.size), [MODEL.length]);
    assert.ok(progress.length > 0 && progress.every((p) => p.phase === "model" && p.cached === true));
    assert.deepEqual(progress.at(-1), { phase: "model", loaded: MODEL.length, total: MODEL.length, cached: true });
  });

  test("kept again under the same key with the same size, it is not written again", async () => {
    await keepModel(file(), KEY);
    await keepModel(file(), KEY);
    assert.equal(cache.puts, 1);
    await keepModel(new Blob([MODEL, new Uint8Array(8)]), KEY); // another size: the new bytes
    assert.equal(cache.puts, 2);
  });

  test("a Blob with cacheKey loads as given, then is kept: the next load comes from the cache", async () => {
    const first = await load(file(), { cacheKey: KEY });
    assert.equal(first.info.cached, false);
    const [kept] = await cachedModels();
    assert.equal(kept.key, KEY);
    const second = await load(kept.model);
    assert.equal(second.info.cached, true);
  });

  test("a Blob without cacheKey is never kept, nor with cache: false", async () => {
    await load(file());
    await load(file(), { cacheKey: KEY, cache: false });
    assert.deepEqual(await cachedModels(), []);
  });

  test("not GGUF: keepModel refuses it and keeps nothing", async () => {
    await assert.rejects(keepModel(new Blob(["<html>not a model</html>"]), "page.html:24:1"), /is not a GGUF file/);
    await assert.rejects(keepModel(file(), ""), TypeError);
    assert.equal(cache.entries.size, 0);
  });

  test("a kept model that is gone, or no longer whole, fails as ModelNotKept, and a part is dropped", async () => {
    const model = `aerix-local:${encodeURIComponent(KEY)}`;
    await assert.rejects(load(model), (e) => e.name === "ModelNotKept" && /load its file again/.test(e.message));
    await keepModel(file(), KEY);
    const [url] = cache.entries.keys();
    cache.entries.get(url).blob = new Blob([MODEL.subarray(0, 1000)]); // the browser kept only part of it
    await assert.rejects(load(model), (e) => e.name === "ModelNotKept");
    assert.equal(cache.entries.size, 0);
    assert.deepEqual(globalThis.llama.loads, []);
  });

  test("bytes llama.cpp refuses are not kept", async () => {
    globalThis.llama.refuse = true;
    await assert.rejects(load(file(), { cacheKey: KEY }), /reported no vocabulary/);
    await keepModel(file(), KEY);
    await assert.rejects(load(`aerix-local:${encodeURIComponent(KEY)}`), /reported no vocabulary/);
    assert.equal(cache.entries.size, 0);
  });

  test("cache: false cannot load a kept model; forgetModel removes one", async () => {
    const model = await keepModel(file(), KEY);
    await assert.rejects(load(model, { cache: false }), /cache: false turns off/);
    assert.equal(await forgetModel(model), true);
    assert.equal(await forgetModel(model), false);
    assert.deepEqual(await cachedModels(), []);
  });

  test("cachedModels lists every model the cache keeps, the last kept last", async () => {
    await cache.put("http://site.test/models/tiny.gguf", new Response(new Blob([MODEL.subarray(0, 10)]), { headers: { "Content-Length": "10" } }));
    await keepModel(file(), KEY);
    assert.deepEqual(await cachedModels(), [
      { model: "http://site.test/models/tiny.gguf", size: 10, local: false },
      { model: `aerix-local:${encodeURIComponent(KEY)}`, key: KEY, size: MODEL.length, local: true },
    ]);
  });
});

describe("engine.info", () => {
  test("the facts of the model, next to the fields it had", async () => {
    const { info } = await load(file());
    for (const key of ["prompt", "n_ctx", "n_vocab", "n_threads", "isolated", "cached", "fetchMs", "loadMs"]) assert.ok(key in info, key);
    assert.deepEqual(
      { name: info.name, architecture: info.architecture, parameters: info.parameters, n_params: info.n_params, quantisation: info.quantisation, template: info.template, backend: info.backend, n_ctx_train: info.n_ctx_train },
      { name: "aerix-tools", architecture: "llama", parameters: "3.7M", n_params: CARD.parameters, quantisation: "Q8_0", template: "chatml", backend: "cpu", n_ctx_train: 2048 },
    );
    assert.equal(globalThis.llama.loads[0].params.n_gpu_layers, 0); // no WebGPU here: the CPU was asked for
  });
});
