"""Leases in the stores beyond the contract suite: two SQLiteStore objects on one file racing
from two threads, the bounded wait for a locked file (then a store error, never sqlite3's), an
older file gaining the leases table, and the contract's race check catching a store that is not
atomic."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
import time

import pytest

from aerix.errors import AerixError
from aerix.stores import MemoryStore, Store
from aerix.stores.contract import verify_store
from aerix.stores.sqlite import SQLiteStore

# Pyodide has no threads, and its in-memory file system does not lock files
needs_threads = pytest.mark.skipif(sys.platform == "emscripten", reason="no threads or file locks in Pyodide")


def race(path: str, names: list[str], now: float, tag: str) -> dict[str, list[str]]:
    """Two threads, each with its own SQLiteStore on ``path`` and its own event loop, acquire
    every name at the same moment; returns, per name, the holders that were told they won."""
    barrier = threading.Barrier(2)
    wins: dict[str, list[str]] = {n: [] for n in names}
    errors: list[BaseException] = []

    def worker(holder: str) -> None:
        async def go() -> None:
            # SQLite's lock is not fair: one thread can wait out the other's whole loop of writes
            # (seconds on a loaded machine, past the default 5 s), and this race is about who wins
            store = SQLiteStore(path, timeout=60.0)
            try:
                barrier.wait()
                for name in names:
                    if await store.acquire_lease(name, holder, now + 10.0, now):
                        wins[name].append(holder)  # list.append is atomic under the GIL
            finally:
                store.close()

        try:
            asyncio.run(go())
        except BaseException as e:  # surfaced in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(f"{tag}{i}",)) for i in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return wins


@needs_threads
async def test_two_sqlite_stores_on_one_file_racing_from_two_threads_one_wins_each_lease(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    SQLiteStore(path).close()  # the schema, made once before the race
    names = [f"run:r{i}" for i in range(300)]
    wins = race(path, names, now=10.0, tag="a")
    assert {n: len(w) for n, w in wins.items()} == {n: 1 for n in names}
    # every lease has expired (at 20): the next race takes each over, again with one winner
    again = race(path, names, now=20.0, tag="b")
    assert {n: len(w) for n, w in again.items()} == {n: 1 for n in names}
    store = SQLiteStore(path)
    try:
        for name in names:
            assert await store.get_lease(name) == {"name": name, "holder": again[name][0], "expires_at": 30.0}
    finally:
        store.close()


@needs_threads
async def test_a_locked_sqlite_file_is_waited_for_up_to_the_timeout(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    store = SQLiteStore(path, timeout=0.2)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)  # committed from a timer
    try:
        other.execute("begin immediate")  # another writer holds the file
        started = time.monotonic()
        with pytest.raises(AerixError, match="locked by another connection for more than 0.2 s") as caught:
            await store.acquire_lease("run:r1", "a", 20.0, 10.0)
        assert time.monotonic() - started < 2.0, "the wait is bounded by the timeout"
        assert caught.value.kind == "store" and path in caught.value.message
        other.execute("rollback")

        patient = SQLiteStore(path, timeout=5.0)
        other.execute("begin immediate")
        threading.Timer(0.2, lambda: other.execute("commit")).start()  # the other writer finishes soon
        assert await patient.acquire_lease("run:r1", "a", 20.0, 10.0) is True, "a write waits for the lock"
        assert await store.get_lease("run:r1") == {"name": "run:r1", "holder": "a", "expires_at": 20.0}
        patient.close()
    finally:
        other.close()
        store.close()


# every write of the store, each against a file another connection holds the write lock of
WRITES = {
    "acquire_lease": lambda s: s.acquire_lease("run:r1", "a", 20.0, 10.0),
    "release_lease": lambda s: s.release_lease("run:r1", "a"),
    "create_run": lambda s: s.create_run({"id": "r2", "prompt": "p"}),
    "save_run": lambda s: s.save_run({"id": "r1", "prompt": "p", "revision": 1}, 0, "a"),
    "put_effect": lambda s: s.put_effect("k", "done", "r1", "a"),
    "put_artifact": lambda s: s.put_artifact({"id": "a1", "run_id": "r1"}, b"bytes"),
    "put_state": lambda s: s.put_state("agent", {"n": 1}),
    "put_state_items": lambda s: s.put_state_items("agent", {"k": {"n": 1}, "gone": None}),
}


@needs_threads
@pytest.mark.parametrize("write", WRITES)
async def test_each_write_of_a_sqlite_file_locked_past_the_timeout_is_a_store_error_naming_it(tmp_path, write):
    path = str(tmp_path / "runs.sqlite3")
    store = SQLiteStore(path, timeout=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("begin immediate")  # another writer holds the file
        with pytest.raises(AerixError) as caught:  # not sqlite3.OperationalError: database is locked
            await WRITES[write](store)
        assert caught.value.kind == "store"
        assert caught.value.message == f"SQLite file {path!r} stayed locked by another connection for more than 0.05 s (database is locked)"
        other.execute("rollback")
        await WRITES[write](store)  # the file is free again: the same write goes through
    finally:
        other.close()
        store.close()


@needs_threads
async def test_a_read_of_a_sqlite_file_held_exclusively_past_the_timeout_is_a_store_error(tmp_path):
    path = str(tmp_path / "runs.sqlite3")
    store = SQLiteStore(path, timeout=0.05)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("begin exclusive")  # no reader either, as while a writer commits
        with pytest.raises(AerixError, match="stayed locked by another connection") as caught:
            await store.get_lease("run:r1")
        assert caught.value.kind == "store"
        other.execute("rollback")
        assert await store.get_lease("run:r1") is None
    finally:
        other.close()
        store.close()


async def test_a_sqlite_file_made_before_leases_keeps_its_runs_and_gains_leases(tmp_path):
    path = str(tmp_path / "old.sqlite3")
    old = sqlite3.connect(path, isolation_level=None)
    old.executescript(
        "create table runs (id text primary key, idempotency_key text unique, created_at real not null, data text not null);"
        "create table effects (key text primary key, result text not null);"
        """insert into runs values ('r1', null, 1.0, '{"id": "r1", "prompt": "p", "created_at": 1.0}');"""
    )
    old.close()
    store = SQLiteStore(path)
    try:
        assert (await store.get_run("r1"))["prompt"] == "p"
        assert await store.acquire_lease("run:r1", "a", 20.0, 10.0) is True
    finally:
        store.close()
    reopened = SQLiteStore(path)
    try:
        assert (await reopened.get_lease("run:r1"))["holder"] == "a", "a lease outlives the connection"
    finally:
        reopened.close()


async def test_the_contract_catches_a_store_whose_acquire_is_not_atomic():
    class Racy(MemoryStore):
        async def acquire_lease(self, name, holder, expires_at, now):
            lease = self._leases.get(name)
            await asyncio.sleep(0)  # another acquirer checks in between
            if lease is not None and lease["holder"] != holder and lease["expires_at"] > now:
                return False
            self._leases[name] = {"name": name, "holder": holder, "expires_at": float(expires_at)}
            return True

    with pytest.raises(AssertionError, match="check_of_racing_acquirers_exactly_one_wins"):
        await verify_store(Racy)


def test_a_store_without_leases_is_not_a_store():
    class Old:  # the six run and effect methods of a store made before leases
        async def create_run(self, run): ...
        async def get_run(self, run_id): ...
        async def save_run(self, run): ...
        async def list_runs(self): ...
        async def get_effect(self, key): ...
        async def put_effect(self, key, result): ...

    assert not isinstance(Old(), Store)
    sqlite_store = SQLiteStore(":memory:")
    try:
        assert isinstance(MemoryStore(), Store) and isinstance(sqlite_store, Store)
    finally:
        sqlite_store.close()
