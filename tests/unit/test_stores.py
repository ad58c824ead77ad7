"""Every store keeps the contract of aerix.stores.contract (shipped, so users can run it too)."""

from __future__ import annotations

import pytest
from helpers import collect

from aerix.stores import MemoryStore, Store
from aerix.stores.contract import CHECKS, verify_store
from aerix.stores.sqlite import SQLiteStore


def make(kind, tmp_path):
    return MemoryStore() if kind == "memory" else SQLiteStore(str(tmp_path / "runs.sqlite3"))


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
async def test_store_contract(kind, check, tmp_path):
    store = make(kind, tmp_path)
    assert isinstance(store, Store)
    try:
        await check(store)
    finally:
        if kind == "sqlite":
            store.close()


async def test_sqlite_runs_outlive_the_connection(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    first = SQLiteStore(path)
    await first.create_run({"id": "r1", "prompt": "p", "created_at": 1.0, "idempotency_key": "k"})
    await first.put_effect("e", "done")
    first.close()
    second = SQLiteStore(path)
    assert (await second.get_run("r1"))["prompt"] == "p"
    assert await second.get_effect("e") == "done"
    assert (await second.create_run({"id": "r2", "prompt": "q", "created_at": 2.0, "idempotency_key": "k"}))["id"] == "r1"
    second.close()


async def test_verify_store_names_the_check_a_broken_store_fails():
    class Forgetful(MemoryStore):
        async def put_effect(self, key, result, run_id=None, holder=None):
            return True

    with pytest.raises(AssertionError, match="check_effects_are_kept_by_key"):
        await verify_store(Forgetful)
    await verify_store(MemoryStore)


def test_an_agent_names_what_a_store_lacks():
    from aerix import AerixError, Agent
    from aerix.testing import ScriptedModel

    class Old:  # a store made before leases, agent state and artifacts
        async def create_run(self, run): ...
        async def get_run(self, run_id): ...
        async def save_run(self, run): ...
        async def list_runs(self): ...
        async def get_effect(self, key): ...
        async def put_effect(self, key, result): ...

    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), store=Old())
    for name in ("acquire_lease", "get_state", "put_artifact"):
        assert name in e.value.message
    assert "create_run" not in e.value.message


# -- a row that does not decode hides no other run --------------------------------------------


async def test_an_unreadable_sqlite_row_is_listed_corrupt_and_hides_no_other(tmp_path):
    import sqlite3

    from aerix import AerixError, Agent
    from aerix.testing import ScriptedModel

    path = str(tmp_path / "runs.sqlite3")
    store = SQLiteStore(path)
    now = [1.0]
    agent = Agent(model=ScriptedModel(['{"thought": "t", "final": "ok"}']), store=store, clock=lambda: now[0])
    await agent.start("first", run_id="r1")
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("insert into runs (id, created_at, data) values ('bad', 2.0, '{\"id\": \"bad\", \"prompt\": ')")  # cut short
    raw.execute("insert into runs (id, created_at, data) values ('list', 2.5, '[1, 2]')")
    raw.close()
    now[0] = 3.0
    await agent.start("third", run_id="r3")
    runs = await agent.runs()
    assert [(r.id, r.status) for r in runs] == [("r1", "queued"), ("bad", "corrupt"), ("list", "corrupt"), ("r3", "queued")]
    assert "not JSON" in runs[1].error and "list" in runs[2].error
    assert [r["id"] for r in await store.list_runs_by_status(["queued"])] == ["r1", "r3"], "a row that is not JSON fails no query"
    assert [r.id for r in await agent.recover()] == ["r1", "r3"]
    with pytest.raises(AerixError) as e:
        await agent.get_run("bad")
    assert e.value.kind == "store" and "'bad' is corrupt" in e.value.message
    with pytest.raises(AerixError) as e:
        await agent.start("again", run_id="bad")
    assert e.value.kind == "store"
    assert [e.type for e in await collect(agent.resume("r3"))][-1] == "final"
    store.close()


async def test_a_sqlite_file_made_before_revisions_gains_them_and_keeps_its_runs(tmp_path):
    import sqlite3

    from aerix import Agent
    from aerix.testing import ScriptedModel

    path = str(tmp_path / "old.sqlite3")
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(
        "create table runs (id text primary key, idempotency_key text unique, created_at real not null, data text not null);"
        "create table effects (key text primary key, result text not null);"
        "create table leases (name text primary key, holder text not null, expires_at real not null);"
        """insert into runs values ('r1', null, 1.0, '{"id": "r1", "prompt": "p", "status": "queued", "created_at": 1.0}');"""
    )
    old.close()
    store = SQLiteStore(path)
    agent = Agent(model=ScriptedModel(['{"thought": "t", "final": "ok"}']), store=store)
    assert (await collect(agent.resume("r1")))[-1].text == "ok"
    record = await store.get_run("r1")
    assert record["status"] == "completed" and record["revision"] >= 2
    assert await store.save_run({**record, "revision": 1}, 0, None) is False, "the stale revision is refused"
    store.close()


# -- the contract catches stores that would let a stale copy win -----------------------------


async def test_the_contract_catches_a_store_whose_compare_and_set_is_not_atomic():
    import asyncio

    class Racy(MemoryStore):
        async def save_run(self, run, revision=None, holder=None):
            stored = (self._runs.get(run["id"]) or {}).get("revision", 0)
            await asyncio.sleep(0)  # another save checks in between
            if revision is not None and stored != revision:
                return False
            self._runs[run["id"]] = dict(run)
            return True

    with pytest.raises(AssertionError, match="check_of_racing_saves_of_one_revision_exactly_one_wins"):
        await verify_store(Racy)


@pytest.mark.parametrize("ignores", ["revision", "holder", "effect holder"])
async def test_the_contract_catches_a_store_that_ignores_a_check(ignores):
    class Careless(MemoryStore):
        async def save_run(self, run, revision=None, holder=None):
            return await MemoryStore.save_run(self, run, None if ignores == "revision" else revision, None if ignores == "holder" else holder)

        async def put_effect(self, key, result, run_id=None, holder=None):
            return await MemoryStore.put_effect(self, key, result, None if ignores == "effect holder" else run_id, holder)

    with pytest.raises(AssertionError):
        await verify_store(Careless)
async def test_the_contract_catches_a_store_that_lists_runs_of_other_statuses():
    class Everything(MemoryStore):
        async def list_runs_by_status(self, statuses):
            return await self.list_runs()

    with pytest.raises(AssertionError, match="check_runs_are_listed_by_status_oldest_first"):
        await verify_store(Everything)


def test_a_js_store_without_state_items_keeps_agent_state_whole():
    from aerix.stores import has_state_items
    from aerix.stores.indexeddb import IndexedDBStore

    class Older:  # a store object made in JS before state items
        name = "older"

    class Newer:
        name = "newer"
        getStateItems = getStateItem = putStateItems = staticmethod(lambda *args: None)

    assert has_state_items(IndexedDBStore(Older())) is False
    assert has_state_items(IndexedDBStore(Newer())) is True
    assert has_state_items(MemoryStore()) and not has_state_items(object())
