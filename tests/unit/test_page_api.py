"""The page's agent API that JavaScript reaches through ``aerix.page`` (issue 28, point 1), on
CPython: agents named by reference (``agent.asTool`` of JS), ``agent.state``, ``concurrencyKey``,
the OpenAI path's engine options, and ``aerix.js_tool`` over a fake of the JavaScript edge."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from helpers import IN_PYODIDE, calls, collect, final

import aerix
from aerix import AerixError, Agent
from aerix import _js, page_options
from aerix.page import PageAgent, create_agent, server_model
from aerix.page_options import agent_of
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


def raw(method):
    """A ``js_facing`` method as Python calls it (no conversion to JavaScript, which CPython lacks)."""
    return getattr(PageAgent, method).__wrapped__


async def views(stream) -> list[dict]:
    return [ev async for ev in stream]


# -- agents by reference -------------------------------------------------------------------


def test_an_agent_made_by_create_agent_is_found_by_its_reference():
    page = create_agent(ScriptedModel([]), {"name": "helper"}, "ref-found")
    assert page.ref == "ref-found" and agent_of({"aerixAgent": "ref-found"}) is page.agent
    other = create_agent(ScriptedModel([]), {})  # no ref given: a fresh one
    assert other.ref != page.ref and agent_of({"aerixAgent": other.ref}) is other.agent


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ({"aerixAgent": "ref-never-made"}, "no agent 'ref-never-made' here: an agent given to another must be made by the same boot()"),
        ({"id": "x"}, "expected an agent made by ai.agent() (its reference {aerixAgent: id}), got dict"),
        ("ref-found", "expected an agent made by ai.agent()"),
        (None, "expected an agent made by ai.agent()"),
    ],
)
def test_anything_but_a_reference_of_this_runtime_is_refused(ref, words):
    with pytest.raises(AerixError) as e:
        agent_of(ref)
    assert e.value.kind == "options" and words in e.value.message


def test_an_id_is_taken_once_and_its_agent_kept_after_its_handle_is_gone():
    create_agent(ScriptedModel([]), {"name": "once"}, "ref-once")  # the handle dropped at once: its asTool value may outlive it
    with pytest.raises(AerixError) as e:
        create_agent(ScriptedModel([]), {}, "ref-once")
    assert e.value.kind == "options" and "was made already" in e.value.message
    import gc

    gc.collect()
    assert agent_of({"aerixAgent": "ref-once"}).name == "once"


async def test_an_as_tool_value_in_tools_runs_the_agent_it_names():
    helper = create_agent(ScriptedModel([final("Lisbon is sunny")]), {"name": "researcher", "instructions": "You research."}, "ref-helper")
    boss = create_agent(
        ScriptedModel([calls(("research", {"task": "Weather in Lisbon?"})), final("It is sunny.")]),
        {"tools": [{"name": "research", "description": "Researches a question.", "agent": {"aerixAgent": "ref-helper"}}]},
    )
    assert boss.agent.tool_named("research").input_schema()["required"] == ["task"]  # Agent.as_tool's input
    events = await views(raw("run")(boss, "Umbrella?"))
    assert [e["text"] for e in events if e["type"] == "result"] == ["Lisbon is sunny"] and events[-1]["text"] == "It is sunny."
    assert helper.agent.model.calls[0].messages[1]["content"] == "Weather in Lisbon?"


async def test_an_as_tool_value_takes_trust_flags_as_a_js_tool_does():
    create_agent(ScriptedModel([final("page text")]), {"name": "reader"}, "ref-reader")
    tools = [{"name": "read", "description": "Reads a page.", "agent": {"aerixAgent": "ref-reader"}, "trust": {"taint": True}}]
    boss = create_agent(ScriptedModel([calls(("read", {"task": "read it"})), final("done")]), {"tools": tools})
    events = await views(raw("run")(boss, "go"))
    assert [(e["type"], e.get("tool") or e.get("source")) for e in events if e["type"] in ("call", "taint", "result")] == [("call", "read"), ("taint", "read"), ("result", "read")]


async def test_handoffs_by_reference_hand_the_conversation_to_that_agent():
    """JS `ai.agent({handoffs: [billing]})`: the facade sends each handle's reference (handle.mjs's
    withHandoffRefs), and the run goes on under the agent it names."""
    model = ScriptedModel([calls(("handoff_billing", {"reason": "a charge"})), final("Refunded.")])
    billing = create_agent(model, {"name": "billing", "description": "Invoices and refunds.", "instructions": "You do billing."}, "ref-billing")
    triage = create_agent(model, {"name": "triage", "handoffs": [{"aerixAgent": "ref-billing"}]})
    assert triage.agent.handoffs == (billing.agent,) and "handoff_billing" in triage.agent.tool_names
    events = await views(raw("run")(triage, "I was charged twice"))
    assert [(e["type"], e.get("source"), e.get("target")) for e in events if e["type"] == "handoff"] == [("handoff", "triage", "billing")]
    assert (events[-1]["type"], events[-1]["text"]) == ("final", "Refunded.")
    assert model.calls[1].messages[0]["content"] == billing.agent.system  # the target's system message from the switch
    # what JS reads as agent.system and agent.schema: the agent the conversation is with now
    assert raw("system")(triage) == billing.agent.system != triage.agent.system
    assert raw("schema")(triage) == billing.agent.schema


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"handoffs": {"aerixAgent": "ref-billing"}}, "handoffs must be an array"),
        ({"handoffs": [{"aerixAgent": "ref-nowhere"}]}, "no agent 'ref-nowhere' here"),
        ({"handoffs": [{"aerixAgent": "ref-unnamed"}]}, "name"),
    ],
)
def test_bad_handoffs_are_refused_naming_what(options, words):
    if "ref-unnamed" not in page_options._AGENTS:
        create_agent(ScriptedModel([]), {}, "ref-unnamed")  # no name: a handoff target needs one
    with pytest.raises(AerixError) as e:
        create_agent(ScriptedModel([]), {"name": "front", **options})
    assert e.value.kind == "options" and words in e.value.message, e.value.message


@pytest.mark.parametrize(
    ("tool", "words"),
    [
        ({"name": "t", "description": "d", "agent": {"aerixAgent": "ref-options"}, "run": lambda i, c: ""}, "is an agent (asTool): unknown key(s) ['run']"),
        ({"name": "t", "description": "d", "agent": {"aerixAgent": "ref-options"}, "trust": {"tainted": True}}, "unknown trust key(s) ['tainted']"),
        ({"name": "t", "description": " ", "agent": {"aerixAgent": "ref-options"}}, "needs a description"),
        ({"name": "t", "description": "d", "agent": {"aerixAgent": "ref-elsewhere"}}, "no agent 'ref-elsewhere' here"),
    ],
)
def test_a_bad_as_tool_value_is_refused_naming_what(tool, words):
    if "ref-options" not in page_options._AGENTS:
        create_agent(ScriptedModel([]), {}, "ref-options")
    with pytest.raises(AerixError) as e:
        create_agent(ScriptedModel([]), {"tools": [tool]})
    assert e.value.kind == "options" and words in e.value.message
    assert e.value.message.startswith("[aerix:options] ")  # marked for JavaScript, which reads it back as an AerixError


# -- agent.state ---------------------------------------------------------------------------

TODO = {"id": {"type": "string", "required": True}, "title": {"type": "string", "required": True}}


async def test_state_call_is_python_agent_state_method_for_method_with_plain_values():
    page = create_agent(ScriptedModel([]), {"name": "planner", "state": {"todos": TODO}})
    state = raw("state")
    assert await state(page, "get", None, ["theme", "light"]) == "light"  # in memory: loaded from the start
    assert await state(page, "set", None, ["theme", {"dark": True}]) is None
    assert await state(page, "get", None, ["theme"]) == {"dark": True} == page.agent.state.get("theme")
    assert await state(page, "tainted", None, ["theme"]) is None
    assert await state(page, "delete", None, ["theme"]) is None
    assert await state(page, "get", None, ["theme"]) is None
    kept = await state(page, "upsert", "todos", [{"id": "t1", "title": "Milk"}])
    assert kept == {"id": "t1", "title": "Milk"} and type(kept) is dict  # the document as kept: plain data
    await state(page, "upsert", "todos", [{"id": "t2", "title": "Eggs"}])
    assert await state(page, "list", "todos", []) == [kept, {"id": "t2", "title": "Eggs"}]
    assert await state(page, "get", "todos", ["t2"]) == {"id": "t2", "title": "Eggs"}
    assert await state(page, "get", "todos", ["t9"]) is None
    assert await state(page, "remove", "todos", ["t1"]) is True and await state(page, "remove", "todos", ["t1"]) is False
    assert await state(page, "tainted", "todos", ["t2"]) is None
    assert [t.id for t in await page.agent.state.collection("todos").list()] == ["t2"]


@pytest.mark.parametrize(
    ("method", "collection", "args", "words"),
    [
        ("collection", None, ["todos"], "agent.state has no method 'collection'"),
        ("loaded", None, [], "agent.state has no method 'loaded'"),
        ("put", "todos", [{}], "a state collection has no method 'put'"),
        ("list", "notes", [], "no state collection 'notes' (collections: ['todos'])"),
        ("upsert", "todos", [{"id": "t1"}], "the document fails the model"),
        ("set", None, ["", 1], "a state key is a non-empty string"),
        ("get", None, ["k"], "is not loaded: await agent.state.load() first"),
    ],
)
async def test_state_call_refuses_as_python_does(method, collection, args, words):
    page = create_agent(ScriptedModel([]), {"name": "planner", "state": {"todos": TODO}}, None)
    if method == "get":  # with a store, get needs a load first, as in Python
        page = PageAgent(Agent(model=ScriptedModel([]), name="planner", store=MemoryStore()))
    with pytest.raises(AerixError) as e:
        await raw("state")(page, method, collection, args)
    assert e.value.kind == "options" and words in e.value.message


async def test_state_in_a_store_loads_then_reads_what_another_agent_wrote():
    store = MemoryStore()
    one = PageAgent(Agent(model=ScriptedModel([]), name="planner", store=store))
    two = PageAgent(Agent(model=ScriptedModel([]), name="planner", store=store))
    await raw("state")(one, "set", None, ["theme", "dark"])
    assert await raw("state")(two, "load", None, []) is None
    assert await raw("state")(two, "get", None, ["theme"]) == "dark"


# -- concurrencyKey --------------------------------------------------------------------------


async def test_concurrency_key_reaches_run_and_start():
    gate = asyncio.Event()

    async def work(input, ctx):
        await gate.wait()
        return "done"

    store = MemoryStore()
    made = [PageAgent(Agent(model=ScriptedModel([calls(("work", {})), final("ok")]), tools=[aerix.tool(name="work", description="Works.", input={}, run=work)], store=store)) for _ in range(3)]
    first = asyncio.ensure_future(views(raw("run")(made[0], "one", None, None, None, None, None, None, "inbox")))
    await asyncio.sleep(0.05)
    with pytest.raises(AerixError) as e:
        await views(raw("run")(made[1], "two", None, None, None, None, None, None, "inbox"))
    assert e.value.kind == "busy" and "inbox" in e.value.message
    gate.set()
    assert (await first)[-1]["type"] == "final"
    record = await raw("start")(made[2], "three", "r3", None, None, "inbox")
    assert record["id"] == "r3" and record["concurrencyKey"] == "inbox"
    assert (await raw("get_run")(made[2], "r3"))["concurrencyKey"] == "inbox"
    assert await raw("get_run")(made[2], "r-none") is None


async def test_concurrency_key_without_a_store_is_refused_as_in_python():
    page = create_agent(ScriptedModel([final("ok")]), {})
    with pytest.raises(AerixError) as e:
        raw("run")(page, "go", None, None, None, None, None, None, "inbox")
    assert e.value.kind == "options" and "concurrency_key need a durable run" in e.value.message


# -- the OpenAI path's engine options ------------------------------------------------------


def test_engine_options_map_to_openai_model_parameters():
    model = server_model({"baseUrl": "http://127.0.0.1:9/v1", "model": "m", "apiKey": "k", "params": {"top_k": 20}, "headers": {"X-Team": "a"},
                          "retries": 0, "backoffS": 0.25, "maxBackoffS": 2})
    assert (model.base_url, model.model, model.params) == ("http://127.0.0.1:9/v1", "m", {"top_k": 20})
    assert (model.backoff.retries, model.backoff.backoff_s, model.backoff.max_backoff_s) == (0, 0.25, 2)
    assert model.client.headers["X-Team"] == "a"
    defaults = server_model({"baseUrl": "http://127.0.0.1:9/v1", "model": "m", "apiKey": None})
    assert (defaults.backoff.retries, defaults.backoff.backoff_s, defaults.backoff.max_backoff_s) == (3, 0.5, 8.0)  # OpenAIModel's


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"nCtx": 2048}, "unknown engine option(s) ['nCtx'] for an OpenAI-compatible server (baseUrl); known: ['baseUrl', 'model', 'apiKey'"),
        ({"max_backoff_s": 2}, "unknown engine option(s) ['max_backoff_s']"),
        ({"retries": -1}, "retries must be a whole number >= 0"),
        ({"backoffS": "1"}, "backoff_s must be a number of seconds >= 0"),
        ({"model": ""}, "needs engine.model, a non-empty string"),
    ],
)
def test_a_bad_engine_option_is_refused_naming_it(options, words):
    with pytest.raises(AerixError) as e:
        server_model({"baseUrl": "http://127.0.0.1:9/v1", "model": "m", **options})
    assert e.value.kind == "options" and words in e.value.message and e.value.message.startswith("[aerix:options] ")


# -- aerix.js_tool -------------------------------------------------------------------------


@pytest.mark.skipif(IN_PYODIDE, reason="in Pyodide there is JavaScript: js_tool makes the tool")
def test_js_tool_is_public_and_says_it_needs_pyodide_on_cpython():
    assert "js_tool" in aerix.__all__
    with pytest.raises(AerixError) as e:
        aerix.js_tool("look_up", "Look a word up.", {"word": {"type": "string", "required": True}}, lambda input, ctx: "x")
    assert e.value.kind == "options" and "needs Pyodide" in e.value.message


@pytest.fixture
def fake_js_edge(monkeypatch):
    """The JavaScript edge as CPython can have it: a JS function is a Python callable, a value
    crosses as it is, and the ctx's functions and signal are the Python ones (what ``_js`` would
    proxy). Everything page_options does around it runs as in the page."""

    async def call_js(fn, *args):
        value = fn(*args)
        return await value if inspect.isawaitable(value) else value

    monkeypatch.setattr(_js, "IN_PYODIDE", True)
    monkeypatch.setattr(page_options, "call_js", call_js)
    monkeypatch.setattr(page_options, "js_callable", lambda fn: (fn, lambda: None))
    monkeypatch.setattr(page_options, "js_abort_signal", lambda signal: (signal, lambda: None))
    monkeypatch.setattr(page_options, "js_artifacts", lambda artifacts: ({"put": artifacts.put}, lambda: None))


async def test_js_tool_calls_the_function_as_a_js_tool_with_input_and_ctx(fake_js_edge):
    seen = []

    async def look_up(input, ctx):  # what a JS async function does: a Promise of the result
        seen.append((input, sorted(ctx), ctx["callId"], ctx["invoker"]))
        return f"{input['word']}: a word"

    made = aerix.js_tool("look_up", "Look a word up.", {"word": {"type": "string", "required": True}}, look_up)
    assert isinstance(made, aerix.Tool) and made.input_schema()["required"] == ["word"]
    agent = Agent(model=ScriptedModel([calls(("look_up", {"word": "umbrella"})), final("ok")]), tools=[made])
    events = await collect(agent.run("go", invoker={"id": "u1", "kind": "user"}))
    (result,) = [e for e in events if e.type == "result"]
    assert result.text == "umbrella: a word" and not result.error
    ((input, keys, call_id, invoker),) = seen
    assert input == {"word": "umbrella"} and keys == ["approve", "artifacts", "callId", "emit", "invoker", "signal"]
    assert call_id == result.id and invoker["id"] == "u1"


async def test_js_tool_takes_a_json_schema_and_a_sync_function(fake_js_edge):
    schema = {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number"}}}, "required": ["xs"]}
    made = aerix.js_tool("sum", "Add numbers.", schema, lambda input, ctx: sum(input["xs"]))
    agent = Agent(model=ScriptedModel([calls(("sum", {"xs": [1, 2.5]})), final("ok")]), tools=[made])
    events = await collect(agent.run("go"))
    assert [e.text for e in events if e.type == "result"] == ["3.5"]
    with pytest.raises(AerixError) as e:
        aerix.js_tool("sum", "Add numbers.", schema, "not a function")
    assert e.value.kind == "options" and "needs a JavaScript function" in e.value.message


async def test_js_tools_and_as_tool_values_with_parallel_run_together(fake_js_edge):
    """JS `{name, description, input, run, parallel: true}` and `agent.asTool(..., {parallel: true})`
    are Python's `tool(parallel=True)` and `as_tool(parallel=True)` (aerix.parallel): a tool that
    waits for the sub-agent's tool, which waits for it, finishes only when they run together."""
    a, b = asyncio.Event(), asyncio.Event()

    async def ping(input, ctx):  # a JS async function
        a.set()
        await b.wait()
        return "ping done"

    async def pong(input, ctx):
        b.set()
        await a.wait()
        return "pong done"

    create_agent(ScriptedModel([calls(("pong", {})), final("helper done")]), {"name": "helper", "tools": [{"name": "pong", "description": "Pong.", "run": pong}]}, "ref-parallel")
    tools = [
        {"name": "ping", "description": "Ping.", "input": {}, "run": ping, "parallel": True},
        {"name": "help", "description": "Helps.", "agent": {"aerixAgent": "ref-parallel"}, "parallel": True},
    ]
    boss = create_agent(ScriptedModel([calls(("ping", {}), ("help", {"task": "pong"})), final("both")]), {"tools": tools})
    assert boss.agent.tool_named("ping").parallel and boss.agent.tool_named("help").parallel
    events = await asyncio.wait_for(views(raw("run")(boss, "go")), 10)
    assert [(e["tool"], e["text"]) for e in events if e["type"] == "result"] == [("ping", "ping done"), ("help", "helper done")]
