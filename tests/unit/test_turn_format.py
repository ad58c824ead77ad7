"""TurnFormat: each knob's system message and turn schema (golden), the parser on what each
schema allows, duplicate calls dropped with a note, the options checked, durable runs refused
to an Agent of another format, and the page's ``turnFormat`` option."""

from __future__ import annotations

import json
import os

import pytest
from helpers import calls, collect, final, kinds, run_coroutine
from hypothesis import given, settings
from hypothesis import strategies as st
from test_inputs import NESTED
from test_properties import replies
from test_turn import golden
from tools_fixture import TOOLS

from aerix import AerixError, Agent, Limits, TurnFormat, parse_turn, system_message, tool, turn_schema
from aerix.page import event_view
from aerix.schema import validate
from aerix.state import Pending
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

NAMES = {t.name for t in TOOLS}
INSTRUCTIONS = "You are a travel helper."
# every value away from the default, one knob at a time: (golden name, format)
VARIANTS = [
    ("thought-last", TurnFormat(thought="last")),
    ("thought-none", TurnFormat(thought="none")),
    ("compact", TurnFormat(system="compact")),
    ("input-first", TurnFormat(call_keys="input_first")),
    ("example", TurnFormat(example=True)),
    ("instructions-last", TurnFormat(instructions="last")),
]


def schema_text(fmt: TurnFormat, tools=TOOLS) -> str:
    return json.dumps(turn_schema(tools, turn_format=fmt), indent=2, ensure_ascii=False) + "\n"


def test_the_default_format_is_todays_contract_byte_for_byte():
    assert TurnFormat() == TurnFormat.of(None) == TurnFormat.of({})
    golden("system.txt", system_message(INSTRUCTIONS, TOOLS, turn_format=TurnFormat()))
    golden("schema.json", schema_text(TurnFormat()))
    golden("system-no-tools.txt", system_message("", [], turn_format=TurnFormat()))
    agent = Agent(model=ScriptedModel([]), instructions=INSTRUCTIONS, tools=TOOLS, turn_format=TurnFormat(duplicate_calls="drop"))
    assert agent.system == system_message(INSTRUCTIONS, TOOLS) and agent.schema == turn_schema(TOOLS)  # not in the system message


@pytest.mark.parametrize("name, fmt", VARIANTS)
def test_each_variants_system_message_golden(name, fmt):
    golden(f"format/system-{name}.txt", system_message(INSTRUCTIONS, TOOLS, turn_format=fmt))
    golden(f"format/system-{name}-no-tools.txt", system_message("", [], turn_format=fmt))


@pytest.mark.parametrize("name, fmt", VARIANTS)
def test_each_variants_turn_schema_golden(name, fmt):
    text = schema_text(fmt)
    if fmt.system == "compact" or fmt.example or fmt.instructions == "last":  # the system message alone changes
        assert text == schema_text(TurnFormat())
    else:
        golden(f"format/schema-{name}.json", text)


def test_the_compact_layout_of_nested_tools_and_of_structured_output_golden():
    fmt = TurnFormat(system="compact", example=True)
    golden("format/system-compact-nested.txt", system_message("You take orders.", NESTED, turn_format=fmt))
    agent = Agent(model=ScriptedModel([]), output={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}, turn_format=fmt)
    golden("format/system-compact-output.txt", agent.system)


def test_a_combination_golden():
    fmt = TurnFormat(thought="last", system="compact", call_keys="input_first", example=True)
    golden("format/system-compact-last-input-first.txt", system_message(INSTRUCTIONS, TOOLS, turn_format=fmt))
    golden("format/schema-last-input-first.json", schema_text(fmt))
    golden("format/system-compact-instructions-last.txt", system_message(INSTRUCTIONS, TOOLS, turn_format=TurnFormat(system="compact", instructions="last")))


