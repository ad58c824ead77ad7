"""Taint through the agent's state (``aerix.agent_state`` has the rule): a tool call's writes
carry its run's taint, and its reads of a marked item taint its run.

    reads = CallReads(loop.conversation)     # calls.py, around each call
    ...                                      # the call runs; agent_state calls read() and writing_taint()
    reads.found                              # the mark of the first marked item it read, or None
    reads.close()
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

__all__ = ["CallReads", "read", "writing_taint"]


class CallReads:
    """One tool call's way through the agent's state (``calls.py`` opens one per call): the
    conversation whose taint the call's writes carry, and ``found``, the mark of the first
    tainted item the call read. A context variable holds it, so ``agent.state`` reached any way
    while the call runs (``ctx.state``, a closure, a task the tool starts) sees it."""

    def __init__(self, conversation: Any) -> None:
        self.conversation = conversation
        self.found: dict[str, str] | None = None
        self._token = _CALL.set(self)

    def close(self) -> None:
        _CALL.reset(self._token)


_CALL: ContextVar[CallReads | None] = ContextVar("aerix_state_call", default=None)


def writing_taint() -> dict[str, str] | None:
    """The taint a write carries: the run's, when a call of a tainted run writes."""
    call = _CALL.get()
    taint = None if call is None else call.conversation.taint
    return None if taint is None else dict(taint)


def read(data: dict[str, Any], item: str) -> None:
    """A call read ``item`` (``state_store.item_name``) of the state ``data``: if it carries a
    mark, the call taints its run."""
    call = _CALL.get()
    mark = data["tainted"].get(item)
    if call is not None and call.found is None and mark is not None:
        call.found = dict(mark)
