"""Workers (issue 32): ``aerix.worker.Worker`` in this process, and ``python -m aerix worker`` as
real processes (a drain by SIGTERM, a worker killed with SIGKILL and its run recovered by
another), each on the stores a team runs them on: a SQLite file and a real PostgreSQL (the
throwaway server of tests/unit/pg_server.py; without one those cases skip, saying why), and the
in-process cases on a MemoryStore too. The agent is tests/unit/worker_agents.py: a run's prompt is
its script, each step an effect written down once in a ledger all processes share.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import aclosing
from pathlib import Path

import pytest
import worker_agents
from helpers import IN_PYODIDE
from worker_agents import APPLIED, LEDGER_ENV, Ledger, factory

import aerix.stores
from aerix import Agent, tool
from aerix.cli import main
from aerix.errors import AerixError
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel
from aerix.worker import Worker, parse_line
from aerix.worker_cli import open_store

ROOT = Path(__file__).resolve().parents[2]
needs_processes = pytest.mark.skipif(IN_PYODIDE, reason="no processes, signals or file locks in Pyodide")
# the command calls asyncio.run, which Pyodide's running loop refuses; the command is for servers
needs_cpython = pytest.mark.skipif(IN_PYODIDE, reason="python -m aerix worker is for CPython: asyncio.run under Pyodide's running loop")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def until(check, timeout: float = 10.0) -> None:
    """Wait until ``await check()`` is true (a test's own deadline, not a timing it relies on)."""
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


async def all_ended(store, n: int) -> bool:
    runs = await store.list_runs()
    return len(runs) == n and all(r["status"] in ("completed", "failed", "cancelled") for r in runs)


def states(lines: list[str], run_id: str | None = None) -> list[str]:
    parsed = [parse_line(line) for line in lines]
    return [p["state"] for p in parsed if "run" in p and (run_id is None or p["run"] == run_id)]


def once_each(keys: list[str]) -> bool:
    return len(keys) == len(set(keys))


@pytest.fixture(autouse=True)
def _fresh_ledger():
    APPLIED.clear()
    yield
    APPLIED.clear()


class Database:
    """One database of a kind (``memory``, ``sqlite``, ``postgres``), opened as often as a test
    likes: each ``store()`` a store of its own on it (one connection or pool, as a process has;
    a MemoryStore is the one store), every one closed when the test's ``async with`` ends."""

    def __init__(self, kind: str, url: str | None, memory: MemoryStore | None = None) -> None:
        self.kind, self.url, self.opened = kind, url, []
        self._memory = memory or (MemoryStore() if url is None else None)

    def store(self):
        if self._memory is not None:
            return self._memory
        store = open_store(self.url)
        self.opened.append(store)
        return store

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(self, *exc) -> None:
        for store in self.opened:
            closed = store.close()
            if inspect.isawaitable(closed):
                await closed


def database_of(kind: str, request, tmp_path: Path, monkeypatch) -> Database:
    if kind == "memory":
        return Database(kind, None)
    if kind == "sqlite":
        return Database(kind, f"sqlite:///{tmp_path}/runs.sqlite3")  # its ledger: runs.sqlite3.effects
    dsn = request.getfixturevalue("postgres_dsn")  # skips, saying why, without PostgreSQL
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "effects"))  # a file all processes share
    return Database(kind, dsn)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def db(request, tmp_path, monkeypatch) -> Database:
    """Each store a worker runs on."""
    return database_of(request.param, request, tmp_path, monkeypatch)


@pytest.fixture(params=["sqlite", "postgres"])
def shared_db(request, tmp_path, monkeypatch) -> Database:
    """The stores that processes share (not one in memory)."""
    return database_of(request.param, request, tmp_path, monkeypatch)


