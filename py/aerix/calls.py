"""The calls phase: one call's way from the model's request to the result the model sees.

    repeat guard → permission (tool_policy) → before_call hook → taint guard → run (an effect
    recorded once; interrupted by an abort, the run's timeout or the tool's own) → after_call
    hook → taint (a ``taint`` tool's result, or an ``as_tool`` sub-run's that met outside content:
    ``Caller``) → cut to ``result_chars``, and to the room the context has (``Loop.fit``)

The repeat guard (``Limits.repeat_calls``) answers a call that repeats an earlier call of the
run (same tool, equal input as canonical JSON) that succeeded with that call's result, and the
rest of the way is not taken: nothing runs, so nothing is repeated (an effect, a question to a
person, a hook's work). A repeat of a call that failed takes the whole way again, since a
failure may pass (a timeout, a refusal the model can now avoid). One repeat too many in a row
ends the run ``loop``. The guard remembers a call only once its result is handed on
(:func:`remember`, in turn order), in the loop's state, so a call that stops midway (an
approval, an abort) and runs again on resume is counted once, and a resumed run knows the calls
before its checkpoint. Taint likewise: a call's result that came from outside carries a
``taint`` event, and the conversation is tainted when the result is handed on
(:func:`hand_on_taint`), before the model sees it; the first result handed on names the source.

A call runs in a task of its own (``parallel.LiveCalls``), so that what its tool surfaces while it
runs (``Caller.surface``: an ``as_tool`` sub-run's events, each wrapped in a ``subagent`` event)
reaches the run's caller as it comes, after the call's ``call`` event (yielded early, with the
first of them) and before its result. The tool waits at each surfaced event until the caller
took it, as a run waits at each of its own events.

Every wait on a tool goes through :func:`until_aborted`, which is also how a generation is
waited for: the awaited step runs in its own task and is cancelled the moment the signal
aborts, so a hung tool or engine cannot outlast an abort or a timeout. So does every other
callback of the developer's on the call's way: the ``tool_policy``, the ``before_call`` and
``after_call`` hooks and the trust flags (``on_final`` and the policy at run start in
``loop.py``), each waited for under the run's signal (a tool's own ``timeout_s`` bounds the tool
alone). An interrupted callback stops the run as an interrupted tool does: the loop closes the
turn and the run ends ``abort`` or ``timeout``. A sync tool or callback that blocks the thread
cannot be interrupted: nothing else runs while it does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .abort import Abort
from .errors import AerixError
from .events import Call, Event, NewArtifact, Result, Taint
from .state_taint import CallReads
from .tools import Tool, ToolContext, run_tool
from .trust import TrustFlag, flag_holds, policy_refusal
from .turn import repeated_note

if TYPE_CHECKING:
    from .loop import Loop

__all__ = ["Caller", "Live", "RepeatedCall", "StepInterrupted", "call_key", "call_tool", "hand_on_taint", "remember", "stop_task", "until_aborted"]

Outcome = tuple[Call, list[NewArtifact | Taint | Result]]


class StepInterrupted(Exception):
    """The awaited step was cancelled because its signal aborted."""


class RepeatedCall(Exception):
    """A call repeated the one before it once too often in a row: the run ends ``loop``."""


@dataclass
class Caller:
    """A call as a run it starts sees it (``ctx.caller``; an ``as_tool`` sub-run, ``subagents.py``):
    the calling run's loop and the call, as it runs (a ``before_call`` hook may change its input).
    ``tainted``: that run met content from outside, so this call's result taints the calling
    conversation, as a ``taint`` tool's result does. ``failed``: the store failed under that run,
    so the calling run ends here as if it had failed."""

    loop: Loop
    call: Call
    live: Live | None = None
    tainted: bool = False
    failed: AerixError | None = None

    @property
    def call_id(self) -> str:
        return self.call.id

    async def surface(self, event: Event) -> None:
        """Hand ``event`` to the calling run's caller now, after this call's ``call`` event and
        before its result; return once it was taken."""
        if self.live is not None:
            await self.live.surface(self.call, event)


class Live(Protocol):
    """Where a running call's surfaced events go (``parallel.LiveCalls``)."""

    async def surface(self, call: Call, event: Event) -> None: ...


