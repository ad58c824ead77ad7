/**
 * Durable runs in the page: an IndexedDB store with the methods of aerix's Store protocol.
 *
 *   const store = openStore("aerix");          // usable at once; the database opens in the background
 *   await store.createRun(json);                // or the existing run with its idempotency key
 *
 * Run records (py/aerix/runs.py) cross as JSON text, so what Python wrote comes back exactly
 * (JavaScript would turn None into undefined and drop it); effects are strings by key. Each
 * method is one IndexedDB transaction, so `createRun` with an idempotency key is atomic.
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

// What IndexedDB keeps of a run: the fields it indexes, and the record as JSON text.
function row(json) {
  const run = JSON.parse(json);
  const out = { id: run.id, created_at: run.created_at ?? 0, json };
  if (run.idempotency_key != null) out.idempotency_key = run.idempotency_key; // null cannot be indexed
  return out;
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
    createRun: (json) =>
      tx(["runs"], "readwrite", async (t) => {
        const runs = t.objectStore("runs");
        const fresh = row(json);
        const existing =
          (fresh.idempotency_key != null ? await request(runs.index("idempotency_key").get(fresh.idempotency_key)) : undefined) ??
          (await request(runs.get(fresh.id)));
        if (existing) return existing.json;
        await request(runs.add(fresh));
        return json;
      }),
    getRun: (id) => tx(["runs"], "readonly", async (t) => (await request(t.objectStore("runs").get(id)))?.json ?? null),
    saveRun: (json) => tx(["runs"], "readwrite", async (t) => void (await request(t.objectStore("runs").put(row(json))))),
    listRuns: () =>
      tx(["runs"], "readonly", async (t) => {
        const all = await request(t.objectStore("runs").index("created_at").getAll());
        return all.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1)).map((r) => r.json);
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
