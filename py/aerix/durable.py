"""A run's bookkeeping against its store: checkpoints, effect records, approvals.

The loop (``agent.py``) calls these at fixed points; a run without a store gets
:class:`Ephemeral`, whose bookkeeping does nothing, so the loop reads the same either way.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
from dataclasses import asdict, dataclass
from typing import Any, Callable

from .errors import AerixError
from .events import Event
from .runs import Decision, RunRecord, status_of_ending
from .tools import Tool, ToolContext, run_tool

__all__ = ["Durable", "Ephemeral", "RunState", "WaitingForApproval"]


@dataclass
class RunState:
    """The loop's counters and pending step: with the conversation, what a checkpoint holds.

    ``pending`` is the accepted turn whose calls or final are not finished:
    ``{"turn", "thought", "final", "calls": [{"id", "tool", "input"}], "results": [[id, tool, text, error]]}``.
    """

    generations: int = 0
    refused_in_row: int = 0
    tokens: int = 0
    elapsed_s: float = 0.0
    pending: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(**{k: data[k] for k in ("generations", "refused_in_row", "tokens", "elapsed_s", "pending")})


class WaitingForApproval(BaseException):
    """Raised through a tool or hook by ``ctx.approve`` to pause the run.

    A ``BaseException`` so that the ``except Exception`` that turns a tool's failure into its
    result lets it pass, as it does ``asyncio.CancelledError``."""

    def __init__(self, approval: dict[str, Any]) -> None:
        super().__init__(approval["id"])
        self.approval = approval


class Ephemeral:
    """A run kept only in memory: no checkpoints, effects run every time, no approvals."""

    run_id: str | None = None
    durable = False

    async def checkpoint(self, messages: list[dict[str, str]], calls_made: int, state: RunState) -> None:
        pass

    async def end(self, ending: Event) -> Event:
        return ending

    async def wait(self, messages: list[dict[str, str]], calls_made: int, state: RunState) -> None:
        raise AssertionError("an ephemeral run cannot wait")  # ctx.approve refuses first

    async def interrupted(self) -> None:
        pass

    def approver(self, call_id: str) -> Callable[..., Any] | None:
        return None

    async def run_effect(self, tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]:
        return await run_tool(tool, input, ctx)


class Durable(Ephemeral):
    """A run whose every step is written to ``store``, so it can be resumed from there."""

    durable = True

    def __init__(self, store: Any, record: RunRecord, clock: Callable[[], float]) -> None:
        self.store = store
        self.record = record
        self.clock = clock
        self.run_id = record.id

    async def _save(self) -> None:
        self.record.updated_at = self.clock()
        await self.store.save_run(self.record.to_dict())

    async def checkpoint(self, messages: list[dict[str, str]], calls_made: int, state: RunState) -> None:
        self.record.status = "running"
        self.record.checkpoint = {"messages": [dict(m) for m in messages], "calls_made": calls_made, **asdict(state)}
        await self._save()

    async def end(self, ending: Event) -> Event:
        self.record.ending = ending.to_dict()
        self.record.status = status_of_ending(self.record.ending)
        await self._save()
        return ending

    async def wait(self, messages: list[dict[str, str]], calls_made: int, state: RunState) -> None:
        await self.checkpoint(messages, calls_made, state)
        self.record.status = "waiting"
        await self._save()

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
        """An effect tool's result: recorded once, reused on resume; a failure is not recorded."""
        key = tool.effect_key(input) if tool.effect_key else default_effect_key(self.run_id, tool.name, input)
        recorded = await self.store.get_effect(key)
        if recorded is not None:
            return recorded, False
        if tool.already_applied is not None:
            try:
                prior = tool.already_applied(key, input)
                if inspect.isawaitable(prior):
                    prior = await prior
            except Exception as e:
                return f"error: could not tell whether {tool.name} already ran: {e}", True
            if prior is not None and prior is not False:
                text = prior if isinstance(prior, str) else f"{tool.name} had already been applied"
                await self.store.put_effect(key, text)
                return text, False
        text, error = await run_tool(tool, input, ctx)
        if not error:
            await self.store.put_effect(key, text)
        return text, error


def default_effect_key(run_id: str | None, tool: str, input: Any) -> str:
    digest = hashlib.sha256(json.dumps(input, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return f"{run_id}:{tool}:{digest}"


def check_resumable(record: RunRecord, system: str) -> None:
    if record.checkpoint and record.checkpoint["messages"][0]["content"] != system:
        raise AerixError(
            "options", f"run {record.id} was started by an agent with other instructions or tools; resume it with the same ones"
        )
