"""The durable lifecycle: start, resume, approve, recover and interrupt, for one Agent.

One executor per run: every execution holds the run's lease in the store (``run:<id>``, and
``key:<k>`` for a ``concurrency_key``), taken atomically before the run is even read (so what it
reads no one else writes), renewed every ``lease_s / 3`` seconds while it runs and before each
effect tool, and given back when it stops (ended, waiting, interrupted). A second executor of a
live run is refused ``busy``; a lease whose holder died expires after ``lease_s`` (in the page, a
closed tab frees it at once: the IndexedDB store also holds a Web Lock). Every write is fenced by
the lease and every save is a compare-and-set on the record's revision (``book.save_record``): an
executor that lost its lease writes nothing more. ``recover`` takes the lease of each run listed
``running``, reads it again under it and marks it ``interrupted`` only if it is still running; a
run whose lease is live is left alone.

A run keeps the name of the Agent that started it (``RunRecord.agent``): an Agent of another name
is refused (``options``) when it resumes or answers it, and ``recover`` offers it only its own.
Idempotency keys are scoped to their invoker (:func:`scoped_key`).
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, AsyncGenerator, Sequence

from ..artifacts import File, RunArtifacts
from ..compaction import check_prompt_room
from ..errors import AerixError
from ..events import End, Event, event_from_dict
from ..handoffs import active_agent, load_state
from ..loop import Loop
from ..state import Conversation, LoopState
from ..stores import Store
from ..trust import Invoker
from .book import Durable, save_record, use_store
from .record import RunRecord

if TYPE_CHECKING:
    from ..agent import Agent

__all__ = ["Lease", "Runs", "scoped_key"]


class Lease:
    """One execution's hold on a run's names in the store, kept alive while it runs."""

    def __init__(self, store: Store, holder: str, clock: Any, seconds: float) -> None:
        self.store, self.holder, self.clock, self.seconds = store, holder, clock, seconds
        self.lost = False
        self._taken: list[str] = []
        self._keeper: asyncio.Task[None] | None = None

    async def take(self, names: list[str]) -> str | None:
        """Take each name not held yet, or give every name back: the name held elsewhere, or
        ``None`` when all are ours."""
        for name in names:
            if name in self._taken:
                continue
            try:
                got = await self._acquire(name)
            except BaseException:
                await self.give_back()
                raise
            if not got:
                await self.give_back()
                return name
            self._taken.append(name)
        if self._keeper is None:
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

    async def confirm(self) -> bool:
        """Renew every name now (before an effect: the keeper cannot renew while a sync tool
        blocks the event loop); whether they are all still ours."""
        if not self.lost:
            self.lost = not all([await self._acquire(name) for name in self._taken])
        return not self.lost

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
        _check_name("run_id", run_id)
        _check_name("idempotency_key", idempotency_key)
        now = self.agent.clock()
        key = scoped_key(invoker, idempotency_key)
        snapshot = None if invoker is None else invoker.to_dict()
        kept = None if self.agent._kept is None else self.agent._kept.id
        record = RunRecord(
            run_id or uuid.uuid4().hex, prompt, "queued", key, now, now, invoker=snapshot, concurrency_key=concurrency_key, source=source, conversation_id=kept, agent=self.agent.name
        )
        found = RunRecord.from_dict(await use_store("create_run", lambda: self.store.create_run(record.to_dict()), dict))
        if found.prompt != prompt or _who(found.invoker) != _who(snapshot) or not self.mine(found):
            # a key or an id names one request; the run found may be another invoker's: say nothing of it
            named = f"idempotency key {idempotency_key!r} was used" if key is not None and found.idempotency_key == key else f"run id {found.id!r} is taken"
            raise AerixError("options", f"{named} by another request (another prompt, invoker or agent): choose another")
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
            kept = self.agent._kept
            if kept is not None and not kept.loaded:  # the run starts now: read the conversation it continues
                self.agent._conversation = await kept.read(self.agent)
            check_prompt_room(self.agent._conversation, prompt, self.agent.active)  # before a run is written
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
        """Take the run's lease, then read the run under it (a record read before could be stale),
        restore the run from its checkpoint (or start it from the agent's conversation) and drive
        the loop; a run already ended yields its ending again. A run that ``run()`` has just
        started and cannot read back ends ``error``: ``run()`` never raises once it began. A run
        executing elsewhere is ``AerixError(kind="busy")``, a run of an Agent of another name
        ``options``. ``lease`` and ``record``: already taken and read (by ``approve``), so not again."""
        agent = self.agent
        await agent._claim()
        run: Durable | None = None
        try:
            try:
                lease = lease or await self.take_run(run_id)
                record = record or await self.load(run_id)
            except AerixError as e:
                if not just_started or e.kind == "busy":
                    raise
                lost = e.message if e.kind == "store" else f"store failed: the run {run_id} it had just created is not in it"
                yield End("error", lost)
                return
            self.check_agent(record)
            if record.ended:
                assert record.ending is not None
                yield event_from_dict(record.ending)
                return
            _check_resumable(record, agent)
            await self.take_key(lease, record)
            run = self.current = Durable(self.store, record, agent.clock, lease)
            checkpoint = record.checkpoint  # None: queued, it starts from this agent's conversation
            try:
                await agent.state.load()  # the agent's state as the store has it now (agent_state.py)
                if checkpoint is None:
                    conversation = await self.starting_conversation(record)
                    state = LoopState()
                    await run.checkpoint(conversation, state)
                else:
                    conversation, state = Conversation.from_dict(checkpoint), LoopState.from_dict(checkpoint)
                await load_state(agent, conversation)  # and the handoff target's, if handed to one
            except AerixError as e:
                if e.kind != "store":
                    raise  # a kept conversation of other instructions: the developer's to fix
                yield End("error", e.message)  # the store failed before the run began
                return
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
            agent._conversation = await kept.read(agent)
        conversation = agent._conversation.copy()
        if kept is not None:
            await kept.write(conversation, record.id)
        conversation.add("user", record.prompt)
        return conversation

    async def take_run(self, run_id: str) -> Lease:
        """Take the run's lease (``run:<id>``), or refuse ``busy``: it is executing elsewhere."""
        _check_name("run_id", run_id)
        lease = Lease(self.store, self.holder, self.agent.clock, self.lease_s)
        if await lease.take([f"run:{run_id}"]) is not None:
            raise AerixError("busy", f"run {run_id} cannot execute now: it is executing elsewhere (its lease is live)")
        return lease

    async def take_key(self, lease: Lease, record: RunRecord) -> None:
        """Add the lease of the run's concurrency key, or give every name back and refuse ``busy``."""
        if record.concurrency_key and await lease.take([f"key:{record.concurrency_key}"]) is not None:
            raise AerixError("busy", f"run {record.id} cannot execute now: another run of concurrency key {record.concurrency_key!r} is executing (its lease is live)")

    def mine(self, record: RunRecord) -> bool:
        """Whether this Agent may execute the run: started by an Agent of its name (or recorded
        before runs kept their agent's name)."""
        return record.agent is None or record.agent == self.agent.name

    def check_agent(self, record: RunRecord) -> None:
        if not self.mine(record):
            raise AerixError("options", f"run {record.id} was started by the agent {record.agent!r}; resume it with that agent, not {self.agent.name!r}")

    async def answer_and_resume(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None, signal: Any, approver: Invoker | None
    ) -> AsyncGenerator[Event, None]:
        lease, record = await self.record_answer(run_id, approval_id, approved, reason, approver)
        async with aclosing(self.resume(run_id, signal, lease=lease, record=record)) as events:
            async for ev in events:
                yield ev

    async def answer(self, run_id: str, approval_id: str, approved: bool, reason: str | None, approver: Invoker | None) -> RunRecord:
        """Record the answer and leave the run ``waiting`` with it, for an executor (a worker's
        poll, or ``resume``) to continue."""
        lease, record = await self.record_answer(run_id, approval_id, approved, reason, approver)
        await lease.give_back()
        return record

    async def record_answer(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None, approver: Invoker | None
    ) -> tuple[Lease, RunRecord]:
        """Record an answer under the run's lease; the lease, still held, and the record as saved."""
        lease = await self.take_run(run_id)  # one answer: whoever holds the run reads and records it
        try:
            record = await self.load(run_id)
            self.check_agent(record)
            await self.take_key(lease, record)
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
            if not await save_record(self.store, record, lease.holder):
                raise AerixError("store", f"store failed: run {run_id} was written by another executor while the answer was recorded; answer again")
        except BaseException:
            await lease.give_back()
            raise
        return lease, record

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
        """This agent's runs that can be resumed; a run left ``running`` by an executor that went
        away is marked ``interrupted`` first (:meth:`interrupt_if_dead`)."""
        out = []
        for record in await self.all():
            if not self.mine(record):
                continue
            if record.status == "running":
                found = await self.interrupt_if_dead(record.id)
                if found is None:
                    continue
                record = found
            if record.status in ("queued", "interrupted", "waiting"):
                out.append(record)
        return out

    async def interrupt_if_dead(self, run_id: str) -> RunRecord | None:
        """The run, marked ``interrupted`` if it was ``running`` and nobody executes it: its lease
        is taken here and the record read again under it, so a run that ended (or moved on) after
        it was listed is never set back; ``None`` if it is executing (here or elsewhere) or no
        longer reads."""
        if self.current is not None and self.current.run_id == run_id:
            return None
        lease = Lease(self.store, self.holder, self.agent.clock, self.lease_s)
        if await lease.take([f"run:{run_id}"]) is not None:
            return None  # its lease is live: it is executing elsewhere
        try:
            data = await use_store("get_run", lambda: self.store.get_run(run_id), (dict, type(None)))
            try:
                record = RunRecord.from_dict(data) if data is not None else None
            except AerixError:
                return None  # damaged since it was listed: runs() lists it corrupt
            if record is not None and record.status == "running":
                record.status, record.updated_at = "interrupted", self.agent.clock()
                if not await save_record(self.store, record, lease.holder):
                    return None  # written meanwhile by a writer without the lease: leave it to them
            return record
        finally:
            await lease.give_back()

    async def interrupt(self) -> None:
        if self.current is not None:
            await self.current.interrupted()


def scoped_key(invoker: Invoker | None, key: str | None) -> str | None:
    """An idempotency key as the store keeps it, scoped to its invoker so that no two (invoker,
    key) pairs share one: an invoker's is ``<kind>:<id>/<key>``, with ``%``, ``:`` and ``/`` in the
    kind and the id written ``%25``, ``%3A`` and ``%2F``; a key given without an invoker is kept
    as it is, unless it could read as an invoker's (a ``/`` with a ``:`` or a lone ``-`` before
    it): that one is kept as ``-/<key>``. Keys stored before the scoping keep their form wherever
    they could not collide."""
    if key is None:
        return None
    if invoker is not None:
        return f"{_escape(invoker.kind)}:{_escape(invoker.id)}/{key}"
    head, slash, _ = key.partition("/")
    return f"-/{key}" if slash and (":" in head or head == "-") else key


def _escape(part: str) -> str:
    return part.replace("%", "%25").replace(":", "%3A").replace("/", "%2F")


def _who(invoker: dict[str, Any] | None) -> tuple[Any, Any] | None:
    return None if invoker is None else (invoker.get("kind"), invoker.get("id"))


def _check_name(what: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise AerixError("options", f"{what} must be a non-empty string or None, got {value!r}")


def _check_resumable(record: RunRecord, agent: Agent) -> None:
    if not record.checkpoint:
        return
    conversation = Conversation.from_dict(record.checkpoint)
    if conversation.agent is not None and active_agent(agent, conversation) is None:
        raise AerixError(
            "options",
            f"run {record.id} was handed to the agent {conversation.agent!r}, which the handoffs of {agent.name!r} do not reach (or it has other instructions or tools); resume it with an Agent built with the same handoffs",
        )
    if active_agent(agent, conversation) is None:
        raise AerixError(
            "options", f"run {record.id} was started by an agent with other instructions or tools (or turn format); resume it with the same ones"
        )
