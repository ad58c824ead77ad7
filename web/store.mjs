/**
 * Durable runs in the page: an IndexedDB store with the methods of aerix's Store protocol.
 *
 *   const store = openStore("aerix");          // usable at once; the database opens in the background
 *   await store.createRun(run);                 // or the existing run with its idempotency key
 *
 * Records are the JSON run records of aerix (py/aerix/runs.py); effects are strings by key.
 * Each method is one IndexedDB transaction, so `createRun` with an idempotency key is atomic.
 *
 * @module store
 */

const VERSION = 1;

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function open(name) {
  const req = indexedDB.open(name, VERSION);
  req.onupgradeneeded = () => {
    const db = req.result;
    const runs = db.createObjectStore("runs", { keyPath: "id" });
    runs.createIndex("idempotency_key", "idempotency_key", { unique: true });
    runs.createIndex("created_at", "created_at");
    db.createObjectStore("effects");
  };
  return request(req);
}

// IndexedDB cannot index null; a run without an idempotency key simply has none.
function clean(run) {
  const copy = structuredClone(run);
  if (copy.idempotency_key === null || copy.idempotency_key === undefined) delete copy.idempotency_key;
  return copy;
}

function restore(run) {
  if (run && !("idempotency_key" in run)) run.idempotency_key = null;
  return run ?? null;
}

/**
 * @param {string} [name="aerix"] the IndexedDB database name
 */
export function openStore(name = "aerix") {
  const ready = open(name);
  async function tx(stores, mode, body) {
    const db = await ready;
    const t = db.transaction(stores, mode);
    const done = new Promise((resolve, reject) => {
      t.oncomplete = resolve;
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error ?? new Error("IndexedDB transaction aborted"));
    });
    const value = await body(t);
    await done;
    return value;
  }
  return {
    name,
    createRun: (run) =>
      tx(["runs"], "readwrite", async (t) => {
        const runs = t.objectStore("runs");
        const key = run.idempotency_key;
        const existing =
          (key != null ? await request(runs.index("idempotency_key").get(key)) : undefined) ??
          (await request(runs.get(run.id)));
        if (existing) return restore(existing);
        await request(runs.add(clean(run)));
        return restore(clean(run));
      }),
    getRun: (id) => tx(["runs"], "readonly", async (t) => restore(await request(t.objectStore("runs").get(id)))),
    saveRun: (run) => tx(["runs"], "readwrite", async (t) => void (await request(t.objectStore("runs").put(clean(run))))),
    listRuns: () =>
      tx(["runs"], "readonly", async (t) => {
        const all = await request(t.objectStore("runs").index("created_at").getAll());
        return all.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1)).map(restore);
      }),
    getEffect: (key) => tx(["effects"], "readonly", async (t) => (await request(t.objectStore("effects").get(key))) ?? null),
    putEffect: (key, result) => tx(["effects"], "readwrite", async (t) => void (await request(t.objectStore("effects").put(result, key)))),
    /** Delete the database (tests, or a "forget everything" button). */
    destroy: async () => {
      (await ready).close();
      await request(indexedDB.deleteDatabase(name));
    },
  };
}
