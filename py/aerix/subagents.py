"""Agents as tools: ``agent.as_tool(name, description, trust=None, parallel=False)``.

The tool's input is ``{"task": str}``; each call runs the agent on that task, a *sub-run*, in a
conversation of its own (its system message, then the task). The result is the sub-agent's final
answer (its output JSON, with structured output); any other ending is the call's error result,
naming the reason. What the sub-run shares with the run that calls it (the *parent*):

    signal   the parent's: its abort and ``timeout_s`` stop the sub-run too
    tokens   what is left of the parent's ``max_total_tokens`` caps it (besides its own
             ``Limits``), and the tokens it uses count against the parent's as it goes
    invoker  the parent's; the sub-agent's own ``tool_policy`` (``tool:<sub-agent>:<tool>``)
             and ``on_tainted`` rule its calls
    state    the sub-agent's own, loaded from its store when the sub-run starts, as a run's is
    taint    both ways: a sub-run called from a tainted conversation starts tainted (its guarded
             tools need an approval, or are refused, as its ``on_tainted`` says); a sub-run that
             became tainted (by a tool of its own or a sub-run of its) taints the parent with
             this call, whatever its ending: a ``taint`` event naming this tool comes before the
             result, as for a ``taint`` tool. ``trust=`` takes the flags ``tool(...)`` takes.

The sub-run's events reach the parent's caller as they happen, each wrapped in a ``subagent``
event (``events.SubagentEvent``: the calling call's id, this tool's name, the sub-agent's name,
the event), between the parent's ``call`` of it (yielded early, with the first of them) and its
``result``; the sub-run waits at each until the parent's caller took it. Its ending (``final``,
``end``) or its ``waiting`` is one of them, inside the wrapper: the parent's own ending stays
its one. A sub-run's sub-run nests again. A parent's abort or timeout may cut the sub-run off
before its ending: the parent's call then gets its ``cancelled`` result, as any call.

A sub-run of a durable parent (an Agent with a store) is durable with it (:class:`SubRun`):

- its checkpoints are kept in the parent's (``subruns``: the calling call id -> the sub-run's
  checkpoint), written to the parent's record, so a parent resumed after a crash, a reload or an
  approval resumes the sub-run where it stood: its recorded generations are not asked again;
- its effect tools go through the parent's book: recorded once in the parent's store under keys
  scoped to the parent run and the calling call (the call id such a tool sees, and the default
  effect key's, is ``<calling call id>/<its call id>``), ``already_applied`` asked; its channel
  emits likewise (their run id is ``<parent run id>/<calling call id>``);
- an approval it needs (``ctx.approve``, the taint guard) makes the parent wait: the parent's
  ``waiting`` names approval ``<calling call id>/<its call id>.<n>``, answered with the parent's
  ``approve``; the parent resumes into the sub-run, which runs that call again from its start.
  The resumed stream shows the parent's ``call`` again (it runs again from its start), then the
  sub-run's events from its checkpoint on: what it did before (its generations, the results of
  its earlier calls) is not shown again, as a resumed run does not show its own;
- a store that fails under it fails every run above it too (``Caller.failed``), as it fails a
  run: no model is shown an error it could act on by calling again, and once the store works the
  top run resumes into the sub-run.

Nested sub-runs scope again (``call_1/call_2/call_1.1``). Under a parent without a store a
sub-run is kept in memory: nothing is recorded, and nothing can wait (a guarded tool of a tainted
sub-run is refused, ``ctx.approve`` is an error result), so it always ends.
"""

from __future__ import annotations

import weakref
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from .errors import AerixError
from .events import End, Final, Interrupted, SubagentEvent, Waiting
from .handoffs import active_agent, limits_for
from .loop import Book, Loop, Memory, Stop, TokenBudget
from .state import Conversation, LoopState
from .tools import Tool, ToolContext, WaitingForApproval, tool
from .trust import TrustFlag

if TYPE_CHECKING:
    from .agent import Agent
    from .calls import Caller

__all__ = ["SubRun", "agent_of", "agent_tool"]

T = TypeVar("T")

agent_of: weakref.WeakKeyDictionary[Tool, Agent] = weakref.WeakKeyDictionary()  # an as_tool tool -> its agent (trace_spans.py)


class SubAgentEnded(Exception):
    """The sub-agent's run ended without an answer; the message becomes the call's error result."""


class _Tokens:
    """The parent's token budget, paid as the sub-run spends: at each checkpoint and at its end."""

    def __init__(self, budget: TokenBudget | None, spent: int) -> None:
        self.budget, self.spent = budget, spent

    def settle(self, state: LoopState) -> None:
        if self.budget is not None and state.tokens > self.spent:
            self.budget.spend(state.tokens - self.spent)
        self.spent = max(self.spent, state.tokens)