async def test_a_worker_takes_queued_runs_to_their_endings_each_effect_once(db):
    async with db:
        store = db.store()
        api = factory(store)  # another process's Agent, in a service: it only starts runs
        ids = [(await api.start(f"tag=r{i} steps=2")).id for i in range(3)]
        lines: list[str] = []
        worker = Worker(db.store(), factory, name="w1", poll_s=0.01, concurrency=2, log=lines.append)
        going = asyncio.ensure_future(worker.run())
        await until(lambda: all_ended(store, 3))
        worker.drain()
        await going
        for run_id in ids:
            record = await api.get_run(run_id)
            assert record.status == "completed" and record.ending["text"] == "did 2 steps"  # each from its own prompt alone
            assert states(lines, run_id) == ["taken", "ended", "released"]
        assert sorted(Ledger(store).keys()) == ["r0/1", "r0/2", "r1/1", "r1/2", "r2/1", "r2/2"]
        assert parse_line(lines[-1]) == {"t": parse_line(lines[-1])["t"], "worker": "w1", "state": "stopped"}


async def test_a_run_waiting_for_approval_is_left_until_answered_then_resumed(db):
    async with db:
        api = factory(db.store())
        run_id = (await api.start("tag=a steps=2 approve=1")).id
        lines: list[str] = []
        worker = Worker(db.store(), factory, name="w1", log=lines.append)
        assert await worker.poll() == 1
        await worker.idle()
        record = await api.get_run(run_id)
        assert record.status == "waiting" and states(lines, run_id) == ["taken", "waiting", "released"]
        assert await worker.poll() == 0  # nobody answered: nothing to do
        answered = await api.answer(run_id, record.pending_approval()["id"], True, approver={"kind": "user", "id": "ana"})
        assert answered.status == "waiting" and answered.pending_approval() is None  # recorded, not continued
        assert Ledger(api.store).keys() == []
        assert await worker.poll() == 1
        await worker.idle()
        assert (await api.get_run(run_id)).status == "completed"
        assert states(lines, run_id)[3:] == ["resumed", "ended", "released"]
        assert Ledger(api.store).keys() == ["a/1", "a/2"]


async def test_answer_records_once_and_checks_its_arguments():
    store = MemoryStore()
    api = factory(store)
    run_id = (await api.start("tag=a approve=1")).id
    worker = Worker(store, factory, log=lambda line: None)
    await worker.poll()
    await worker.idle()
    approval = (await api.get_run(run_id)).pending_approval()["id"]
    with pytest.raises(AerixError) as e:
        await api.answer(run_id, approval, "yes")
    assert e.value.kind == "options" and "approved must be True or False" in e.value.message
    record = await api.answer(run_id, approval, False, "not today")
    assert record.approvals[approval]["decision"]["approved"] is False
    with pytest.raises(AerixError) as e:
        await api.answer(run_id, approval, True)
    assert e.value.kind == "options" and "already answered" in e.value.message
    assert await store.get_lease(f"run:{run_id}") is None  # answered, then let go
    await worker.poll()
    await worker.idle()
    record = await api.get_run(run_id)
    assert record.status == "completed" and APPLIED == []  # denied: the step was not done


async def test_a_worker_recovers_a_run_whose_executor_died_once_its_lease_expired(db):
    clock = Clock()
    make = functools.partial(factory, clock=clock)
    async with db:
        dead = make(db.store())  # an executor that stops mid-run and never comes back: its lease is not renewed
        events = dead.run("tag=d steps=3")
        async with aclosing(events):
            async for ev in events:
                if ev.type == "result":
                    break  # suspended here, its lease held, the run "running"
            run_id = (await dead.runs())[0].id
            lines: list[str] = []
            worker = Worker(db.store(), make, name="w2", lease_s=5.0, log=lines.append)
            assert await worker.poll() == 0  # its lease is live: it is executing elsewhere
            clock.now += 31.0  # the dead executor's 30 s lease expires
            assert await worker.poll() == 1
            await worker.idle()
            record = await worker.agents[0].get_run(run_id)
            assert record.status == "completed"
            taken = parse_line(lines[0])
            assert (taken["state"], taken["from"], taken["holder"]) == ("recovered", "running", dead._durable().holder)
        assert (await worker.agents[0].get_run(run_id)).status == "completed"  # the old executor, let go, wrote nothing
        assert Ledger(dead.store).keys() == ["d/1", "d/2", "d/3"]


