"""The Agent and its loop.

One run goes through named phases, over and over until an ending:

    check limits → model request (stream text) → read the turn → call tools → feed results back
                                                   ↘ final → on_final hook → ending

Error policy, stated once: the developer's mistake raises ``AerixError`` where it is made; the
model's mistake (bad JSON, unknown tool, a cut turn) is told back to it as a ``retry``; a tool's
failure becomes its result; an engine failure, a hook's failure, the limits and the signal each
end the run with one ``end`` event. A run never yields two endings and never raises out of
``run`` after it started (except cancellation of the consuming task).
"""

from __future__ import annotations

import inspect
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Sequence

from .abort import is_aborted
from .errors import AerixError
from .events import Call, End, Event, Final, Result, Retry, Text, Turn, Usage
from .limits import Hooks, Limits
from .tools import Tool, ToolContext, run_tool
from .turn import TurnRefused, cut_note, parse_turn, refused_note, results_message, system_message, turn_schema

__all__ = ["Agent", "Answer"]

_RESERVED = frozenset({"messages", "stream", "max_tokens", "response_format", "signal", "abortSignal", "constraint"})


@dataclass(frozen=True)
class Answer:
    """What ``Agent.ask`` returns: the final text, its thought, and every event of the run."""

    text: str
    thought: str | None
    events: list[Event] = field(repr=False)


@dataclass
class _Generation:
    """The outcome of one model request, filled in while its deltas stream."""

    text: str = ""
    finish: str | None = None
    ending: End | None = None
    unusable: str | None = None  # the engine said this generation's output cannot be used


