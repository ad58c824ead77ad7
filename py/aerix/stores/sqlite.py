"""A store in SQLite (``sqlite3`` is in CPython and in Pyodide): runs survive the process.

Several ``SQLiteStore`` objects, in one process or several, may share one file: each write is
one transaction, and a statement that finds the file locked by another connection waits up to
``timeout`` seconds for it; a lock held longer is ``AerixError(kind="store")`` naming the file,
never ``sqlite3.OperationalError``. SQLite's lock is not fair: a connection writing back to back
can keep a waiting one out for its whole burst (two threads racing 300 leases: one waits for the
other's entire loop), so ``timeout`` bounds that, not only one other write.

A run's revision is kept in its own column, ``rev`` (a file made before revisions gains it, at 0),
so that a save's compare-and-set and its fence are one statement: the WHERE checks the row's
``rev`` and the lease row in the same write transaction as the write. A row whose data is not a
JSON object is read as ``{"id": <row id>, "corrupt": <why>}``: listed, never raised.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from ..errors import AerixError
from . import read_record as _read

__all__ = ["SQLiteStore"]

_SCHEMA = """
create table if not exists runs (
    id text primary key,
    idempotency_key text unique,
    created_at real not null,
    data text not null
);
create table if not exists effects (key text primary key, result text not null);
create table if not exists leases (name text primary key, holder text not null, expires_at real not null);
create table if not exists artifacts (id text primary key, run_id text not null, meta text not null, data blob not null);
create index if not exists artifacts_by_run on artifacts (run_id);
create table if not exists state (agent text primary key, data text not null);
create table if not exists state_items (agent text not null, key text not null, data text not null, primary key (agent, key));
"""

# A run is written iff the fence holds (no holder, or the holder's lease row) and, when a revision
# is given, the row is at that revision; a row the store lacks is at revision 0. One statement:
# SQLite takes the write lock before it reads, so nothing can come between the check and the write.
_SAVE = """
insert into runs (id, idempotency_key, created_at, data, rev)
select :id, :key, :created_at, :data, :new_rev
where (:holder is null or exists (select 1 from leases where name = :lease and holder = :holder))
  and (:rev is null or :rev = 0 or exists (select 1 from runs where id = :id))
