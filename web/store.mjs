/**
 * Durable runs in the page: an IndexedDB store with the methods of aerix's Store protocol.
 *
 *   const store = openStore("aerix");          // usable at once; the database opens in the background
 *   await store.createRun(json);                // or the existing run with its idempotency key
 *   await store.acquireLease("run:r1", holder, expiresAt, now);   // true: holder runs r1 now
 *
 * Run records (py/aerix/durable/record.py) cross as JSON text, so what Python wrote comes back
 * exactly (JavaScript would turn None into undefined and drop it); effects are strings by key. Each
 * method is one IndexedDB transaction, so `createRun` with an idempotency key is atomic.
 *
 * Writes that cannot go stale (see Store in py/aerix/stores/__init__.py): a run row keeps its
 * record's `revision` beside the text (`rev`; a row of an older page has none: 0).
 * `saveRun(json, revision, holder)` writes only if the row is still at `revision` and `holder`
 * holds the lease `run:<id>`, and `putEffect(key, result, runId, holder)` only if `holder` holds
 * `run:<runId>`: each checks and writes in one readwrite transaction over its object store and
 * `leases`, and resolves to whether it wrote (`null`/`undefined` skips a check). A record text
 * that does not parse is read as `{"id", "corrupt"}`, so one bad row hides no other.
 *
 * Leases (one executor per run) are records in the `leases` object store, checked and written
 * in one readwrite transaction: IndexedDB runs readwrite transactions on one object store one
 * after another, across tabs too. A lease held in this tab is also a Web Lock,
 * `aerix-lease:<database>:<lease name>` (`navigator.locks`), held until `releaseLease` or until
 * the tab goes: every live holder holds its Web Lock, so a tab that obtains it may take the
 * lease whatever the record says (its holder's tab was closed or reloaded), and one that cannot
 * obtain it is refused; `getLease` does not report a record whose Web Lock nobody holds. Within
 * a tab the record decides (holders there share the Web Lock). Without `navigator.locks` the
 * record alone decides.
 *
 * @module store
 */

const VERSION = 4; // 2: leases; 3: agent state and artifacts; 4: agent state by item

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function open(name) {
  const req = indexedDB.open(name, VERSION);
  // Each step upgrades from the version before it, so a database made by an older page keeps its runs.
  req.onupgradeneeded = (event) => {
    const db = req.result;
    if (event.oldVersion < 1) {
      const runs = db.createObjectStore("runs", { keyPath: "id" });
      runs.createIndex("idempotency_key", "idempotency_key", { unique: true });
      runs.createIndex("created_at", "created_at");
      db.createObjectStore("effects");
    }
    if (event.oldVersion < 2) db.createObjectStore("leases", { keyPath: "name" });
    if (event.oldVersion < 3) {
      db.createObjectStore("state"); // agent name -> JSON text of its state (agent_state.py)
      const artifacts = db.createObjectStore("artifacts", { keyPath: "id" }); // {id, run_id, seq, meta (JSON text), data (Blob)}
      artifacts.createIndex("run_id", "run_id");
    }
    if (event.oldVersion < 4) {
      // {agent, key, seq, json}: one item of an agent's state; seq is its place in the order
      const items = db.createObjectStore("state_items", { keyPath: ["agent", "key"] });
      items.createIndex("order", ["agent", "seq"], { unique: true });
    }
  };
  return request(req).then((db) => {
    // a newer page (another tab) upgrading the database, or destroy(): let it go on
    db.onversionchange = () => db.close();
    return db;
  });
}

/** Every item of `agent`'s state, in the `order` index. */
const itemsOf = (agent) => IDBKeyRange.bound([agent, -Infinity], [agent, Infinity]);

// What IndexedDB keeps of a run: the fields it indexes, its revision, and the record as JSON text.
function row(json) {
  const run = JSON.parse(json);
  const out = { id: run.id, created_at: run.created_at ?? 0, rev: run.revision ?? 0, json };
  if (run.idempotency_key != null) out.idempotency_key = run.idempotency_key; // null cannot be indexed
  return out;
}

