"""The structured answer as it is written (issue 31, point 4): output_delta events and their reader."""

from __future__ import annotations

import json

from helpers import calls, collect, final, kinds
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from aerix import Agent, OutputDelta, tool
from aerix.events import event_from_dict
from aerix.page import event_view
from aerix.partial_output import PartialOutput
from aerix.testing import Reply, ScriptedModel

TEXTS = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False, allow_infinity=False) | TEXTS
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXTS, inner, max_size=4), max_leaves=16)

STEPS = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "integer"}, "say": {"type": "string"}}, "required": ["n", "say"]}},
        "meta": {"type": "object", "properties": {"lang": {"type": "string"}, "rain": {"type": "boolean"}}, "required": ["lang", "rain"]},
    },
    "required": ["title", "steps", "meta"],
}
ANSWER = {"title": "Caf\u00e9 \"tour\" \U0001f327", "steps": [{"n": 1, "say": "go\nnow"}, {"n": 20, "say": "\u00e9t\u00e9"}], "meta": {"lang": "pt", "rain": True}}


def chunked(text, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points + [len(text)]:
        pieces.append(text[last:p])
        last = p
    return pieces


def partials(text, size=None, pieces=None):
    """The partial finals a reader gives for ``text`` fed ``size`` characters at a time."""
    reader = PartialOutput()
    pieces = pieces if pieces is not None else [text[i : i + size] for i in range(0, len(text), size)]
    return [d.output for d in map(reader.feed, pieces) if d is not None]


def extends(new, old):
    """``new`` is ``old`` grown: the same scalar, an object with old's keys first (each value
    grown), an array with old's elements first (each grown)."""
    if isinstance(old, dict):
        return isinstance(new, dict) and list(new)[: len(old)] == list(old) and all(extends(new[k], old[k]) for k in old)
    if isinstance(old, list):
        return isinstance(new, list) and len(new) >= len(old) and all(extends(n, o) for n, o in zip(new, old))
    return type(new) is type(old) and new == old


def assert_streams_to(seen, value):
    assert seen, "no partial at all"
    for before, after in zip(seen, seen[1:]):
        assert after != before, "a delta that changed nothing"
        assert extends(after, before), (before, after)
    for partial in seen:
        json.dumps(partial, allow_nan=False)  # valid JSON, always
        assert extends(value, partial), (partial, value)  # never a cut string or number
    assert seen[-1] == value


@settings(max_examples=300, deadline=None)
@given(value=VALUES, thought=TEXTS, ascii_=st.booleans(), thought_last=st.booleans(), cuts=st.lists(st.integers(min_value=0, max_value=600), max_size=14))
def test_each_partial_is_valid_json_and_extends_the_one_before_up_to_the_answer(value, thought, ascii_, thought_last, cuts):
    turn = {"final": value, "thought": thought} if thought_last else {"thought": thought, "final": value}
    text = json.dumps(turn, ensure_ascii=ascii_)
    assert_streams_to(partials(text, pieces=chunked(text, cuts)), json.loads(text)["final"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from('{}[]",:\\ntrufalse0123456789.-+eE u"final'), max_size=80), cuts=st.lists(st.integers(min_value=0, max_value=100), max_size=8))
def test_any_text_at_all_gives_json_partials_and_never_raises(text, cuts):
    turn = '{"final": ' + text
    for partial in partials(turn, pieces=chunked(turn, cuts)):
        json.dumps(partial, allow_nan=False)  # whatever the model writes: the turn is refused later


def test_objects_and_arrays_appear_when_they_open_scalars_when_they_are_complete():
    text = json.dumps({"thought": "t", "final": {"a": [1, {"b": "xy"}], "c": 22}})
    assert partials(text, size=1) == [
        {},
        {"a": []},
        {"a": [1]},
        {"a": [1, {}]},
        {"a": [1, {"b": "xy"}]},
        {"a": [1, {"b": "xy"}], "c": 22},
    ]


def test_a_number_split_across_chunks_is_never_shown_cut():
    pieces = ['{"thought": "t", "final": {"n": 12', "34", ', "m": -1.', "5e2", "}}"]
    assert partials("", pieces=pieces) == [{}, {"n": 1234}, {"n": 1234, "m": -150.0}]


def test_escapes_and_surrogate_pairs_split_at_every_point_are_decoded_whole():
    text = '{"thought": "t", "final": {"s": "a\\"b\\\\c\\u00e9\\ud83d\\ude00 \U0001f327\\n"}}'
    for size in range(1, len(text) + 1):
        assert partials(text, size=size)[-1] == {"s": 'a"b\\c\u00e9\U0001f600 \U0001f327\n'}, size
        assert all(p in ({}, {"s": 'a"b\\c\u00e9\U0001f600 \U0001f327\n'}) for p in partials(text, size=size))


def test_a_final_key_inside_a_tool_input_fenced_text_and_broken_json():
    text = json.dumps({"thought": "x", "calls": [{"tool": "note", "input": {"final": {"a": 1}}}]})
    assert partials(text, size=3) == []
    fenced = '```json\n{"thought": "t", "final": {"a": [true, null]}}\n```'
    assert partials(fenced, size=2)[-1] == {"a": [True, None]}
    assert partials('{"final": {"a": 1, "b": tru, "c": 3}}', size=1) == [{}, {"a": 1}]  # then nothing: the turn is refused
    assert partials('{"final": {"a": 1e999, "b": 2}}', size=1) == [{}]


async def test_the_run_streams_output_deltas_whose_last_is_the_final_output():
    model = ScriptedModel([Reply(json.dumps({"thought": "plan", "final": ANSWER}, ensure_ascii=True), chunk=3)])
    events = await collect(Agent(model=model, output=STEPS).run("Plan"))
    seen = [e.output for e in events if e.type == "output_delta"]
    assert len(seen) > 5 and not [e for e in events if e.type == "final_delta"]
    assert_streams_to(seen, ANSWER)
    assert seen[-1] == events[-1].output == ANSWER and events[-1].type == "final"
    assert kinds(events) == ["turn", "final"]
    texts = [i for i, e in enumerate(events) if e.type == "text"]
    assert all(events[i - 1].type == "text" for i, e in enumerate(events) if e.type == "output_delta")  # each right after its text
    assert len(seen) <= len(texts)


async def test_a_refused_answer_is_followed_by_retry_and_the_next_generation_starts_over():
    bad = {"title": "x", "steps": [{"n": "one", "say": "go"}], "meta": {"lang": "pt", "rain": False}}
    cut = json.dumps({"thought": "t", "final": ANSWER})[:60]
    model = ScriptedModel([Reply(final(bad), chunk=4), Reply(cut, chunk=5, finish_reason="length"), Reply(final(ANSWER), chunk=7)])
    events = await collect(Agent(model=model, output=STEPS, constrain=False).run("Plan"))
    assert kinds(events) == ["retry", "retry", "turn", "final"]
    retries = [i for i, e in enumerate(events) if e.type == "retry"]
    generations = [events[:retries[0]], events[retries[0] : retries[1]], events[retries[1] :]]
    shown = [[e.output for e in g if e.type == "output_delta"] for g in generations]
    assert shown[0][-1] == bad  # streamed whole, then refused: bad final
    assert events[retries[0]].reason.startswith("bad final: final.steps")
    assert shown[1] and all(extends(ANSWER, p) for p in shown[1]) and shown[1][-1] != ANSWER  # cut: max_tokens
    assert shown[2][0] == {}  # what the UI shows again starts from nothing after each retry
    assert_streams_to(shown[2], events[-1].output)


async def test_no_output_deltas_without_output():
    note = tool(name="note", description="Notes.", input={"text": {"type": "string", "required": True}}, run=lambda i, c: "ok")
    model = ScriptedModel([Reply(calls(("note", {"text": "x"})), chunk=2), Reply(final("Done."), chunk=2)])
    events = await collect(Agent(model=model, tools=[note]).run("go"))
    assert events[-1].text == "Done." and not [e for e in events if e.type == "output_delta"]
    assert "".join(e.text for e in events if e.type == "final_delta") == "Done."


async def test_a_calls_turn_gives_no_output_delta_and_a_pydantic_model_streams_too():
    class Trip(BaseModel):
        city: str
        days: int
        stops: list[str]

    note = tool(name="note", description="Notes.", input={"text": {"type": "string", "required": True}}, run=lambda i, c: "ok")
    answer = {"city": "Faro", "days": 2, "stops": ["beach", "old town"]}
    model = ScriptedModel([Reply(calls(("note", {"text": '{"final": 1}'})), chunk=2), Reply(final(answer), chunk=2)])
    events = await collect(Agent(model=model, tools=[note], output=Trip).run("Plan"))
    first = next(i for i, e in enumerate(events) if e.type == "output_delta")
    assert all(e.type != "call" for e in events[first:])  # none came from the calls turn
    assert_streams_to([e.output for e in events if e.type == "output_delta"], answer)
    assert events[-1].output == answer


def test_the_event_as_python_json_and_the_page_see_it():
    ev = OutputDelta({"steps": [{"n": 1}], "rain_mm": 2})
    assert ev.to_dict() == {"type": "output_delta", "output": {"steps": [{"n": 1}], "rain_mm": 2}}
    assert event_view(ev) == ev.to_dict()  # the answer's keys are the user's: never camelCased
    assert event_from_dict(ev.to_dict()) == ev
