"""PostgresStore against a real, throwaway PostgreSQL (tests/unit/pg_server.py): the store
contract suite unchanged, then what only a server shared by many connections shows: the schema
made and versioned on first use, two stores (two pools of connections) racing for leases, state
items written concurrently from both, and the errors a bad DSN or an unreachable server give.

Without PostgreSQL these skip, saying why on stderr (``AERIX_REQUIRE_POSTGRES=1`` fails instead).
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("no PostgreSQL server or psycopg in Pyodide", allow_module_level=True)

from aerix.errors import AerixError
from aerix.stores import Store
from aerix.stores.contract import CHECKS
from aerix.testing import ScriptedModel


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
async def test_postgres_store_contract(check, postgres_dsn):
    from aerix.stores import PostgresStore

    store = PostgresStore(postgres_dsn)
    assert isinstance(store, Store)
    try:
        await check(store)
    finally:
        await store.close()


def stores(dsn: str, n: int = 2, **options):
    from aerix.stores import PostgresStore

    return [PostgresStore(dsn, **options) for _ in range(n)]


async def close(*opened) -> None:
    for store in opened:
        await store.close()


# -- the schema: made on first use, versioned ---------------------------------------------


async def test_the_schema_is_made_on_first_use_and_kept_at_its_version_by_a_second_open(postgres, postgres_dsn):
    from aerix.stores.postgres import SCHEMA_VERSION

    (first,) = stores(postgres_dsn, 1)
    name = postgres_dsn.rsplit("/", 1)[1]
    with postgres.connect(name) as conn:
        assert conn.execute("select to_regclass('aerix.runs')").fetchone() == (None,), "nothing is made before the first use"
    await first.create_run({"id": "r1", "prompt": "p", "created_at": 1.0})
    await first.put_artifact({"id": "a1", "run_id": "r1"}, b"\x00bytes")
    await first.close()
    with postgres.connect(name) as conn:
        assert conn.execute("select version from aerix.schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("select data->>'prompt' from aerix.runs").fetchall() == [("p",)], "records are jsonb"
        assert conn.execute("select data from aerix.artifacts").fetchall() == [(b"\x00bytes",)], "artifacts are bytea in their own table"
    (second,) = stores(postgres_dsn, 1)
    assert (await second.get_run("r1"))["prompt"] == "p", "a second open keeps what the first wrote"
    await second.close()
    with postgres.connect(name) as conn:
        assert conn.execute("select version from aerix.schema_version").fetchall() == [(SCHEMA_VERSION,)], "and the version, in one row"


async def test_stores_opening_a_new_database_together_migrate_it_once(postgres, postgres_dsn):
    from aerix.stores.postgres import SCHEMA_VERSION

    opened = stores(postgres_dsn, 6)
    try:
        await asyncio.gather(*(s.acquire_lease(f"run:r{i}", "h", 20.0, 10.0) for i, s in enumerate(opened)))
    finally:
        await close(*opened)
    with postgres.connect(postgres_dsn.rsplit("/", 1)[1]) as conn:
        assert conn.execute("select version from aerix.schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("select count(*) from aerix.leases").fetchone() == (6,)


async def test_a_database_newer_than_this_aerix_is_a_store_error(postgres, postgres_dsn):
    (store,) = stores(postgres_dsn, 1)
    await store.get_run("r1")
    await store.close()
    with postgres.connect(postgres_dsn.rsplit("/", 1)[1]) as conn:
        conn.execute("update aerix.schema_version set version = 99")
    (newer,) = stores(postgres_dsn, 1)
    with pytest.raises(AerixError) as e:
        await newer.get_run("r1")
    await newer.close()
    assert e.value.kind == "store" and "version 99" in e.value.message and "upgrade aerix" in e.value.message


async def test_a_version_1_database_gains_the_status_index_and_keeps_its_runs(postgres, postgres_dsn):
    from aerix.stores.postgres import MIGRATIONS, SCHEMA_VERSION

    record = {"id": "r1", "prompt": "p", "status": "queued", "created_at": 1.0}
    with postgres.connect(postgres_dsn.rsplit("/", 1)[1]) as conn:  # as aerix made it before list_runs_by_status
        conn.execute("create schema aerix; create table aerix.schema_version (version integer not null)")
        conn.execute(MIGRATIONS[0].encode())
        conn.execute("insert into aerix.schema_version values (1)")
        conn.execute("insert into aerix.runs (id, created_at, data) values ('r1', 1.0, %s::jsonb)", (json.dumps(record),))
    (store,) = stores(postgres_dsn, 1)
    try:
        assert [r["id"] for r in await store.list_runs_by_status(["queued"])] == ["r1"] and await store.get_run("r1") == record
    finally:
        await store.close()
    with postgres.connect(postgres_dsn.rsplit("/", 1)[1]) as conn:
        assert SCHEMA_VERSION == 2 and conn.execute("select version from aerix.schema_version").fetchall() == [(2,)]
        assert conn.execute("select to_regclass('aerix.runs_by_status') is not null").fetchone() == (True,)
        conn.execute("set enable_seqscan = off")  # the index serves the poll's condition (a table this small would be scanned)
        plan = conn.execute("explain select count(*) from aerix.runs where data->>'status' = any(%s)", (["queued"],)).fetchall()
        assert "runs_by_status" in str(plan), plan


# -- leases and state across connections and stores ----------------------------------------


async def test_two_stores_racing_for_leases_each_lease_has_one_holder(postgres_dsn):
    a, b = stores(postgres_dsn)
    names = [f"run:r{i}" for i in range(60)]
    try:
        for now in (10.0, 20.0):  # at 20 every lease has expired: the second race takes each over
            won = await asyncio.gather(*(s.acquire_lease(n, f"{tag}{now}", now + 10.0, now) for n in names for s, tag in ((a, "a"), (b, "b"))))
            assert [won[2 * i] + won[2 * i + 1] for i in range(len(names))] == [1] * len(names), "one winner per lease"
            for i, name in enumerate(names):
                holder = f"a{now}" if won[2 * i] else f"b{now}"
                assert await b.get_lease(name) == {"name": name, "holder": holder, "expires_at": now + 10.0}
    finally:
        await close(a, b)


async def test_the_race_check_catches_a_lease_taken_by_a_read_then_a_write(postgres_dsn):
    # the contract's race runs on separate connections here: a store that reads, then writes,
    # lets several acquirers see the lease free
    from aerix.stores import PostgresStore
    from aerix.stores.contract import check_of_racing_acquirers_exactly_one_wins

    class ReadThenWrite(PostgresStore):
        async def acquire_lease(self, name, holder, expires_at, now):
            lease = await self.get_lease(name)
            if lease is not None and lease["holder"] != holder and lease["expires_at"] > now:
                return False
            await self._count("acquire", "insert into aerix.leases values (%s, %s, %s) on conflict (name) do update set holder = excluded.holder, expires_at = excluded.expires_at", (name, holder, expires_at))
            return True

    store = ReadThenWrite(postgres_dsn)
    try:
        with pytest.raises(AssertionError, match="racing acquirers won"):
            await check_of_racing_acquirers_exactly_one_wins(store)
    finally:
        await store.close()


async def test_a_write_racing_a_takeover_of_its_lease_waits_for_it_and_is_refused(postgres_dsn):
    # another process takes the lease over in a transaction not yet committed: a save or an
    # effect fenced by the old holder must wait for it and then be refused, not slip in before
    import psycopg

    (store,) = stores(postgres_dsn, 1)
    await store.create_run({"id": "r1", "created_at": 1.0})
    await store.acquire_lease("run:r1", "a", 20.0, 10.0)
    try:
        for write in (lambda: store.save_run({"id": "r1", "created_at": 1.0, "revision": 1}, 0, "a"), lambda: store.put_effect("e1", "sent", "r1", "a")):
            async with await psycopg.AsyncConnection.connect(postgres_dsn) as other:
                await other.execute("update aerix.leases set holder = 'b', expires_at = 50 where name = 'run:r1'")
                pending = asyncio.ensure_future(write())
                await asyncio.sleep(0.3)
                assert not pending.done(), "the fenced write waits for the takeover's transaction"
                await other.commit()
            assert await pending is False, "and is refused once the takeover commits"
            async with await psycopg.AsyncConnection.connect(postgres_dsn, autocommit=True) as other:
                await other.execute("update aerix.leases set holder = 'a', expires_at = 20 where name = 'run:r1'")  # a's again, for the next write
        assert await store.get_run("r1") == {"id": "r1", "created_at": 1.0} and await store.get_effect("e1") is None
    finally:
        await store.close()


async def test_concurrent_state_item_puts_from_two_stores_lose_no_update(postgres_dsn):
    a, b = stores(postgres_dsn)
    keys = [f"doc:c:{i}" for i in range(12)]
    try:
        # every put also writes the shared items, half in one order, half in the other: row locks
        # taken in two orders would deadlock (PostgreSQL then aborts one put)
        puts = []
        for i in range(24):
            shared = {k: {"value": i} for k in (keys if i % 2 else keys[::-1])}
            puts.append((a if i % 2 else b).put_state_items("planner", {f"applied:e{i}": {"result": "ok"}, **shared}))
        await asyncio.gather(*puts)
        items = await a.get_state_items("planner")
        assert sorted(items) == sorted([f"applied:e{i}" for i in range(24)] + keys), "every item of every put landed"
        assert len({items[k]["value"] for k in keys}) == 1, "the shared items are all of one put: each put is one transaction"
    finally:
        await close(a, b)


async def test_a_concurrency_key_holds_across_stores(postgres_dsn):
    from helpers import calls, collect, final

    from aerix import Agent, tool

    gate, ran = asyncio.Event(), []

    async def work(input, ctx):
        ran.append(1)
        await gate.wait()
        return "done"

    opened = stores(postgres_dsn, 3)
    agents = [Agent(model=ScriptedModel([calls(("work", {})), final("ok")]), tools=[tool(name="work", description="Works.", input={}, run=work)], store=s) for s in opened]
    try:
        first = asyncio.ensure_future(collect(agents[0].run("one", concurrency_key="inbox")))
        while not ran:
            await asyncio.sleep(0.01)
        with pytest.raises(AerixError) as e:
            await collect(agents[1].run("two", concurrency_key="inbox"))
        assert e.value.kind == "busy" and "inbox" in e.value.message
        gate.set()
        assert (await first)[-1].type == "final"
        assert (await collect(agents[2].run("three", concurrency_key="inbox")))[-1].type == "final"
    finally:
        await close(*opened)


# -- errors: what a bad DSN or an unreachable server says ------------------------------------


async def test_a_dsn_that_does_not_parse_is_a_store_error_without_its_password(postgres):
    from aerix.stores import PostgresStore

    with pytest.raises(AerixError) as e:
        PostgresStore("mysql://app:hunter2@db.internal/runs")
    assert e.value.kind == "store" and "DSN is not valid" in e.value.message and "postgresql://" in e.value.message
    assert "hunter2" not in e.value.message


async def test_an_unreachable_server_or_a_refused_login_is_a_store_error_naming_it(postgres, postgres_dsn):
    from build.pg import SECRET_ROLE
    from build.ports import free_port

    from aerix.stores import PostgresStore

    database = postgres_dsn.rsplit("/", 1)[1]
    cases = {
        f"postgresql://app:hunter2@127.0.0.1:{free_port()}/runs": ("Connection refused", "app@127.0.0.1:"),
        postgres.dsn(database, SECRET_ROLE, "hunter2"): ("password authentication failed", f"{SECRET_ROLE}@127.0.0.1:{postgres.port}/{database}"),
        postgres.dsn("no_such_db"): ('database "no_such_db" does not exist', "/no_such_db"),
    }
    for dsn, (said, where) in cases.items():
        store = PostgresStore(dsn, connect_timeout=2)
        with pytest.raises(AerixError) as e:
            await store.get_run("r1")
        assert e.value.kind == "store" and "cannot connect to PostgreSQL at" in e.value.message, e.value.message
        assert said in e.value.message and where in e.value.message and "hunter2" not in e.value.message and "hunter2" not in repr(store)
        await store.close()


async def test_a_connection_the_server_ended_is_a_store_error_then_replaced(postgres, postgres_dsn):
    # a failover or a restart ends every session: the call on the dead connection is a store
    # error (the lease keeper tries again), and the next call connects anew
    (store,) = stores(postgres_dsn, 1, connections=1)
    try:
        await store.create_run({"id": "r1", "created_at": 1.0})
        with postgres.connect() as conn:
            ended = conn.execute("select pg_terminate_backend(pid) from pg_stat_activity where datname = %s", (postgres_dsn.rsplit("/", 1)[1],)).fetchall()
        assert ended == [(True,)]
        with pytest.raises(AerixError) as e:
            await store.get_run("r1")
        assert e.value.kind == "store" and "get_run failed" in e.value.message
        assert await store.get_run("r1") == {"id": "r1", "created_at": 1.0}
    finally:
        await store.close()


async def test_what_jsonb_cannot_keep_is_a_store_error_naming_it(postgres_dsn):
    (store,) = stores(postgres_dsn, 1)
    try:
        for bad, said in (({"text": "a\x00b"}, "U+0000"), ({"n": float("nan")}, "NaN")):
            with pytest.raises(AerixError) as e:
                await store.create_run({"id": "r1", "created_at": 1.0, **bad})
            assert e.value.kind == "store" and "run 'r1'" in e.value.message and said in e.value.message
        await store.create_run({"id": "r1", "created_at": 1.0, "text": "a\\u0000b, a backslash and no NUL"})
        assert (await store.get_run("r1"))["text"] == "a\\u0000b, a backslash and no NUL"
    finally:
        await store.close()


def test_a_store_serves_one_event_loop_after_another(postgres_dsn):
    # asyncio.run per call, as a script or a test runner does: the second loop must not wait on
    # the first loop's pool (its waiters and connections belong to that loop)
    (store,) = stores(postgres_dsn, 1, connections=2)

    async def busy(tag: str) -> list[bool]:
        return await asyncio.gather(*(store.acquire_lease(f"run:{tag}{i}", tag, 20.0, 10.0) for i in range(8)))

    assert asyncio.run(busy("a")) == [True] * 8
    assert asyncio.run(busy("b")) == [True] * 8
    assert asyncio.run(store.get_lease("run:a7")) == {"name": "run:a7", "holder": "a", "expires_at": 20.0}
    asyncio.run(store.close())


def test_without_psycopg_the_store_names_the_extra_to_install():
    # aerix imports without psycopg (Pyodide never has it); the store says what to install
    import os
    import subprocess
    from pathlib import Path

    import aerix

    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "import aerix.stores\n"
        "try:\n    aerix.stores.PostgresStore('postgresql://app@db/runs')\nexcept aerix.AerixError as e:\n    print(e.kind, e.message)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(aerix.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert out.stdout.strip() == "options PostgresStore needs psycopg 3: pip install 'aerix[postgres]'"
