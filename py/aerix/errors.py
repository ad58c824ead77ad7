"""The one exception aerix raises, told apart by ``kind``.

    AerixError
     ├─ kind "options"  the developer's mistake: a bad tool, limit, hook or Agent option,
     │                  raised where it was made (when a tool is defined, when an Agent is built)
     ├─ kind "busy"     a second run on an Agent while one is going
     ├─ kind "end"      ``Agent.ask`` on a run that did not end with a final answer;
     │                  carries ``reason`` (turns | retries | abort | error | timeout |
     │                  tokens | loop) and ``events``
     ├─ kind "engine"   raised by a model when the engine failed; the loop turns it into
     │                  an ``end`` event with reason ``error`` (carrying the server's RFC 9457
     │                  ``problem`` document, if any), never lets it out of ``run``
     │                  (also raised by ``mcp_tools`` when an MCP server cannot be listed)
     ├─ kind "store"    a durable run's store could not be used: a record that cannot be read
     │                  (``resume``, ``approve``), or a failing store outside a run (``start``,
     │                  ``runs``, ``recover``); inside a run a failing store ends it ``error``
     ├─ kind "output"   raised by a model when one generation's output was unusable but the
     │                  engine is fine (e.g. bytes that are not UTF-8); the loop retries
     └─ kind "abort"    raised by a model that stopped because its signal was aborted

Errors hold their context as data; they never print or log themselves.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["KINDS", "AerixError", "ErrorKind", "describe", "message_of"]

ErrorKind = Literal["options", "busy", "end", "engine", "store", "output", "abort"]
KINDS = ("options", "busy", "end", "engine", "store", "output", "abort")


class AerixError(Exception):
    """An aerix failure. ``kind`` says which family; ``reason`` and ``events`` ride along for
    ``end``; ``problem`` is an RFC 9457 problem document a server sent with an ``engine`` failure."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        reason: str | None = None,
        events: list[Any] | None = None,
        problem: dict[str, Any] | None = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown AerixError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.reason = reason
        self.events = list(events) if events is not None else []
        self.problem = problem

    def __repr__(self) -> str:
        extra = f", reason={self.reason!r}" if self.reason is not None else ""
        return f"AerixError({self.kind!r}, {self.message!r}{extra})"


def describe(e: BaseException) -> str:
    """An exception as one line for people: its type, and its message when it has one."""
    text = message_of(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def message_of(e: BaseException) -> str:
    """``str(e)``, stripped; an exception whose ``__str__`` itself fails says so instead."""
    try:
        text = str(e)
    except Exception:
        return f"(its message could not be read: {type(e).__name__}.__str__ failed)"
    return text.strip() if isinstance(text, str) else ""
