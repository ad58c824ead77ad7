"""A store in SQLite (``sqlite3`` is in CPython and in Pyodide): runs survive the process.

Several ``SQLiteStore`` objects, in one process or several, may share one file: each write is
one transaction, and a write that finds the file locked by another connection waits up to
``timeout`` seconds before it fails with ``database is locked``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

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
    Each write is its own transaction; ``timeout`` is how long a write waits for another
    connection's lock."""

    def __init__(self, path: str = "aerix-runs.sqlite3", *, timeout: float = 5.0) -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, timeout=timeout)
        self._db.executescript(_SCHEMA)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"

    def close(self) -> None:
        self._db.close()

    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        # one transaction: two starts with the same idempotency key must not make two runs
        self._db.execute("begin immediate")
        try:
            key = run.get("idempotency_key")
            row = None
            if key is not None:
                row = self._db.execute("select data from runs where idempotency_key = ?", (key,)).fetchone()
            if row is None:
                row = self._db.execute("select data from runs where id = ?", (run["id"],)).fetchone()
            if row is None:
                self._db.execute(
                    "insert into runs (id, idempotency_key, created_at, data) values (?, ?, ?, ?)",
                    (run["id"], key, run.get("created_at", 0.0), json.dumps(run)),
                )
            self._db.execute("commit")
        except BaseException:
            self._db.execute("rollback")
            raise
        stored: dict[str, Any] = json.loads(row[0]) if row is not None else json.loads(json.dumps(run))
        return stored

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        row = self._db.execute("select data from runs where id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None

    async def save_run(self, run: dict[str, Any]) -> None:
        self._db.execute(
            "insert into runs (id, idempotency_key, created_at, data) values (?, ?, ?, ?) "
            "on conflict(id) do update set data = excluded.data",
            (run["id"], run.get("idempotency_key"), run.get("created_at", 0.0), json.dumps(run)),
        )

    async def list_runs(self) -> list[dict[str, Any]]:
        rows = self._db.execute("select data from runs order by created_at, id").fetchall()
        return [json.loads(r[0]) for r in rows]

    async def get_effect(self, key: str) -> str | None:
        row = self._db.execute("select result from effects where key = ?", (key,)).fetchone()
        return row[0] if row else None

    async def put_effect(self, key: str, result: str) -> None:
        self._db.execute("insert or replace into effects (key, result) values (?, ?)", (key, result))

    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        cursor = self._db.execute(_ACQUIRE, (name, holder, float(expires_at), float(now)))
        return cursor.rowcount == 1

    async def release_lease(self, name: str, holder: str) -> None:
        self._db.execute("delete from leases where name = ? and holder = ?", (name, holder))

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        row = self._db.execute("select holder, expires_at from leases where name = ?", (name,)).fetchone()
        return {"name": name, "holder": row[0], "expires_at": row[1]} if row else None

    # A replaced artifact keeps its row (an upsert, not "insert or replace"), so its rowid, which
    # is the put order list_artifacts gives.
    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        self._db.execute(
            "insert into artifacts (id, run_id, meta, data) values (?, ?, ?, ?) "
            "on conflict(id) do update set run_id = excluded.run_id, meta = excluded.meta, data = excluded.data",
            (meta["id"], meta["run_id"], json.dumps(meta), bytes(data)),
        )

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        row = self._db.execute("select meta, data from artifacts where id = ?", (artifact_id,)).fetchone()
        return (json.loads(row[0]), bytes(row[1])) if row else None

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db.execute("select meta from artifacts where run_id = ? order by rowid", (run_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    async def get_state(self, agent: str) -> dict[str, Any] | None:
        row = self._db.execute("select data from state where agent = ?", (agent,)).fetchone()
        return json.loads(row[0]) if row else None

    async def put_state(self, agent: str, state: dict[str, Any]) -> None:
        self._db.execute("insert or replace into state (agent, data) values (?, ?)", (agent, json.dumps(state)))
