"""The Agent and its loop.

One run goes through named phases, over and over until an ending:

    check limits → model request (stream text) → read the turn → call tools → feed results back
                                                   ↘ final → on_final hook → ending

With a store the run is durable: a checkpoint is written after every generation and every tool
result (see ``durable.py``), and ``resume`` picks the loop up at its pending step, so a
generation already recorded is never asked again.

Error policy, stated once: the developer's mistake raises ``AerixError`` where it is made; the
model's mistake (bad JSON, unknown tool, a cut turn) is told back to it as a ``retry``; a tool's
failure becomes its result; an engine failure, a hook's failure, the limits and the signal each
end the run with one ``end`` event. A run never yields two endings and never raises out of
``run`` after it started (except cancellation of the consuming task).
"""

from __future__ import annotations

import inspect
import time
import uuid
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Sequence

from .abort import is_aborted
from .durable import Durable, Ephemeral, RunState, WaitingForApproval, check_resumable
from .errors import AerixError
from .events import Call, End, Event, Final, Result, Retry, Text, Turn, Usage, Waiting, event_from_dict
from .limits import Hooks, Limits
from .runs import RunRecord
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
    tokens: int = 0


class Agent:
    """An agent: a model, instructions and tools, and the conversation so far.

    >>> agent = Agent(model=ScriptedModel(['{"thought": "", "final": "hi"}']))
    >>> (await agent.ask("hello")).text
    'hi'

    With ``store=`` (see :mod:`aerix.stores`) every run is durable: ``start``, ``resume``,
    ``approve`` and ``runs`` work on the runs kept there.
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
        *,
        store: Any = None,
        clock: Callable[[], float] | None = None,
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
        missing = [m for m in ("create_run", "get_run", "save_run", "list_runs", "get_effect", "put_effect") if store is not None and not callable(getattr(store, m, None))]
        if missing:
            raise AerixError("options", f"store lacks {missing}: see aerix.stores.Store")
        if clock is not None and not callable(clock):
            raise AerixError("options", "clock must be a function returning seconds")
        self.model = model
        self.instructions = instructions
        self.constrain = constrain
        self.store = store
        self.clock = clock or time.time
        self.system = system_message(instructions, self.tools)
        self.schema = turn_schema(self.tools) if constrain else None
        self._by_name = {t.name: t for t in self.tools}
        self._messages: list[dict[str, str]] = []
        self._calls_made = 0
        self._running = False
        self._current: Ephemeral | None = None
        self.reset()

    def __repr__(self) -> str:
        return f"Agent(tools={[t.name for t in self.tools]}, limits={self.limits!r}, constrain={self.constrain})"

    @property
    def messages(self) -> list[dict[str, str]]:
        """The conversation so far: exactly what the model was sent, plus its accepted replies."""
        return [dict(m) for m in self._messages]

    def reset(self) -> None:
        """Forget the conversation (the system message stays)."""
        self._claim_check("reset")
        self._messages = [{"role": "system", "content": self.system}]
        self._calls_made = 0

    def run(self, prompt: str, signal: Any = None, *, run_id: str | None = None, idempotency_key: str | None = None) -> AsyncIterator[Event]:
        """Continue the conversation with ``prompt``; an async iterator of events ending in one ending.

        With a store the run is durable (``run_id`` and ``idempotency_key`` as in :meth:`start`)."""
        _check_prompt(prompt)
        self._claim_check("run")
        if self.store is None:
            if run_id is not None or idempotency_key is not None:
                raise AerixError("options", "run_id and idempotency_key need a durable run: give the Agent a store")
            return self._ephemeral(prompt, signal)
        return self._start_and_resume(prompt, signal, run_id, idempotency_key)

    async def ask(self, prompt: str, signal: Any = None) -> Answer:
        """Run to the ending. A final returns an :class:`Answer`; any other ending raises
        ``AerixError(kind="end")`` with its ``reason`` and ``events``."""
        return await _answer(self.run(prompt, signal))

    # -- durable runs --------------------------------------------------------------------

    async def start(self, prompt: str, run_id: str | None = None, idempotency_key: str | None = None) -> RunRecord:
        """Create a durable run (``queued``) or, for a known ``idempotency_key`` or ``run_id``,
        find the existing one. ``resume`` runs it."""
        _check_prompt(prompt)
        store = self._need_store()
        now = self.clock()
        record = RunRecord(run_id or uuid.uuid4().hex, prompt, "queued", idempotency_key, now, now)
        return RunRecord.from_dict(await store.create_run(record.to_dict()))

    def resume(self, run_id: str, signal: Any = None) -> AsyncIterator[Event]:
        """Continue a durable run from its latest checkpoint; a run already ended yields its ending."""
        self._need_store()
        self._claim_check("resume")
        return self._resume(run_id, signal)

    def approve(self, run_id: str, approval_id: str, approved: bool, reason: str | None = None, signal: Any = None) -> AsyncIterator[Event]:
        """Answer an approval (once) and resume the run: the waiting call runs again from its start."""
        self._need_store()
        self._claim_check("approve")
        if not isinstance(approved, bool):
            raise AerixError("options", f"approved must be True or False, got {approved!r}")
        return self._answer_and_resume(run_id, approval_id, approved, reason, signal)

    async def get_run(self, run_id: str) -> RunRecord | None:
        data = await self._need_store().get_run(run_id)
        return RunRecord.from_dict(data) if data is not None else None

    async def runs(self) -> list[RunRecord]:
        """Every run in the store, oldest first."""
        return [RunRecord.from_dict(r) for r in await self._need_store().list_runs()]

    async def recover(self) -> list[RunRecord]:
        """At start-up: runs left ``running`` by a page or process that went away are marked
        ``interrupted``; returns the runs that can be resumed (interrupted and waiting)."""
        out = []
        for record in await self.runs():
            if record.status == "running" and not (self._running and self._current and self._current.run_id == record.id):
                record.status = "interrupted"
                record.updated_at = self.clock()
                await self.store.save_run(record.to_dict())
            if record.status in ("interrupted", "waiting"):
                out.append(record)
        return out

    async def interrupt(self) -> None:
        """Mark the run going now ``interrupted`` (a page calls this when it is hidden or unloaded)."""
        if self._current is not None:
            await self._current.interrupted()

    # -- the loop ------------------------------------------------------------------------

    async def _ephemeral(self, prompt: str, signal: Any) -> AsyncIterator[Event]:
        self._claim()
        try:
            self._messages.append({"role": "user", "content": prompt})
            async with aclosing(self._drive(RunState(), signal, Ephemeral())) as events:
                async for ev in events:
                    yield ev
        finally:
            self._release()

    async def _start_and_resume(self, prompt: str, signal: Any, run_id: str | None, key: str | None) -> AsyncIterator[Event]:
        record = await self.start(prompt, run_id, key)
        async with aclosing(self._resume(record.id, signal)) as events:
            async for ev in events:
                yield ev

    async def _answer_and_resume(self, run_id: str, approval_id: str, approved: bool, reason: str | None, signal: Any) -> AsyncIterator[Event]:
        record = await self._load(run_id)
        approval = record.approvals.get(approval_id)
        if approval is None:
            raise AerixError("options", f"run {run_id} has no approval {approval_id!r}")
        if approval["decision"] is not None:
            raise AerixError("options", f"approval {approval_id!r} of run {run_id} was already answered")
        approval["decision"] = {"approved": approved, "reason": reason}
        record.updated_at = self.clock()
        await self.store.save_run(record.to_dict())
        async with aclosing(self._resume(run_id, signal)) as events:
            async for ev in events:
                yield ev

    async def _resume(self, run_id: str, signal: Any) -> AsyncIterator[Event]:
        self._claim()
        run: Durable | None = None
        try:
            record = await self._load(run_id)
            if record.ended:
                assert record.ending is not None
                yield event_from_dict(record.ending)
                return
            check_resumable(record, self.system)
            run = Durable(self.store, record, self.clock)
            self._current = run
            if record.checkpoint is None:  # queued: it starts from this agent's conversation
                self._messages.append({"role": "user", "content": record.prompt})
                state = RunState()
                await run.checkpoint(self._messages, self._calls_made, state)
            else:
                self._messages = [dict(m) for m in record.checkpoint["messages"]]
                self._calls_made = record.checkpoint["calls_made"]
                state = RunState.from_dict(record.checkpoint)
            async with aclosing(self._drive(state, signal, run)) as events:
                async for ev in events:
                    yield ev
        finally:
            if run is not None and run.record.status == "running":
                await run.interrupted()  # the consumer stopped early, or the page is going away
            self._current = None
            self._release()

    async def _drive(self, st: RunState, signal: Any, run: Ephemeral) -> AsyncIterator[Event]:
        """The loop proper, from wherever ``st`` says it is."""
        clock_base = self.clock()

        def elapsed() -> float:
            return st.elapsed_s + (self.clock() - clock_base)

        async def checkpoint() -> None:
            nonlocal clock_base
            now = self.clock()
            st.elapsed_s, clock_base = st.elapsed_s + (now - clock_base), now
            await run.checkpoint(self._messages, self._calls_made, st)

        closed = False
        try:
            while True:
                if st.pending is None:
                    # phase: check limits
                    ending = self._limit_ending(st, signal, elapsed())
                    if ending is not None:
                        yield await run.end(ending)
                        return
                    st.generations += 1

                    # phase: model request
                    gen = _Generation()
                    async with aclosing(self._generate(gen, signal, elapsed)) as stream:
                        async for ev in stream:
                            yield ev
                    if gen.ending is not None:
                        yield await run.end(gen.ending)
                        return
                    st.tokens += gen.tokens

                    # phase: read the turn
                    try:
                        if gen.unusable is not None:
                            raise TurnRefused(f"engine output: {gen.unusable}")
                        turn = parse_turn(gen.text, self._by_name.keys())
                    except TurnRefused as refused:
                        reason = refused.reason
                        if gen.finish == "length":
                            reason = f"cut: the turn reached max_tokens ({self.limits.max_tokens}) before its JSON closed"
                        if gen.finish != "length" and gen.unusable is None:
                            self._messages.append({"role": "assistant", "content": gen.text})
                        # a cut turn or unusable output is dropped: the model is asked again without it
                        note = cut_note(self.limits.max_tokens) if reason.startswith("cut") else refused_note(reason)
                        self._messages.append({"role": "user", "content": note})
                        st.refused_in_row += 1
                        await checkpoint()
                        yield Retry(st.generations, reason)
                        if st.refused_in_row > self.limits.retries:
                            yield await run.end(End("retries", f"{st.refused_in_row} turns in a row were refused; the last: {reason}"))
                            return
                        continue
                    st.refused_in_row = 0
                    self._messages.append({"role": "assistant", "content": gen.text})
                    calls = [Call(self._new_call_id(), c.tool, c.input) for c in turn.calls]
                    st.pending = {
                        "turn": st.generations,
                        "thought": turn.thought,
                        "final": turn.final,
                        "calls": [{"id": c.id, "tool": c.tool, "input": c.input} for c in calls],
                        "results": [],
                    }
                    await checkpoint()
                    yield Turn(st.generations, turn.thought, tuple(calls))

                pending = st.pending
                if pending["final"] is not None:
                    # phase: ending (the on_final hook may ask for another turn)
                    try:
                        more = _hook_reply("on_final", await _call_hook(self.hooks.on_final, pending["final"]), "continue")
                    except _HookFailed as e:
                        yield await run.end(End("error", str(e)))
                        return
                    st.pending = None
                    if more is not None:
                        self._messages.append({"role": "user", "content": more})
                        await checkpoint()
                        continue
                    yield await run.end(Final(pending["final"], pending["thought"]))
                    return

                # phase: call tools, one at a time, in order
                for c in pending["calls"][len(pending["results"]) :]:
                    stop = "the run was aborted" if is_aborted(signal) else self._timed_out(elapsed())
                    if stop:
                        for ev in self._close_turn(st, stop):
                            yield ev
                        await checkpoint()
                        yield await run.end(End("abort" if is_aborted(signal) else "timeout", stop))
                        return
                    call = Call(c["id"], c["tool"], c["input"])
                    try:
                        ran_call, result = await self._call_tool(call, signal, run)
                    except _HookFailed as e:
                        for ev in self._close_turn(st, "the run ended on a failed hook"):
                            yield ev
                        await checkpoint()
                        yield await run.end(End("error", str(e)))
                        return
                    except WaitingForApproval as w:
                        await run.wait(self._messages, self._calls_made, st)
                        a = w.approval
                        yield Waiting(run.run_id or "", a["id"], a["title"], a["body"])
                        closed = True
                        return
                    pending["results"].append([result.id, result.tool, result.text, result.error])
                    await checkpoint()
                    yield ran_call
                    yield result
                self._messages.append({"role": "user", "content": _results_of(pending)})
                st.pending = None
                await checkpoint()
        finally:
            if not closed and not run.durable and st.pending is not None and st.pending["final"] is None:
                # an ephemeral run stopped mid-turn: close the turn so the conversation stays whole
                list(self._close_turn(st, "the run ended before this call ran"))

    def _limit_ending(self, st: RunState, signal: Any, elapsed: float) -> End | None:
        if is_aborted(signal):
            return End("abort", "the run was aborted")
        timed_out = self._timed_out(elapsed)
        if timed_out:
            return End("timeout", timed_out)
        cap = self.limits.max_total_tokens
        if cap is not None and st.tokens >= cap:
            return End("tokens", f"the run used {st.tokens} tokens; its budget is {cap}")
        if self.limits.turns is not None and st.generations >= self.limits.turns:
            return End("turns", f"the run used all {self.limits.turns} turns without a final answer")
        return None

    def _timed_out(self, elapsed: float) -> str | None:
        t = self.limits.timeout_s
        return f"the run ran {elapsed:.1f} s; its timeout is {t:g} s" if t is not None and elapsed >= t else None

    async def _generate(self, gen: _Generation, signal: Any, elapsed: Callable[[], float]) -> AsyncIterator[Event]:
        """One model request: stream its text, record how it finished, or how it failed."""
        options = {
            "max_tokens": self.limits.max_tokens,
            "constraint": self.schema,
            "signal": signal,
            "generation": dict(self.generation),
        }
        parts: list[str] = []
        done: dict[str, Any] | None = None
        timed_out = None
        try:
            async with aclosing(_iterate(self.model.chat(list(self._messages), options))) as deltas:
                async for delta in deltas:
                    if is_aborted(signal):
                        break
                    if self.limits.timeout_s is not None:
                        timed_out = self._timed_out(elapsed())
                        if timed_out:
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
        if timed_out:
            gen.ending = End("timeout", timed_out)
            return
        if done is None:
            gen.ending = End("error", "engine failed: the model's stream ended without a done item")
            return
        usage = done.get("usage") or {}
        counts = [int(usage.get(k) or 0) for k in ("prompt_tokens", "completion_tokens", "cached_tokens")]
        yield Usage(*counts)
        gen.tokens = counts[0] + counts[1]
        gen.text = "".join(parts)
        gen.finish = done.get("finish_reason")

    async def _call_tool(self, call: Call, signal: Any, run: Ephemeral) -> tuple[Call, Result]:
        """One call: before_call hook, input check and run (recorded once if an effect), after_call
        hook, cut to result_chars."""
        ctx = ToolContext(signal=signal, call_id=call.id, tool=call.tool, approver=run.approver(call.id))
        hook = _hook_reply("before_call", await _call_hook(self.hooks.before_call, call, ctx), "deny", "input")
        if isinstance(hook, tuple) and hook[0] == "input":
            call = Call(call.id, call.tool, hook[1])
        if isinstance(hook, tuple) and hook[0] == "deny":
            text, error = f"refused: {hook[1]}", True
        else:
            tool = self._by_name[call.tool]
            text, error = await (run.run_effect(tool, call.input, ctx) if tool.effect else run_tool(tool, call.input, ctx))
        result = Result(call.id, call.tool, text, error)
        replaced = _hook_reply("after_call", await _call_hook(self.hooks.after_call, call, result), "result")
        if replaced is not None:
            result = Result(call.id, call.tool, replaced, error)
        cap = self.limits.result_chars
        if cap is not None and len(result.text) > cap:
            cut = f"{result.text[:cap]}\n[cut: the result was {len(result.text)} characters; this is the first {cap}]"
            result = Result(call.id, call.tool, cut, result.error)
        return call, result

    def _close_turn(self, st: RunState, why: str) -> list[Event]:
        """Give every call of the pending turn not yet run a ``cancelled`` result, and feed the
        turn's results back, so the conversation stays whole for the next run."""
        pending = st.pending
        assert pending is not None
        events: list[Event] = []
        for c in pending["calls"][len(pending["results"]) :]:
            r = Result(c["id"], c["tool"], f"cancelled: {why}", True)
            pending["results"].append([r.id, r.tool, r.text, r.error])
            events.append(r)
        self._messages.append({"role": "user", "content": _results_of(pending)})
        st.pending = None
        return events

    # -- small things --------------------------------------------------------------------

    def _claim_check(self, what: str) -> None:
        if self._running:
            raise AerixError("busy", f"cannot {what}: this agent is already running; wait for its ending or abort it")

    def _claim(self) -> None:
        self._claim_check("run")
        self._running = True

    def _release(self) -> None:
        self._running = False

    def _need_store(self) -> Any:
        if self.store is None:
            raise AerixError("options", "durable runs need a store: Agent(..., store=MemoryStore()) or another aerix.stores store")
        return self.store

    async def _load(self, run_id: str) -> RunRecord:
        data = await self._need_store().get_run(run_id)
        if data is None:
            raise AerixError("options", f"no run {run_id!r} in {self.store!r}")
        return RunRecord.from_dict(data)

    def _new_call_id(self) -> str:
        self._calls_made += 1
        return f"call_{self._calls_made}"


async def _answer(stream: AsyncIterator[Event]) -> Answer:
    events: list[Event] = []
    async with aclosing(stream) as s:  # type: ignore[type-var]
        async for ev in s:
            events.append(ev)
    last = events[-1]
    if isinstance(last, Final):
        return Answer(last.text, last.thought, events)
    if isinstance(last, Waiting):
        raise AerixError("end", f"the run is waiting for approval {last.approval_id}: {last.title}", reason="waiting", events=events)
    assert isinstance(last, End)
    raise AerixError("end", f"the run ended without an answer ({last.reason}): {last.message}", reason=last.reason, events=events)


def _results_of(pending: dict[str, Any]) -> str:
    return results_message([(i, t, text) for i, t, text, _ in pending["results"]])


def _check_prompt(prompt: Any) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        raise AerixError("options", f"prompt must be a non-empty string, got {prompt!r}")


# -- helpers -----------------------------------------------------------------------------


class _HookFailed(Exception):
    pass


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
        raise _HookFailed(f"hook {name} failed: {_message(e)}") from None
    return value


def _arity(fn: Any, most: int) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a JavaScript function takes what it is given
        return most
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return most
    return min(most, sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)))


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
