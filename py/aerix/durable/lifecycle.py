"""The durable lifecycle: start, resume, approve, recover and interrupt, for one Agent."""

from __future__ import annotations

import uuid
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, AsyncGenerator

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

__all__ = ["Runs"]


class Runs:
    """The durable lifecycle of one Agent's runs in its store; ``Agent`` checks the arguments
    and delegates here."""

    def __init__(self, agent: Agent, store: Store) -> None:
        self.agent = agent
        self.store = store
        self.current: Durable | None = None  # the run going now, if durable

    async def start(self, prompt: str, run_id: str | None, idempotency_key: str | None, invoker: Invoker | None) -> RunRecord:
        now = self.agent.clock()
        key = idempotency_key if invoker is None or idempotency_key is None else f"{invoker.kind}:{invoker.id}/{idempotency_key}"
        snapshot = None if invoker is None else invoker.to_dict()
        record = RunRecord(run_id or uuid.uuid4().hex, prompt, "queued", key, now, now, invoker=snapshot)
        found = RunRecord.from_dict(await use_store("create_run", lambda: self.store.create_run(record.to_dict()), dict))
        named = f"idempotency key {idempotency_key!r}" if key is not None and found.idempotency_key == key else f"run id {found.id!r}"
        if found.prompt != prompt:  # a key names one request: another prompt is another run
            raise AerixError("options", f"{named} belongs to run {found.id}, started with the prompt {found.prompt!r}, not {prompt!r}")
        if (found.invoker or {}).get("id") != (snapshot or {}).get("id"):
            raise AerixError("options", f"{named} belongs to run {found.id}, started by another invoker")
        return found

    async def start_and_resume(self, prompt: str, signal: Any, run_id: str | None, key: str | None, invoker: Invoker | None) -> AsyncGenerator[Event, None]:
        try:
            record = await self.start(prompt, run_id, key, invoker)
        except AerixError as e:
            if e.kind != "store":
                raise
            yield End("error", e.message)  # the run could not even be written down
            return
        async with aclosing(self.resume(record.id, signal, just_started=True)) as events:
            async for ev in events:
                yield ev

    async def resume(self, run_id: str, signal: Any, just_started: bool = False) -> AsyncGenerator[Event, None]:
        """Restore the run from its checkpoint (or start it from the agent's conversation) and
        drive the loop; a run already ended yields its ending again. A run that ``run()`` has
        just started and cannot read back ends ``error``: ``run()`` never raises once it began."""
        agent = self.agent
        await agent._claim()
        run: Durable | None = None
        try:
            try:
                record = await self.load(run_id)
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
            run = self.current = Durable(self.store, record, agent.clock)
            if record.checkpoint is None:  # queued: it starts from this agent's conversation
                now = agent._conversation
                conversation = Conversation([dict(m) for m in now.messages], now.calls_made, now.taint)
                conversation.add("user", record.prompt)
                state = LoopState()
                try:
                    await run.checkpoint(conversation, state)
                except AerixError as e:
                    yield End("error", e.message)  # the store failed before the run began
                    return
            else:
                checkpoint = record.checkpoint
                conversation = Conversation([dict(m) for m in checkpoint["messages"]], checkpoint["calls_made"], checkpoint.get("taint"))
                state = LoopState.from_dict(record.checkpoint)
            agent._conversation = conversation
            async with aclosing(Loop(agent, conversation, state, signal, run, Invoker.of(record.invoker)).events()) as events:
                async for ev in events:
                    yield ev
        finally:
            try:
                if run is not None and run.record.status == "running":
                    await run.interrupted()  # the consumer stopped early, or the page is going away
            except AerixError:
                pass  # the store is failing: the record keeps its last checkpoint
            finally:
                self.current = None
                agent._release()

    async def answer_and_resume(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None, signal: Any, approver: Invoker | None
    ) -> AsyncGenerator[Event, None]:
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
        async with aclosing(self.resume(run_id, signal)) as events:
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
            if record.status == "running" and not (self.current is not None and self.current.run_id == record.id):
                record.status = "interrupted"
                record.updated_at = self.agent.clock()
                await use_store("save_run", lambda: self.store.save_run(record.to_dict()))
            if record.status in ("queued", "interrupted", "waiting"):
                out.append(record)
        return out

    async def interrupt(self) -> None:
        if self.current is not None:
            await self.current.interrupted()


def _check_resumable(record: RunRecord, system: str) -> None:
    if record.checkpoint and record.checkpoint["messages"][0]["content"] != system:
        raise AerixError(
            "options", f"run {record.id} was started by an agent with other instructions or tools; resume it with the same ones"
        )
