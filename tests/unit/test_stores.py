"""Every store keeps the contract of aerix.stores.contract (shipped, so users can run it too)."""

from __future__ import annotations

import pytest

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
        async def put_effect(self, key, result):
            pass

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
