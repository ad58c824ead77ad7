"""Workers: processes that execute the durable runs of one store, several at a time, many machines
sharing one store (``python -m aerix worker``; the command is :mod:`aerix.worker_cli`).

    worker = Worker(store, make_agent, name="w1", lease_s=30.0, poll_s=1.0, concurrency=2)
    await worker.run()            # until worker.drain() (SIGTERM, SIGINT) lets it stop

``make_agent(store)`` is called once per slot (``concurrency`` of them: an Agent executes one run
at a time) and returns an ``Agent`` built with that store, ``Agent(..., store=store)``; each slot
holds leases under a name of its own (``<worker name>/<slot>.<random>``). Every ``poll_s``
seconds, and as soon as a slot frees up, the worker lists the store's runs of the four statuses
below (``list_runs_by_status`` where the store has it, else every run), oldest first, and offers
each free slot the first of its agent's name it may execute:

    queued        made by ``Agent.start`` (anywhere) and not yet begun          -> state=taken
    interrupted   drained by a worker, or left by a page or process that stopped -> state=resumed
    waiting       its approval answered (``Agent.answer``), or past its deadline -> state=resumed
    running       its lease expired: the process executing it died              -> state=recovered

A slot takes the run's lease first (``Runs.take_run``: the store's atomic ``acquire_lease``, so of
several workers exactly one gets it; the others go on to the next run), reads the record again
under it, and resumes it from its checkpoint (``Runs.resume``), which renews the lease every
``lease_s / 3`` seconds and before each effect tool, and gives it back when the run stops. Effects
are recorded once per effect key (docs/durable.md), whichever worker applies them.

``drain()`` stops taking work; a run going stops at its next checkpoint (``interrupted``) and its
lease is given back at once, so another worker resumes it without waiting for the lease to
expire; ``stop()`` (a second signal) cancels the runs going: each is left ``interrupted`` at its
last checkpoint. One line per change of a run's state goes to ``log`` (stderr by default), as
``key=value`` pairs (:func:`parse_line` reads one back)::

    t=1714000000.123 worker=w1 run=4f2a... state=taken from=queued
    t=... worker=w1 run=4f2a... state=waiting approval=c1.1
    t=... worker=w1 run=4f2a... state=ended ending=final       (or ending=end reason=turns message="...")
    t=... worker=w1 run=4f2a... state=released
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
import time
import uuid
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Callable

from .durable.book import use_store
from .errors import AerixError
from .stores import has_runs_by_status

if TYPE_CHECKING:
    from .agent import Agent
    from .durable.lifecycle import Lease
    from .durable.record import RunRecord

__all__ = ["Worker", "parse_line"]

_STATE_OF = {"queued": "taken", "interrupted": "resumed", "waiting": "resumed", "running": "recovered"}
_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


class Worker:
    """Executes the durable runs of ``store`` with the Agents ``factory(store)`` makes (one per
    slot), until drained. See the module's docstring for what it takes and what it logs."""

    def __init__(
        self,
        store: Any,
        factory: Callable[[Any], Any],
        *,
        name: str | None = None,
        lease_s: float = 30.0,
        poll_s: float = 1.0,
        concurrency: int = 1,
        log: Callable[[str], None] | None = None,
    ) -> None:
        for what, value in (("lease_s", lease_s), ("poll_s", poll_s)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise AerixError("options", f"{what} must be a number of seconds > 0, got {value!r}")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise AerixError("options", f"concurrency must be an integer >= 1, got {concurrency!r}")
        if name is not None and (not isinstance(name, str) or not name or any(c.isspace() for c in name)):
            raise AerixError("options", f"name must be a non-empty string without spaces, got {name!r}")
        self.store, self.name, self.poll_s = store, name or _default_name(), float(poll_s)
        self.log = log or _stderr
        self.agents: list[Agent] = [self._slot(factory, i, float(lease_s)) for i in range(concurrency)]
        if len({a.name for a in self.agents}) != 1:
            raise AerixError("options", f"the factory made Agents of several names {sorted({a.name for a in self.agents})}: a worker executes one agent's runs")
        self.draining = False
        self.going: dict[str, asyncio.Task[None]] = {}  # run id -> its execution
        self._busy: set[int] = set()  # slots executing a run
        self._refused: dict[str, int] = {}  # run id -> the revision its resume was refused at
        self._keys: dict[str, str] = {}  # run id going -> its concurrency key
        self._wake = asyncio.Event()

    def _slot(self, factory: Callable[[Any], Any], i: int, lease_s: float) -> Agent:
        from .agent import Agent

        agent = factory(self.store)
        if not isinstance(agent, Agent):
            raise AerixError("options", f"the agent factory returned {type(agent).__name__}, not an aerix Agent")
        if agent.store is not self.store:
            raise AerixError("options", "the agent factory built its Agent without the store it was given: build it with Agent(..., store=store)")
        runs = agent._durable()
        runs.lease_s, runs.holder = lease_s, f"{self.name}/{i}.{uuid.uuid4().hex[:8]}"
        return agent

    def say(self, state: str, run_id: str | None = None, **fields: Any) -> None:
        """Log one line: the time, this worker, the run, its new state, and ``fields``."""
        pairs = {"t": f"{time.time():.3f}", "worker": self.name, "run": run_id, "state": state, **fields}
        self.log(" ".join(f"{k}={_value(v)}" for k, v in pairs.items() if v is not None))

    async def run(self) -> None:
        """Poll and execute until :meth:`drain`; then wait for the runs going to stop."""
        self.say("started", agent=self.agents[0].name, slots=len(self.agents), store=repr(self.store))
        while not self.draining:
            try:
                await self.poll()
            except AerixError as e:  # the store failed: say so, and try again after poll_s
                self.say("store_error", message=e.message)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.poll_s)
            except asyncio.TimeoutError:
                pass
        self.say("draining", going=len(self.going))
        await self.idle()
        self.say("stopped")

    async def idle(self) -> None:
        """Wait until no run is going."""
        while self.going:
            await asyncio.gather(*self.going.values(), return_exceptions=True)

    def drain(self) -> None:
        """Take no more runs; each run going stops at its next checkpoint, its lease given back."""
        self.draining = True
        for agent in self.agents:
            agent.draining = True  # Agent.drain() without the wait: the loop checks it at each checkpoint
        self._wake.set()

    def stop(self) -> None:
        """Stop now: cancel the runs going (each is left ``interrupted`` at its last checkpoint)."""
        self.drain()
        for task in self.going.values():
            task.cancel()

    async def poll(self) -> int:
        """One pass over the store: give each free slot a run it may execute; how many it began."""
        free = [i for i in range(len(self.agents)) if i not in self._busy]
        if not free or self.draining:
            return 0
        began = 0
        for data in await self._listed():
            if not free or self.draining:
                break
            offered = await self._offered(data)
            if offered is None:
                continue
            slot, (listed, dead) = free[0], offered
            taken = await self._take(slot, listed)
            if taken is None:
                continue
            free.pop(0)
            self._busy.add(slot)
            self.say(_STATE_OF[listed.status], listed.id, **{"from": listed.status, "holder": dead})
            if listed.concurrency_key:
                self._keys[listed.id] = listed.concurrency_key
            self.going[listed.id] = asyncio.ensure_future(self._execute(slot, *taken))
            began += 1
        return began

    async def _listed(self) -> list[Any]:
        """The runs a slot may take (and some it may not), oldest first: by status where the
        store can pick them out (``list_runs_by_status``), else every run."""
        if has_runs_by_status(self.store):
            return await use_store("list_runs_by_status", lambda: self.store.list_runs_by_status(list(_STATE_OF)), list)  # type: ignore[no-any-return]
        return await use_store("list_runs", lambda: self.store.list_runs(), list)  # type: ignore[no-any-return]

    async def _offered(self, data: Any) -> tuple[RunRecord, str | None] | None:
        """The run ``data`` holds if a slot may take it now (see the module's docstring), and the
        holder of its expired lease if it was left ``running``."""
        from .durable.record import RunRecord

        if not isinstance(data, dict) or data.get("status") not in _STATE_OF or data.get("id") in self.going:
            return None
        try:
            record = RunRecord.from_dict(data)
        except AerixError:
            return None  # corrupt: runs() lists it so
        key = record.concurrency_key
        if not self._wanted(record) or key and (key in self._keys.values() or await self._live(f"key:{key}")):
            return None  # not ours, or another run of its concurrency key is going
        if record.status != "running":
            return record, None
        lease = await self._live(f"run:{record.id}", expired_too=True)
        if lease is not None and lease["expires_at"] > self.agents[0].clock():
            return None  # executing elsewhere
        return record, None if lease is None else str(lease["holder"])

    async def _live(self, name: str, expired_too: bool = False) -> dict[str, Any] | None:
        """The lease ``name`` if it is live (or, with ``expired_too``, held at all)."""
        lease: dict[str, Any] | None = await use_store("get_lease", lambda: self.store.get_lease(name), (dict, type(None)))
        return lease if lease is not None and (expired_too or lease["expires_at"] > self.agents[0].clock()) else None

    def _wanted(self, record: RunRecord) -> bool:
        """Whether the run is this worker's to execute, its lease aside."""
        if record.status not in _STATE_OF or not self.agents[0]._durable().mine(record) or self._refused.get(record.id) == record.revision:
            return False
        waiting = record.status == "waiting" and record.pending_approval() is not None
        return not waiting or record.overdue(self.agents[0].clock())  # answered, or past its deadline

    async def _take(self, slot: int, listed: RunRecord) -> tuple[Lease, RunRecord] | None:
        """The run's lease for ``slot`` and the record read under it, if it is still wanted."""
        runs = self.agents[slot]._durable()
        try:
            lease = await runs.take_run(listed.id)
        except AerixError as e:
            if e.kind == "busy":
                return None  # another worker took it first
            raise
        try:
            record = await runs.get(listed.id)
        except BaseException:
            await lease.give_back()
            raise
        if record is None or record.status != listed.status or not self._wanted(record):
            await lease.give_back()  # it moved on since it was listed
            return None
        return lease, record

    async def _execute(self, slot: int, lease: Lease, record: RunRecord) -> None:
        agent = self.agents[slot]
        try:
            agent._claim_check("resume", abandoned_ok=True)  # draining since it was taken: left as it was
            agent.reset()  # runs are strangers: a queued one starts from the system message alone
            events = agent._watch(agent._durable().resume(record.id, None, lease=lease, record=record))
            async with aclosing(events) as stream:
                async for ev in stream:
                    self._said(record.id, ev, lease)
        except AerixError as e:
            if e.kind != "busy":  # another run of its concurrency key is going: offered again later
                self._refused[record.id] = record.revision
                self.say("error", record.id, kind=e.kind, message=e.message)
        finally:
            await lease.give_back()  # resume gave it back already, unless it never began
            self.say("released", record.id)
            self.going.pop(record.id, None)
            self._keys.pop(record.id, None)
            self._busy.discard(slot)
            self._wake.set()

    def _said(self, run_id: str, ev: Any, lease: Lease) -> None:
        if ev.type == "waiting":
            self.say("waiting", run_id, approval=ev.approval_id)
        elif ev.type == "interrupted":
            self.say("interrupted", run_id, message=ev.message)
        elif ev.type in ("final", "end") and lease.lost:
            self.say("lost", run_id, message="its lease was taken over; the new holder records its ending")
        elif ev.type == "final":
            self.say("ended", run_id, ending="final")
        elif ev.type == "end":
            self.say("ended", run_id, ending="end", reason=ev.reason, message=ev.message)


def parse_line(line: str) -> dict[str, str]:
    """A worker's log line as a dict (``t``, ``worker``, ``run``, ``state``, ...)."""
    return {k: json.loads(v) if v.startswith('"') else v for k, v in _PAIR.findall(line)}


def _value(value: Any) -> str:
    text = str(value)
    return json.dumps(text, ensure_ascii=False) if not text or any(c.isspace() or c in '"=' for c in text) else text


def _default_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
