"""Context keys (issue 19, point 2): values by reference, never stored."""

from __future__ import annotations

import pytest
from helpers import calls, collect, final

from aerix import AerixError, Agent, ContextKey, tool
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

GITHUB = ContextKey("github")
SESSION = ContextKey("session")


class Client:
    def __init__(self, name):
        self.name = name


def reader(seen):
    return tool(name="read", description="Reads.", input={}, run=lambda i, c: seen.append(c.get(GITHUB)) or c.get_or_fail(GITHUB).name)


async def test_a_tool_reads_the_value_provided_by_reference():
    seen, client = [], Client("gh")
    agent = Agent(model=ScriptedModel([calls(("read", {})), final("ok")]), tools=[reader(seen)], context={GITHUB: client})
    events = await collect(agent.run("go"))
    assert seen == [client] and seen[0] is client and [e.text for e in events if e.type == "result"] == ["gh"]


async def test_a_missing_key_is_a_clear_error_result_and_get_has_a_default():
    bad = tool(name="read", description="Reads.", input={}, run=lambda i, c: c.get(SESSION, "none") + c.get_or_fail(SESSION))
    events = await collect(Agent(model=ScriptedModel([calls(("read", {})), final("ok")]), tools=[bad]).run("go"))
    (result,) = [e for e in events if e.type == "result"]
    assert result.error and "'session'" in result.text and events[-1].type == "final"


async def test_values_are_never_stored_and_a_resumed_run_gets_the_new_agents():
    seen = []

    async def asking(i, c):
        await c.approve("ok?")
        seen.append(c.get(GITHUB))
        return "done"

    store = MemoryStore()
    first = Agent(model=ScriptedModel([calls(("ask", {})), final("ok")]), tools=[tool(name="ask", description="Asks.", input={}, run=asking)], store=store, context={GITHUB: Client("CLIENT-OLD-7f3a")})
    waiting = (await collect(first.run("go")))[-1]
    assert "CLIENT-OLD-7f3a" not in repr(await store.list_runs())
    second = Agent(model=ScriptedModel([calls(("ask", {})), final("ok")]), tools=[tool(name="ask", description="Asks.", input={}, run=asking)], store=store)
    second.provide(GITHUB, Client("new"))
    await collect(second.approve(waiting.run_id, waiting.approval_id, True))
    assert [c.name for c in seen] == ["new"]


def test_bad_keys_are_refused():
    with pytest.raises(AerixError):
        ContextKey("")
    with pytest.raises(AerixError):
        Agent(model=ScriptedModel([]), context={"github": 1})
