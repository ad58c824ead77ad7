"""Durable runs: the record a store keeps for each run, and the approvals a run waits on.

A run record is plain JSON data (it crosses into IndexedDB unchanged):

    id, status, prompt, idempotency_key, created_at, updated_at,
    checkpoint   the loop's state after its last generation or tool result (None: not started)
    ending       the ending event as a dict, once the run has ended
    approvals    approval id -> {id, call_id, title, body, created_at, timeout_s, decision}

Statuses: ``queued`` (created, not started), ``running``, ``waiting`` (an approval is pending),
``interrupted`` (its page went away mid-run), and the ended ``completed`` (a final answer),
``failed`` (ended turns, retries, error, timeout or tokens) and ``cancelled`` (aborted).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["ENDED", "Decision", "RunRecord", "RunStatus", "status_of_ending"]

RunStatus = Literal["queued", "running", "waiting", "completed", "failed", "cancelled", "interrupted"]
ENDED = frozenset({"completed", "failed", "cancelled"})


@dataclass(frozen=True)
class Decision:
    """A human's answer to an approval; what ``await ctx.approve(...)`` returns."""

    approved: bool
    reason: str | None = None

    def __bool__(self) -> bool:
        return self.approved


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

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(
            {
                "id": self.id,
                "prompt": self.prompt,
                "status": self.status,
                "idempotency_key": self.idempotency_key,
                "created_at": self.created_at,
                "updated_at": self.updated_at,
                "checkpoint": self.checkpoint,
                "ending": self.ending,
                "approvals": self.approvals,
            }
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
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


def status_of_ending(ending: dict[str, Any]) -> RunStatus:
    if ending["type"] == "final":
        return "completed"
    return "cancelled" if ending.get("reason") == "abort" else "failed"
