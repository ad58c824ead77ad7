"""Handoffs: ``Agent(handoffs=[billing, support])`` lets the model hand the conversation to another agent.

    billing = Agent(model, name="billing", description="Invoices, refunds.", tools=[refund])
    triage = Agent(model, name="triage", handoffs=[billing])
    await triage.ask("I was charged twice")     # triage calls handoff_billing; billing answers
    await triage.ask("And the other card?")     # billing goes on: it is the active agent now
    triage.reset()                              # back to triage

**The tools.** Each target becomes a tool ``handoff_<name>`` (the target's ``name`` lowercased,
``.`` and ``-`` written ``_``), described by the target's ``Agent(description=...)``, input
``{"reason"?: string}``. A target that is not an Agent, has no ``name``, has the source's name, or
makes a tool name another tool or target already has, is ``AerixError(kind="options")`` naming
it. The source's turn schema offers its own tools and its ``handoff_*`` tools, never a target's
tools; they are offered once the target is active. A handoff is a tool as any other on the way
to its run (``calls.py``): the ``tool_policy`` may refuse it (``tool:<source>:handoff_<name>``),
a ``before_call`` hook may deny it; only a handoff call whose result is not an error switches.
The repeat guard never answers a handoff from an earlier one's result (each one switches), but
counts it in a row as any call.

**The switch** (:func:`hand_off`, in the calls phase, right after the handoff call's result):
the calls the turn wrote after it get ``cancelled: handed off to <name>`` results (they were the
source's, and the conversation is not the source's any more), the turn's results go back as
usual (the handoff's own is ``handed off to <name>``), the system message becomes the target's,
and from the next generation the run is the target's: its instructions, model, tools (and their
turn schema, narrowed for the same invoker by its ``tool_policy``), handoffs, ``Limits``,
``output``, hooks, compaction, ``tool_policy``, ``on_tainted``, context and state (``ctx.state``,
loaded from its store). The run stays one run: one record, the starting Agent's channels and
artifacts, the same invoker and signal, and the conversation so far whole (every user,
assistant and results message: nothing is filtered), with its taint: a tainted conversation
stays tainted, so the target's guarded tools wait for approval or are refused. Its counters go
on, not restart: generations, tokens, time, retries in a row and the repeat guard's memory are
the run's, checked against the active agent's ``Limits`` (a target with ``turns=4`` in a run
that used 3 has one left), so a cycle of handoffs ends by ``turns`` (or ``max_total_tokens``,
``timeout_s``) like any loop. Events: the handoff's ``call`` and ``result``, then ``handoff
{source, target}`` (agent names), then the cancelled results; exactly one ending for the run.

**What it costs.** The system message is the first message, so the prompt after the switch
shares nothing with the one before: the engine's prefix cache misses once, on the first
generation after the switch, which reads the whole conversation again (``usage.cached_tokens``
shows it); from there the conversation is byte-stable again.

**What remembers it.** The conversation does: ``Conversation.agent`` is the active target's
name (``None``: the Agent itself), kept in a durable run's checkpoint and in a kept conversation's
record (``conversation_id``). The next ``run``/``ask`` of the same Agent goes on with the agent
that was active when the last run ended; ``reset()`` goes back to the Agent itself. A resumed run,
a reopened kept conversation or an Agent built again finds the target by that name among the
agents its handoffs reach (and checks its system message, as for the Agent itself); one it does
not reach is ``AerixError(kind="options")`` naming it. ``load`` takes an export whose system
message is any reachable agent's.

To close a cycle (billing hands back to triage), set ``triage.handoffs = [billing]`` after both
exist, before triage's first run.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from .errors import AerixError
from .events import Event, Handoff, Result
from .limits import Limits
from .state import Conversation, Measured
from .tools import Tool, tool
from .turn import system_message, turn_schema

if TYPE_CHECKING:
    from .agent import Agent
    from .loop import Loop

__all__ = ["PREFIX", "active_agent", "check_description", "check_handoffs", "hand_off", "handed_to", "handoff_tools", "limits_for", "load_conversation", "load_state", "reachable", "set_handoffs"]

PREFIX = "handoff_"
_INPUT = {"reason": {"type": "string", "description": "Why, in a few words"}}


def check_description(description: Any) -> str | None:
    if description is not None and (not isinstance(description, str) or not description.strip()):
        raise AerixError("options", f"description must be a non-empty string or None, got {description!r}")
    return None if description is None else description.strip()


def check_handoffs(source: Agent, targets: Any, tool_names: Sequence[str]) -> dict[str, Agent]:
    """``targets`` checked: the tool name -> target map; ``options`` errors name what is wrong."""
    from .agent import Agent

    if isinstance(targets, Agent) or not isinstance(targets, (list, tuple)):
        raise AerixError("options", f"handoffs must be a list of Agents, got {type(targets).__name__}")
    out: dict[str, Agent] = {}
    for target in targets:
        if not isinstance(target, Agent):
            raise AerixError("options", f"handoffs must hold Agents, got {type(target).__name__}")
        if not target.named:
            raise AerixError("options", "a handoff target needs a name (Agent(name=...)): it names the handoff_<name> tool and the active agent")
        if target.name == source.name:
            raise AerixError("options", f"agent {source.name!r} cannot hand off to an agent of its own name")
        name = PREFIX + re.sub(r"[.\-]", "_", target.name.lower())
        if name in out:
            raise AerixError("options", f"two handoff targets make the tool {name!r} ({out[name].name!r} and {target.name!r}); give them other names")
        if name in tool_names:
            raise AerixError("options", f"the handoff to {target.name!r} makes the tool {name!r}, but the agent already has a tool of that name")
        if len(name) > 64:
            raise AerixError("options", f"the handoff to {target.name!r} makes the tool name {name!r}, longer than 64 characters")
        out[name] = target
    return out


def set_handoffs(agent: Agent, targets: Any) -> None:
    """``agent.handoffs = targets`` (and ``Agent(handoffs=...)``): its tools, system message,
    turn schema and conversation made again; only before its first run (or after ``reset()``)."""
    if len(agent._conversation.messages) > 1 or agent._running:
        raise AerixError("options", f"set the handoffs of {agent.name!r} before its first run (or after reset())")
    agent.handoff_tools = check_handoffs(agent, targets, [t.name for t in agent._own_tools])  # tool name -> target
    agent.tools = (*agent._own_tools, *handoff_tools(agent.handoff_tools))
    agent.system = system_message(agent.instructions, agent.tools, agent.output, agent.turn_format)
    agent.schema = turn_schema(agent.tools, agent.output, agent.turn_format) if agent.constrain else None
    agent._by_name = {t.name: t for t in agent.tools}
    agent._schemas = {}  # turn schemas of narrowed tool sets
    agent._conversation = Conversation([{"role": "system", "content": agent.system}])


def handoff_tools(targets: dict[str, Agent]) -> list[Tool]:
    """One ``handoff_<name>`` tool per target; its result tells the model whom it handed to."""
    return [_tool(name, target) for name, target in targets.items()]


def _tool(name: str, target: Agent) -> Tool:
    said = f"Hand the conversation over to {target.name}, who takes it from here"
    text = f"handed off to {target.name}"
    made: Tool = tool(name=name, description=f"{said}: {target.description}" if target.description else f"{said}.", input=dict(_INPUT), run=lambda input, ctx: text)
    return made


def reachable(home: Agent) -> list[Agent]:
    """``home`` and every agent its handoffs reach, breadth first, each once."""
    found, i = [home], 0
    while i < len(found):
        for target in found[i].handoff_tools.values():
            if not any(target is f for f in found):
                found.append(target)
        i += 1
    return found


def active_agent(home: Agent, conversation: Conversation) -> Agent | None:
    """The agent ``conversation`` belongs to: ``home``, or the target it was handed to
    (``conversation.agent``) among those ``home`` reaches, its system message the conversation's;
    ``None`` if none is."""
    name = conversation.agent or home.name
    system = conversation.messages[0]["content"] if conversation.messages else None
    return next((a for a in reachable(home) if a.name == name and a.system == system), None)


def handed_to(agent: Agent, result: Result) -> Agent | None:
    """The target a call's result hands the conversation to: a handoff tool's, unless an error."""
    return None if result.error else agent.handoff_tools.get(result.tool)


def load_conversation(home: Agent, messages: Any) -> Conversation:
    """An export (``Agent.messages``) checked as ``conversations.conversation_from`` checks it,
    its system message ``home``'s or that of a target ``home`` reaches, which it goes on with."""
    from .conversations import conversation_from  # it imports this module

    first = messages[0].get("content") if isinstance(messages, list) and messages and isinstance(messages[0], dict) else None
    agent = next((a for a in reachable(home) if a.system == first), home)
    conversation = conversation_from(messages, agent.system)
    conversation.agent = None if agent is home else agent.name
    return conversation


