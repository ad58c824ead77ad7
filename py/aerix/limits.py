"""Limits and hooks: keyword-only value objects, each also accepted as a plain dict.

The loop asks ``Hooks`` for each hook's answer (``before``, ``after``, ``final``); a hook that
throws or answers out of contract raises :class:`HookFailed`, which ends the run ``error``. The
loop waits for each answer under the run's signal (``calls.until_aborted``), so an abort or
``Limits.timeout_s`` interrupts a hook that hangs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from typing import Any, Callable

from .errors import AerixError, describe
from .fields import nests_deeper
from .turn import MAX_DEPTH

__all__ = ["HookFailed", "Hooks", "Limits", "check_generation"]

_RESERVED = frozenset({"messages", "stream", "max_tokens", "response_format", "signal", "abortSignal", "constraint"})


def _count(name: str, value: Any, *, minimum: int, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        allowed = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise AerixError("options", f"Limits.{name} must be {allowed}, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Limits:
    """How far one run may go. ``None`` turns a limit off where allowed.

    - ``turns``: generations per run, retries included; checked before each generation
      (ending ``end`` reason ``turns``). ``None``: no cap.
    - ``retries``: extra attempts after a bad or cut turn, counted in a row (an accepted turn
      resets the count); checked after each refused turn (ending ``end`` reason ``retries``).
    - ``max_tokens``: the cap sent to the engine for each generation.
    - ``result_chars``: a tool result longer than this is cut to it before the model sees it,
      with a note giving its full length. ``None``: never cut. With ``context_tokens`` a result
      is also cut to the room the context has for it (:func:`aerix.compaction.fit_result`).
    - ``timeout_s``: seconds the run may spend running (waiting for an approval or a dead page
      does not count; a resumed run keeps counting from its checkpoint); checked before each
      generation, on each streamed delta and before each tool call, and interrupts a hung
      generation, tool, hook, trust flag or tool policy (ending reason ``timeout``).
    - ``max_total_tokens``: prompt plus completion tokens over the run's generations (a
      compaction's summary included); checked before each generation (ending reason ``tokens``).
    - ``repeat_calls``: the repeat guard, checked before each call (``calls.py``). A call is a
      repeat of an earlier call of the run when it names the same tool with an equal input
      (the same canonical JSON). A repeat of a call that succeeded does not run the tool again:
      its result is the earlier one, after a note telling the model it already has it (the
      ``result`` event's ``repeat_of`` names the earlier call). A repeat of a call that failed
      runs again (the failure may have passed). ``repeat_calls`` is how many times in a row a
      call may repeat the call just before it, across turns; the next repeat in a row ends the
      run ``end`` reason ``loop`` (default 1: the third identical call in a row). ``None``:
      off, every call runs.
    - ``context_tokens``: the engine's context window (prompt and reply). Before each generation
      whose prompt would leave less than ``max_tokens`` of it, the conversation is compacted as
      ``Agent(compaction=...)`` says (:mod:`aerix.compaction`); when even that cannot make room,
      the run ends ``context``. A prompt that cannot fit is refused (``options``) before it is
      added. ``None``, or ``compaction=None``: never checked.
    """

    turns: int | None = 8
    retries: int = 2
    max_tokens: int = 512
    result_chars: int | None = 4000
    timeout_s: float | None = None
    max_total_tokens: int | None = None
    repeat_calls: int | None = 1
    context_tokens: int | None = None

    def __post_init__(self) -> None:
        _count("turns", self.turns, minimum=1, optional=True)
        _count("retries", self.retries, minimum=0, optional=False)
        _count("max_tokens", self.max_tokens, minimum=1, optional=False)
        _count("result_chars", self.result_chars, minimum=1, optional=True)
        _count("max_total_tokens", self.max_total_tokens, minimum=1, optional=True)
        _count("repeat_calls", self.repeat_calls, minimum=0, optional=True)
        _count("context_tokens", self.context_tokens, minimum=2, optional=True)
        if self.context_tokens is not None and self.max_tokens >= self.context_tokens:
            raise AerixError("options", f"Limits.max_tokens ({self.max_tokens}) leaves no room for a prompt in context_tokens ({self.context_tokens})")
        t = self.timeout_s
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0):
            raise AerixError("options", f"Limits.timeout_s must be a number of seconds > 0 or None, got {t!r}")

    @classmethod
    def of(cls, value: Limits | dict[str, Any] | None) -> Limits:
        """A ``Limits`` from itself, a dict of its fields, or ``None`` (the defaults)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        return cls(**_known_keys("Limits", cls, value))


@dataclass(frozen=True, kw_only=True)
class Hooks:
    """Points where the developer steers a run. Each is optional, sync or async, and awaited.

    - ``before_call(call)`` or ``before_call(call, ctx)``: return ``None`` to go on,
      ``{"deny": reason}`` to refuse the call (its result becomes ``refused: <reason>``) or
      ``{"input": {...}}`` to replace its input (checked again). ``ctx`` is the call's
      ``ToolContext`` (``await ctx.approve(...)`` asks a human, in a durable run).
    - ``after_call(call, result)``: sees every result (a ``Result`` event); may return
      ``{"result": text}`` to replace its text.
    - ``on_final(text)``: may return ``{"continue": text}`` to give the agent another turn with
      ``text`` as a user message, within ``Limits.turns``.

    A hook that throws, or returns anything else, ends the run with ``end`` reason ``error``.
    An async hook that does not answer is interrupted like a tool: the run's signal ends the run
    ``abort`` and ``Limits.timeout_s`` ends it ``timeout`` (its task is cancelled; a call hook's
    ``ctx.signal`` is aborted first). A sync hook that blocks the thread cannot be interrupted.
    A call answered with an earlier call's result (``Limits.repeat_calls``) runs neither call
    hook: nothing runs, and its text is the one they already saw.
    """

    before_call: Callable[..., Any] | None = None
    after_call: Callable[..., Any] | None = None
    on_final: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            hook = getattr(self, f.name)
            if hook is not None and not callable(hook):
                raise AerixError("options", f"Hooks.{f.name} must be callable, got {type(hook).__name__}")

    @classmethod
    def of(cls, value: Hooks | dict[str, Any] | None) -> Hooks:
        """A ``Hooks`` from itself, a dict of its fields, or ``None`` (no hooks)."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        return cls(**_known_keys("Hooks", cls, value))

    async def before(self, call: Any, ctx: Any) -> tuple[str, Any] | None:
        """``before_call``'s answer: ``None``, ``("deny", reason)`` or ``("input", {...})``."""
        value = await _call_hook(self.before_call, call, ctx)
        return _reply("before_call", value, "deny", "input")  # type: ignore[return-value]

    async def after(self, call: Any, result: Any) -> str | None:
        """``after_call``'s replacement text for ``result``, or ``None``."""
        return _reply("after_call", await _call_hook(self.after_call, call, result), "result")  # type: ignore[return-value]

    async def final(self, text: str) -> str | None:
        """``on_final``'s next user message (another turn), or ``None`` (the run ends)."""
        return _reply("on_final", await _call_hook(self.on_final, text), "continue")  # type: ignore[return-value]


class HookFailed(Exception):
    """A hook threw or answered out of its contract: the run ends with reason ``error``."""


async def _call_hook(hook: Any, *args: Any) -> Any:
    """Call a hook with as many of ``args`` as it takes (``before_call(call)`` or ``(call, ctx)``)."""
    if hook is None:
        return None
    name = getattr(hook, "__name__", "hook")
    try:
        value = hook(*args[: _arity(hook, len(args))])
        if inspect.isawaitable(value):
            value = await value
    except Exception as e:
        raise HookFailed(f"hook {name} failed: {describe(e)}") from None
    return value


def _arity(fn: Any, most: int) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a JavaScript function takes what it is given
        return most
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return most
    # a parameter with a default keeps it: before_call(call, verbose=False) is given the call only
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return min(most, sum(1 for p in params if p.kind in positional and p.default is p.empty))


def _reply(hook: str, value: Any, *keys: str) -> tuple[str, Any] | str | None:
    """Check what a hook returned: ``None``, or a dict with exactly one of ``keys``."""
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key in keys:
            if key in ("deny", "result", "continue") and not isinstance(arg, str):
                raise HookFailed(f"{hook} hook returned {key!r} with a {type(arg).__name__}; it must be a string")
            if key == "input" and not isinstance(arg, dict):
                raise HookFailed(f"{hook} hook returned 'input' with a {type(arg).__name__}; it must be a dict")
            if key == "input" and nests_deeper(arg, MAX_DEPTH):
                raise HookFailed(f"{hook} hook returned an 'input' nested deeper than {MAX_DEPTH} levels")
            return (key, arg) if len(keys) > 1 else arg
    allowed = " or ".join(f"{{{k!r}: ...}}" for k in keys)
    raise HookFailed(f"{hook} hook returned {value!r}; expected None or {allowed}")


def _known_keys(what: str, cls: type, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise AerixError("options", f"{what} must be a {what} or a dict, got {type(value).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(value) - known)
    if unknown:
        raise AerixError("options", f"unknown {what} option(s) {unknown}; known: {sorted(known)}")
    return dict(value)


def check_generation(generation: Any) -> dict[str, Any]:
    """``Agent(generation=...)``: engine settings as a dict, none of those aerix sets itself."""
    if generation is None:
        return {}
    if not isinstance(generation, dict) or not all(isinstance(k, str) for k in generation):
        raise AerixError("options", f"generation must be a dict of settings, got {type(generation).__name__}")
    clash = sorted(_RESERVED & set(generation))
    if clash:
        raise AerixError("options", f"generation cannot set {clash}: aerix sets these (max_tokens is Limits.max_tokens)")
    return dict(generation)