class Agent:
    """An agent: a model, instructions and tools, and the conversation so far.

    >>> agent = Agent(model=ScriptedModel(['{"thought": "", "final": "hi"}']))
    >>> (await agent.ask("hello")).text
    'hi'
    """

    def __init__(
        self,
        model: Any,
        instructions: str = "",
        tools: Sequence[Tool] = (),
        limits: Limits | dict[str, Any] | None = None,
        generation: dict[str, Any] | None = None,
        constrain: bool = True,
        hooks: Hooks | dict[str, Any] | None = None,
    ) -> None:
        if not callable(getattr(model, "chat", None)):
            raise AerixError("options", f"model must have a chat(messages, options) method, got {type(model).__name__}")
        if not isinstance(instructions, str):
            raise AerixError("options", f"instructions must be a string, got {type(instructions).__name__}")
        self.tools = _check_tools(tools)
        self.limits = Limits.of(limits)
        self.hooks = Hooks.of(hooks)
        self.generation = _check_generation(generation)
        if not isinstance(constrain, bool):
            raise AerixError("options", f"constrain must be True or False, got {constrain!r}")
        self.model = model
        self.instructions = instructions
        self.constrain = constrain
        self.system = system_message(instructions, self.tools)
        self.schema = turn_schema(self.tools) if constrain else None
        self._by_name = {t.name: t for t in self.tools}
        self._messages: list[dict[str, str]] = []
        self._calls_made = 0
        self._running = False
        self.reset()

    def __repr__(self) -> str:
        return f"Agent(tools={[t.name for t in self.tools]}, limits={self.limits!r}, constrain={self.constrain})"

    @property
    def messages(self) -> list[dict[str, str]]:
        """The conversation so far: exactly what the model was sent, plus its accepted replies."""
        return [dict(m) for m in self._messages]

    def reset(self) -> None:
        """Forget the conversation (the system message stays)."""
        if self._running:
            raise AerixError("busy", "cannot reset while a run is going")
        self._messages = [{"role": "system", "content": self.system}]
        self._calls_made = 0

    def run(self, prompt: str, signal: Any = None) -> AsyncIterator[Event]:
        """Continue the conversation with ``prompt``; an async iterator of events ending in one ending."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise AerixError("options", f"prompt must be a non-empty string, got {prompt!r}")
        if self._running:
            raise AerixError("busy", "this agent is already running; wait for its ending or abort it")
        return self._run(prompt, signal)

    async def ask(self, prompt: str, signal: Any = None) -> Answer:
        """Run to the ending. A final returns an :class:`Answer`; any other ending raises
        ``AerixError(kind="end")`` with its ``reason`` and ``events``."""
        events: list[Event] = []
        async with aclosing(self.run(prompt, signal)) as stream:
            async for ev in stream:
                events.append(ev)
        last = events[-1]
        if isinstance(last, Final):
            return Answer(last.text, last.thought, events)
        assert isinstance(last, End)
        raise AerixError("end", f"the run ended without an answer ({last.reason}): {last.message}", reason=last.reason, events=events)

    # -- the loop ------------------------------------------------------------------------

    async def _run(self, prompt: str, signal: Any) -> AsyncIterator[Event]:
        if self._running:
            raise AerixError("busy", "this agent is already running; wait for its ending or abort it")
        self._running = True
        open_calls: list[Call] = []  # calls of the current turn whose results are not appended yet
        results: list[tuple[str, str, str]] = []
        try:
            self._messages.append({"role": "user", "content": prompt})
            generations = 0
            refused_in_row = 0
            while True:
                # phase: check limits
                if is_aborted(signal):
                    yield End("abort", "the run was aborted")
                    return
                if self.limits.turns is not None and generations >= self.limits.turns:
                    yield End("turns", f"the run used all {self.limits.turns} turns without a final answer")
                    return
                generations += 1

                # phase: model request
                gen = _Generation()
                async with aclosing(self._generate(gen, signal)) as stream:
                    async for ev in stream:
                        yield ev
                if gen.ending is not None:
                    yield gen.ending
                    return

                # phase: read the turn
                try:
                    if gen.unusable is not None:
                        raise TurnRefused(f"engine output: {gen.unusable}")
                    turn = parse_turn(gen.text, self._by_name.keys())
                    keep = True
                except TurnRefused as refused:
                    reason, keep = refused.reason, True
                    if gen.finish == "length":
                        reason = f"cut: the turn reached max_tokens ({self.limits.max_tokens}) before its JSON closed"
                        keep = False  # a cut turn is dropped: the model is asked again without it
                    elif gen.unusable is not None:
                        keep = False
                    if keep:
                        self._messages.append({"role": "assistant", "content": gen.text})
                    note = cut_note(self.limits.max_tokens) if reason.startswith("cut") else refused_note(reason)
                    self._messages.append({"role": "user", "content": note})
                    yield Retry(generations, reason)
                    refused_in_row += 1
                    if refused_in_row > self.limits.retries:
                        yield End("retries", f"{refused_in_row} turns in a row were refused; the last: {reason}")
                        return
                    continue
                refused_in_row = 0
                self._messages.append({"role": "assistant", "content": gen.text})
                open_calls = [Call(self._new_call_id(), c.tool, c.input) for c in turn.calls]
                yield Turn(generations, turn.thought, tuple(open_calls))

                if turn.final is not None:
                    # phase: ending (the on_final hook may ask for another turn)
                    try:
                        more = _hook_reply("on_final", await _call_hook(self.hooks.on_final, turn.final), "continue")
                    except _HookFailed as e:
                        yield End("error", str(e))
                        return
                    if more is not None:
                        self._messages.append({"role": "user", "content": more})
                        continue
                    yield Final(turn.final, turn.thought)
                    return

                # phase: call tools, one at a time, in order
                results = []
                for call in list(open_calls):
                    if is_aborted(signal):
                        break
                    try:
                        ran_call, result = await self._call_tool(call, signal)
                    except _HookFailed as e:
                        for ev in self._cancel_open(open_calls, results, "the run ended on a failed hook"):
                            yield ev
                        yield End("error", str(e))
                        return
                    yield ran_call
                    yield result
                    results.append((result.id, result.tool, result.text))
                    open_calls.remove(call)
                if is_aborted(signal):
                    for ev in self._cancel_open(open_calls, results, "the run was aborted"):
                        yield ev
                    yield End("abort", "the run was aborted")
                    return
                self._messages.append({"role": "user", "content": results_message(results)})
                results = []
        finally:
            if open_calls:  # the run ended mid-turn: close it so the conversation stays well-formed
                list(self._cancel_open(open_calls, results, "the run ended before this call ran"))
            self._running = False

    async def _generate(self, gen: _Generation, signal: Any) -> AsyncIterator[Event]:
        """One model request: stream its text, record how it finished, or how it failed."""
        options = {
            "max_tokens": self.limits.max_tokens,
            "constraint": self.schema,
            "signal": signal,
            "generation": dict(self.generation),
        }
        parts: list[str] = []
        done: dict[str, Any] | None = None
        try:
            async with aclosing(_iterate(self.model.chat(list(self._messages), options))) as deltas:
                async for delta in deltas:
                    if is_aborted(signal):
                        break
                    kind = delta.get("type") if isinstance(delta, dict) else None
                    if kind == "text" and done is None:
                        parts.append(delta["text"])
                        yield Text(delta["text"])
                    elif kind == "done" and done is None:
                        done = delta
                    else:
                        gen.ending = End("error", f"engine failed: the model yielded {delta!r} out of protocol")
                        return
        except AerixError as e:
            if e.kind == "output" and not is_aborted(signal):
                gen.unusable = e.message
                return
            if e.kind != "abort" and not is_aborted(signal):
                gen.ending = End("error", f"engine failed: {e.message}")
                return
        except Exception as e:
            if not is_aborted(signal):
                gen.ending = End("error", f"engine failed: {_message(e)}")
                return
        if is_aborted(signal):
            gen.ending = End("abort", "the run was aborted during a generation")
            return
        if done is None:
            gen.ending = End("error", "engine failed: the model's stream ended without a done item")
            return
        usage = done.get("usage") or {}
        yield Usage(
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            int(usage.get("cached_tokens") or 0),
        )
        gen.text = "".join(parts)
        gen.finish = done.get("finish_reason")

    async def _call_tool(self, call: Call, signal: Any) -> tuple[Call, Result]:
        """One call: before_call hook, input check and run, after_call hook, cut to result_chars."""
        hook = _hook_reply("before_call", await _call_hook(self.hooks.before_call, call), "deny", "input")
        if isinstance(hook, tuple) and hook[0] == "input":
            call = Call(call.id, call.tool, hook[1])
        if isinstance(hook, tuple) and hook[0] == "deny":
            text, error = f"refused: {hook[1]}", True
        else:
            ctx = ToolContext(signal=signal, call_id=call.id, tool=call.tool)
            text, error = await run_tool(self._by_name[call.tool], call.input, ctx)
        result = Result(call.id, call.tool, text, error)
        replaced = _hook_reply("after_call", await _call_hook(self.hooks.after_call, call, result), "result")
        if replaced is not None:
            result = Result(call.id, call.tool, replaced, error)
        cap = self.limits.result_chars
        if cap is not None and len(result.text) > cap:
            cut = f"{result.text[:cap]}\n[cut: the result was {len(result.text)} characters; this is the first {cap}]"
            result = Result(call.id, call.tool, cut, result.error)
        return call, result

    def _cancel_open(self, open_calls: list[Call], results: list[tuple[str, str, str]], why: str) -> list[Event]:
        events: list[Event] = [Result(c.id, c.tool, f"cancelled: {why}", True) for c in open_calls]
        results.extend((r.id, r.tool, r.text) for r in events if isinstance(r, Result))
        self._messages.append({"role": "user", "content": results_message(results)})
        open_calls.clear()
        return events

    def _new_call_id(self) -> str:
        self._calls_made += 1
        return f"call_{self._calls_made}"


# -- helpers -----------------------------------------------------------------------------


class _HookFailed(Exception):
    pass


async def _call_hook(hook: Any, *args: Any) -> Any:
    if hook is None:
        return None
    name = getattr(hook, "__name__", "hook")
    try:
        value = hook(*args)
        if inspect.isawaitable(value):
            value = await value
    except Exception as e:
        raise _HookFailed(f"hook {name} failed: {_message(e)}") from None
    return value


def _hook_reply(hook: str, value: Any, *keys: str) -> Any:
    """Check what a hook returned: ``None``, or a dict with exactly one of ``keys``."""
    if value is None:
        return None
    if isinstance(value, dict) and len(value) == 1:
        (key, arg), = value.items()
        if key in keys:
            if key in ("deny", "result", "continue") and not isinstance(arg, str):
                raise _HookFailed(f"{hook} hook returned {key!r} with a {type(arg).__name__}; it must be a string")
            if key == "input" and not isinstance(arg, dict):
                raise _HookFailed(f"{hook} hook returned 'input' with a {type(arg).__name__}; it must be a dict")
            return (key, arg) if len(keys) > 1 else arg
    allowed = " or ".join(f"{{{k!r}: ...}}" for k in keys)
    raise _HookFailed(f"{hook} hook returned {value!r}; expected None or {allowed}")


async def _iterate(source: Any) -> AsyncIterator[Any]:
    """Wrap the model's iterator so closing ours closes theirs (a closed stream stops the engine)."""
    try:
        async for item in source:
            yield item
    finally:
        close = getattr(source, "aclose", None)
        if close is not None:
            await close()


def _check_tools(tools: Any) -> tuple[Tool, ...]:
    if isinstance(tools, Tool) or not isinstance(tools, (list, tuple)):
        raise AerixError("options", f"tools must be a list of tools, got {type(tools).__name__}")
    seen: set[str] = set()
    for t in tools:
        if not isinstance(t, Tool):
            raise AerixError("options", f"tools must hold tools made with tool(), got {type(t).__name__}")
        if t.name in seen:
            raise AerixError("options", f"two tools are named {t.name!r}; tool names must be unique")
        seen.add(t.name)
    return tuple(tools)


def _check_generation(generation: Any) -> dict[str, Any]:
    if generation is None:
        return {}
    if not isinstance(generation, dict) or not all(isinstance(k, str) for k in generation):
        raise AerixError("options", f"generation must be a dict of settings, got {type(generation).__name__}")
    clash = sorted(_RESERVED & set(generation))
    if clash:
        raise AerixError("options", f"generation cannot set {clash}: aerix sets these (max_tokens is Limits.max_tokens)")
    return dict(generation)


def _message(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__
