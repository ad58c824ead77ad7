"""The book the loop keeps of a durable run: checkpoints, the stop, approvals, effects.

Every store call goes through :func:`use_store`, so a failing store is ``AerixError(kind="store")``.
Every write is fenced by the executor's lease and every save is a compare-and-set on the record's
revision (:func:`save_record`): a write the store refuses means another executor has the run now,
so this one stops (``end error``, "the lease of run ... was lost") and writes nothing more of it.
Before an effect tool runs, the lease is renewed and the record's revision read again
(:meth:`Durable._still_ours`), so an executor whose lease lapsed while its event loop was blocked
does not apply an effect that the executor which took the run over applies too. Saves go one at
a time (``_saving``): parallel calls' sub-runs checkpoint into the same record, and two saves in
flight would each compare-and-set from the same revision.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import json
from typing import Any, Callable

from ..errors import AerixError, describe
from ..events import End, Interrupted, Waiting
from ..loop import Stop
from ..state import Conversation, LoopState
from ..stores import Store
from ..tools import Decision, Tool, ToolContext, WaitingForApproval, run_tool
from .record import RunRecord, status_of_ending

__all__ = ["Durable", "default_effect_key", "save_record", "use_store"]


class Durable:
    """A run whose every step is written to ``store``, so it can be resumed from there."""

    durable = True

    def __init__(self, store: Store, record: RunRecord, clock: Callable[[], float], lease: Any = None) -> None:
        self.store = store
        self.record = record
        self.clock = clock
        self.run_id: str | None = record.id
        self.lease = lease  # lifecycle.Lease: while it is ours, this executor may write the run
        self._saving = asyncio.Lock()

    @property
    def lease_lost(self) -> bool:
        return self.lease is not None and bool(self.lease.lost)

    @property
    def holder(self) -> str | None:
        return None if self.lease is None else str(self.lease.holder)

    def _lost(self) -> AerixError:
        if self.lease is not None:
            self.lease.lost = True  # nothing more of this run is written from here
        return AerixError("store", f"store failed: the lease of run {self.run_id} was lost to another executor; this one stops")

    async def _save(self) -> None:
        async with self._saving:
            if self.lease_lost:  # another executor took the run over: write nothing more of it
                raise self._lost()
            self.record.updated_at = self.clock()
            if not await save_record(self.store, self.record, self.holder):
                raise self._lost()

    async def checkpoint(self, conversation: Conversation, state: LoopState) -> None:
        self.record.status = "running"
        self.record.checkpoint = {**conversation.to_dict(), **state.to_dict()}
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
                return await self._end_as_stored(e) or End("error", e.message)
            return stop
        ending = stop.to_dict()
        try:
            self.record.ending, self.record.status = ending, status_of_ending(ending)
            await self._save()
        except AerixError as e:
            self.record.ending, self.record.status = None, "running"
            if self.lease_lost:  # another executor has the run: the ending it records is the run's
                return End("error", e.message)
            return await self._end_as_stored(e) or stop
        return stop

    async def _end_as_stored(self, e: AerixError) -> End | None:
        """After the store refused to record a stop: the run ends ``error``, naming why, on its
        record as this executor last stored it, if the store takes that. A record the store cannot
        keep (PostgreSQL's jsonb has no U+0000) would otherwise be resumed into the same refusal
        by every executor, forever. ``None`` when the store fails again (it is down: the run is
        left for a resume once it works) or the record moved on (another executor has it)."""
        if self.lease_lost:
            return None
        try:
            data = await use_store("get_run", lambda: self.store.get_run(self.record.id), (dict, type(None)))
            if data is None or data.get("revision", 0) != self.record.revision:
                return None
            record = RunRecord.from_dict(data)
            end = End("error", f"{e.message}; the run ended at its last recorded checkpoint")
            record.ending, record.status, record.updated_at = end.to_dict(), "failed", self.clock()
            if not await save_record(self.store, record, self.holder):
                return None
        except AerixError:
            return None
        self.record = record
        return end

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
        run, the call and the input (so two identical calls in one turn are two effects, when the
        repeat guard lets the second run: ``Limits(repeat_calls=None)``)."""
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
        recorded = await use_store("get_effect", lambda: self.store.get_effect(key), (str, type(None)))
        if recorded is not None:
            return recorded, False
        prior = await self._already_applied(tool, key, checked)
        if isinstance(prior, tuple):
            return prior
        if prior is not None:
            await self.record_effect(key, prior)
            return prior, False
        if not await self._still_ours():
            raise self._lost()  # taken over while this executor was blocked: the new one applies it
        text, error = await run_tool(tool, checked, ctx)
        if not error:
            await self.record_effect(key, text)
        return text, error

    async def _still_ours(self) -> bool:
        """Before an effect: the lease renewed now and the record as this executor last wrote it.
        The keeper cannot renew while a sync tool blocks the event loop; a lease that lapsed
        meanwhile may have been taken over, used and given back (so renewing it succeeds): the
        revision tells."""
        if self.lease is None:
            return True
        if not await self.lease.confirm():
            return False
        data = await use_store("get_run", lambda: self.store.get_run(self.record.id), (dict, type(None)))
        return data is not None and data.get("revision", 0) == self.record.revision

    async def recorded_effect(self, key: str) -> str | None:
        """The result recorded under ``key`` (an emit's ``"sent"``), or ``None``: then the caller
        applies it, so this executor must still hold the run (else ``AerixError(kind="store")``)."""
        recorded: str | None = await use_store("get_effect", lambda: self.store.get_effect(key), (str, type(None)))
        if recorded is None and not await self._still_ours():
            raise self._lost()
        return recorded

    async def record_effect(self, key: str, result: str) -> None:
        """Record an effect's result, fenced by this executor's lease: refused once another
        executor holds the run, which then stops this one."""
        if self.lease_lost:
            raise self._lost()
        written = await use_store("put_effect", lambda: self.store.put_effect(key, result, self.run_id, self.holder))
        if written is not True:
            raise _refused(written, "put_effect") if written is not False else self._lost()

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


async def save_record(store: Store, record: RunRecord, holder: str | None) -> bool:
    """Save ``record`` as its next revision, if the store still has the revision it was read at
    and ``holder`` holds its lease; whether it was written. A refused save leaves ``record`` as
    it was read; an answer that is not a bool (a store written before revisions) is
    ``AerixError(kind="store")``."""
    read_at = record.revision
    record.revision = read_at + 1
    try:
        written = await use_store("save_run", lambda: store.save_run(record.to_dict(), read_at, holder))
    except BaseException:
        record.revision = read_at
        raise
    if written is not True:
        record.revision = read_at
        if written is not False:
            raise _refused(written, "save_run")
    return written is True


def _refused(answer: Any, what: str) -> AerixError:
    return AerixError(
        "store",
        f"store failed: {what} answered {answer!r}, not whether it wrote: a store written before revisions "
        "(see aerix.stores.Store) could replace a newer run record with a stale copy",
    )


async def use_store(what: str, call: Callable[[], Any], returns: type | tuple[type, ...] | None = None) -> Any:
    """Await one store method; its failure, or an answer that is not ``returns``, becomes
    ``AerixError(kind="store")`` naming it."""
    try:
        value = await call()
    except AerixError as e:
        if e.kind == "store":
            raise
        raise AerixError("store", f"store failed: {what}: {e.message}") from None
    except Exception as e:
        raise AerixError("store", f"store failed: {what}: {describe(e)}") from None
    if returns is not None and not isinstance(value, returns):
        raise AerixError("store", f"store failed: {what} answered a {type(value).__name__}")
    return value
