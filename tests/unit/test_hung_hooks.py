"""Every callback the developer gives the loop is interrupted like a tool (issue 26, items 1, 14).

A hung ``before_call``, ``after_call``, ``on_final``, async trust flag (taint or guard) or async
``tool_policy`` (asked at run start for the turn schema, and before each call) ends the run on
the signal (``end abort``) or at ``Limits.timeout_s`` (``end timeout``), with exactly one ending,
the conversation whole, and the agent free for the next run. The tool policy's contract: only
``True`` allows, a policy that raises refuses the call (``refused: policy error: ...``), and an
async policy is awaited.

Each run is bounded here (``BOUND_S``) so that a hang fails the test instead of hanging it.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from helpers import calls, collect, final, kinds

from aerix import Abort, AerixError, Agent, Hooks, Invoker, Limits, require_tool_permission, tool
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

BOUND_S = 5.0  # a hang fails the test after this; an interrupted hook ends in milliseconds
PROMPTLY = 2.0


async def forever(*_args):
    await asyncio.sleep(3600)


def read_page():
    return tool(name="read_page", description="Read a page.", input={}, run=lambda i, c: "outside text", trust={"taint": True})


def note(taint=False, guard=False):
    return tool(name="note", description="Keep a note.", input={}, run=lambda i, c: "noted", trust={"taint": taint, "guard_when_tainted": guard})


NOTE = calls(("note", {}))


# (agent options, script) per callback that hangs
HUNG = {
    "before_call": (dict(tools=[note()], hooks=Hooks(before_call=forever)), [NOTE]),
    "after_call": (dict(tools=[note()], hooks=Hooks(after_call=forever)), [NOTE]),
    "on_final": (dict(hooks=Hooks(on_final=forever)), [final("done")]),
    "taint flag": (dict(tools=[note(taint=forever)]), [NOTE]),
    "guard flag": (dict(tools=[read_page(), note(guard=forever)], on_tainted="deny"), [calls(("read_page", {})), NOTE]),
    "tool_policy at a call": (dict(tools=[note()], tool_policy=forever, constrain=False), [NOTE]),
    "tool_policy at run start": (dict(tools=[note()], tool_policy=forever), [NOTE]),
}


async def bounded(stream):
    async with asyncio.timeout(BOUND_S):
        return await collect(stream)


def whole(messages):
    """The conversation alternates user and assistant after the system message, and every
    assistant turn with calls is answered."""
    roles = [m["role"] for m in messages]
    return roles[0] == "system" and all(r == ("user" if i % 2 else "assistant") for i, r in enumerate(roles[1:], 1))


async def end_and_next_run(agent, **run):
    start = time.monotonic()
    events = await bounded(agent.run("go", **run))
    took = time.monotonic() - start
    assert [e.type for e in events].count("end") + [e.type for e in events].count("final") == 1
    assert events[-1].type == "end" and took < PROMPTLY
    assert whole(agent.messages), agent.messages
    agent.hooks, agent.tool_policy = Hooks(), None
    agent.model = ScriptedModel([final("ok")])
    again = await bounded(agent.run("again"))
    assert again[-1].type == "final" and again[-1].text == "ok"
    return events


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("hung", list(HUNG))
async def test_a_hung_callback_ends_the_run_at_the_timeout(hung, durable):
    options, script = HUNG[hung]
    store = MemoryStore() if durable else None
    agent = Agent(model=ScriptedModel(list(script)), limits=Limits(timeout_s=0.2), store=store, **options)
    events = await end_and_next_run(agent)
    assert events[-1].reason == "timeout", events[-1]


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "durable"])
@pytest.mark.parametrize("hung", list(HUNG))
async def test_a_hung_callback_ends_the_run_on_the_signal(hung, durable):
    options, script = HUNG[hung]
    agent = Agent(model=ScriptedModel(list(script)), store=MemoryStore() if durable else None, **options)
    signal = Abort()
    asyncio.get_running_loop().call_later(0.05, signal.abort, "stop pressed")
    events = await end_and_next_run(agent, signal=signal)
    assert events[-1].reason == "abort", events[-1]


async def test_a_call_interrupted_in_a_hook_is_closed_cancelled():
    agent = Agent(model=ScriptedModel([calls(("note", {}), ("note", {"x": 1}))]), tools=[note()], hooks=Hooks(after_call=forever), limits=Limits(timeout_s=0.1))
    events = await bounded(agent.run("go"))
    assert kinds(events) == ["turn", "result", "result", "end"]  # as for a hung tool: a call event comes with its result
    assert [e.text for e in events if e.type == "result"] == ["cancelled: " + events[-1].message] * 2


async def test_a_hung_before_call_sees_the_signal_aborted_and_stops():
    seen = []

    async def hook(call, ctx):
        try:
            await asyncio.sleep(3600)
        finally:
            seen.append(ctx.signal.aborted)

    agent = Agent(model=ScriptedModel([NOTE]), tools=[note()], hooks=Hooks(before_call=hook), limits=Limits(timeout_s=0.1))
    events = await bounded(agent.run("go"))
    assert events[-1].reason == "timeout" and seen == [True]


async def test_an_aborted_on_final_is_not_a_final_answer():
    signal = Abort()

    async def on_final(text):
        signal.abort("stop pressed")
        await asyncio.sleep(3600)

    agent = Agent(model=ScriptedModel([final("done")]), hooks=Hooks(on_final=on_final))
    events = await bounded(agent.run("go", signal=signal))
    assert kinds(events) == ["turn", "end"] and events[-1].reason == "abort"
    assert "on_final" in events[-1].message


# -- the tool policy's contract (item 14) ------------------------------------------------------


def results(events):
    return [e.text for e in events if e.type == "result"]


async def policy_run(policy, constrain=False):
    model = ScriptedModel([NOTE, final("ok")])
    agent = Agent(model=model, tools=[note()], tool_policy=policy, constrain=constrain)
    events = await bounded(agent.run("go"))
    assert events[-1].type == "final"
    return results(events), model


@pytest.mark.parametrize("answer", ["deny", "yes", 1, [True], None, {"allow": True}])
async def test_only_true_allows_a_tool(answer):
    texts, _ = await policy_run(lambda agent, tool, invoker: answer)
    assert texts == ["refused: permission tool:agent:note"]


async def test_a_raising_policy_refuses_the_call_and_nothing_escapes():
    def policy(agent, tool, invoker):
        raise KeyError("no such user")

    texts, _ = await policy_run(policy)
    assert texts == ["refused: policy error: KeyError: 'no such user'"]


async def test_an_async_policy_is_awaited():
    async def allow(agent, tool, invoker):
        await asyncio.sleep(0)
        return True

    async def deny(agent, tool, invoker):
        return False

    assert (await policy_run(allow))[0] == ["noted"]
    assert (await policy_run(deny))[0] == ["refused: permission tool:agent:note"]


def schema_tools(model):
    """The tool names the turn schema of the run's first generation allows."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("tool"), dict) and "const" in node["tool"]:
                found.append(node["tool"]["const"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(model.calls[0].options["constraint"])
    return sorted(found)


async def test_the_turn_schema_asks_an_async_or_raising_policy_too():
    async def only_note(agent, tool, invoker):
        return tool == "note"

    model = ScriptedModel([final("ok")])
    agent = Agent(model=model, tools=[note(), read_page()], tool_policy=only_note)
    assert (await bounded(agent.run("go")))[-1].type == "final"
    assert schema_tools(model) == ["note"]

    def raising(agent, tool, invoker):
        if tool == "read_page":
            raise RuntimeError("policy store down")
        return True

    model = ScriptedModel([final("ok")])
    agent = Agent(model=model, tools=[note(), read_page()], tool_policy=raising)
    assert (await bounded(agent.run("go")))[-1].type == "final"
    assert schema_tools(model) == ["note"]  # a policy that raises leaves the tool out


async def test_require_tool_permission_still_works_with_an_invoker():
    model = ScriptedModel([NOTE, final("ok")])
    agent = Agent(model=model, tools=[note()], name="assistant", tool_policy=require_tool_permission(), constrain=False)
    ana = Invoker("ana", permissions=["tool:assistant:*"])
    assert results(await bounded(agent.run("go", invoker=ana))) == ["noted"]
    agent.model = ScriptedModel([NOTE, final("ok")])
    assert results(await bounded(agent.run("go", invoker=Invoker("bo")))) == ["refused: permission tool:assistant:note"]


# -- Invoker.of (low item) ---------------------------------------------------------------------


@pytest.mark.parametrize("permissions", ["tool:a:b", "admin", "*"])
async def test_invoker_of_refuses_a_permissions_string_instead_of_splitting_it(permissions):
    with pytest.raises(AerixError) as caught:
        Invoker.of({"id": "ana", "permissions": permissions})
    assert caught.value.kind == "options" and "permissions" in caught.value.message
    assert Invoker.of({"id": "ana", "permissions": [permissions]}).permissions == (permissions,)
    assert Invoker.of({"id": "ana"}).permissions == () == Invoker.of({"id": "ana", "permissions": None}).permissions


# -- the page's toolPolicy (JavaScript): a Promise is awaited, a throw refuses ------------------


async def test_a_page_tool_policy_may_answer_a_promise_or_throw(monkeypatch):
    from aerix import page_options
    from aerix.trust import policy_refusal

    answers = {"note": True, "send": False, "read_page": RuntimeError("Error: no user")}  # as call_js gives them

    async def call_js(fn, agent, tool, invoker):
        await asyncio.sleep(0)  # a Promise
        if isinstance(answers[tool], Exception):
            raise answers[tool]  # a JsException, on CPython any exception
        return answers[tool]

    monkeypatch.setattr(page_options, "call_js", call_js)
    policy = page_options._js_policy(lambda *args: None)
    assert await policy_refusal(policy, "agent", "note", None) is None
    assert await policy_refusal(policy, "agent", "send", None) == "refused: permission tool:agent:send"
    assert await policy_refusal(policy, "agent", "read_page", None) == "refused: policy error: RuntimeError: Error: no user"
