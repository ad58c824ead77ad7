"""The calls phase: a turn's calls, alone in order, or together where their tools allow it.

``tool(..., parallel=True)`` says a tool's calls do not depend on the other calls of their turn.
The calls left of a turn run in *groups*, one after another, in turn order (:func:`together`):
a group is the longest run of consecutive calls, from the first call left, of which each

- is of a ``parallel=True`` tool (never an effect: ``tool()`` refuses ``effect=True`` with it),
- is not guarded (``trust={"guard_when_tainted": ...}`` is ``False``: a guarded call may need a
  person, and whether it does depends on the results before it), nor a handoff,
- names a tool and input (canonical JSON) that no other call of the group and not the call just
  before the group has (so the repeat guard, ``Limits.repeat_calls``, sees what it would see
  one call at a time: a repeat runs alone, and is answered or ends the run as before).

Any other call is a group of its own: it runs alone, as every call did before ``parallel``.
The calls of a group run at the same time, each in a task of its own (:class:`LiveCalls`), each
its whole way (``calls.py``: policy, hooks, taint guard, its ``timeout_s``).

Events. A group's events are those of its calls run one at a time, in the same order: for each
call in turn order its ``call``, ``artifact`` and ``taint`` events and its ``result``, once it
and every call before it are done (a result is never shown before an earlier call's, so a UI
pairs each ``artifact`` with the call whose result comes next, as before). Only what a tool
surfaces as it runs (an ``as_tool`` sub-run's ``subagent`` events) comes as it happens, each
after its call's ``call`` event (yielded early, with the first of them), as for a call alone.
The ``turn`` event lists all the turn's calls before any of them runs.

Guarantees, as one call at a time gives them:

- *results in the turn's order*: the model gets the results message in call order;
- *durable runs* checkpoint each result as it is handed on (in turn order, before its events
  are yielded), so a result shown was recorded; a call of a group that finished while an
  earlier one still ran is recorded with it, and after a crash before that it runs again (it is
  not an effect, so nothing is applied twice). A sub-run's checkpoints and the group's are
  written one at a time (``durable.Durable`` saves under a lock);
- *taint*: a call's result from outside taints the conversation when it is handed on, in turn
  order, before the model sees it; the first result handed on names the source;
- *approvals*: a call of a group that waits for one (``ctx.approve``, a ``before_call`` hook's)
  ends the group there: the calls before it finish and are handed on, as one at a time; the
  calls after it are stopped (their results, if any, dropped) and run again, with it, when the
  run resumes (a call that waits runs again from its start anyway);
- *abort, timeout, a hook's failure, the repeat guard*: every call still running is cancelled
  and waited for; the turn closes with each finished call's result and ``cancelled`` for the
  rest, and the run has its one ending.
"""

from __future__ import annotations

import asyncio
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, AsyncGenerator, Union

from .calls import Outcome, RepeatedCall, StepInterrupted, call_key, call_tool, hand_on_taint, remember, stop_task
from .events import Call, End, Event, Result, Waiting
from .handoffs import hand_off, handed_to
from .limits import HookFailed
from .state import Pending
from .tools import WaitingForApproval

if TYPE_CHECKING:
    from .loop import Loop

__all__ = ["LiveCalls", "Ready", "run_calls", "together"]


def together(loop: Loop, left: tuple[Call, ...]) -> tuple[Call, ...]:
    """The group the first of the calls ``left`` runs in (see the module's docstring)."""
    first = left[0]
    if not _may_join(loop, first):
        return (first,)
    keys = {loop.state.seen.last, call_key(first)}
    if len(keys) == 1:  # it repeats the call just before it
        return (first,)
    group = [first]
    for call in left[1:]:
        key = call_key(call)
        if not _may_join(loop, call) or key in keys:
            break
        group.append(call)
        keys.add(key)
    return tuple(group)


def _may_join(loop: Loop, call: Call) -> bool:
    tool = loop.agent.tool_named(call.tool)
    return tool.parallel and not tool.effect and tool.trust["guard_when_tainted"] is False and call.tool not in loop.agent.handoff_tools


@dataclass(frozen=True)
class Ready:
    """A call of a group whose turn came to be handed on: the call as the model asked it, the
    outcome of ``calls.call_tool``, and whether its ``call`` event was yielded already."""

    call: Call
    outcome: Outcome
    shown: bool