@pytest.mark.parametrize("system", ["full", "compact"])
def test_with_instructions_last_agents_that_differ_only_in_instructions_share_all_before_them(system):
    """The engine reuses the longest prefix it holds: everything before the instructions is shared."""
    output = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    last = TurnFormat(system=system, instructions="last")
    a, b = (Agent(model=ScriptedModel([]), instructions=text, tools=TOOLS, output=output, turn_format=last) for text in ("You are a travel helper.", "Answer in French."))
    shared = os.path.commonprefix([a.system, b.system])
    assert a.system.endswith("You are a travel helper.\n") and b.system.endswith("Answer in French.\n")
    assert shared == a.system[: a.system.rindex("You are a travel helper.")]
    assert all(t.name in shared for t in TOOLS) and '"city"' in shared  # the tools and the output schema
    plain = Agent(model=ScriptedModel([]), tools=TOOLS, output=output, turn_format=last)
    assert a.system.startswith(plain.system.rstrip("\n"))  # no instructions: nothing after the schema
    first = [Agent(model=ScriptedModel([]), instructions=text, tools=TOOLS, turn_format=TurnFormat(system=system)) for text in ("You are a travel helper.", "Answer in French.")]
    assert len(os.path.commonprefix([x.system for x in first])) < 2  # the default shares nothing


@pytest.mark.parametrize("thought, order", [("first", ["thought", "B"]), ("last", ["B", "thought"]), ("none", ["B"])])
def test_the_schema_lists_and_requires_the_keys_in_the_formats_order(thought, order):
    """llama.cpp's grammar writes the required properties in the order given: this is the order."""
    for call_keys, call_order in (("tool_first", ["tool", "input"]), ("input_first", ["input", "tool"])):
        calls_branch, final_branch = turn_schema(TOOLS, turn_format=TurnFormat(thought=thought, call_keys=call_keys))["anyOf"]
        for branch, body in ((calls_branch, "calls"), (final_branch, "final")):
            keys = [body if k == "B" else k for k in order]
            assert list(branch["properties"]) == branch["required"] == keys
        for shape in calls_branch["properties"]["calls"]["items"]["anyOf"]:
            assert list(shape["properties"]) == shape["required"] == call_order
    no_tools = turn_schema([], turn_format=TurnFormat(thought=thought))
    assert no_tools["required"] == [("final" if k == "B" else k) for k in order]


def reply(fmt: TurnFormat, body: str) -> dict:
    """A turn as the format's schema has it written: its keys in the schema's order."""
    call = {"tool": "weather", "input": {"city": "Oslo"}}
    given = {"thought": "t", "calls": [{k: call[k] for k in (["tool", "input"] if fmt.call_keys == "tool_first" else ["input", "tool"])}], "final": "ok"}
    keys = {"first": ["thought", body], "last": [body, "thought"], "none": [body]}[fmt.thought]
    return {k: given[k] for k in keys}


@pytest.mark.parametrize("fmt", [TurnFormat(thought=t, call_keys=c) for t in ("first", "last", "none") for c in ("tool_first", "input_first")])
def test_the_parser_accepts_what_each_schema_allows(fmt):
    schema = turn_schema(TOOLS, turn_format=fmt)
    for body in ("calls", "final"):
        turn = reply(fmt, body)
        validate(turn, schema, "turn")  # the schema allows it
        parsed = parse_turn(json.dumps(turn), NAMES, turn_format=fmt)
        assert parsed.thought == (None if fmt.thought == "none" else "t")
        assert parsed.final == ("ok" if body == "final" else None)
        assert [(c.tool, c.input) for c in parsed.calls] == ([("weather", {"city": "Oslo"})] if body == "calls" else [])


def test_the_final_streams_as_it_is_written_with_the_thought_last():
    agent = Agent(model=ScriptedModel(['{"final": "Take an umbrella.", "thought": "rain"}']), turn_format={"thought": "last"})
    events = asyncio_run(collect(agent.run("Weather?")))
    assert "".join(e.text for e in events if e.type == "final_delta") == "Take an umbrella."
    assert (events[-1].text, events[-1].thought) == ("Take an umbrella.", "rain")