async def test_drain_stops_the_run_at_its_next_checkpoint_and_gives_its_lease_back_at_once(db):
    async with db:
        store = db.store()
        api = factory(store)
        run_id = (await api.start("tag=s steps=4 sleep=0.05")).id
        lines: list[str] = []
        first = Worker(db.store(), factory, name="w1", poll_s=0.01, log=lines.append)
        going = asyncio.ensure_future(first.run())
        await until(lambda: asyncio.sleep(0, "s/1" in Ledger(store).keys()))
        first.drain()
        await asyncio.wait_for(going, 5)
        assert (await api.get_run(run_id)).status == "interrupted"
        assert await store.get_lease(f"run:{run_id}") is None  # no wait for its expiry
        assert states(lines, run_id) == ["taken", "interrupted", "released"]
        second = Worker(db.store(), factory, name="w2", log=lines.append)
        assert await second.poll() == 1
        await second.idle()
        assert (await api.get_run(run_id)).status == "completed"
        assert states(lines, run_id)[3:] == ["resumed", "ended", "released"]
        assert sorted(Ledger(store).keys()) == ["s/1", "s/2", "s/3", "s/4"]


async def test_runs_of_one_concurrency_key_go_one_at_a_time(db):
    async with db:
        api = factory(db.store())
        ids = [(await api.start(f"tag=k{i} steps=2 sleep=0.02", concurrency_key="account-7")).id for i in range(2)]
        lines: list[str] = []
        worker = Worker(db.store(), factory, concurrency=2, log=lines.append)
        assert await worker.poll() == 1  # the second waits for the key, untouched
        assert await worker.poll() == 0
        await worker.idle()
        assert await worker.poll() == 1
        await worker.idle()
        assert [states(lines, i) for i in ids] == [["taken", "ended", "released"]] * 2


async def test_of_workers_polling_at_once_exactly_one_takes_a_run(db):
    async with db:
        await factory(db.store()).start("tag=one")
        workers = [Worker(db.store(), factory, name=f"w{i}", log=lambda line: None) for i in range(4)]
        assert sorted(await asyncio.gather(*(w.poll() for w in workers))) == [0, 0, 0, 1]
        await asyncio.gather(*(w.idle() for w in workers))
        assert Ledger(workers[0].store).keys() == ["one/1"]


@needs_processes
async def test_two_workers_on_one_database_share_the_runs_never_one_run_at_once(shared_db):
    async with shared_db:
        api = factory(shared_db.store())
        for i in range(8):
            await api.start(f"tag=r{i} steps=2 sleep=0.02")
        lines: list[str] = []
        workers = [Worker(shared_db.store(), factory, name=f"w{i}", poll_s=0.01, concurrency=2, log=lines.append) for i in (1, 2)]
        going = [asyncio.ensure_future(w.run()) for w in workers]
        await until(lambda: all_ended(api.store, 8), timeout=30)
        for w in workers:
            w.drain()
        await asyncio.gather(*going)
        holding: dict[str, str] = {}
        for p in map(parse_line, lines):
            if p.get("state") in ("taken", "resumed", "recovered"):
                assert p["run"] not in holding, f"{p['worker']} took {p['run']} while {holding.get(p['run'])} held it"
                holding[p["run"]] = p["worker"]
            elif p.get("state") == "released":
                assert holding.pop(p["run"]) == p["worker"]
        assert states(lines).count("ended") == 8
        assert {parse_line(line)["worker"] for line in lines if "state=taken" in line} == {"w1", "w2"}
        keys = Ledger(api.store).keys()
        assert len(keys) == 16 and once_each(keys)


class Listing(MemoryStore):
    """Writes down how the worker lists runs: ``by status`` (with which) or ``all``."""

    def __init__(self, by_status: bool) -> None:
        super().__init__()
        self.asked: list[object] = []
        if not by_status:
            self.list_runs_by_status = None  # a store without the optional method

    async def list_runs(self):
        self.asked.append("all")
        return await MemoryStore.list_runs(self)

    async def list_runs_by_status(self, statuses):
        self.asked.append(sorted(statuses))
        return await MemoryStore.list_runs_by_status(self, statuses)