// A row's record text, or a `corrupt` record under the row's id when the text does not parse.
function readRow(r) {
  try {
    const run = JSON.parse(r.json);
    if (run !== null && typeof run === "object" && !Array.isArray(run)) return r.json;
  } catch {
    // falls through to the corrupt record below
  }
  return JSON.stringify({ id: String(r.id), corrupt: "its stored text is not a JSON object" });
}

/** Whether `holder` holds the lease `run:<runId>` in transaction `t` (no holder: no fence). */
async function holds(t, runId, holder) {
  if (holder == null || runId == null) return true;
  return (await request(t.objectStore("leases").get(`run:${runId}`)))?.holder === holder;
}

// -- leases: Web Locks held in this tab, and one queue per lease -----------------------------

/** Web Locks this tab holds, by lock name: `{ holder, release }` (shared by every openStore here). */
const heldLocks = new Map();
const queues = new Map();

/** Run `body` after every earlier call queued on `key` has settled: one lease step at a time per tab. */
function serially(key, body) {
  const run = (queues.get(key) ?? Promise.resolve()).then(body);
  const tail = run.then(
    () => {},
    () => {},
  );
  queues.set(key, tail);
  tail.then(() => queues.get(key) === tail && queues.delete(key));
  return run;
}

/** The Web Lock `lockName` if it is free now, as a function that releases it; null if it is held elsewhere. */
function takeWebLock(lockName) {
  return new Promise((resolve, reject) => {
    navigator.locks
      .request(lockName, { ifAvailable: true }, (lock) => {
        if (!lock) return resolve(null);
        return new Promise((release) => resolve(release)); // held until release() is called
      })
      .catch(reject);
  });
}

/**
 * The store aerix's Python side uses in the page (py/aerix/stores/indexeddb.py): one object of
 * functions over one IndexedDB database.
 * @param {string} [name="aerix"] the IndexedDB database name
 */
export function openStore(name = "aerix") {
  const ready = open(name);
  /** @type {Tx} */
  const tx = async (stores, mode, body) => {
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
  };
  return {
    name,
    ...runMethods(tx),
    ...leaseMethods(name, tx),
    ...stateMethods(tx),
    ...artifactMethods(tx),
    /** Delete the database (tests, or a "forget everything" button). */
    destroy: async () => {
      for (const [lockName, { release }] of heldLocks) {
        if (lockName.startsWith(`aerix-lease:${name}:`)) heldLocks.delete(lockName), release();
      }
      (await ready).close();
      await request(indexedDB.deleteDatabase(name));
    },
  };
}

/**
 * One transaction over `stores`: resolves with what `body` resolves with, once it has committed.
 * @typedef {<T>(stores: string[], mode: IDBTransactionMode, body: (t: IDBTransaction) => Promise<T>) => Promise<T>} Tx
 */

/**
 * The runs, each a row of JSON text with its revision.
 * @param {Tx} tx
 */