def asyncio_run(coro):
    return run_coroutine(coro)


# -- duplicate calls ----------------------------------------------------------------------------

DUPLICATES = calls(("weather", {"city": "Oslo"}), ("clock", {}), ("weather", {"city": "Oslo"}), ("clock", {}), ("weather", {"city": "Rome"}))
NOTE = "2 calls of your turn did not run (weather, clock): they repeated earlier calls of the same turn, with the same tool and input. Each call runs once; its result is above."


async def test_dropped_duplicates_get_no_id_and_no_event_and_the_results_carry_a_note():
    ran = []
    echo = tool(name="weather", description="W.", input={"city": {"type": "string", "required": True}}, run=lambda i: ran.append(i) or f"sun in {i['city']}")
    clock = tool(name="clock", description="C.", input={}, run=lambda i: "noon")
    agent = Agent(model=ScriptedModel([DUPLICATES, final("done")]), tools=[echo, clock])  # the default drops them
    events = await collect(agent.run("go"))
    assert kinds(events) == ["turn", "call", "result", "call", "result", "call", "result", "turn", "final"]
    turn, last = [e for e in events if e.type == "turn"]
    assert [(c.id, c.tool, c.input) for c in turn.calls] == [("call_1", "weather", {"city": "Oslo"}), ("call_2", "clock", {}), ("call_3", "weather", {"city": "Rome"})]
    assert turn.dropped == ("weather", "clock") and turn.to_dict()["dropped"] == ["weather", "clock"] and event_view(turn)["dropped"] == ["weather", "clock"]
    assert last.dropped == () and "dropped" not in last.to_dict()  # nothing dropped: not in the event's dict
    assert ran == [{"city": "Oslo"}, {"city": "Rome"}]
    results = json.loads(agent.messages[3]["content"])
    assert [r["id"] for r in results["results"]] == ["call_1", "call_2", "call_3"] and results["note"] == NOTE
    assert agent.messages[2]["content"] == DUPLICATES  # the model's turn is kept as it wrote it


def await_results(fmt: TurnFormat, turn: str) -> str:
    clock = tool(name="clock", description="C.", input={}, run=lambda i: "noon")
    agent = Agent(model=ScriptedModel([turn, final("done")]), tools=[clock], turn_format=fmt)
    asyncio_run(collect(agent.run("go")))
    return agent.messages[3]["content"]


def test_one_dropped_call_is_named_in_the_singular():
    text = await_results(TurnFormat(duplicate_calls="drop"), calls(("clock", {}), ("clock", {})))
    assert json.loads(text)["note"].startswith("1 call of your turn did not run (clock): it repeated an earlier call of the same turn")
    assert "note" not in json.loads(await_results(TurnFormat(duplicate_calls="drop"), calls(("clock", {}))))  # nothing dropped, no note


def test_kept_duplicates_each_get_a_call_and_the_repeat_guard_answers_them():
    text = await_results(TurnFormat(duplicate_calls="keep"), calls(("clock", {}), ("clock", {})))
    results = json.loads(text)
    assert "note" not in results and len(results["results"]) == 2 and results["results"][1]["result"].startswith("Already called: call_1")


def test_equal_inputs_are_duplicates_whatever_their_key_order():
    parsed = parse_turn(calls(("weather", {"city": "Oslo", "unit": "c"}), ("weather", {"unit": "c", "city": "Oslo"})), NAMES, turn_format=TurnFormat(duplicate_calls="drop"))
    assert len(parsed.calls) == 1 and [c.tool for c in parsed.dropped] == ["weather"]
    assert len(parse_turn(calls(("weather", {"city": "Oslo"}), ("weather", {"city": "Oslo"})), NAMES).calls) == 1  # dropped by default
    assert len(parse_turn(calls(("weather", {"city": "Oslo"}), ("weather", {"city": "Oslo"})), NAMES, turn_format=TurnFormat(duplicate_calls="keep")).calls) == 2