@pytest.mark.parametrize("by_status", [True, False], ids=["list_runs_by_status", "without it"])
async def test_a_worker_polls_for_the_runs_it_may_take_where_the_store_picks_them_out(by_status):
    store = Listing(by_status)
    api = factory(store)
    ids = [(await api.start(f"tag=p{i}")).id for i in range(2)]
    worker = Worker(store, factory, concurrency=2, log=lambda line: None)
    assert await worker.poll() == 2
    await worker.idle()
    assert await worker.poll() == 0 and [(await api.get_run(i)).status for i in ids] == ["completed"] * 2
    assert store.asked == ([["interrupted", "queued", "running", "waiting"]] * 2 if by_status else ["all"] * 2)


# -- a run whose record the store cannot keep ------------------------------------------------------


class NoNulStore(MemoryStore):
    """Refuses a record holding U+0000, as PostgreSQL's jsonb does (a store error naming it)."""

    async def save_run(self, run, revision=None, holder=None):
        if "\\u0000" in json.dumps(run):
            raise AerixError("store", f"run {run['id']!r} holds the character U+0000, which this store cannot keep")
        return await MemoryStore.save_run(self, run, revision, holder)


def nul_agent(store, where: str, ran: list[str]) -> Agent:
    """An agent whose run holds U+0000: in a tool's result (a file read as text) or its final answer."""

    def read(input, ctx):
        ran.append("read")
        return "PK\x03\x04\x00\x00" if where == "result" else "a text"

    def reply(messages, options):
        if any(m["role"] == "assistant" for m in messages):
            return json.dumps({"thought": "done", "final": "it says PK\x00" if where == "final" else "done"})
        return json.dumps({"thought": "read it", "calls": [{"tool": "read", "input": {}}]})

    return Agent(model=ScriptedModel(reply), tools=[tool(name="read", description="Read the file.", input={}, run=read)], store=store)


@pytest.mark.parametrize("where", ["result", "final"])
@pytest.mark.parametrize("kind", ["refusing", "postgres"])
async def test_a_run_the_store_cannot_keep_ends_once_naming_why_never_resumed_again(kind, where, request, tmp_path, monkeypatch):
    db = Database("memory", None, NoNulStore()) if kind == "refusing" else database_of(kind, request, tmp_path, monkeypatch)
    ran: list[str] = []
    make = functools.partial(nul_agent, where=where, ran=ran)
    async with db:
        api = make(db.store())
        run_id = (await api.start("read the file")).id
        lines: list[str] = []
        worker = Worker(db.store(), make, name="w1", log=lines.append)
        for _ in range(3):  # before: recovered at every poll, the tool run again each time, forever
            await worker.poll()
            await worker.idle()
        record = await api.get_run(run_id)
        assert record.status == "failed" and record.ending["type"] == "end" and record.ending["reason"] == "error"
        assert "U+0000" in record.ending["message"] and "last recorded checkpoint" in record.ending["message"]
        assert states(lines, run_id) == ["taken", "ended", "released"] and ran == ["read"]
        ended = [parse_line(line) for line in lines if "state=ended" in line][0]
        assert ended["reason"] == "error" and ended["message"] == record.ending["message"]


# -- the command ---------------------------------------------------------------------------------