class LiveCalls:
    """The calls of one group, run together by :meth:`events`, each in a task of its own: it
    yields what their tools surface as it comes (each call's ``call`` event first), and a
    :class:`Ready` for each call in turn order once it and the calls before it are done. What a
    call raises is raised there, the others cancelled; :meth:`finished` then gives the calls
    that finished but were not handed on."""

    def __init__(self, loop: Loop, calls: tuple[Call, ...]) -> None:
        self.loop, self.calls = loop, calls
        self.shown: set[str] = set()
        self.handed = 0
        self._tasks: list[asyncio.Future[Outcome]] = []
        self._queue: asyncio.Queue[tuple[Call, Event, asyncio.Future[None]] | None] = asyncio.Queue()

    async def surface(self, call: Call, event: Event) -> None:
        taken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((call, event, taken))
        await taken  # the tool goes on once the caller took the event

    async def events(self) -> AsyncGenerator[Union[Event, Ready], None]:
        self._tasks = [asyncio.ensure_future(call_tool(self.loop, call, self)) for call in self.calls]
        for task in self._tasks:
            task.add_done_callback(lambda _: self._queue.put_nowait(None))
        end = len(self.calls)  # a call that waits for an approval ends the group: the calls before it finish first
        try:
            while self.handed < end:
                item = await self._queue.get()
                if item is not None:
                    call, event, taken = item
                    if taken.cancelled():  # from a call stopped meanwhile (after one that waits): it runs again
                        continue
                    if call.id not in self.shown:
                        self.shown.add(call.id)
                        yield call
                    yield event
                    if not taken.done():
                        taken.set_result(None)
                    continue
                while self.handed < end and self._tasks[self.handed].done() and _raised(self._tasks[self.handed]) is None:
                    call, task = self.calls[self.handed], self._tasks[self.handed]
                    self.handed += 1
                    yield Ready(call, task.result(), call.id in self.shown)
                end = await self._first_stop(end)
            if end < len(self.calls):
                self._tasks[end].result()  # the wait, once the calls before it were handed on
        finally:  # done, stopped by a call, or the caller stopped reading: stop the calls still running
            for task in self._tasks:
                if not task.done():
                    await stop_task(task)
                elif not task.cancelled():
                    task.exception()  # retrieved, so asyncio does not report it as never retrieved

    async def _first_stop(self, end: int) -> int:
        """Raise what the first call (in turn order, before ``end``) that raised raised; a wait for
        an approval is raised once the calls before it are handed on: the new end, the calls
        after it stopped."""
        for i, task in enumerate(self._tasks[:end]):
            raised = _raised(task)
            if raised is None:
                continue
            if not isinstance(raised, WaitingForApproval) or i == self.handed:
                task.result()
            for later in self._tasks[i + 1 :]:
                await stop_task(later)
            return i
        return end

    def finished(self) -> dict[str, Ready]:
        """The calls that finished with an outcome but were not handed on, by id."""
        done = {}
        for call, task in list(zip(self.calls, self._tasks))[self.handed :]:
            if task.done() and not task.cancelled() and _raised(task) is None:
                done[call.id] = Ready(call, task.result(), call.id in self.shown)
        return done


def _raised(task: asyncio.Future[Outcome]) -> BaseException | None:
    return task.exception() if task.done() and not task.cancelled() else None


async def run_calls(loop: Loop, pending: Pending) -> AsyncGenerator[Event, None]:
    """The calls phase: run the calls not yet run, group by group (:func:`together`), what a
    tool surfaces passed on live; hand each result on in turn order (:func:`_hand_on`); feed
    the turn's results back. A handoff call's result hands the conversation over
    (``handoffs.hand_off``): the turn ends there."""
    while pending.calls_left:
        live = LiveCalls(loop, together(loop, pending.calls_left))
        try:
            if loop.halted() is not None:
                raise StepInterrupted
            async with aclosing(live.events()) as items:
                async for item in items:
                    if not isinstance(item, Ready):
                        yield item
                        continue
                    handed, switched = await _hand_on(loop, pending, item)
                    for ev in handed:
                        yield ev
                    if switched:
                        return
        except (StepInterrupted, HookFailed, RepeatedCall) as e:
            loop.stop = loop.halted() or End("loop" if isinstance(e, RepeatedCall) else "error", str(e))
            for ev in _close(loop, live, loop.stop.message):
                yield ev
            await loop.checkpoint()
            return
        except WaitingForApproval as w:
            a = w.approval
            loop.stop = Waiting(loop.book.run_id or "", a["id"], a["title"], a["body"])
            return
    loop.conversation.add("user", pending.results_message(loop.agent.turn_format))
    loop.state.pending = None
    await loop.checkpoint()


async def _hand_on(loop: Loop, pending: Pending, ready: Ready) -> tuple[list[Event], bool]:
    """A call's result handed on: recorded in the turn (its taint and the repeat guard's memory
    with it), checkpointed; the events to yield, and whether a handoff ended the turn."""
    ran, events = ready.outcome
    events = hand_on_taint(loop, events)
    last = events[-1]
    assert isinstance(last, Result)
    pending.results.append(last)
    remember(loop, ready.call, last)
    target = handed_to(loop.agent, last)
    switched = [] if target is None else await hand_off(loop, target)  # it checkpoints
    if target is None:
        await loop.checkpoint()
    return [*([] if ready.shown else [ran]), *events, *switched], target is not None


def _close(loop: Loop, live: LiveCalls, why: str) -> list[Event]:
    """Close the turn on a stop: each call of the group that finished keeps its result (its
    events as a call alone has them), every other call left gets a ``cancelled`` one."""
    finished = live.finished()
    before: dict[str, list[Event]] = {}
    done: dict[str, Result] = {}
    for call in loop.state.pending.calls_left if loop.state.pending is not None else ():
        ready = finished.get(call.id)
        if ready is not None:
            ran, events = ready.outcome
            *rest, result = hand_on_taint(loop, events)
            assert isinstance(result, Result)
            before[call.id], done[call.id] = [*([] if ready.shown else [ran]), *rest], result
    out: list[Event] = []
    for result in loop.close_turn(why, done):
        out += [*before.get(result.id, []), result]
    return out