async def load_state(home: Agent, conversation: Conversation) -> None:
    """Load the state of the agent ``conversation`` was handed to, if another than ``home``."""
    active = active_agent(home, conversation)
    if active is not None and active is not home:
        await active.state.load()


async def hand_off(loop: Loop, target: Agent) -> list[Event]:
    """The switch, right after the handoff call's result: close the turn (the calls after it
    cancelled), make the conversation and the loop the target's, checkpoint. The events that
    follow the call's result: ``handoff``, then the cancelled results."""
    source = loop.agent
    closed = loop.close_turn(f"handed off to {target.name}")
    conversation = loop.conversation
    conversation.messages[0] = {"role": "system", "content": target.system}
    conversation.agent = None if target is loop.home else target.name
    if conversation.measured is not None:  # the engine's count was of the other system message
        conversation.measured = Measured(0, 0, conversation.measured.bytes_per_token)
    loop.agent, loop.schema_known, loop.state_view = target, False, target.state
    loop.limits = limits_for(target, loop.ceiling)
    if loop.deadline is not None:  # the target's timeout_s, over the run's time so far
        loop.deadline.cancel()
    loop.deadline = loop.start_deadline()
    await target.state.load()
    await loop.checkpoint()
    return [Handoff(source.name, target.name), *closed]


def limits_for(agent: Agent, ceiling: int | None) -> Limits:
    """``agent``'s limits, its ``max_total_tokens`` no more than ``ceiling`` (a sub-run's: what
    its parent's budget leaves, ``subagents.py``)."""
    own = agent.limits.max_total_tokens
    if ceiling is None:
        return agent.limits
    return replace(agent.limits, max_total_tokens=max(1, ceiling if own is None else min(own, ceiling)))