class SubRun:
    """The book of a sub-run of a durable run: its checkpoints in the parent's, its effects,
    emits and approvals through the parent's book, scoped by the calling call's id."""

    durable = True

    def __init__(self, caller: Caller, tokens: _Tokens) -> None:
        self.caller = caller
        self.parent: Book = caller.loop.book
        self.run_id: str | None = f"{self.parent.run_id}/{caller.call_id}"
        self.tokens = tokens

    def scoped(self, call_id: str) -> str:
        return f"{self.caller.call_id}/{call_id}"

    def keep(self, conversation: Conversation, state: LoopState) -> None:
        self.tokens.settle(state)
        self.caller.loop.state.subruns[self.caller.call_id] = {**conversation.to_dict(), **state.to_dict()}

    async def checkpoint(self, conversation: Conversation, state: LoopState) -> None:
        self.keep(conversation, state)
        parent = self.caller.loop
        await self.failing(self.parent.checkpoint(parent.conversation, parent.state))

    async def failing(self, step: Awaitable[T]) -> T:
        """``step``; a store that fails under it fails every run above too (``Caller.failed``),
        as it fails a run, so the top run resumes into this sub-run once the store works again."""
        try:
            return await step
        except AerixError as e:
            book: Book = self
            while e.kind == "store" and isinstance(book, SubRun):
                book.caller.failed = e
                book = book.parent
            raise

    async def close(self, conversation: Conversation, state: LoopState, stop: Stop) -> Stop:
        """A wait is kept for the parent's checkpoint, which the parent's own wait writes; an
        ending is the call's result, and the call's end drops the sub-run's checkpoint."""
        if isinstance(stop, Waiting):
            self.keep(conversation, state)
        return stop

    def approver(self, call_id: str) -> Callable[..., Any] | None:
        return self.parent.approver(self.scoped(call_id))

    async def run_effect(self, tool: Tool, input: Any, ctx: ToolContext) -> tuple[str, bool]:
        return await self.failing(self.parent.run_effect(tool, input, replace(ctx, call_id=self.scoped(ctx.call_id))))

    async def recorded_effect(self, key: str) -> str | None:
        return await self.parent.recorded_effect(key)

    async def record_effect(self, key: str, result: str) -> None:
        await self.parent.record_effect(key, result)


def agent_tool(agent: Agent, name: str, description: str, trust: dict[str, TrustFlag] | None = None, parallel: bool = False) -> Tool:
    """A tool that runs ``agent`` on the task it is given."""
    if not isinstance(description, str) or not description.strip():
        raise AerixError("options", f"as_tool({name!r}) needs a description of what the agent does")

    async def run(input: dict[str, Any], ctx: ToolContext) -> str:
        caller: Caller | None = ctx.caller
        await agent.state.load()  # the sub-agent's state as the store has it now, as a run's
        loop, tokens = _sub_run(agent, input["task"], ctx)
        last: Any = None
        try:
            async with aclosing(loop.events()) as events:
                async for ev in events:
                    last = ev
                    if caller is not None:  # live, to the parent's caller, under this call
                        await caller.surface(SubagentEvent(caller.call_id, name, agent.name, ev))
        finally:
            tokens.settle(loop.state)
            if caller is not None:
                caller.tainted = caller.tainted or loop.conversation.taint is not None
                if not isinstance(last, Waiting):  # ended (or stopped): nothing to resume into
                    caller.loop.state.subruns.pop(caller.call_id, None)
        if isinstance(last, Final):
            return last.text
        if isinstance(last, Waiting):  # the parent waits for it (a sub-run in memory cannot wait)
            raise WaitingForApproval({"id": last.approval_id, "title": last.title, "body": last.body})
        why = f"{last.reason}: {last.message}" if isinstance(last, End) else "interrupted" if isinstance(last, Interrupted) else "no ending"
        raise SubAgentEnded(f"the agent {agent.name!r} ended without an answer ({why})")

    made: Tool = tool(
        name=name,
        description=description,
        input={"task": {"type": "string", "required": True, "description": "What to do, in full: the agent sees only this"}},
        run=run,
        trust=trust,
        parallel=parallel,
    )
    agent_of[made] = agent
    return made


def _sub_run(agent: Agent, task: str, ctx: ToolContext) -> tuple[Loop, _Tokens]:
    """The sub-run's loop: resumed from the parent's checkpoint of it, or started on ``task``;
    tainted if the parent is, capped by what is left of the parent's tokens."""
    caller: Caller | None = ctx.caller
    parent = None if caller is None else caller.loop  # None: the tool was run outside a run
    saved = None if caller is None else caller.loop.state.subruns.get(caller.call_id)
    conversation = Conversation.from_dict(saved) if saved is not None else Conversation([{"role": "system", "content": agent.system}])
    if caller is not None and saved is not None and active_agent(agent, conversation) is None:  # also after a handoff in it (handoffs.py)
        del caller.loop.state.subruns[caller.call_id]  # the call ends here: nothing to resume into
        raise SubAgentEnded(f"the sub-run of {agent.name!r} was started by an agent with other instructions or tools")
    state = LoopState.from_dict(saved) if saved is not None else LoopState()
    if saved is None:
        conversation.add("user", task)
    if parent is not None and parent.conversation.taint is not None and conversation.taint is None:
        conversation.taint = dict(parent.conversation.taint)  # the task may carry what tainted the parent
    budget = None if parent is None else parent.budget
    tokens = _Tokens(budget, state.tokens)
    book: Book = SubRun(caller, tokens) if caller is not None and caller.loop.book.durable else Memory()
    loop = Loop(agent, conversation, state, ctx.signal, book, ctx.invoker)
    left = None if budget is None else budget.left
    if left is not None:  # the parent's budget bounds the sub-run (and a handoff in it), and pays for it
        loop.ceiling = state.tokens + left
        loop.limits = limits_for(loop.agent, loop.ceiling)
    return loop, tokens