function runMethods(tx) {
  return {
    createRun: (json) =>
      tx(["runs"], "readwrite", async (t) => {
        const runs = t.objectStore("runs");
        const fresh = row(json);
        const existing =
          (fresh.idempotency_key != null ? await request(runs.index("idempotency_key").get(fresh.idempotency_key)) : undefined) ??
          (await request(runs.get(fresh.id)));
        if (existing) return readRow(existing);
        await request(runs.add(fresh));
        return json;
      }),
    getRun: (id) =>
      tx(["runs"], "readonly", async (t) => {
        const kept = await request(t.objectStore("runs").get(id));
        return kept ? readRow(kept) : null;
      }),
    /**
     * Replace the run with this JSON text if the stored row is still at `revision` (a missing row
     * is at 0) and `holder` holds the lease `run:<id>`; `null`/`undefined` skips a check. One
     * transaction over `runs` and `leases`, so nothing comes between the checks and the write.
     * Resolves to whether it wrote.
     */
    saveRun: (json, revision, holder) =>
      tx(["runs", "leases"], "readwrite", async (t) => {
        const runs = t.objectStore("runs");
        const fresh = row(json);
        if (revision != null && ((await request(runs.get(fresh.id)))?.rev ?? 0) !== revision) return false;
        if (!(await holds(t, fresh.id, holder))) return false;
        await request(runs.put(fresh));
        return true;
      }),
    listRuns: () =>
      tx(["runs"], "readonly", async (t) => {
        const all = await request(t.objectStore("runs").index("created_at").getAll());
        return all.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : 1)).map(readRow);
      }),
  };
}

/**
 * Leases (one holder at a time per name, with an expiry), backed by this tab's Web Locks.
 * @param {string} name the database's name
 * @param {Tx} tx
 */
function leaseMethods(name, tx) {
  return {
    /**
     * Take the lease `lease` for `holder` until `expiresAt` if it is free (see Store in
     * py/aerix/stores/__init__.py); `now` is the caller's clock. Resolves to whether `holder` holds it now.
     */
    acquireLease: (lease, holder, expiresAt, now) => {
      const lockName = `aerix-lease:${name}:${lease}`;
      return serially(lockName, async () => {
        const mine = heldLocks.get(lockName);
        let fresh = null;
        if (!mine && globalThis.navigator?.locks) {
          fresh = await takeWebLock(lockName);
          if (!fresh) return false; // a live holder in another tab
        }
        let won;
        try {
          won = await tx(["leases"], "readwrite", async (t) => {
            const leases = t.objectStore("leases");
            const current = await request(leases.get(lease));
            // a fresh Web Lock means whoever the record names has gone with its tab
            if (!fresh && current && current.holder !== holder && current.expires_at > now) return false;
            await request(leases.put({ name: lease, holder, expires_at: expiresAt }));
            return true;
          });
        } catch (error) {
          fresh?.();
          throw error;
        }
        if (fresh) heldLocks.set(lockName, { holder, release: fresh });
        else if (won && mine) mine.holder = holder;
        return won;
      });
    },
    /** Give the lease up if `holder` holds it (and with it this tab's Web Lock); anyone else's stays. */
    releaseLease: (lease, holder) => {
      const lockName = `aerix-lease:${name}:${lease}`;
      return serially(lockName, async () => {
        const freed = await tx(["leases"], "readwrite", async (t) => {
          const leases = t.objectStore("leases");
          if ((await request(leases.get(lease)))?.holder !== holder) return false;
          await request(leases.delete(lease));
          return true;
        });
        const mine = heldLocks.get(lockName);
        if (mine && (freed || mine.holder === holder)) {
          heldLocks.delete(lockName);
          mine.release();
        }
      });
    },
    /** `{name, holder, expires_at}`, or null when nobody holds the lease. */
    getLease: async (lease) => {
      const lockName = `aerix-lease:${name}:${lease}`;
      const current = (await tx(["leases"], "readonly", async (t) => request(t.objectStore("leases").get(lease)))) ?? null;
      if (!current || heldLocks.has(lockName) || !globalThis.navigator?.locks) return current;
      // every live holder holds the Web Lock: a record without one was left by a closed tab
      const { held = [] } = await navigator.locks.query();
      return held.some((lock) => lock.name === lockName) ? current : null;
    },
  };
}

/**
 * Effects (results kept once per key) and agents' states.
 * @param {Tx} tx
 */
