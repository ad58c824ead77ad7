"""Agents as tools: ``agent.as_tool(name, description)``.

The tool's input is ``{"task": str}``; each call runs the agent on that task in a conversation of
its own (its system message, then the task), under the calling run's signal, so the parent's
abort and ``timeout_s`` stop it too, and the tokens it uses count against the parent's
``max_total_tokens`` (what is left of it caps the sub-run); its own ``Limits`` bound it besides. Its invoker is the parent run's. The result is the
sub-agent's final answer (its output JSON, with structured output); any other ending is the
call's error result, naming the reason. It is an effect tool, so a durable parent records the
answer once and a resumed parent does not ask the sub-agent again.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .errors import AerixError
from .events import End, Final
from .loop import Loop, Memory
from .state import Conversation, LoopState
from .tools import Tool, ToolContext, tool

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["agent_tool"]


class SubAgentEnded(Exception):
    """The sub-agent's run ended without an answer; the message becomes the call's error result."""


def agent_tool(agent: Agent, name: str, description: str) -> Tool:
    """A tool that runs ``agent`` on the task it is given."""
    if not isinstance(description, str) or not description.strip():
        raise AerixError("options", f"as_tool({name!r}) needs a description of what the agent does")

    async def run(input: dict[str, Any], ctx: ToolContext) -> str:
        conversation = Conversation([{"role": "system", "content": agent.system}])
        conversation.add("user", input["task"])
        loop = Loop(agent, conversation, LoopState(), ctx.signal, Memory(), ctx.invoker)
        budget = ctx.budget
        left = None if budget is None else budget.left
        if left is not None:  # the parent's budget bounds the sub-run, and pays for it
            own = agent.limits.max_total_tokens
            loop.limits = replace(agent.limits, max_total_tokens=max(1, left if own is None else min(own, left)))
        last: Any = None
        try:
            async with aclosing(loop.events()) as events:
                async for ev in events:
                    last = ev
        finally:
            if budget is not None:
                budget.spend(loop.state.tokens)
        if isinstance(last, Final):
            return last.text
        why = f"{last.reason}: {last.message}" if isinstance(last, End) else "no ending"
        raise SubAgentEnded(f"the agent {agent.name!r} ended without an answer ({why})")

    made: Tool = tool(
        name=name,
        description=description,
        input={"task": {"type": "string", "required": True, "description": "What to do, in full: the agent sees only this"}},
        run=run,
        effect=True,
    )
    return made
