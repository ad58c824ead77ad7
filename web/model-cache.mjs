/**
 * The model cache: the models this browser keeps for the page (the Cache API), and where
 * `loadEngine` (engine.mjs) gets a model's bytes from: a URL, a kept "aerix-local:" model, or a
 * Blob. engine.mjs re-exports `keepModel`, `cachedModels` and `forgetModel`, and aerix.mjs them.
 *
 * @module model-cache
 */

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
const GGUF_MAGIC = [0x47, 0x47, 0x55, 0x46]; // "GGUF"
const noop = () => {};

/**
 * A model given as a Blob: nothing to keep or drop.
 * @returns {ModelSource}
 */
function given(blob) {
  return { blob, cached: false, keep: () => Promise.resolve(), drop: () => Promise.resolve() };
}

/** The model `loadEngine` was given: a URL (or a kept "aerix-local:" model), or a Blob. */
export async function openSource(model, { cache, cacheKey, manifest, onProgress }) {
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

export async function checkMagic(blob, label) {
  const head = new Uint8Array(await blob.slice(0, 4).arrayBuffer());
  if (!GGUF_MAGIC.every((byte, i) => head[i] === byte)) {
    const seen = Array.from(head, (b) => b.toString(16).padStart(2, "0")).join(" ") || "nothing";
    throw new Error(`${label} is not a GGUF file (it starts with ${seen}, not "GGUF")`);
  }
}

/** The page's URL (the worker's, in a worker): what relative URLs and kept models' entries resolve against. */
export function pageUrl() {
  return globalThis.document?.baseURI ?? globalThis.location?.href;
}

