"""A store in PostgreSQL (psycopg 3, async): many processes on many machines share runs.

    store = PostgresStore("postgresql://aerix@db.internal:5432/aerix")   # pip install 'aerix[postgres]'
    agent = Agent(model=..., store=store)
    ...
    await store.close()

Connections. The store connects when first used and keeps up to ``connections`` of its own (a
small pool: each call takes one, so concurrent calls of one store race on separate connections,
as stores in other processes do). A pool belongs to the event loop it was made in: a store used
from another loop (``asyncio.run`` after ``asyncio.run``) drops the old connections. A DSN that
does not parse, a server that cannot be reached or refuses the login, and a failed statement are
``AerixError(kind="store")`` naming the server and what went wrong, never the password.

Schema. Tables live in the schema ``aerix`` (version 2: runs are indexed by status too, for
``list_runs_by_status``). On first use the store reads
``aerix.schema_version``; when it is behind :data:`SCHEMA_VERSION` it applies the missing
:data:`MIGRATIONS` in one transaction under an advisory lock, so that processes opening a new
database together migrate it once. A database newer than this aerix is a store error, never a
downgrade. At the current version nothing is created, so a role without CREATE can use it.

Records. Runs, states and state items are ``jsonb``; artifacts' bytes are ``bytea`` in their own
table (``aerix.artifacts``), never in a run record. jsonb keeps JSON's meaning, not its text: an
object's keys come back in jsonb's order (aerix reads records by key; effect keys hash inputs
with sorted keys), a float written with an exponent from 1e16 up comes back an int, and it cannot
keep U+0000, NaN or infinities: such a record is a store error naming it.

Atomicity. Every write is one statement, or one transaction where it has several parts:

- ``acquire_lease`` is ``INSERT ... ON CONFLICT (name) DO UPDATE ... WHERE <expired or the same
  holder>``: PostgreSQL inserts the row or locks the one there and checks the WHERE against its
  latest committed version, so of concurrent acquirers, on any connection, exactly one gets a
  row. Not ``SELECT ... FOR UPDATE SKIP LOCKED``, which takes *some* free row of a queue: a lease
  is one named row that may not exist yet (a missing row cannot be locked, so the first take
  would race an insert), and it would skip a lease row that a save's fence holds ``FOR SHARE``,
  refusing a renewal that ought to wait and win (a refused renewal stops a live run).
- ``save_run`` is one ``INSERT ... ON CONFLICT DO UPDATE ... WHERE rev = <revision>``: the
  compare-and-set is checked on the locked row, and the fence (the lease row naming the holder)
  is read ``FOR SHARE`` in the same statement, so no takeover commits between the check and the
  write. ``put_effect`` is fenced the same way.
- ``put_state_items`` is one transaction writing its rows in key order (concurrent puts of
  overlapping items cannot deadlock), their places in the order drawn first, in put order.

``concurrency_key`` needs nothing more: it is a lease (``key:<k>``) like a run's.
"""

from __future__ import annotations

import asyncio
import json
import re
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, AsyncIterator
from urllib.parse import unquote

from ..errors import AerixError
from . import read_record as _read
from .postgres_pool import Pool

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "PostgresStore"]

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, effects, leases, artifacts, agent state and state items
    """
    create table aerix.runs (
        id text collate "C" primary key,
        idempotency_key text unique,
        created_at double precision not null,
        rev bigint not null default 0,
        data jsonb not null
    );
    create index runs_by_creation on aerix.runs (created_at, id);
    create table aerix.effects (key text primary key, result text not null);
    create table aerix.leases (name text primary key, holder text not null, expires_at double precision not null);
    create table aerix.artifacts (
        id text primary key,
        seq bigserial not null,
        run_id text not null,
        meta jsonb not null,
        data bytea not null
    );
    create index artifacts_by_run on aerix.artifacts (run_id, seq);
    create table aerix.state (agent text primary key, data jsonb not null);
    create sequence aerix.state_item_seq;
    create table aerix.state_items (
        agent text not null,
        key text not null,
        seq bigint not null,
        data jsonb not null,
        primary key (agent, key)
    );
    create index state_items_in_order on aerix.state_items (agent, seq);
    """,
    # 2: list_runs_by_status, a worker's poll, reads the runs it may take, not every run
    """
    create index runs_by_status on aerix.runs ((data->>'status'), created_at, id);
    """,
)
"""The schema's migrations, in order: the database is at version ``n`` once the first ``n`` ran."""