on conflict(id) do update set data = excluded.data, rev = excluded.rev
where :rev is null or runs.rev = :rev
"""

_PUT_EFFECT = """
insert into effects (key, result) select :key, :result
where (:holder is null or :lease is null or exists (select 1 from leases where name = :lease and holder = :holder))
on conflict(key) do update set result = excluded.result
"""

# One statement, so one write transaction: SQLite lets one connection write at a time, and the
# WHERE decides inside it whether the lease is free. A refused update changes no row.
_ACQUIRE = """
insert into leases (name, holder, expires_at) values (?, ?, ?)
on conflict(name) do update set holder = excluded.holder, expires_at = excluded.expires_at
where leases.holder = excluded.holder or leases.expires_at <= ?
"""


class SQLiteStore:
    """Runs, effects, leases and artifacts (a BLOB each) in one SQLite file (or ``":memory:"``).
    Each write is its own transaction; ``timeout`` is how long a statement waits for another
    connection's lock before it is ``AerixError(kind="store")``."""

    def __init__(self, path: str = "aerix-runs.sqlite3", *, timeout: float = 5.0) -> None:
        self.path = path
        self.timeout = timeout
        self._db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
        try:
            self._db.executescript(_SCHEMA)
            if "rev" not in [row[1] for row in self._db.execute("pragma table_info(runs)")]:
                self._db.execute("alter table runs add column rev integer not null default 0")  # a file made before revisions
        except sqlite3.OperationalError as e:
            self._db.close()
            raise self._locked(e) from None

    # The wait is SQLite's busy timeout (``timeout`` above), not retries of our own: every write is
    # one autocommit statement or a ``begin immediate`` transaction, so no connection ever holds a
    # read lock while it asks for the write lock, the one case where SQLite answers busy at once
    # (to break a deadlock) without waiting. A retry loop in Python would wait worse: it needs the
    # GIL to try again, which a thread writing back to back holds except inside its statements.
    # A lock is never answered as a refused lease (``acquire_lease`` False): a renewal refused is
    # a lost lease and stops a live run; a store error the lease keeper tries again (durable/lifecycle.py).
    def _execute(self, sql: str, args: Any = ()) -> sqlite3.Cursor:
        try:
            return self._db.execute(sql, args)
        except sqlite3.OperationalError as e:
            raise self._locked(e) from None

    def _locked(self, e: sqlite3.OperationalError) -> Exception:
        """A lock held past ``timeout`` as a store error naming the file; any other error as it is."""
        if e.sqlite_errorcode & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return e
        return AerixError("store", f"SQLite file {self.path!r} stayed locked by another connection for more than {self.timeout:g} s ({e})")

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        self._db.close()

    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        # one transaction: two starts with the same idempotency key must not make two runs
        self._execute("begin immediate")
        try:
            key = run.get("idempotency_key")
            row = None
            if key is not None:
                row = self._execute("select id, data from runs where idempotency_key = ?", (key,)).fetchone()
            if row is None:
                row = self._execute("select id, data from runs where id = ?", (run["id"],)).fetchone()
            if row is None:
                self._execute(
                    "insert into runs (id, idempotency_key, created_at, data, rev) values (?, ?, ?, ?, ?)",
                    (run["id"], key, run.get("created_at", 0.0), json.dumps(run), _revision(run)),
                )
            self._execute("commit")
        except BaseException:
            self._execute("rollback")
            raise
        return _read(row[0], row[1]) if row is not None else _read(run["id"], json.dumps(run))

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._execute("select id, data from runs where id = ?", (run_id,)).fetchone()
        return _read(row[0], row[1]) if row else None

    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> bool:
        values = {
            "id": run["id"], "key": run.get("idempotency_key"), "created_at": run.get("created_at", 0.0), "data": json.dumps(run),
            "new_rev": _revision(run), "rev": revision, "holder": holder, "lease": f"run:{run['id']}",
        }
        return self._execute(_SAVE, values).rowcount == 1

    async def list_runs(self) -> list[dict[str, Any]]:
        rows = self._execute("select id, data from runs order by created_at, id").fetchall()
        return [_read(r[0], r[1]) for r in rows]

    async def list_runs_by_status(self, statuses: list[str]) -> list[dict[str, Any]]:
        # json_valid first: json_extract of a row that is not JSON would fail the whole query
        marks = ", ".join("?" * len(statuses))
        sql = f"select id, data from runs where json_valid(data) and json_extract(data, '$.status') in ({marks}) order by created_at, id"
        return [_read(r[0], r[1]) for r in self._execute(sql, tuple(statuses)).fetchall()]

    async def get_effect(self, key: str) -> str | None:
        row = self._execute("select result from effects where key = ?", (key,)).fetchone()
        return row[0] if row else None

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool:
        lease = None if run_id is None else f"run:{run_id}"
        return self._execute(_PUT_EFFECT, {"key": key, "result": result, "lease": lease, "holder": holder}).rowcount == 1

    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        cursor = self._execute(_ACQUIRE, (name, holder, float(expires_at), float(now)))
        return cursor.rowcount == 1

    async def release_lease(self, name: str, holder: str) -> None:
        self._execute("delete from leases where name = ? and holder = ?", (name, holder))

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        row = self._execute("select holder, expires_at from leases where name = ?", (name,)).fetchone()
        return {"name": name, "holder": row[0], "expires_at": row[1]} if row else None

    # A replaced artifact keeps its row (an upsert, not "insert or replace"), so its rowid, which
    # is the put order list_artifacts gives.
    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        self._execute(
            "insert into artifacts (id, run_id, meta, data) values (?, ?, ?, ?) "
            "on conflict(id) do update set run_id = excluded.run_id, meta = excluded.meta, data = excluded.data",
            (meta["id"], meta["run_id"], json.dumps(meta), bytes(data)),
        )

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        row = self._execute("select meta, data from artifacts where id = ?", (artifact_id,)).fetchone()
        return (json.loads(row[0]), bytes(row[1])) if row else None

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._execute("select meta from artifacts where run_id = ? order by rowid", (run_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    async def get_state(self, agent: str) -> dict[str, Any] | None:
        row = self._execute("select data from state where agent = ?", (agent,)).fetchone()
        return json.loads(row[0]) if row else None

    async def put_state(self, agent: str, state: dict[str, Any]) -> None:
        self._execute("insert or replace into state (agent, data) values (?, ?)", (agent, json.dumps(state)))

    # An item's rowid is its place in the order: a replace is an upsert (the row stays), a
    # delete and a put again makes a new row, after every other.
    async def get_state_items(self, agent: str) -> dict[str, dict[str, Any]]:
        rows = self._execute("select key, data from state_items where agent = ? order by rowid", (agent,)).fetchall()
        return {key: json.loads(data) for key, data in rows}

    async def get_state_item(self, agent: str, key: str) -> dict[str, Any] | None:
        row = self._execute("select data from state_items where agent = ? and key = ?", (agent, key)).fetchone()
        return json.loads(row[0]) if row else None

    async def put_state_items(self, agent: str, items: dict[str, dict[str, Any] | None]) -> None:
        rows = [(key, None if item is None else json.dumps(item)) for key, item in items.items()]  # before the transaction: a bad item writes nothing
        self._execute("begin immediate")
        try:
            for key, data in rows:
                if data is None:
                    self._execute("delete from state_items where agent = ? and key = ?", (agent, key))
                else:
                    self._execute(
                        "insert into state_items (agent, key, data) values (?, ?, ?) on conflict(agent, key) do update set data = excluded.data",
                        (agent, key, data),
                    )
            self._execute("commit")
        except BaseException:
            self._execute("rollback")
            raise


def _revision(run: dict[str, Any]) -> Any:
    return run.get("revision", 0)