@needs_cpython
@pytest.mark.parametrize(
    "options, said",
    [
        (["--agent", "worker_agents"], "--agent must be module:factory"),
        (["--agent", "no_such_module:factory"], "cannot import 'no_such_module'"),
        (["--agent", "worker_agents:missing"], "'worker_agents' has no 'missing'"),
        (["--agent", "worker_agents:APPLIED"], "is a list, not a function"),
        (["--agent", "worker_agents:not_an_agent"], "returned str, not an aerix Agent"),
        (["--agent", "worker_agents:without_store"], "without the store it was given"),
        (["--store", "runs.sqlite3"], "--store must be a URL"),
        (["--store", "mysql://db/runs"], "unknown scheme 'mysql'"),
        (["--store", "sqlite://"], "sqlite:///PATH names a file"),
        (["--concurrency", "0"], "concurrency must be an integer >= 1"),
        (["--lease-s", "0"], "lease_s must be a number of seconds > 0"),
    ],
)
def test_bad_options_are_said_plainly_with_exit_status_2(options, said, tmp_path, capsys):
    defaults = {"--store": f"sqlite:///{tmp_path}/runs.sqlite3", "--agent": "worker_agents:factory"}
    given = dict(zip(options[::2], options[1::2]))
    argv = ["worker", *[x for k, v in {**defaults, **given}.items() for x in (k, v)]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("aerix worker: ") and said in err


@needs_cpython
def test_a_postgres_url_needs_the_postgres_store(tmp_path, capsys):
    if hasattr(aerix.stores, "PostgresStore"):
        pytest.skip("this aerix has PostgresStore: the Postgres worker tests cover it")
    assert main(["worker", "--store", "postgresql://aerix@localhost/runs", "--agent", "worker_agents:factory"]) == 2
    assert "aerix.stores.PostgresStore is not available" in capsys.readouterr().err


def start_worker(url: str, name: str, log: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT / "tests" / "unit")])}  # with $AERIX_TEST_LEDGER
    argv = [sys.executable, "-m", "aerix", "worker", "--store", url, "--agent", "worker_agents:factory", "--name", name, "--poll-s", "0.05", *extra]
    with log.open("w") as err:  # the child keeps its own copy of the file
        return subprocess.Popen(argv, env=env, stderr=err, stdout=subprocess.DEVNULL)


def logged(log: Path) -> list[dict[str, str]]:
    return [parse_line(line) for line in log.read_text().splitlines() if line.startswith("t=")]


async def wait_logged(log: Path, state: str, timeout: float = 20.0) -> dict[str, str]:
    found: list[dict[str, str]] = []

    async def seen() -> bool:
        found[:] = [p for p in logged(log) if p.get("state") == state]
        return bool(found)

    await until(seen, timeout)
    return found[0]


@needs_processes
async def test_sigterm_drains_the_worker_process_and_it_exits_0(shared_db, tmp_path):
    async with shared_db:
        await sigterm_drains(factory(shared_db.store()), shared_db.url, tmp_path)


async def sigterm_drains(api, url: str, tmp_path: Path) -> None:
    short = (await api.start("tag=short steps=1")).id
    long = (await api.start("tag=long steps=20 sleep=0.2")).id
    log = tmp_path / "w1.log"
    process = start_worker(url, "w1", log)
    try:
        await until(lambda: asyncio.sleep(0, any(p.get("run") == long and p["state"] == "taken" for p in logged(log))), 20)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
    finally:
        process.kill()
    assert (await api.get_run(short)).status == "completed"
    assert (await api.get_run(long)).status == "interrupted"  # stopped at a checkpoint, not ended
    assert await api.store.get_lease(f"run:{long}") is None  # given back: another worker need not wait
    assert [p["state"] for p in logged(log) if p.get("run") == long] == ["taken", "interrupted", "released"]
    assert [p["state"] for p in logged(log) if "run" not in p] == ["started", "draining", "stopped"]


@needs_processes
async def test_a_worker_killed_mid_run_is_recovered_by_another_each_effect_once(shared_db, tmp_path):
    async with shared_db:
        await killed_then_recovered(factory(shared_db.store()), shared_db.url, tmp_path)


async def killed_then_recovered(api, url: str, tmp_path: Path) -> None:
    run_id = (await api.start("tag=k steps=6 sleep=0.15")).id
    first_log, second_log = tmp_path / "w1.log", tmp_path / "w2.log"
    first = start_worker(url, "w1", first_log, "--lease-s", "1")
    try:
        await until(lambda: asyncio.sleep(0, len(Ledger(api.store).keys()) >= 2), 20)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    finally:
        first.kill()
    assert (await api.get_run(run_id)).status == "running"  # left so by the dead worker
    second = start_worker(url, "w2", second_log, "--lease-s", "1")
    try:
        recovered = await wait_logged(second_log, "recovered")
        await wait_logged(second_log, "ended")
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    finally:
        second.kill()
    assert recovered["run"] == run_id and recovered["holder"].startswith("w1/")
    assert (await api.get_run(run_id)).status == "completed"
    keys = Ledger(api.store).keys()
    assert sorted(keys) == [f"k/{n}" for n in range(1, 7)]  # each step once, across the kill
