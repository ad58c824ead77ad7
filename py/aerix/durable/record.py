"""A durable run's record: what a store keeps, its statuses, and how a record is read."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import AerixError
from ..events import End, Final, event_from_dict
from ..state import CallsSeen, Pending

__all__ = ["ENDED", "VERSION", "RunRecord", "RunStatus", "status_of_ending"]

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
    concurrency_key: str | None = None
    source: str | None = None  # the channel the request came in on
    conversation_id: str | None = None  # the kept conversation the run continues (conversations.py)
    agent: str | None = None  # the name of the Agent that started it; None: a record from before names
    revision: int = 0  # bumped by every save: a save from an older revision is refused (stores/__init__.py)
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
                "concurrency_key": self.concurrency_key,
                "source": self.source,
                "conversation_id": self.conversation_id,
                "agent": self.agent,
                "revision": self.revision,
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
            concurrency_key=data.get("concurrency_key"),
            source=data.get("source"),
            conversation_id=data.get("conversation_id"),
            agent=data.get("agent"),
            revision=data.get("revision", 0),
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
    if "corrupt" in data:  # the store could not decode it (stores/__init__.py)
        return str(data["corrupt"])
    if data.get("version", VERSION) != VERSION:
        return f"version {data.get('version')!r} (this aerix reads version {VERSION})"
    kinds: dict[str, type | tuple[type, ...]] = {"id": str, "prompt": str, "status": str, "checkpoint": (dict, type(None)), "ending": (dict, type(None)), "approvals": (dict, type(None)), "invoker": (dict, type(None)), "concurrency_key": (str, type(None)), "source": (str, type(None)), "conversation_id": (str, type(None)), "agent": (str, type(None))}
    for key, kind in kinds.items():
        if key in data and not isinstance(data[key], kind):
            return f"{key!r} is {type(data[key]).__name__}"
    if not isinstance(data.get("id"), str) or not isinstance(data.get("prompt"), str):
        return "it needs an 'id' and a 'prompt' string"
    revision = data.get("revision", 0)
    if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
        return f"its revision {_short(revision)} is not a count"
    if data.get("status", "queued") not in _STATUSES:
        return f"unknown status {data.get('status')!r}"
    checkpoint, ending = data.get("checkpoint"), data.get("ending")
    if checkpoint is None and data.get("status", "queued") not in ("queued", *ENDED):
        return f"the run is {data['status']} but has no checkpoint"
    if checkpoint is not None:
        why = _unreadable_checkpoint(checkpoint)
        if why is not None:
            return f"its checkpoint {why}"
    if ending is not None and not _reads_as(ending, (Final, End)):
        return f"its ending {_short(ending)} is not a final or end event"
    if data.get("status") in ENDED and ending is None:
        return f"the run is {data['status']} but has no ending"
    return None


def _unreadable_checkpoint(checkpoint: dict[str, Any]) -> str | None:
    messages = checkpoint.get("messages")
    if not isinstance(messages, list) or not messages:
        return "has no messages"
    if not all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages):
        return "holds a message that is not {role, content} strings"
    if messages[0]["role"] != "system":
        return "does not start with the system message"
    numbers: dict[str, type | tuple[type, ...]] = {"calls_made": int, "generations": int, "refused_in_row": int, "tokens": int, "elapsed_s": (int, float)}
    for key, kind in numbers.items():
        if not isinstance(checkpoint.get(key), kind) or isinstance(checkpoint.get(key), bool):
            return f"has no number {key!r}"
    taint = checkpoint.get("taint")
    if taint is not None and not (isinstance(taint, dict) and all(isinstance(taint.get(k), str) for k in ("source", "at"))):
        return f"has a taint {_short(taint)} that is not {{source, at}}"
    if not isinstance(checkpoint.get("agent", ""), str):  # the handoff target it was handed to (handoffs.py)
        return f"has an agent {_short(checkpoint['agent'])} that is not a name"
    pending = checkpoint.get("pending")
    if pending is not None and not _pending_reads(pending):
        return f"has a pending turn {_short(pending)} that does not read"
    seen = checkpoint.get("calls_seen")
    if seen is not None and not _seen_reads(seen):
        return f"has calls seen {_short(seen)} that do not read"
    subruns = checkpoint.get("subruns")  # as_tool sub-runs going: each a checkpoint (subagents.py)
    if subruns is not None and not (isinstance(subruns, dict) and all(isinstance(v, dict) and _unreadable_checkpoint(v) is None for v in subruns.values())):
        return f"has sub-runs {_short(subruns)} that do not read"
    return None


def _seen_reads(seen: Any) -> bool:
    try:
        read = CallsSeen.from_dict(seen)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    answered_ok = all(isinstance(k, str) and isinstance(i, str) and isinstance(text, str) for k, (i, text) in read.answered.items())
    in_row_ok = isinstance(read.in_row, int) and not isinstance(read.in_row, bool) and read.in_row >= 0
    return answered_ok and in_row_ok and (read.last is None or isinstance(read.last, str))


def _pending_reads(pending: Any) -> bool:
    try:
        turn = Pending.from_dict(pending)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    calls_ok = all(isinstance(c.id, str) and isinstance(c.tool, str) and isinstance(c.input, dict) for c in turn.turn.calls)
    results_ok = all(isinstance(r.id, str) and isinstance(r.text, str) and isinstance(r.error, bool) for r in turn.results)
    final_ok = (turn.final is None or isinstance(turn.final, str)) and (turn.note is None or isinstance(turn.note, str))
    return isinstance(turn.turn.turn, int) and calls_ok and results_ok and final_ok and len(turn.results) <= len(turn.turn.calls)


def _reads_as(data: Any, kinds: tuple[type, ...]) -> bool:
    try:
        return isinstance(event_from_dict(data), kinds)
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def _short(value: Any) -> str:
    return repr(value)[:80]


def status_of_ending(ending: dict[str, Any]) -> RunStatus:
    if ending["type"] == "final":
        return "completed"
    return "cancelled" if ending.get("reason") == "abort" else "failed"
