"""Cancellation: anything with a truthy ``.aborted`` is a signal.

A JavaScript ``AbortSignal`` proxied into Python works as it is; :class:`Abort` is the Python one.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Abort", "Signal", "is_aborted"]


class Signal(Protocol):
    @property
    def aborted(self) -> Any: ...


class Abort:
    """A Python abort signal.

    >>> signal = Abort()
    >>> signal.abort("user pressed stop")
    >>> signal.aborted, signal.reason
    (True, 'user pressed stop')
    """

    def __init__(self) -> None:
        self.aborted = False
        self.reason: str | None = None

    def abort(self, reason: str | None = None) -> None:
        if not self.aborted:
            self.aborted = True
            self.reason = reason

    def __repr__(self) -> str:
        return f"Abort(aborted={self.aborted})"


def is_aborted(signal: Any) -> bool:
    return signal is not None and bool(getattr(signal, "aborted", False))
