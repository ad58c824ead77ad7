"""The loop: one run, phase by phase, to exactly one stop.

    limits → compact → generate → parse → calls → checkpoint → ending
                                    ↘ final → on_final hook ↗

``agent`` is the Agent the run is of (``home``) or the handoff target the conversation was
handed to (``handoffs.py``: a handoff call switches it in the calls phase).

:meth:`Loop.events` is the whole loop; each phase is one method with one job, and every phase
that changes the conversation or the state ends in a checkpoint (a no-op without a store). A
new feature lands inside one phase.

Error policy, stated once: the developer's mistake raises ``AerixError`` where it is made; the
model's mistake (bad JSON, unknown tool, a cut turn) is told back to it as a ``retry``; a tool's
failure becomes its result; an engine failure, a hook's failure, the limits (a call repeated
once too often in a row among them) and the signal each stop the run with one ``end`` event (so
does a conversation that compaction cannot fit). The loop has one exit: it yields the stop (an
ending, or ``waiting`` in a durable run), never two, and never raises after it started (except
when the consuming task is cancelled).
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Protocol, Union

from .abort import Abort
from .artifacts import RunArtifacts
from .calls import StepInterrupted, until_aborted
from .channels import Channels
from .compaction import compact, fit_result
from .errors import AerixError, describe
from .events import Call, End, Event, Final, Interrupted, Result, Retry, Text, Turn, Usage, Waiting
from .final_text import answer_reader
from .handoffs import active_agent
from .limits import HookFailed
from .parallel import run_calls
from .tools import Tool, ToolContext, run_tool
from .trust import Invoker
from .state import Conversation, LoopState, Pending
from .streams import Stream, usage_of
from .turn import TurnRefused, cut_note, parse_turn, refused_note
from .turn_format import dropped_note

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["Book", "Loop", "Memory", "Stop"]

Stop = Union[Final, End, Waiting, Interrupted]


class Book(Protocol):
    """A run's bookkeeping, called by the loop at fixed points: :class:`Memory` without a store,
    ``durable.Durable`` with one. ``close`` records the stop and gives back what the run yields
    last (a store that fails to record ``waiting`` turns it into an ``end``)."""

    run_id: str | None
    durable: bool

    async def checkpoint(self, conversation: Conversation, state: LoopState) -> None: ...
    async def close(self, conversation: Conversation, state: LoopState, stop: Stop) -> Stop: ...
    def approver(self, call_id: str) -> Callable[..., Any] | None: ...
    async def run_effect(self, tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]: ...
    async def recorded_effect(self, key: str) -> str | None: ...
    async def record_effect(self, key: str, result: str) -> None: ...


class Memory:
    """The book of a run kept only in memory: no checkpoints, effects run every time, no approvals."""

    run_id: str | None = None
    durable = False

    async def checkpoint(self, conversation: Conversation, state: LoopState) -> None:
        pass

    async def close(self, conversation: Conversation, state: LoopState, stop: Stop) -> Stop:
        assert isinstance(stop, (Final, End)), "a run without a store cannot wait"  # ctx.approve refuses first
        return stop

    def approver(self, call_id: str) -> Callable[..., Any] | None:
        return None

    async def run_effect(self, tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]:
        return await run_tool(tool, input, ctx)

    async def recorded_effect(self, key: str) -> str | None:
        return None

    async def record_effect(self, key: str, result: str) -> None:
        pass


@dataclass
class _Generation:
    """The outcome of one model request, filled in while its deltas stream."""

    text: str = ""
    finish: str | None = None
    unusable: str | None = None  # the engine said this generation's output cannot be used


class Loop:
    """One run of ``agent``'s loop over ``conversation``, from wherever ``state`` says it is."""

    def __init__(
        self,
        agent: Agent,
        conversation: Conversation,
        state: LoopState,
        signal: Any,
        book: Book,
        invoker: Invoker | None = None,
        artifacts: RunArtifacts | None = None,
        source: str | None = None,
    ) -> None:
        self.home = agent  # the Agent whose run this is: its clock, drain, channels and artifacts
        active = active_agent(agent, conversation)
        if active is None:  # the callers check a conversation from outside first
            raise AerixError("options", f"the conversation was handed to {conversation.agent!r}, which the handoffs of {agent.name!r} do not reach")
        self.agent = active  # the agent the run is under now: its instructions, tools, limits
        self.limits = active.limits
        self.ceiling: int | None = None  # a sub-run's token cap from its parent's budget (subagents.py)
        self.conversation = conversation
        self.state = state
        # The run's one signal, composed once: it follows the caller's, and the run's timeout and a
        # drain abort it too. The model, the tools and the hooks all get this one (or a call's child).
        self.signal = Abort.following(signal)
        self.deadline_passed = False
        self.invoker = invoker
        self.schema: dict[str, Any] | None = None  # the tools this invoker may use: asked at the first generation
        self.schema_known = False
        self.book = book
        # what a tool's ctx reaches besides the call (agent_state.py, artifacts.py, channels.py)
        self.state_view: Any = active.state
        self.artifacts = artifacts or RunArtifacts(agent.artifact_store, book.run_id)  # a run in memory gets an id of its own
        self.channels = Channels(agent.channels, book, source=source)
        self.stop: Stop | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self._clock_base = agent.clock()

    async def events(self) -> AsyncGenerator[Event, None]:
        """The loop: phases until one of them sets ``stop``, then the one exit."""
        st = self.state
        self.deadline = self.start_deadline()
        try:
            try:
                while self.stop is None:
                    if st.pending is None:
                        self.stop = self.check_limits()
                        if self.stop is None:
                            async with aclosing(compact(self)) as compacting:  # compaction.py
                                async for ev in compacting:
                                    yield ev
                        if self.stop is not None:
                            break
                        gen = _Generation()
                        async with aclosing(self.generate(gen)) as stream:
                            async for ev in stream:
                                yield ev
                        if self.stop is None:
                            yield await self.parse(gen)
                    elif st.pending.final is not None:
                        await self.finish(st.pending)
                    else:
                        async with aclosing(self.call_tools(st.pending)) as results:
                            async for ev in results:
                                yield ev
            except AerixError as e:  # the store failed: the run ends here, and says why
                if e.kind != "store":
                    raise
                self.stop = End("error", e.message)
            except _Draining:  # Agent.drain(): stopped at a checkpoint
                self.stop = Interrupted(self.book.run_id or "", "the agent was drained") if self.book.durable else End("abort", "the agent was drained")
            # the one exit: the stop, recorded by the book
            yield await self.book.close(self.conversation, st, self.stop)
        finally:
            if not self.book.durable and st.pending is not None and st.pending.final is None:
                # a run kept in memory stopped mid-turn: close the turn so the conversation stays whole
                self.close_turn("the run ended before this call ran")
            if self.deadline is not None:
                self.deadline.cancel()
            self.signal.close()

    # -- phase: limits --------------------------------------------------------------------

    def check_limits(self) -> End | None:
        """Before each generation: the signal and ``timeout_s``, ``max_total_tokens``, ``turns``."""
        halted = self.halted()
        if halted is not None:
            return halted
        cap, used = self.limits.max_total_tokens, self.state.tokens
        if cap is not None and used >= cap:
            return End("tokens", f"the run used {used} tokens; its budget is {cap}")
        if self.limits.turns is not None and self.state.generations >= self.limits.turns:
            return End("turns", f"the run used all {self.limits.turns} turns without a final answer")
        return None

    @property
    def budget(self) -> TokenBudget:
        """The run's token budget, as a sub-agent run inside it shares it."""
        return TokenBudget(self)

    def elapsed(self) -> float:
        return self.state.elapsed_s + (self.home.clock() - self._clock_base)

    def timed_out(self) -> str | None:
        t = self.limits.timeout_s
        if t is None:
            return None
        elapsed = self.elapsed()
        if self.deadline_passed or elapsed >= t:
            return f"the run ran {max(elapsed, t):.1f} s; its timeout is {t:g} s"
        return None

    def halted(self, during: str = "") -> End | None:
        """Why the run must stop now, if it must: its timeout passed, or its signal was aborted."""
        timed_out = self.timed_out()
        if timed_out:
            return End("timeout", timed_out)
        if self.signal.aborted:
            return End("abort", f"the run was aborted{during}")
        return None

    def start_deadline(self) -> asyncio.TimerHandle | None:
        """With ``timeout_s``, a timer that aborts the run's signal when it passes, which
        interrupts a generation or a tool that hangs (the checks alone would wait for it)."""
        if self.limits.timeout_s is None:
            return None

        def passed() -> None:
            self.deadline_passed = True
            self.signal.abort("the run's timeout passed")

        return asyncio.get_running_loop().call_later(max(0.0, self.limits.timeout_s - self.elapsed()), passed)

    # -- phase: generate ------------------------------------------------------------------

    async def generate(self, gen: _Generation) -> AsyncGenerator[Event, None]:
        """One model request: stream its text; record how it finished, or stop on how it failed."""
        agent = self.agent
        if not self.schema_known:
            await self.narrow_schema()
            if self.stop is not None:
                return
        self.state.generations += 1
        time_left = None if self.limits.timeout_s is None else self.limits.timeout_s - self.elapsed()
        options = {"max_tokens": self.limits.max_tokens, "constraint": self.schema, "signal": self.signal, "generation": dict(agent.generation), "time_left_s": time_left}
        parts: list[str] = []
        answer = answer_reader(agent.output)  # the answer as it streams: final_delta or output_delta
        stream = Stream(agent.model, list(self.conversation.messages), options, self.halted)
        try:
            async with aclosing(stream.texts()) as texts:
                async for piece in texts:
                    parts.append(piece)
                    yield Text(piece)
                    delta = answer(piece)
                    if delta is not None:
                        yield delta
            if stream.breach is not None:
                self.stop = End("error", f"engine failed: {stream.breach}")
                return
        except AerixError as e:
            if not self.signal.aborted and e.kind == "output":
                gen.unusable = e.message
                return
            if not self.signal.aborted and e.kind != "abort":
                self.stop = End("error", f"engine failed: {e.message}", e.problem)
                return
        except Exception as e:
            if not self.signal.aborted:
                self.stop = End("error", f"engine failed: {describe(e)}")
                return
        self.stop = self.halted(" during a generation")
        done = stream.done
        if self.stop is None and done is None:
            self.stop = End("error", "engine failed: the model's stream ended without a done item")
        if self.stop is None and done is not None:
            yield self.count_usage(done, sent=len(self.conversation.messages))
            gen.text, gen.finish = "".join(parts), done.get("finish_reason")

    async def narrow_schema(self) -> None:
        """Once per run, before its first generation: the turn schema of the tools the invoker may
        use (``Agent.schema_for``). The tool policy may be async; the signal and ``timeout_s``
        interrupt it as they do any callback (``calls.py``)."""
        try:
            self.schema = await until_aborted(self.agent.schema_for(self.invoker), self.signal)
        except StepInterrupted:
            self.stop = self.halted(" while the tool policy was asked")
            return
        self.schema_known = True

    def count_usage(self, done: dict[str, Any], sent: int | None = None) -> Usage:
        """Count a generation's tokens into the run's; with ``sent``, the number of messages it
        was sent, its prompt count is the conversation's measure (``compaction.py``)."""
        usage = usage_of(done)
        assert usage is not None  # checked when the done item came
        self.state.tokens += usage.prompt_tokens + usage.completion_tokens
        if sent is not None:
            self.conversation.measure(sent, usage.prompt_tokens)
        return usage

    # -- phase: parse ---------------------------------------------------------------------

    async def parse(self, gen: _Generation) -> Turn | Retry:
        """Read the turn: accept it (the pending turn) or refuse it (a note, a retry); checkpoint."""
        st, conversation = self.state, self.conversation
        try:
            if gen.unusable is not None:
                raise TurnRefused(f"engine output: {gen.unusable}")
            turn = parse_turn(gen.text, self.agent.tool_names, self.agent.output, self.agent.turn_format)
        except TurnRefused as refused:
            st.refused_in_row += 1
            cut = gen.finish == "length"
            if cut:  # a cut turn or unusable output is dropped: the model is asked again without it
                reason = f"cut: the turn reached max_tokens ({self.limits.max_tokens}) before its JSON closed"
            else:
                reason = refused.reason
            if not cut and gen.unusable is None:
                conversation.add("assistant", gen.text)
            conversation.add("user", cut_note(self.limits.max_tokens) if cut else refused_note(reason))
            await self.checkpoint()
            if st.refused_in_row > self.limits.retries:
                self.stop = End("retries", f"{st.refused_in_row} turns in a row were refused; the last: {reason}")
            return Retry(st.generations, reason)
        st.refused_in_row = 0
        conversation.add("assistant", gen.text)
        calls = tuple(Call(conversation.new_call_id(), c.tool, c.input) for c in turn.calls)
        dropped = tuple(c.tool for c in turn.dropped)  # dropped calls: no id, no call event; named in the turn event
        note = dropped_note(dropped) if dropped else None
        st.pending = Pending(Turn(st.generations, turn.thought, calls, dropped), turn.final, output=turn.output, note=note)
        await self.checkpoint()
        return st.pending.turn

    # -- phase: ending (the on_final hook may ask for another turn) ------------------------

    async def finish(self, pending: Pending) -> None:
        """The final answer is the ending, unless ``on_final`` asks for another turn. The signal
        and ``timeout_s`` interrupt the hook (``calls.until_aborted``): the run ends ``abort`` or
        ``timeout``, never ``final``; the answer stays in the conversation, which is whole."""
        assert pending.final is not None
        hooks = self.agent.hooks
        try:
            more = None if hooks.on_final is None else await until_aborted(hooks.final(pending.final), self.signal)
        except HookFailed as e:
            self.stop = End("error", str(e))
            return
        except StepInterrupted:
            self.stop = self.halted(" during the on_final hook")
            return
        self.state.pending = None
        if more is None:
            self.stop = Final(pending.final, pending.turn.thought, pending.output)
            return
        self.conversation.add("user", more)
        await self.checkpoint()

    # -- phase: calls ---------------------------------------------------------------------

    async def call_tools(self, pending: Pending) -> AsyncGenerator[Event, None]:
        """Run the calls not yet run, alone in order or, where their tools are ``parallel=True``,
        together (``parallel.run_calls``); hand each result on in turn order and feed them back."""
        async with aclosing(run_calls(self, pending)) as events:
            async for ev in events:
                yield ev

    def fit(self, result: Result, chars: int | None) -> Result:
        """A call's result as the model will see it: cut to ``chars`` (``result_chars``) and to
        the room the context has (``compaction.fit_result``)."""
        return fit_result(self, result, chars)

    def close_turn(self, why: str, done: dict[str, Result] | None = None) -> list[Result]:
        """Give every call of the pending turn not yet run a ``cancelled`` result (or its result
        in ``done``, by call id: it finished) and feed the turn's results back, so the
        conversation stays whole for the next run."""
        pending = self.state.pending
        assert pending is not None
        closed = [(done or {}).get(c.id) or Result(c.id, c.tool, f"cancelled: {why}", True) for c in pending.calls_left]
        pending.results.extend(closed)
        self.conversation.add("user", pending.results_message(self.agent.turn_format))
        self.state.pending = None
        return closed

    # -- checkpoint -----------------------------------------------------------------------

    async def checkpoint(self) -> None:
        now = self.home.clock()
        self.state.elapsed_s += now - self._clock_base
        self._clock_base = now
        await self.book.checkpoint(self.conversation, self.state)
        if self.home.draining:
            raise _Draining


class TokenBudget:
    """What is left of a run's ``max_total_tokens`` (``None``: no cap), and how a sub-run spends it."""

    def __init__(self, loop: Loop) -> None:
        self._loop = loop

    @property
    def left(self) -> int | None:
        cap = self._loop.limits.max_total_tokens
        return None if cap is None else max(0, cap - self._loop.state.tokens)

    def spend(self, tokens: int) -> None:
        self._loop.state.tokens += tokens


class _Draining(Exception):
    """``Agent.drain()`` was called: the run stops at the checkpoint just written."""