async def until_aborted(awaitable: Any, signal: Abort) -> Any:
    """Await ``awaitable`` in its own task unless ``signal`` aborts first; then cancel the task,
    wait for it to stop, and raise :class:`StepInterrupted`. Cancelling the caller cancels it too."""
    if signal.aborted:
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()  # a coroutine never started: close it, or Python warns it was never awaited
        raise StepInterrupted
    inner = asyncio.ensure_future(awaitable)
    stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def on_abort(_reason: str | None) -> None:
        if not stopped.done():
            stopped.set_result(None)

    unsubscribe = signal.on_abort(on_abort)
    try:
        await asyncio.wait((inner, stopped), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # the caller was cancelled: stop the step first, then go on cancelling
        await stop_task(inner)
        raise
    finally:
        unsubscribe()
        if not stopped.done():
            stopped.cancel()
    if inner.done():
        return inner.result()
    await stop_task(inner)
    raise StepInterrupted


async def stop_task(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it stopped, its exception retrieved."""
    task.cancel()
    await asyncio.wait((task,))
    if not task.cancelled():
        task.exception()  # retrieved, so asyncio does not report it as never retrieved


async def call_tool(loop: Loop, call: Call, live: Live | None = None) -> Outcome:
    """One call, as the loop runs it: the call as it ran (a hook may change its input), and the
    events that follow it (an ``artifact`` per file it kept, a ``taint`` if this result came
    from outside, the result); what its tool surfaces goes to ``live``. Raises
    :class:`RepeatedCall` when the repeat guard ends the run. Once the loop hands the result
    on, :func:`hand_on_taint` and :func:`remember` record it."""
    cap = loop.limits.repeat_calls
    if cap is None:
        return await _call(loop, call, live)
    seen = loop.state.seen
    key = call_key(call)
    in_row = seen.in_row + 1 if key == seen.last else 1
    if in_row > cap + 1:
        raise RepeatedCall(f"the model called {call.tool} with the same input {in_row} times in a row (Limits.repeat_calls is {cap})")
    handoff = call.tool in loop.agent.handoff_tools  # each handoff switches: never answered from an earlier one
    earlier = None if handoff else seen.answered.get(key)
    if earlier is None:
        return await _call(loop, call, live)
    earlier_id, text = earlier
    return call, [loop.fit(Result(call.id, call.tool, repeated_note(call.tool, earlier_id, text), False, earlier_id), None)]


def remember(loop: Loop, call: Call, result: Result) -> None:
    """The repeat guard's record of ``call`` (as the model asked it), once its result is handed
    on: the call in a row, and a success to answer a later repeat with."""
    if loop.limits.repeat_calls is None:
        return
    seen, key = loop.state.seen, call_key(call)
    seen.last, seen.in_row = key, seen.in_row + 1 if key == seen.last else 1
    if result.repeat_of is None and not result.error and call.tool not in loop.agent.handoff_tools:
        seen.answered[key] = (call.id, result.text)


def hand_on_taint(loop: Loop, events: list[NewArtifact | Taint | Result]) -> list[NewArtifact | Taint | Result]:
    """A call's events as they are handed on: its ``taint`` taints the conversation, if nothing
    did before (else it is left out: once per conversation)."""
    kept: list[NewArtifact | Taint | Result] = []
    for ev in events:
        if isinstance(ev, Taint):
            if loop.conversation.taint is not None:
                continue
            loop.conversation.taint = {"source": ev.source, "at": ev.at}
        kept.append(ev)
    return kept


def call_key(call: Call) -> str:
    """The repeat guard's name for a call: its tool and input as canonical JSON, hashed."""
    canonical = json.dumps([call.tool, call.input], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


async def _call(loop: Loop, call: Call, live: Live | None) -> Outcome:
    """The call's way after the repeat guard: permission, hooks, taint, the run, the cut."""
    agent = loop.agent
    tool = agent.tool_named(call.tool)
    # the run's signal; a tool with its own timeout_s gets a child, which that timeout aborts alone
    signal = loop.signal if tool.timeout_s is None else Abort.following(loop.signal)
    artifacts = loop.artifacts.for_call(call.id)  # this execution's puts: their ids and events
    caller = Caller(loop, call, live)
    ctx = ToolContext(
        signal=signal,
        call_id=call.id,
        tool=call.tool,
        approver=loop.book.approver(call.id),
        invoker=loop.invoker,
        context=agent.context,
        state=loop.state_view,
        artifacts=artifacts,
        channels=loop.channels.for_call(call.id),
        caller=caller,
    )
    reads = CallReads(loop.conversation)  # a marked item of the agent's state it reads taints (state_taint.py)
    hooks = agent.hooks
    try:
        refused = await _refused_by_policy(loop, tool)
        if refused is None and hooks.before_call is not None:
            answer = await until_aborted(hooks.before(call, ctx), loop.signal)
            if answer is not None and answer[0] == "input":
                call = caller.call = Call(call.id, call.tool, answer[1])
            refused = f"refused: {answer[1]}" if answer is not None and answer[0] == "deny" else None
        if refused is None:
            refused = await _taint_guard(loop, tool, call, ctx)
        taints = False
        if refused is None:
            try:
                taints = await _flag(loop, tool.trust["taint"], call, ctx)
            except ValueError as e:
                refused = f"error: {tool.name}: {e}"
        text, error = await _run(loop, tool, call, ctx) if refused is None else (refused, True)
        if caller.failed is not None:
            raise caller.failed
        result = Result(call.id, call.tool, text, error)
        replaced = None if hooks.after_call is None else await until_aborted(hooks.after(call, result), loop.signal)
        if replaced is not None:
            result = Result(call.id, call.tool, replaced, error)
        events: list[NewArtifact | Taint | Result] = list(artifacts.made)
        if taints or caller.tainted or reads.found is not None:  # from outside: tainted before the model sees it (hand_on_taint)
            events.append(Taint(tool.name, call.id))
        return call, events + [loop.fit(result, loop.limits.result_chars)]
    finally:
        reads.close()
        if signal is not loop.signal:
            signal.close()


async def _refused_by_policy(loop: Loop, tool: Tool) -> str | None:
    """The ``tool_policy``'s refusal of this call, if it refuses (``trust.policy_refusal``)."""
    policy = loop.agent.tool_policy
    if policy is None:
        return None
    refused: str | None = await until_aborted(policy_refusal(policy, loop.agent.name, tool.name, loop.invoker), loop.signal)
    return refused


async def _flag(loop: Loop, flag: TrustFlag, call: Call, ctx: ToolContext) -> bool:
    """A trust flag's answer for this call; a function is interrupted by the run's signal."""
    if isinstance(flag, bool):
        return flag
    holds: bool = await until_aborted(flag_holds(flag, call.input, ctx), loop.signal)
    return holds


async def _taint_guard(loop: Loop, tool: Tool, call: Call, ctx: ToolContext) -> str | None:
    """A guarded tool in a tainted conversation runs only once a person approved it."""
    if loop.conversation.taint is None:
        return None
    try:
        if not await _flag(loop, tool.trust["guard_when_tainted"], call, ctx):
            return None
    except ValueError as e:
        return f"error: {tool.name}: {e}"
    if loop.agent.on_tainted == "deny":
        return "refused: tainted run"
    if ctx.approver is None:
        return "refused: tainted run (approving it needs a durable run: give the Agent a store)"
    source = loop.conversation.taint["source"]
    body = json.dumps(call.input, ensure_ascii=False)
    decision = await ctx.approve(f"Run {tool.name} after untrusted content from {source}?", body)
    return None if decision.approved else f"denied: {decision.reason or 'not approved'}"


async def _run(loop: Loop, tool: Tool, call: Call, ctx: ToolContext) -> tuple[str, bool]:
    """Run the tool, interrupted by the call's signal; its own ``timeout_s`` aborts that alone."""
    signal: Abort = ctx.signal
    timer = None
    if tool.timeout_s is not None:
        timer = asyncio.get_running_loop().call_later(tool.timeout_s, signal.abort, "the tool timed out")
    work = loop.book.run_effect(tool, call.input, ctx) if tool.effect else run_tool(tool, call.input, ctx)
    try:
        text, error = await until_aborted(work, signal)
    except StepInterrupted:
        if loop.signal.aborted:
            raise  # the run stops: the loop closes the turn
        return f"error: timed out after {tool.timeout_s:g} s", True
    finally:
        if timer is not None:
            timer.cancel()
    return text, error
