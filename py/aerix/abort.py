"""Cancellation, one way: a run composes the caller's signal once, and everything reads that.

The caller's signal is anything with a truthy ``.aborted``: an :class:`Abort`, or a JavaScript
``AbortSignal`` proxied into Python as it is. When a run starts, the loop composes it once into
the run's own :class:`Abort` (``Abort.following(signal)``: the run's timeout and a drain abort it
too, never the caller's object); the model, the tools and the hooks get that one object. Whoever
needs to stop something at once subscribes with :meth:`Abort.on_abort`
(the JS edge turns it into a real ``AbortSignal`` for the engine that way); whoever loops polls
``.aborted``. Reading ``.aborted`` also looks at the caller's signal, so a signal that cannot
call back (a plain object) is still seen at the next read. When the run ends, the loop closes
the ``Abort`` it composed (:meth:`Abort.close`): that drops what
following put on the caller's signal (a callback, or an event listener and its proxy), so a
long-lived caller's signal keeps nothing of finished runs.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

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
        self._aborted = False
        self.reason: str | None = None
        self._parent: Any = None
        self._callbacks: list[Callable[[str | None], Any]] = []
        self._unfollow: Callable[[], None] | None = None

    @classmethod
    def following(cls, parent: Any) -> Abort:
        """A new signal that aborts when ``parent`` does (``parent`` may be ``None``).

        An ``Abort`` parent calls back at once; a JavaScript ``AbortSignal`` is listened to; any
        other object with ``.aborted`` is read whenever this signal is."""
        child = cls()
        child._parent = parent
        if isinstance(parent, Abort):
            child._unfollow = parent.on_abort(child.abort)
        elif callable(getattr(parent, "addEventListener", None)):
            child._unfollow = _listen_js(parent, child)
        if is_aborted(parent):
            child.abort(_reason(parent))
        return child

    @property
    def aborted(self) -> bool:
        if not self._aborted and self._parent is not None and is_aborted(self._parent):
            self.abort(_reason(self._parent))
        return self._aborted

    def abort(self, reason: str | None = None) -> None:
        if self._aborted:
            return
        self._aborted = True
        self.reason = reason
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(reason)

    def on_abort(self, callback: Callable[[str | None], Any]) -> Callable[[], None]:
        """Call ``callback(reason)`` once, when this signal aborts (at once if it has); returns
        a function that unsubscribes."""
        if self.aborted:
            callback(self.reason)
            return lambda: None
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe

    def close(self) -> None:
        """Stop following the parent: unsubscribe from a parent ``Abort``, remove the listener
        from a JavaScript signal (and free its proxy). ``aborted`` and ``reason`` keep their
        values; this signal's own subscribers are theirs to unsubscribe. Closing twice, or an
        ``Abort`` that follows nothing, does nothing."""
        unfollow, self._unfollow, self._parent = self._unfollow, None, None
        if unfollow is not None:
            unfollow()

    def __repr__(self) -> str:
        return f"Abort(aborted={self._aborted})"


def is_aborted(signal: Any) -> bool:
    return signal is not None and bool(getattr(signal, "aborted", False))


def _reason(signal: Any) -> str | None:
    """The signal's reason as text: a JavaScript ``DOMException``'s message, not its repr."""
    reason = getattr(signal, "reason", None)
    if reason is None or isinstance(reason, str):
        return reason
    message = getattr(reason, "message", None)
    return message if isinstance(message, str) and message else str(reason)


def _listen_js(parent: Any, child: Abort) -> Callable[[], None]:
    """Follow a JavaScript ``AbortSignal`` through its ``abort`` event (the edge owns the proxy);
    returns what removes the listener."""
    from ._js import js_listen

    return js_listen(parent, "abort", lambda *_: child.abort(_reason(parent)))