function stateMethods(tx) {
  return {
    getEffect: (key) => tx(["effects"], "readonly", async (t) => (await request(t.objectStore("effects").get(key))) ?? null),
    /** Record an effect's result, if `holder` holds the lease `run:<runId>` (one transaction); resolves to whether it wrote. */
    putEffect: (key, result, runId, holder) =>
      tx(["effects", "leases"], "readwrite", async (t) => {
        if (!(await holds(t, runId, holder))) return false;
        await request(t.objectStore("effects").put(result, key));
        return true;
      }),
    /** An agent's state (py/aerix/agent_state.py) as JSON text, by agent name; null if none. */
    getState: (agent) => tx(["state"], "readonly", async (t) => (await request(t.objectStore("state").get(agent))) ?? null),
    /** Replace an agent's state with this JSON text. */
    putState: (agent, json) => tx(["state"], "readwrite", async (t) => void (await request(t.objectStore("state").put(json, agent)))),
    /** An agent's state items (py/aerix/agent_state.py), in the order first put: `[key, JSON text]` pairs. */
    getStateItems: (agent) =>
      tx(["state_items"], "readonly", async (t) => {
        const all = await request(t.objectStore("state_items").index("order").getAll(itemsOf(agent)));
        return all.map((item) => [item.key, item.json]);
      }),
    /** One item of an agent's state as JSON text, or null. */
    getStateItem: (agent, key) => tx(["state_items"], "readonly", async (t) => (await request(t.objectStore("state_items").get([agent, key])))?.json ?? null),
    /**
     * Put and delete items of an agent's state in one transaction: `pairs` is the JSON text of
     * `[[key, JSON text or null], ...]`, null deleting. A replaced item keeps its `seq` (its
     * place); a new one gets the next after the agent's last, read in the same transaction.
     */
    putStateItems: (agent, pairs) =>
      tx(["state_items"], "readwrite", async (t) => {
        const items = t.objectStore("state_items");
        const last = await request(items.index("order").openCursor(itemsOf(agent), "prev"));
        let next = last ? last.value.seq + 1 : 0;
        for (const [key, json] of JSON.parse(pairs)) {
          if (json === null) {
            await request(items.delete([agent, key]));
            continue;
          }
          const kept = await request(items.get([agent, key]));
          await request(items.put({ agent, key, seq: kept ? kept.seq : next++, json }));
        }
      }),
  };
}

/**
 * Artifacts: their meta as JSON text, their bytes as a Blob.
 * @param {Tx} tx
 */
function artifactMethods(tx) {
  return {
    /**
     * Keep an artifact (py/aerix/artifacts.py): its meta as JSON text, its bytes (a Uint8Array) as a
     * Blob of its media type. An id kept already is replaced in place: `seq`, the put order within
     * its run, is taken from the run's count in the same transaction and kept on a replace.
     */
    putArtifact: (metaJson, data) => {
      const meta = JSON.parse(metaJson);
      const blob = new Blob([data], { type: meta.media_type });
      return tx(["artifacts"], "readwrite", async (t) => {
        const artifacts = t.objectStore("artifacts");
        const kept = await request(artifacts.get(meta.id));
        const seq = kept ? kept.seq : await request(artifacts.index("run_id").count(meta.run_id));
        await request(artifacts.put({ id: meta.id, run_id: meta.run_id, seq, meta: metaJson, data: blob }));
      });
    },
    /** `{meta (JSON text), data (Uint8Array)}`, or null when there is no such artifact. */
    getArtifact: async (id) => {
      const kept = await tx(["artifacts"], "readonly", async (t) => request(t.objectStore("artifacts").get(id)));
      return kept ? { meta: kept.meta, data: new Uint8Array(await kept.data.arrayBuffer()) } : null;
    },
    /** The metas (JSON text) of one run's artifacts, in put order. */
    listArtifacts: (runId) =>
      tx(["artifacts"], "readonly", async (t) => {
        const all = await request(t.objectStore("artifacts").index("run_id").getAll(runId));
        return all.sort((a, b) => a.seq - b.seq).map((a) => a.meta);
      }),
  };
}
