"""A store in SQLite (``sqlite3`` is in CPython and in Pyodide): runs survive the process."""

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
"""


class SQLiteStore:
    """Runs and effects in one SQLite file (or ``":memory:"``). Each write is its own transaction."""

    def __init__(self, path: str = "aerix-runs.sqlite3") -> None:
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None)
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
