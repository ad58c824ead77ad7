"""Agents as tools (issue 19, point 6)."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import calls, collect, final

from aerix import Abort, AerixError, Agent, Limits, tool
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


def researcher(replies, **kw):
    return Agent(model=ScriptedModel(replies), instructions="You research.", name="researcher", **kw)


async def test_the_sub_agents_final_is_the_result_and_it_starts_from_its_own_conversation():
    sub = researcher([final("Lisbon is sunny")])
    parent = Agent(model=ScriptedModel([calls(("research", {"task": "Weather in Lisbon?"})), final("It is sunny.")]), tools=[sub.as_tool("research", "Researches a question.")])
    events = await collect(parent.run("Umbrella?"))
    assert [e.text for e in events if e.type == "result"] == ["Lisbon is sunny"] and events[-1].text == "It is sunny."
    asked = sub.model.calls[0].messages
    assert [m["role"] for m in asked] == ["system", "user"] and asked[1]["content"] == "Weather in Lisbon?"
    assert sub.messages == [{"role": "system", "content": sub.system}]  # the sub-agent's own conversation is untouched


async def test_a_sub_agent_without_an_answer_is_the_calls_error_and_the_parent_goes_on():
    sub = researcher([calls(("nope", {}))] * 5, limits=Limits(turns=2, retries=5))
    parent = Agent(model=ScriptedModel([calls(("research", {"task": "x"})), final("gave up")]), tools=[sub.as_tool("research", "Researches.")])
    events = await collect(parent.run("go"))
    (result,) = [e for e in events if e.type == "result"]
    assert result.error and "'researcher' ended without an answer (turns" in result.text and events[-1].text == "gave up"


async def test_the_parents_abort_stops_the_sub_agent():
    signal = Abort()

    async def slow(input, ctx):
        signal.abort()
        await asyncio.sleep(3600)

    sub = researcher([calls(("slow", {})), final("never")], tools=[tool(name="slow", description="Slow.", input={}, run=slow)])
    parent = Agent(model=ScriptedModel([calls(("research", {"task": "x"})), final("no")]), tools=[sub.as_tool("research", "Researches.")])
    events = await collect(parent.run("go", signal=signal))
    assert events[-1].type == "end" and events[-1].reason == "abort"


async def test_a_durable_parent_records_the_sub_agents_answer_once():
    sub = researcher([final("answer one"), final("answer two")])
    store = MemoryStore()

    async def ask(input, ctx):
        await ctx.approve("go on?")
        return "ok"

    tools = [sub.as_tool("research", "Researches."), tool(name="ask", description="Asks.", input={}, run=ask)]
    parent = Agent(model=ScriptedModel([calls(("research", {"task": "x"}), ("ask", {})), final("done")]), tools=tools, store=store)
    waiting = (await collect(parent.run("go")))[-1]
    assert waiting.type == "waiting" and len(sub.model.calls) == 1
    more = await collect(parent.approve(waiting.run_id, waiting.approval_id, True))
    assert more[-1].text == "done" and len(sub.model.calls) == 1  # not asked again on resume


def test_as_tool_needs_a_name_and_a_description():
    sub = researcher([])
    for name, description in (("Bad Name", "x"), ("ok", "")):
        with pytest.raises(AerixError) as e:
            sub.as_tool(name, description)
        assert e.value.kind == "options"


async def test_the_sub_run_spends_the_parents_token_budget():
    # ScriptedModel counts characters as tokens: the sub-agent's generation costs the parent
    sub = researcher([final("a long answer " * 20)])
    parent = Agent(
        model=ScriptedModel([calls(("research", {"task": "x"})), final("never asked")]),
        tools=[sub.as_tool("research", "Researches.")],
        limits=Limits(max_total_tokens=1000),
    )
    events = await collect(parent.run("go"))
    (usage_parent,) = [e for e in events if e.type == "usage"]
    assert usage_parent.prompt_tokens + usage_parent.completion_tokens < 1000  # the parent alone fits
    assert events[-1].type == "end" and events[-1].reason == "tokens"  # the sub-run used up what was left
    assert sub.model.calls and len(parent.model.calls) == 1
