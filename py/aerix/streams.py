"""Reading a model's stream, as the Model protocol (``model.py``) defines it: ``text`` deltas, then
one ``done`` item whose ``usage`` counts are whole numbers.

Every request aerix makes of a model reads its stream here: a turn (the loop's generate phase),
a compaction's summary (``compaction.py``), and the requests apart from a run, a choice
(``choose.py``) and a prefill (``prefill.py``), through :func:`read_aside` and :func:`aside`.
Stopping to read closes the model's iterator, since a closed stream is how an engine is told to
stop generating; an abort of the run's signal stops the read at once."""

from __future__ import annotations

import asyncio
import inspect
from contextlib import aclosing
from typing import Any, AsyncGenerator, Awaitable, Callable, TypeVar

from .abort import Abort
from .calls import StepInterrupted, until_aborted
from .errors import AerixError, describe
from .events import Usage

__all__ = ["Stream", "aside", "iterate", "read_aside", "usage_of"]

T = TypeVar("T")


class Stream:
    """One request, ``model.chat(messages, options)``, and its stream. ``async for piece in
    stream.texts()`` sends the request, yields the text pieces in order and stops at the stream's
    end, when the request's ``options["signal"]`` aborts, when ``halted()`` returns anything but
    ``None`` (checked before each delta), or at a delta out of protocol. Then ``done`` is the done
    item (``None`` if none came) and ``breach`` names the delta out of protocol (``None`` if none).
    What the model raises, sending or streaming, goes to the reader of ``texts()``."""

    def __init__(self, model: Any, messages: list[dict[str, str]], options: dict[str, Any], halted: Callable[[], object] = lambda: None) -> None:
        self.model, self.messages, self.options, self.halted = model, messages, options, halted
        self.done: dict[str, Any] | None = None
        self.breach: str | None = None

    async def texts(self) -> AsyncGenerator[str, None]:
        signal: Abort = self.options["signal"]
        async with aclosing(iterate(self.model.chat(self.messages, self.options))) as deltas:
            while self.halted() is None:
                try:
                    delta = await until_aborted(deltas.__anext__(), signal)
                except (StopAsyncIteration, StepInterrupted):
                    return
                kind = delta.get("type") if isinstance(delta, dict) else None
                if kind == "text" and self.done is None and isinstance(delta.get("text"), str):
                    yield delta["text"]
                elif kind == "done" and self.done is None and usage_of(delta) is not None:
                    self.done = delta
                else:
                    self.breach = f"the model yielded {delta!r} out of protocol"
                    return


async def read_aside(model: Any, messages: list[dict[str, str]], request: dict[str, Any], abort: Abort) -> tuple[list[Any] | None, dict[str, Any] | None]:
    """One generation apart from a run: the token entries of its ``logprobs`` deltas (``None`` if
    none came) and its done item (``None`` if none came); its text is not kept. A delta out of
    protocol is an ``engine`` error; ``abort`` stops the read (:class:`StepInterrupted`)."""
    entries: list[Any] | None = None
    async with aclosing(iterate(model.chat(messages, request))) as deltas:
        while True:
            try:
                delta = await until_aborted(deltas.__anext__(), abort)
            except StopAsyncIteration:
                return entries, None
            kind = delta.get("type") if isinstance(delta, dict) else None
            if kind == "logprobs" and isinstance(delta.get("content"), list):
                entries = (entries or []) + delta["content"]
            elif kind == "done":
                return entries, delta
            elif kind != "text":
                raise AerixError("engine", f"engine failed: the model yielded {delta!r} out of protocol")


async def aside(read: Callable[[Abort], Awaitable[T]], signal: Any, timeout_s: float | None, what: str) -> T:
    """A request apart from a run (``what``: ``choose``, ``prefill``): ``read(abort)`` under an
    ``Abort`` that follows ``signal`` and aborts after ``timeout_s`` (the agent's
    ``Limits.timeout_s``), with its errors named as a run names them: ``abort`` when it was
    stopped, anything else the model raises an ``engine`` error."""
    abort = Abort.following(signal)
    timer = None if timeout_s is None else asyncio.get_running_loop().call_later(timeout_s, abort.abort, f"{what} ran past the agent's timeout_s ({timeout_s:g} s)")
    try:
        return await read(abort)
    except StepInterrupted:
        pass
    except AerixError:
        if not abort.aborted:
            raise
    except Exception as e:
        if not abort.aborted:
            raise AerixError("engine", f"engine failed: {describe(e)}") from e
    finally:
        if timer is not None:
            timer.cancel()
        abort.close()
    raise AerixError("abort", abort.reason or f"{what} was aborted")


def usage_of(done: dict[str, Any]) -> Usage | None:
    """The usage of a done item (missing counts are 0), or ``None`` when it is out of protocol."""
    usage = done.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        return None
    counts = [usage.get(k, 0) or 0 for k in ("prompt_tokens", "completion_tokens", "cached_tokens")]
    # a count is a whole number >= 0 (a JavaScript engine's numbers may arrive as floats)
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and n >= 0 and float(n).is_integer() for n in counts):
        return None
    return Usage(*(int(n) for n in counts))


async def iterate(source: Any) -> AsyncGenerator[Any, None]:
    """Wrap the model's iterator so closing ours closes theirs (a closed stream stops the engine)."""
    if not hasattr(source, "__aiter__"):
        if inspect.iscoroutine(source):
            source.close()  # an `async def chat` that returns: closed, so Python does not warn
        raise TypeError(f"model.chat must return an async iterator (an async generator), got {type(source).__name__}")
    cancelled = False
    try:
        async for item in source:
            yield item
    except asyncio.CancelledError:
        cancelled = True  # the consumer was cancelled: that goes on, not a failure to close
        raise
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:
                if not cancelled:
                    raise