SCHEMA_VERSION = len(MIGRATIONS)
_MIGRATION_LOCK = 0x6165726978  # "aerix": the advisory lock migrations are made under

_SAVE = """
insert into aerix.runs (id, idempotency_key, created_at, rev, data)
select %(id)s, %(key)s, %(created_at)s, %(new_rev)s, %(data)s::jsonb
where (%(holder)s::text is null or exists (select 1 from aerix.leases where name = %(lease)s and holder = %(holder)s for share))
  and (%(rev)s::bigint is null or %(rev)s::bigint = 0 or exists (select 1 from aerix.runs where id = %(id)s))
on conflict (id) do update set data = excluded.data, rev = excluded.rev
where %(rev)s::bigint is null or aerix.runs.rev = %(rev)s::bigint
"""

_PUT_EFFECT = """
insert into aerix.effects (key, result) select %(key)s, %(result)s
where (%(lease)s::text is null or %(holder)s::text is null
       or exists (select 1 from aerix.leases where name = %(lease)s and holder = %(holder)s for share))
on conflict (key) do update set result = excluded.result
"""

_ACQUIRE = """
insert into aerix.leases (name, holder, expires_at) values (%s, %s, %s)
on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at
where aerix.leases.holder = excluded.holder or aerix.leases.expires_at <= %s
"""

_PUT_ITEM = """
insert into aerix.state_items (agent, key, seq, data) values (%s, %s, %s, %s::jsonb)
on conflict (agent, key) do update set data = excluded.data
"""


