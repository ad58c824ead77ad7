"""Durable runs, in one place: the record a store keeps, the checkpoints the loop writes into
it, effects recorded once, approvals, and the lifecycle (start, resume, approve, recover,
interrupt) that ``Agent`` delegates to.

A run record is plain JSON data (it crosses into IndexedDB unchanged):

    version      the record format, 1; a record of another version, or one that does not read
                 as a record, is listed with status ``corrupt`` (and ``error`` saying why)
    id, status, prompt, idempotency_key, created_at, updated_at,
    invoker      who started the run (``Invoker.to_dict()``), or None; an invoker's idempotency
                 keys are kept as ``<kind>:<id>/<key>``, so another invoker's same key is another run
    checkpoint   {messages, calls_made, taint, generations, refused_in_row, tokens, elapsed_s,
                 pending}: the conversation and the loop's state after its last generation or
                 tool result (None: not started); ``pending`` is ``state.Pending.to_dict()``
    ending       the ending event as a dict, once the run has ended
    approvals    approval id -> {id, call_id, title, body, created_at, timeout_s, decision};
                 decision {approved, reason, approver, answered_at}: an answer after
                 ``created_at + timeout_s`` is recorded as ``approval timed out``, a denial

Statuses: ``queued`` (created, not started), ``running``, ``waiting`` (an approval is pending),
``interrupted`` (its page went away mid-run), and the ended ``completed`` (a final answer),
``failed`` (ended turns, retries, error, timeout or tokens) and ``cancelled`` (aborted).

A store that fails (raises) inside a run ends the run ``error`` with ``store failed: ...``; the
record keeps its last checkpoint, so once the store works again ``recover`` offers the run. Outside
a run, and for a record that cannot be read, the failure is ``AerixError(kind="store")``.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import json
import uuid
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Literal

from .errors import AerixError, describe
from .events import End, Event, Final, Interrupted, Waiting, event_from_dict
from .loop import Loop, Stop
from .state import Conversation, LoopState
from .stores import Store
from .tools import Decision, Tool, ToolContext, WaitingForApproval, run_tool
from .trust import Invoker

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["ENDED", "Decision", "Durable", "RunRecord", "RunStatus", "Runs", "status_of_ending"]

RunStatus = Literal["queued", "running", "waiting", "completed", "failed", "cancelled", "interrupted", "corrupt"]
ENDED = frozenset({"completed", "failed", "cancelled"})
VERSION = 1
_STATUSES = ("queued", "running", "waiting", "completed", "failed", "cancelled", "interrupted")


@dataclass
class RunRecord:
    """One durable run, as a store keeps it."""

    id: str
    prompt: str
    status: RunStatus = "queued"
    idempotency_key: str | None = None
    created_at: float = 0.0
    updated_at: float = 0.0
    checkpoint: dict[str, Any] | None = None
    ending: dict[str, Any] | None = None
    approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    invoker: dict[str, Any] | None = None
    error: str | None = None  # why a ``corrupt`` record could not be read

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(
            {
                "version": VERSION,
                "id": self.id,
                "prompt": self.prompt,
                "status": self.status,
                "idempotency_key": self.idempotency_key,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "checkpoint": self.checkpoint,
                "ending": self.ending,
                "approvals": self.approvals,
                "invoker": self.invoker,
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        """The record ``data`` holds; ``AerixError(kind="store")`` naming what is wrong if it
        does not read as a record of this version."""
        why = _unreadable(data)
        if why is not None:
            name = data.get("id") if isinstance(data, dict) else None
            raise AerixError("store", f"run record {name!r} is corrupt: {why}")
        data = copy.deepcopy(data)
        return cls(
            id=data["id"],
            prompt=data["prompt"],
            status=data.get("status", "queued"),
            idempotency_key=data.get("idempotency_key"),
            created_at=data.get("created_at", 0.0),
            updated_at=data.get("updated_at", 0.0),
            checkpoint=data.get("checkpoint"),
            ending=data.get("ending"),
            approvals=data.get("approvals") or {},
            invoker=data.get("invoker"),
        )

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    def pending_approval(self) -> dict[str, Any] | None:
        """The approval the run waits on, if any."""
        for a in self.approvals.values():
            if a.get("decision") is None:
                return a
        return None

    def overdue(self, now: float) -> bool:
        """Whether the approval it waits on is past its deadline (resuming it denies the call)."""
        a = self.pending_approval()
        return a is not None and now - a["created_at"] >= a["timeout_s"]


def _unreadable(data: Any) -> str | None:
    """Why ``data`` is not a run record this code can read, or ``None``."""
    if not isinstance(data, dict):
        return f"a record is an object, not {type(data).__name__}"
    if data.get("version", VERSION) != VERSION:
        return f"version {data.get('version')!r} (this aerix reads version {VERSION})"
    kinds: dict[str, type | tuple[type, ...]] = {"id": str, "prompt": str, "status": str, "checkpoint": (dict, type(None)), "ending": (dict, type(None)), "approvals": (dict, type(None)), "invoker": (dict, type(None))}
    for key, kind in kinds.items():
        if key in data and not isinstance(data[key], kind):
            return f"{key!r} is {type(data[key]).__name__}"
    if not isinstance(data.get("id"), str) or not isinstance(data.get("prompt"), str):
        return "it needs an 'id' and a 'prompt' string"
    if data.get("status", "queued") not in _STATUSES:
        return f"unknown status {data.get('status')!r}"
    checkpoint = data.get("checkpoint")
    if checkpoint is not None and not (isinstance(checkpoint.get("messages"), list) and checkpoint["messages"]):
        return "its checkpoint has no messages"
    if checkpoint is None and data.get("status", "queued") not in ("queued", *ENDED):
        return f"the run is {data['status']} but has no checkpoint"
    return None


def status_of_ending(ending: dict[str, Any]) -> RunStatus:
    if ending["type"] == "final":
        return "completed"
    return "cancelled" if ending.get("reason") == "abort" else "failed"


# -- the lifecycle -----------------------------------------------------------------------


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
        found = RunRecord.from_dict(await _use("create_run", lambda: self.store.create_run(record.to_dict())))
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
        async with aclosing(self.resume(record.id, signal)) as events:
            async for ev in events:
                yield ev

    async def resume(self, run_id: str, signal: Any) -> AsyncGenerator[Event, None]:
        """Restore the run from its checkpoint (or start it from the agent's conversation) and
        drive the loop; a run already ended yields its ending again."""
        agent = self.agent
        await agent._claim()
        run: Durable | None = None
        try:
            record = await self.load(run_id)
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
        await _use("save_run", lambda: self.store.save_run(record.to_dict()))
        async with aclosing(self.resume(run_id, signal)) as events:
            async for ev in events:
                yield ev

    async def get(self, run_id: str) -> RunRecord | None:
        data = await _use("get_run", lambda: self.store.get_run(run_id))
        return RunRecord.from_dict(data) if data is not None else None

    async def load(self, run_id: str) -> RunRecord:
        record = await self.get(run_id)
        if record is None:
            raise AerixError("options", f"no run {run_id!r} in {self.store!r}")
        return record

    async def all(self) -> list[RunRecord]:
        """Every run, oldest first; a record that does not read is listed as ``corrupt``."""
        out = []
        for data in await _use("list_runs", lambda: self.store.list_runs()):
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
                await _use("save_run", lambda: self.store.save_run(record.to_dict()))
            if record.status in ("queued", "interrupted", "waiting"):
                out.append(record)
        return out

    async def interrupt(self) -> None:
        if self.current is not None:
            await self.current.interrupted()


async def _use(what: str, call: Callable[[], Any]) -> Any:
    """Await one store method; its failure becomes ``AerixError(kind="store")`` naming it."""
    try:
        return await call()
    except AerixError:
        raise
    except Exception as e:
        raise AerixError("store", f"store failed: {what}: {describe(e)}") from None


def _check_resumable(record: RunRecord, system: str) -> None:
    if record.checkpoint and record.checkpoint["messages"][0]["content"] != system:
        raise AerixError(
            "options", f"run {record.id} was started by an agent with other instructions or tools; resume it with the same ones"
        )


# -- the book the loop keeps of a durable run ----------------------------------------------


class Durable:
    """A run whose every step is written to ``store``, so it can be resumed from there."""

    durable = True

    def __init__(self, store: Store, record: RunRecord, clock: Callable[[], float]) -> None:
        self.store = store
        self.record = record
        self.clock = clock
        self.run_id: str | None = record.id

    async def _save(self) -> None:
        self.record.updated_at = self.clock()
        await _use("save_run", lambda: self.store.save_run(self.record.to_dict()))

    async def checkpoint(self, conversation: Conversation, state: LoopState) -> None:
        self.record.status = "running"
        messages = [dict(m) for m in conversation.messages]
        self.record.checkpoint = {"messages": messages, "calls_made": conversation.calls_made, "taint": conversation.taint, **state.to_dict()}
        await self._save()

    async def close(self, conversation: Conversation, state: LoopState, stop: Stop) -> Stop:
        """Record the stop. An ending the store cannot record is still the run's ending (the
        record keeps its last checkpoint, from which a resume reaches the same ending); a wait
        it cannot record ends the run ``error``, since no one could answer it."""
        if isinstance(stop, (Waiting, Interrupted)):
            try:
                await self.checkpoint(conversation, state)
                self.record.status = "waiting" if isinstance(stop, Waiting) else "interrupted"
                await self._save()
            except AerixError as e:
                return End("error", e.message)
            return stop
        ending = stop.to_dict()
        try:
            self.record.ending, self.record.status = ending, status_of_ending(ending)
            await self._save()
        except AerixError:
            self.record.ending, self.record.status = None, "running"
        return stop

    async def interrupted(self) -> None:
        if not self.record.ended and self.record.status != "waiting":
            self.record.status = "interrupted"
            await self._save()

    def approver(self, call_id: str) -> Callable[..., Any]:
        """``ctx.approve`` for one execution of one call: its n-th question is ``<call id>.<n>``,
        so a call that runs again from its start meets its earlier questions by the same ids."""
        counter = itertools.count(1)

        async def approve(title: str, body: str | None, timeout_s: float) -> Decision:
            approval_id = f"{call_id}.{next(counter)}"
            approval = self.record.approvals.get(approval_id)
            if approval is None:
                approval = {
                    "id": approval_id,
                    "call_id": call_id,
                    "title": str(title),
                    "body": None if body is None else str(body),
                    "created_at": self.clock(),
                    "timeout_s": float(timeout_s),
                    "decision": None,
                }
                self.record.approvals[approval_id] = approval
                raise WaitingForApproval(approval)
            if approval["decision"] is None:
                if self.clock() - approval["created_at"] < approval["timeout_s"]:
                    raise WaitingForApproval(approval)
                approval["decision"] = {"approved": False, "reason": "approval timed out"}
                await self._save()
            return Decision(approval["decision"]["approved"], approval["decision"].get("reason"))

        return approve

    async def run_effect(self, tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]:
        """An effect tool's result: recorded once, reused on resume; a failure is not recorded.

        The key is made from the checked input: ``tool.effect_key(input)``, or by default the
        run, the call and the input (so two identical calls in one turn are two effects)."""
        try:
            checked = tool.check(input)
        except ValueError as e:
            return f"error: invalid input for {tool.name}: {e}", True
        try:
            key = tool.effect_key(checked) if tool.effect_key else default_effect_key(self.run_id, ctx.call_id, tool.name, checked)
            if not isinstance(key, str):
                raise TypeError(f"it returned {type(key).__name__}, not a string")
        except Exception as e:
            return f"error: effect_key of {tool.name} failed: {describe(e)}", True
        recorded = await _use("get_effect", lambda: self.store.get_effect(key))
        if recorded is not None:
            return recorded, False
        prior = await self._already_applied(tool, key, checked)
        if isinstance(prior, tuple):
            return prior
        if prior is not None:
            await _use("put_effect", lambda: self.store.put_effect(key, prior))
            return prior, False
        text, error = await run_tool(tool, checked, ctx)
        if not error:
            await _use("put_effect", lambda: self.store.put_effect(key, text))
        return text, error

    async def _already_applied(self, tool: Tool, key: str, input: dict[str, Any]) -> str | tuple[str, bool] | None:
        """``tool.already_applied``'s answer: the result text if it was applied (``True`` or a
        non-empty text), ``None`` if not (anything else), an error result if it failed."""
        if tool.already_applied is None:
            return None
        try:
            prior = tool.already_applied(key, input)
            if inspect.isawaitable(prior):
                prior = await prior
        except Exception as e:
            return f"error: could not tell whether {tool.name} already ran: {e}", True
        if prior is True:
            return f"{tool.name} had already been applied"
        return prior if isinstance(prior, str) and prior else None


def default_effect_key(run_id: str | None, call_id: str, tool: str, input: Any) -> str:
    digest = hashlib.sha256(json.dumps(input, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"{run_id}:{call_id}:{tool}:{digest}"
