"""The durable lifecycle: start, resume, approve, recover and interrupt, for one Agent.

One executor per run: every execution holds the run's lease in the store (``run:<id>``, and
``key:<k>`` for a ``concurrency_key``), taken atomically before anything of the run runs,
renewed every ``lease_s / 3`` seconds while it runs, and given back when it stops (ended,
waiting, interrupted). A second executor of a live run is refused ``busy``; a lease whose holder
died expires after ``lease_s`` (in the page, a closed tab frees it at once: the IndexedDB store
also holds a Web Lock). ``recover`` marks ``interrupted`` only the running runs whose lease is
not live.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, AsyncGenerator, Sequence

from ..artifacts import File, RunArtifacts
from ..errors import AerixError
from ..events import End, Event, event_from_dict
from ..loop import Loop
from ..state import Conversation, LoopState
from ..stores import Store
from ..trust import Invoker
from .book import Durable, use_store
from .record import RunRecord

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["Lease", "Runs"]


class Lease:
    """One execution's hold on a run's names in the store, kept alive while it runs."""

    def __init__(self, store: Store, names: list[str], holder: str, clock: Any, seconds: float) -> None:
        self.store, self.names, self.holder, self.clock, self.seconds = store, names, holder, clock, seconds
        self.lost = False
        self._taken: list[str] = []
        self._keeper: asyncio.Task[None] | None = None

    async def take(self) -> str | None:
        """Take every name, or none: the name held elsewhere, or ``None`` when all are ours."""
        for name in self.names:
            if not await self._acquire(name):
                await self.give_back()
                return name
            self._taken.append(name)
        self._keeper = asyncio.ensure_future(self._keep())
        return None

    async def _acquire(self, name: str) -> bool:
        now = self.clock()
        got = await use_store("acquire_lease", lambda: self.store.acquire_lease(name, self.holder, now + self.seconds, now), bool)
        return bool(got)

    async def _keep(self) -> None:
        while not self.lost:
            await asyncio.sleep(self.seconds / 3)
            try:
                renewed = [await self._acquire(name) for name in self._taken]
            except AerixError:
                continue  # the store stumbled: try again before the lease runs out
            self.lost = not all(renewed)

    async def give_back(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
            self._keeper = None
        taken, self._taken = self._taken, []
        for name in taken:
            try:
                await use_store("release_lease", lambda: self.store.release_lease(name, self.holder))
            except AerixError:
                pass  # it expires on its own


class Runs:
    """The durable lifecycle of one Agent's runs in its store; ``Agent`` checks the arguments
    and delegates here."""

    lease_s = 30.0  # how long a lease lives without renewal (it is renewed every third of it)

    def __init__(self, agent: Agent, store: Store) -> None:
        self.agent = agent
        self.store = store
        self.current: Durable | None = None  # the run going now, if durable
        self.holder = f"executor-{uuid.uuid4().hex[:12]}"  # this Agent, as a lease holder

    async def start(
        self, prompt: str, run_id: str | None, idempotency_key: str | None, invoker: Invoker | None, concurrency_key: str | None = None, source: str | None = None
    ) -> RunRecord:
        now = self.agent.clock()
        key = idempotency_key if invoker is None or idempotency_key is None else f"{invoker.kind}:{invoker.id}/{idempotency_key}"
        snapshot = None if invoker is None else invoker.to_dict()
        kept = None if self.agent._kept is None else self.agent._kept.id
        record = RunRecord(run_id or uuid.uuid4().hex, prompt, "queued", key, now, now, invoker=snapshot, concurrency_key=concurrency_key, source=source, conversation_id=kept)
        found = RunRecord.from_dict(await use_store("create_run", lambda: self.store.create_run(record.to_dict()), dict))
        named = f"idempotency key {idempotency_key!r}" if key is not None and found.idempotency_key == key else f"run id {found.id!r}"
        if found.prompt != prompt:  # a key names one request: another prompt is another run
            raise AerixError("options", f"{named} belongs to run {found.id}, started with the prompt {found.prompt!r}, not {prompt!r}")
        if (found.invoker or {}).get("id") != (snapshot or {}).get("id"):
            raise AerixError("options", f"{named} belongs to run {found.id}, started by another invoker")
        return found

    async def start_and_resume(
        self,
        prompt: str,
        signal: Any,
        run_id: str | None,
        key: str | None,
        invoker: Invoker | None,
        concurrency_key: str | None = None,
        files: Sequence[File] = (),
        source: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        try:
            record = await self.start(prompt, run_id, key, invoker, concurrency_key, source)
            # attachments, before the run starts (again, in place, if a crash came between)
            attached = await RunArtifacts(self.store, record.id).attach(files) if record.checkpoint is None else []
        except AerixError as e:
            if e.kind != "store":
                raise
            yield End("error", e.message)  # the run could not even be written down
            return
        for made in attached:
            yield made
        async with aclosing(self.resume(record.id, signal, just_started=True)) as events:
            async for ev in events:
                yield ev

    async def resume(
        self, run_id: str, signal: Any, just_started: bool = False, lease: Lease | None = None, record: RunRecord | None = None
    ) -> AsyncGenerator[Event, None]:
        """Take the run's lease, restore the run from its checkpoint (or start it from the
        agent's conversation) and drive the loop; a run already ended yields its ending again. A
        run that ``run()`` has just started and cannot read back ends ``error``: ``run()`` never
        raises once it began. A run executing elsewhere is ``AerixError(kind="busy")``. ``lease``
        and ``record``: already taken and read (by ``approve``), so not again."""
        agent = self.agent
        await agent._claim()
        run: Durable | None = None
        try:
            try:
                record = record or await self.load(run_id)
            except AerixError as e:
                if not just_started:
                    raise
                lost = e.message if e.kind == "store" else f"store failed: the run {run_id} it had just created is not in it"
                yield End("error", lost)
                return
            if record.ended:
                assert record.ending is not None
                yield event_from_dict(record.ending)
                return
            _check_resumable(record, agent.system)
            lease = lease or await self.lease(record)
            run = self.current = Durable(self.store, record, agent.clock, lease)
            checkpoint = record.checkpoint  # None: queued, it starts from this agent's conversation
            try:
                await agent.state.load()  # the agent's state as the store has it now (agent_state.py)
                if checkpoint is None:
                    conversation = await self.starting_conversation(record)
                    state = LoopState()
                    await run.checkpoint(conversation, state)
            except AerixError as e:
                if e.kind != "store":
                    raise  # a kept conversation of other instructions: the developer's to fix
                yield End("error", e.message)  # the store failed before the run began
                return
            if checkpoint is not None:
                conversation = Conversation.from_dict(checkpoint)
                state = LoopState.from_dict(checkpoint)
            agent._conversation = conversation
            loop = Loop(agent, conversation, state, signal, run, Invoker.of(record.invoker), source=record.source)
            async with aclosing(loop.events()) as events:
                async for ev in events:
                    yield ev
        finally:
            try:
                if run is not None and run.record.status == "running" and not run.lease_lost:
                    await run.interrupted()  # the consumer stopped early, or the page is going away
            except AerixError:
                pass  # the store is failing: the record keeps its last checkpoint
            finally:
                if lease is not None:
                    await lease.give_back()
                self.current = None
                agent._release()

    async def starting_conversation(self, record: RunRecord) -> Conversation:
        """A run that starts: the agent's conversation (a kept one read first, if not yet, and
        written with the run's id: ``conversations.py``) and the run's prompt."""
        agent, kept = self.agent, self.agent._kept
        if kept is not None and not kept.loaded:
            agent._conversation = await kept.read(agent.system)
        conversation = agent._conversation.copy()
        if kept is not None:
            await kept.write(conversation, record.id)
        conversation.add("user", record.prompt)
        return conversation

    async def lease(self, record: RunRecord) -> Lease:
        """Take the run's lease (and its concurrency key's), or refuse ``busy`` naming the run."""
        names = [f"run:{record.id}"] + ([f"key:{record.concurrency_key}"] if record.concurrency_key else [])
        lease = Lease(self.store, names, self.holder, self.agent.clock, self.lease_s)
        held = await lease.take()
        if held is not None:
            what = "it is executing elsewhere" if held.startswith("run:") else f"another run of concurrency key {record.concurrency_key!r} is executing"
            raise AerixError("busy", f"run {record.id} cannot execute now: {what} (its lease is live)")
        return lease

    async def answer_and_resume(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None, signal: Any, approver: Invoker | None
    ) -> AsyncGenerator[Event, None]:
        lease = await self.lease(await self.load(run_id))  # one answer: whoever holds the run records it
        try:
            record = await self.load(run_id)
            approval = record.approvals.get(approval_id)
            if approval is None:
                raise AerixError("options", f"run {run_id} has no approval {approval_id!r}")
            if approval["decision"] is not None:
                raise AerixError("options", f"approval {approval_id!r} of run {run_id} was already answered")
            now = self.agent.clock()
            if now - approval["created_at"] >= approval["timeout_s"]:  # too late: the deadline held
                approved, reason = False, "approval timed out"
            who = None if approver is None else approver.to_dict()
            approval["decision"] = {"approved": approved, "reason": reason, "approver": who, "answered_at": now}
            record.updated_at = now
            await use_store("save_run", lambda: self.store.save_run(record.to_dict()))
        except BaseException:
            await lease.give_back()
            raise
        async with aclosing(self.resume(run_id, signal, lease=lease, record=record)) as events:
            async for ev in events:
                yield ev

    async def get(self, run_id: str) -> RunRecord | None:
        data = await use_store("get_run", lambda: self.store.get_run(run_id), (dict, type(None)))
        return RunRecord.from_dict(data) if data is not None else None

    async def load(self, run_id: str) -> RunRecord:
        record = await self.get(run_id)
        if record is None:
            raise AerixError("options", f"no run {run_id!r} in {self.store!r}")
        return record

    async def all(self) -> list[RunRecord]:
        """Every run, oldest first; a record that does not read is listed as ``corrupt``."""
        out = []
        for data in await use_store("list_runs", lambda: self.store.list_runs(), list):
            try:
                out.append(RunRecord.from_dict(data))
            except AerixError as e:
                name = data.get("id") if isinstance(data, dict) else None
                out.append(RunRecord(str(name), "", "corrupt", error=e.message))
        return out

    async def recover(self) -> list[RunRecord]:
        out = []
        for record in await self.all():
            if record.status == "running" and not await self.executing(record.id):
                record.status = "interrupted"
                record.updated_at = self.agent.clock()
                await use_store("save_run", lambda: self.store.save_run(record.to_dict()))
            if record.status in ("queued", "interrupted", "waiting"):
                out.append(record)
        return out

    async def executing(self, run_id: str) -> bool:
        """Whether the run is executing now, here or elsewhere (its lease is live)."""
        if self.current is not None and self.current.run_id == run_id:
            return True
        lease = await use_store("get_lease", lambda: self.store.get_lease(f"run:{run_id}"), (dict, type(None)))
        return lease is not None and lease.get("expires_at", 0) > self.agent.clock()

    async def interrupt(self) -> None:
        if self.current is not None:
            await self.current.interrupted()


def _check_resumable(record: RunRecord, system: str) -> None:
    if record.checkpoint and record.checkpoint["messages"][0]["content"] != system:
        raise AerixError(
            "options", f"run {record.id} was started by an agent with other instructions or tools; resume it with the same ones"
        )