async def test_a_dropped_calls_note_survives_a_durable_pause():
    async def ask(input, ctx):
        return "yes" if await ctx.approve("ok?") else "no"

    asker = tool(name="ask", description="Asks.", input={}, run=ask)
    store = MemoryStore()
    fmt = TurnFormat(duplicate_calls="drop")

    def agent(replies):
        return Agent(model=ScriptedModel(replies), tools=[asker], store=store, turn_format=fmt)

    waiting = (await collect(agent([calls(("ask", {}), ("ask", {}))]).run("go")))[-1]
    assert waiting.type == "waiting"
    pending = (await store.get_run(waiting.run_id))["checkpoint"]["pending"]
    assert pending["note"].startswith("1 call of your turn did not run (ask)") and Pending.from_dict(pending).turn.dropped == ("ask",)
    later = agent([final("done")])
    events = await collect(later.approve(waiting.run_id, waiting.approval_id, True))
    assert events[-1].type == "final"
    messages = (await store.get_run(waiting.run_id))["checkpoint"]["messages"]
    assert json.loads(messages[3]["content"])["note"].startswith("1 call of your turn did not run (ask)")


# -- options, durable runs, the page -----------------------------------------------------------


@pytest.mark.parametrize("given, words", [
    ({"thought": "middle"}, "TurnFormat.thought must be one of 'first', 'last', 'none', got 'middle'"),
    ({"system": "short"}, "TurnFormat.system must be one of 'full', 'compact'"),
    ({"call_keys": "tool"}, "TurnFormat.call_keys must be one of 'tool_first', 'input_first'"),
    ({"duplicate_calls": True}, "TurnFormat.duplicate_calls must be one of 'keep', 'drop', got True"),
    ({"example": 1}, "TurnFormat.example must be True or False, got 1"),
    ({"instructions": "end"}, "TurnFormat.instructions must be one of 'first', 'last', got 'end'"),
    ({"results": "short"}, "TurnFormat.results must be one of 'full', 'compact', got 'short'"),
    ({"thougth": "last"}, "unknown TurnFormat field(s) ['thougth']"),
])  # fmt: skip
def test_a_bad_format_is_an_options_error_naming_it(given, words):
    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), turn_format=given)
    assert e.value.kind == "options" and words in e.value.message


def test_turn_format_is_keyword_only_and_a_value():
    with pytest.raises(TypeError):
        TurnFormat("last")  # type: ignore[misc]
    with pytest.raises(AerixError, match="turn_format must be a TurnFormat or a dict"):
        Agent(model=ScriptedModel([]), turn_format="compact")
    assert TurnFormat(thought="last") == TurnFormat.of({"thought": "last"}) and "thought='last'" in repr(TurnFormat(thought="last"))


@pytest.mark.parametrize("name, fmt", VARIANTS)
async def test_a_durable_run_is_refused_to_an_agent_of_another_format(name, fmt):
    store = MemoryStore()
    clock = tool(name="clock", description="C.", input={}, run=lambda i: "noon")
    agent = Agent(model=ScriptedModel([calls(("clock", {}))]), instructions="Help.", tools=[clock], store=store, limits=Limits(turns=1))
    await collect(agent.run("go", run_id="r1"))
    await store.save_run({**(await store.get_run("r1")), "status": "interrupted", "ending": None})
    other = Agent(model=ScriptedModel([final("done")]), instructions="Help.", tools=[clock], store=store, turn_format=fmt)
    with pytest.raises(AerixError) as e:
        await collect(other.resume("r1"))
    assert e.value.kind == "options" and "other instructions or tools (or turn format)" in e.value.message
    same = Agent(model=ScriptedModel([final("done")]), instructions="Help.", tools=[clock], store=store, turn_format=TurnFormat(duplicate_calls="drop"))
    assert (await collect(same.resume("r1")))[-1].type == "final"  # duplicate_calls is not in the system message