class PostgresStore:
    """Runs, effects, leases, artifacts and agent state in a PostgreSQL database, shared by
    every process that opens it. ``connections``: how many connections this store keeps at most;
    ``connect_timeout``: seconds to wait for the server when connecting."""

    def __init__(self, dsn: str, *, connections: int = 4, connect_timeout: float = 10.0) -> None:
        if connections < 1:
            raise AerixError("options", f"PostgresStore connections must be at least 1, got {connections!r}")
        self.dsn = dsn
        self.connections = connections
        self.connect_timeout = connect_timeout
        self.where = _where(dsn)  # parses the DSN: a bad one is a store error now, not at first use
        self._pool: Pool | None = None
        self._ready = False

    def __repr__(self) -> str:
        return f"PostgresStore({self.where!r})"

    async def close(self) -> None:
        """Close this store's connections (a call after it connects again)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    # -- connections --------------------------------------------------------------------------

    def _current_pool(self) -> Pool:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool.loop is not loop:
            self._pool.drop()  # its connections belong to a loop that is gone or elsewhere
            self._pool = None
        if self._pool is None:
            self._pool = Pool(loop, self.connections, self._connect)
        return self._pool

    async def _connect(self) -> AsyncConnection[Any]:
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True, connect_timeout=max(1, round(self.connect_timeout)))
        except psycopg.Error as e:
            raise AerixError("store", f"cannot connect to PostgreSQL at {self.where}: {_scrub(str(e).strip(), self.dsn)}") from None
        if not self._ready:
            try:
                await _migrate(conn, self.where)
            except BaseException:
                await conn.close()
                raise
            self._ready = True
        return conn

    @asynccontextmanager
    async def _conn(self, what: str) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection of the pool for one call; psycopg's errors as store errors naming ``what``."""
        import psycopg

        pool = self._current_pool()
        conn = await pool.take()
        try:
            yield conn
        except psycopg.Error as e:
            raise AerixError("store", f"PostgreSQL at {self.where}: {what} failed: {_scrub(str(e).strip(), self.dsn)}") from None
        finally:
            pool.give(conn)

    async def _rows(self, what: str, sql: str, args: Any = ()) -> list[tuple[Any, ...]]:
        async with self._conn(what) as conn:
            return await (await conn.execute(sql, args)).fetchall()

    async def _count(self, what: str, sql: str, args: Any = ()) -> int:
        async with self._conn(what) as conn:
            return (await conn.execute(sql, args)).rowcount

    # -- runs and effects ---------------------------------------------------------------------

    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        data, key = _dumps(run, f"run {run.get('id')!r}"), run.get("idempotency_key")
        async with self._conn("create_run") as conn:
            # DO NOTHING on either unique column (id, idempotency key): a start racing another
            # start with the same key waits for it, then finds its run below
            made = await conn.execute(
                "insert into aerix.runs (id, idempotency_key, created_at, rev, data) values (%s, %s, %s, %s, %s::jsonb) on conflict do nothing",
                (run["id"], key, run.get("created_at", 0.0), run.get("revision", 0), data),
            )
            if made.rowcount == 1:
                return _read(run["id"], data)
            for column, value in (("idempotency_key", key), ("id", run["id"])):
                if value is not None:
                    row = await (await conn.execute(f"select id, data::text from aerix.runs where {column} = %s", (value,))).fetchone()
                    if row is not None:
                        return _read(row[0], row[1])
        raise AerixError("store", f"PostgreSQL at {self.where}: create_run: run {run['id']!r} was neither made nor found")

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        rows = await self._rows("get_run", "select id, data::text from aerix.runs where id = %s", (run_id,))
        return _read(rows[0][0], rows[0][1]) if rows else None

    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> bool:
        values = {
            "id": run["id"], "key": run.get("idempotency_key"), "created_at": run.get("created_at", 0.0), "data": _dumps(run, f"run {run['id']!r}"),
            "new_rev": run.get("revision", 0), "rev": revision, "holder": holder, "lease": f"run:{run['id']}",
        }  # fmt: skip
        return await self._count("save_run", _SAVE, values) == 1

    async def list_runs(self) -> list[dict[str, Any]]:
        rows = await self._rows("list_runs", "select id, data::text from aerix.runs order by created_at, id")
        return [_read(r[0], r[1]) for r in rows]

    async def list_runs_by_status(self, statuses: list[str]) -> list[dict[str, Any]]:
        sql = "select id, data::text from aerix.runs where data->>'status' = any(%s) order by created_at, id"
        return [_read(r[0], r[1]) for r in await self._rows("list_runs_by_status", sql, (list(statuses),))]

    async def get_effect(self, key: str) -> str | None:
        rows = await self._rows("get_effect", "select result from aerix.effects where key = %s", (key,))
        return str(rows[0][0]) if rows else None

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool:
        lease = None if run_id is None else f"run:{run_id}"
        _check_text(result, f"effect {key!r}")
        return await self._count("put_effect", _PUT_EFFECT, {"key": key, "result": result, "lease": lease, "holder": holder}) == 1

    # -- leases -------------------------------------------------------------------------------

    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        return await self._count("acquire_lease", _ACQUIRE, (name, holder, float(expires_at), float(now))) == 1

    async def release_lease(self, name: str, holder: str) -> None:
        await self._count("release_lease", "delete from aerix.leases where name = %s and holder = %s", (name, holder))

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        rows = await self._rows("get_lease", "select holder, expires_at from aerix.leases where name = %s", (name,))
        return {"name": name, "holder": rows[0][0], "expires_at": float(rows[0][1])} if rows else None

    # -- artifacts ----------------------------------------------------------------------------

    # An upsert keeps a replaced artifact's row, so its seq: the put order list_artifacts gives.
    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        await self._count(
            "put_artifact",
            "insert into aerix.artifacts (id, run_id, meta, data) values (%s, %s, %s::jsonb, %s) "
            "on conflict (id) do update set run_id = excluded.run_id, meta = excluded.meta, data = excluded.data",
            (meta["id"], meta["run_id"], _dumps(meta, f"artifact {meta['id']!r}"), bytes(data)),
        )

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        rows = await self._rows("get_artifact", "select meta::text, data from aerix.artifacts where id = %s", (artifact_id,))
        return (json.loads(rows[0][0]), bytes(rows[0][1])) if rows else None

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        rows = await self._rows("list_artifacts", "select meta::text from aerix.artifacts where run_id = %s order by seq", (run_id,))
        return [json.loads(r[0]) for r in rows]

    # -- agent state --------------------------------------------------------------------------

    async def get_state(self, agent: str) -> dict[str, Any] | None:
        rows = await self._rows("get_state", "select data::text from aerix.state where agent = %s", (agent,))
        return json.loads(rows[0][0]) if rows else None

    async def put_state(self, agent: str, state: dict[str, Any]) -> None:
        await self._count(
            "put_state",
            "insert into aerix.state (agent, data) values (%s, %s::jsonb) on conflict (agent) do update set data = excluded.data",
            (agent, _dumps(state, f"state {agent!r}")),
        )

    async def get_state_items(self, agent: str) -> dict[str, dict[str, Any]]:
        rows = await self._rows("get_state_items", "select key, data::text from aerix.state_items where agent = %s order by seq", (agent,))
        return {key: json.loads(data) for key, data in rows}

    async def get_state_item(self, agent: str, key: str) -> dict[str, Any] | None:
        rows = await self._rows("get_state_item", "select data::text from aerix.state_items where agent = %s and key = %s", (agent, key))
        return json.loads(rows[0][0]) if rows else None

    async def put_state_items(self, agent: str, items: dict[str, dict[str, Any] | None]) -> None:
        rows = [(key, None if item is None else _dumps(item, f"state item {key!r}")) for key, item in items.items()]  # a bad item writes nothing
        if not rows:
            return
        async with self._conn("put_state_items") as conn, conn.transaction():
            # places in the order drawn in put order; rows written in key order, so that two puts
            # of overlapping items take their row locks in one order and cannot deadlock
            drawn = await (await conn.execute("select nextval('aerix.state_item_seq') from generate_series(1, %s)", (len(rows),))).fetchall()
            for (key, data), (seq,) in sorted(zip(rows, drawn), key=lambda pair: pair[0][0]):
                if data is None:
                    await conn.execute("delete from aerix.state_items where agent = %s and key = %s", (agent, key))
                else:
                    await conn.execute(_PUT_ITEM, (agent, key, seq, data))


