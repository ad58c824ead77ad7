"""A sub-run's events reach the parent's caller, live, each in a ``subagent`` event under the
calling call's id (issue 28: they were swallowed, the caller saw only the result)."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import Crash, CrashingStore, calls, collect, endings, final, kinds

from aerix import Abort, Agent, Hooks, tool
from aerix.events import Call, Final, event_from_dict
from aerix.page import event_view
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


def lookup_tool(run=None):
    return tool(name="lookup", description="Find someone.", input={"who": {"type": "string", "required": True}}, run=run or (lambda i, c: f"{i['who']}@example.org"))


def researcher(replies, tools=None, **kw):
    return Agent(model=ScriptedModel(replies), instructions="You research.", name="researcher", tools=tools or [lookup_tool()], **kw)


FIND_ANA = [calls(("lookup", {"who": "ana"})), final("ana@example.org")]
PARENT = [calls(("research", {"task": "find ana"})), final("Her address is ana@example.org.")]


def nested(events, call_id=None):
    """The inner events of the ``subagent`` events (of the call ``call_id``), in order."""
    return [e.event for e in events if e.type == "subagent" and call_id in (None, e.call_id)]


def between_call_and_result(events, call_id):
    """The parent's events after its ``call`` of ``call_id`` and before that call's ``result``."""
    start = next(i for i, e in enumerate(events) if e.type == "call" and e.id == call_id)
    end = next(i for i, e in enumerate(events) if e.type == "result" and e.id == call_id)
    return events[start + 1 : end]


async def test_the_sub_agents_call_result_and_final_reach_the_parents_caller_under_the_calling_call():
    sub = researcher(FIND_ANA)
    parent = Agent(model=ScriptedModel(PARENT), tools=[sub.as_tool("research", "Researches.")])
    events = await collect(parent.run("Where is Ana?"))
    assert [k for k in kinds(events) if k != "subagent"] == ["turn", "call", "result", "turn", "final"]
    assert len(endings(events)) == 1 and events[-1].text == "Her address is ana@example.org."  # one ending of its own
    wrapped = [e for e in events if e.type == "subagent"]
    assert wrapped and all((e.call_id, e.tool, e.agent) == ("call_1", "research", "researcher") for e in wrapped)
    assert between_call_and_result(events, "call_1") == wrapped  # all of them, and only there
    inner = nested(events, "call_1")
    assert kinds(inner) == ["turn", "call", "result", "turn", "final"]
    _, call, result, _, ending = [e for e in inner if e.type not in ("text", "final_delta", "usage")]
    assert (call.tool, call.input, result.id, result.text) == ("lookup", {"who": "ana"}, call.id, "ana@example.org")
    assert ending.text == "ana@example.org" and [e.text for e in events if e.type == "result"] == ["ana@example.org"]
    assert [e.type for e in inner if e.type in ("text", "usage")][-1] == "usage"  # its stream too: what a UI shows as it comes


async def test_the_sub_runs_events_come_while_it_runs_not_after_the_call_returns():
    opened = asyncio.Event()

    async def waits(input, ctx):
        await opened.wait()  # opened by the parent's caller, once it saw the sub-run's turn that calls it
        return "found"

    sub = researcher(FIND_ANA, tools=[lookup_tool(waits)])
    parent = Agent(model=ScriptedModel(PARENT), tools=[sub.as_tool("research", "Researches.")])
    seen = []

    async def read():
        async for ev in parent.run("Where is Ana?"):
            seen.append(ev)
            if ev.type == "subagent" and ev.event.type == "turn":
                assert not any(e.type == "result" for e in seen)  # the parent's call has not returned
                opened.set()

    await asyncio.wait_for(read(), 5)
    assert seen[-1].type == "final" and opened.is_set()


async def test_a_nested_sub_run_nests_again_under_each_calling_call():
    leaf = Agent(model=ScriptedModel(FIND_ANA), name="leaf", tools=[lookup_tool()])
    mid = Agent(model=ScriptedModel([calls(("leaf", {"task": "find ana"})), final("mid found her")]), name="mid", tools=[leaf.as_tool("leaf", "Leaf.")])
    top = Agent(model=ScriptedModel([calls(("mid", {"task": "go"})), final("done")]), tools=[mid.as_tool("mid", "Mid.")])
    events = await collect(top.run("go"))
    assert len(endings(events)) == 1 and events[-1].text == "done"
    mids = nested(events, "call_1")
    assert [k for k in kinds(mids) if k != "subagent"] == ["turn", "call", "result", "turn", "final"]
    leafs = [e for e in mids if e.type == "subagent"]
    assert all((e.call_id, e.tool, e.agent) == ("call_1", "leaf", "leaf") for e in leafs)  # call_1 of the mid run
    assert kinds([e.event for e in leafs]) == ["turn", "call", "result", "turn", "final"]
    assert between_call_and_result(mids, "call_1") == leafs


async def test_the_call_shown_early_is_the_call_as_it_runs():
    async def fix(call, ctx):
        return {"input": {"task": "find ana, politely"}}

    sub = researcher(FIND_ANA)
    parent = Agent(model=ScriptedModel(PARENT), tools=[sub.as_tool("research", "Researches.")], hooks=Hooks(before_call=fix))
    events = await collect(parent.run("go"))
    (call,) = [e for e in events if e.type == "call"]
    assert call.input == {"task": "find ana, politely"} and sub.model.calls[0].messages[1]["content"] == "find ana, politely"


async def test_to_dict_and_the_pages_view_nest_the_inner_event():
    from aerix import SubagentEvent

    inner = SubagentEvent("call_2", "leaf", "leaf", Call("call_1", "lookup", {"who_is": "ana"}))
    ev = SubagentEvent("call_1", "research", "researcher", inner)
    plain = ev.to_dict()
    assert plain == {
        "type": "subagent", "call_id": "call_1", "tool": "research", "agent": "researcher",
        "event": {"type": "subagent", "call_id": "call_2", "tool": "leaf", "agent": "leaf", "event": {"type": "call", "id": "call_1", "tool": "lookup", "input": {"who_is": "ana"}}},
    }
    assert event_from_dict(json.loads(json.dumps(plain))) == ev
    view = event_view(ev)
    assert view["callId"] == "call_1" and view["event"]["callId"] == "call_2" and "call_id" not in view["event"]
    assert view["event"]["event"]["input"] == {"who_is": "ana"}  # tool inputs keep their keys
    assert event_view(SubagentEvent("call_1", "r", "r", Final("a", None)))["event"] == {"type": "final", "text": "a", "thought": None}


async def test_an_abort_during_the_sub_run_ends_the_parent_once_after_the_nested_events():
    signal = Abort()

    async def slow(input, ctx):
        await asyncio.sleep(3600)

    sub = researcher([calls(("lookup", {"who": "ana"})), final("never")], tools=[lookup_tool(slow)])
    parent = Agent(model=ScriptedModel(PARENT), tools=[sub.as_tool("research", "Researches.")])
    events = []

    async def read():
        async for ev in parent.run("go", signal=signal):
            events.append(ev)
            if ev.type == "subagent" and ev.event.type == "turn":
                signal.abort()  # the sub-run's tool is about to hang

    await asyncio.wait_for(read(), 5)
    assert len(endings(events)) == 1 and events[-1].type == "end" and events[-1].reason == "abort"
    (result,) = [e for e in events if e.type == "result"]
    assert result.text.startswith("cancelled") and between_call_and_result(events, "call_1")[-1].type == "subagent"


async def test_a_caller_that_stops_reading_mid_sub_run_stops_it_and_the_agent_runs_again():
    sub = researcher(FIND_ANA)
    parent = Agent(model=ScriptedModel(PARENT), tools=[sub.as_tool("research", "Researches.")])
    stream = parent.run("go")
    async for ev in stream:
        if ev.type == "subagent":
            break
    await stream.aclose()
    assert len(sub.model.calls) == 1  # stopped at its first event: it went no further
    parent.model = ScriptedModel([final("again")])
    assert (await collect(parent.run("again?")))[-1].text == "again"


# -- durable: what a resume shows ------------------------------------------------------------


def asker(replies):
    async def ask(input, ctx):
        return "yes" if await ctx.approve("may I?") else "no"

    return researcher(replies, tools=[tool(name="ask", description="Asks.", input={}, run=ask)])


async def test_a_waiting_sub_run_shows_its_work_once_and_on_resume_only_what_comes_after():
    sub = asker([calls(("ask", {}), thought="ask first"), final("asked")])
    parent = Agent(model=ScriptedModel([calls(("research", {"task": "x"})), final("done")]), tools=[sub.as_tool("research", "R.")], store=MemoryStore())
    first = await collect(parent.run("go"))
    assert [k for k in kinds(first) if k != "subagent"] == ["turn", "call", "waiting"]
    before = nested(first, "call_1")
    assert kinds(before) == ["turn", "waiting"] and before[-1].approval_id == first[-1].approval_id == "call_1/call_1.1"
    more = await collect(parent.approve(first[-1].run_id, first[-1].approval_id, True))
    # the call runs again from its start, so its `call` comes again; the sub-run resumes where it stood
    assert [k for k in kinds(more) if k != "subagent"] == ["call", "result", "turn", "final"]
    after = nested(more, "call_1")
    assert kinds(after) == ["call", "result", "turn", "final"] and [e.text for e in after if e.type == "result"] == ["yes"]
    assert [e.turn for e in before + after if e.type == "turn"] == [1, 2]  # each generation shown once
    assert between_call_and_result(more, "call_1") == [e for e in more if e.type == "subagent"]


def keyed(script):
    """A model that answers a conversation it has seen as before (a generation asked again after a
    crash), and a new one with the next of ``script``."""
    said = {}

    def reply(messages, options):
        return said.setdefault(json.dumps(messages), script[sum(m["role"] == "assistant" for m in messages)])

    return ScriptedModel(reply)


@pytest.mark.parametrize("at", range(1, 13))
async def test_a_crash_anywhere_in_a_sub_run_shows_none_of_its_steps_twice(at):
    store = CrashingStore(at=at)
    sub_model = keyed([calls(("lookup", {"who": "ana"})), calls(("lookup", {"who": "bo"})), final("both")])
    parent_model = keyed([calls(("research", {"task": "x"})), final("done")])

    def page():  # a new page on the same store
        sub = Agent(model=sub_model, instructions="You research.", name="researcher", tools=[lookup_tool()])
        return Agent(model=parent_model, tools=[sub.as_tool("research", "R.")], store=store)

    first = []
    with pytest.raises(Crash):
        async for ev in page().run("go", run_id="r1"):
            first.append(ev)
    second = page()
    await second.recover()
    again = await collect(second.resume("r1"))
    assert len(endings(again)) == 1 and again[-1].text == "done"
    steps = [(e.type, getattr(e, "turn", getattr(e, "id", None))) for e in nested(first) + nested(again) if e.type in ("turn", "result", "final")]
    assert len(steps) == len(set(steps)), f"a step of the sub-run shown twice: {steps}"
    assert ("final", None) in steps