def test_the_page_takes_turn_format_in_camel_case():
    from aerix.page import create_agent

    page = create_agent(ScriptedModel([]), {"turnFormat": {"thought": "none", "system": "compact", "callKeys": "input_first", "example": True, "duplicateCalls": "drop", "instructions": "last", "results": "compact"}})
    assert page.agent.turn_format == TurnFormat(thought="none", system="compact", call_keys="input_first", example=True, duplicate_calls="drop", instructions="last",
                                                results="compact")
    assert create_agent(ScriptedModel([]), {}).agent.turn_format == TurnFormat()
    with pytest.raises(AerixError, match=r"unknown turnFormat option\(s\) \['call_keys'\]; known: \['thought', 'system', 'callKeys'"):
        create_agent(ScriptedModel([]), {"turnFormat": {"call_keys": "input_first"}})
    with pytest.raises(AerixError, match="TurnFormat.thought must be one of"):
        create_agent(ScriptedModel([]), {"turnFormat": {"thought": "later"}})


# -- whatever the model says, in any format ------------------------------------------------------

formats = st.builds(
    TurnFormat,
    thought=st.sampled_from(["first", "last", "none"]),
    system=st.sampled_from(["full", "compact"]),
    call_keys=st.sampled_from(["tool_first", "input_first"]),
    example=st.booleans(),
    duplicate_calls=st.sampled_from(["keep", "drop"]),
    instructions=st.sampled_from(["first", "last"]),
    results=st.sampled_from(["full", "compact"]),
)


@settings(max_examples=100, deadline=None)
@given(script=st.lists(replies, max_size=10), fmt=formats, repeat_calls=st.sampled_from([None, 1]))
def test_any_model_output_in_any_format_ends_once_and_a_dropped_call_never_runs(script, fmt, repeat_calls):
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, limits=Limits(turns=4, repeat_calls=repeat_calls), turn_format=fmt)
    events = asyncio_run(collect(agent.run("go")))
    ends = [e for e in events if e.type in ("final", "end")]
    assert len(ends) == 1 and events[-1] is ends[0]
    called = [e.id for e in events if e.type == "call"]
    assert len(called) == len(set(called)) and set(called) <= {c.id for e in events if e.type == "turn" for c in e.calls}
    for ev in events:
        if ev.type == "turn" and fmt.duplicate_calls == "drop":
            keys = [json.dumps([c.tool, c.input], sort_keys=True) for c in ev.calls]
            assert len(keys) == len(set(keys))


async def test_compact_results_come_back_in_call_order_without_ids_and_the_system_message_is_the_same():
    weather = tool(name="weather", description="W.", input={"city": {"type": "string", "required": True}}, run=lambda i: f"Sunny in {i['city']}")
    script = [calls(("weather", {"city": "Lisbon"}), ("weather", {"city": "Porto"})), final("Sunny in both.")]
    compact = Agent(model=ScriptedModel(script), tools=[weather], turn_format=TurnFormat(results="compact"))
    full = Agent(model=ScriptedModel(script), tools=[weather])
    for agent in (compact, full):
        assert (await collect(agent.run("Lisbon and Porto?")))[-1].type == "final"
    assert compact.system == full.system and compact.schema == full.schema  # not in the system message
    assert json.loads(compact.messages[3]["content"]) == {"results": [{"tool": "weather", "result": "Sunny in Lisbon"}, {"tool": "weather", "result": "Sunny in Porto"}]}
    assert json.loads(full.messages[3]["content"])["results"][0] == {"id": "call_1", "tool": "weather", "result": "Sunny in Lisbon"}
    assert len(compact.messages[3]["content"]) < len(full.messages[3]["content"])