async def _migrate(conn: AsyncConnection[Any], where: str) -> None:
    """Bring the schema to :data:`SCHEMA_VERSION`, once, whoever else opens the database now."""
    found = await (await conn.execute("select to_regclass('aerix.schema_version') is not null")).fetchone()
    if found is not None and found[0] and await _version(conn) == SCHEMA_VERSION:
        return  # nothing to create: a role without CREATE can use a database migrated for it
    async with conn.transaction():
        await conn.execute("select pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        await conn.execute("create schema if not exists aerix")
        await conn.execute("create table if not exists aerix.schema_version (version integer not null)")
        version = await _version(conn)
        if version > SCHEMA_VERSION:
            raise AerixError("store", f"PostgreSQL at {where}: the aerix schema is at version {version}, newer than this aerix knows ({SCHEMA_VERSION}): upgrade aerix")
        for sql in MIGRATIONS[version:]:
            await conn.execute(sql.encode())
        await conn.execute("delete from aerix.schema_version")
        await conn.execute("insert into aerix.schema_version (version) values (%s)", (SCHEMA_VERSION,))


async def _version(conn: AsyncConnection[Any]) -> int:
    row = await (await conn.execute("select max(version) from aerix.schema_version")).fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def _where(dsn: str) -> str:
    """``user@host:port/database`` of a DSN, never its password; a DSN that does not parse (or a
    missing psycopg) is an error naming what was wrong."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise AerixError("options", "PostgresStore needs psycopg 3: pip install 'aerix[postgres]'") from None
    import psycopg

    try:
        params = conninfo_to_dict(dsn)
    except psycopg.Error as e:
        raise AerixError(
            "store", f"PostgreSQL DSN is not valid ({_scrub(str(e), dsn)}): write postgresql://user:password@host:port/database, or key=value pairs"
        ) from None
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = params.get("port") or "5432"
    user = f"{params['user']}@" if params.get("user") else ""
    return f"{user}{host}:{port}/{params.get('dbname') or '(default database)'}"


_PASSWORDS = (re.compile(r"://[^/@:]*:([^@/]*)@"), re.compile(r"password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)"))


def _scrub(text: str, dsn: str) -> str:
    """``text`` with any password of ``dsn`` in it replaced by ``***``."""
    for pattern in _PASSWORDS:
        for secret in pattern.findall(dsn):
            for form in {secret, secret.strip("'"), unquote(secret)} - {""}:
                text = text.replace(form, "***")
    return text


def _dumps(value: Any, what: str) -> str:
    """``value`` as JSON text jsonb can keep; what it cannot (NaN, infinities, U+0000) as a store error."""
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError as e:
        raise AerixError("store", f"{what} cannot be kept in PostgreSQL: {e} (jsonb has no NaN or infinity)") from None
    if _ESCAPED_NUL.search(text):
        raise AerixError("store", f"{what} holds the character U+0000, which PostgreSQL's jsonb cannot keep")
    return text


_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # \u0000 after an even run of backslashes: a NUL, not a "\\u0000" text


def _check_text(text: str, what: str) -> None:
    if "\x00" in text:
        raise AerixError("store", f"{what} holds the character U+0000, which PostgreSQL cannot keep in text")
