"""The answer as it is written (issue 20, point 5): final_delta events and their reader."""

from __future__ import annotations

import json

from helpers import calls, collect
from hypothesis import given, settings
from hypothesis import strategies as st

from aerix import Agent, tool
from aerix.final_text import FinalText
from aerix.testing import Reply, ScriptedModel

TEXTS = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=40)


def chunked(text, cuts):
    points = sorted({c % (len(text) + 1) for c in cuts})
    pieces, last = [], 0
    for p in points + [len(text)]:
        pieces.append(text[last:p])
        last = p
    return pieces


@settings(max_examples=300, deadline=None)
@given(final=TEXTS, thought=TEXTS, ascii_=st.booleans(), cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12))
def test_the_pieces_joined_are_what_json_loads_gives(final, thought, ascii_, cuts):
    text = json.dumps({"thought": thought, "final": final}, ensure_ascii=ascii_)
    reader = FinalText()
    assert "".join(reader.feed(piece) for piece in chunked(text, cuts)) == json.loads(text)["final"]


@settings(max_examples=100, deadline=None)
@given(value=TEXTS, cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=8))
def test_a_final_key_inside_a_tool_input_is_not_the_answer(value, cuts):
    text = json.dumps({"thought": "x", "calls": [{"tool": "note", "input": {"final": value, "text": value}}]})
    reader = FinalText()
    assert "".join(reader.feed(piece) for piece in chunked(text, cuts)) == ""


def test_a_fence_and_key_order_do_not_matter():
    text = '```json\n{"final": "caf\\u00e9 \\ud83d\\ude00", "thought": "t"}\n```'
    reader = FinalText()
    assert "".join(reader.feed(ch) for ch in text) == "café 😀"


async def test_every_finals_deltas_join_into_its_text():
    note = tool(name="note", description="Notes.", input={"text": {"type": "string", "required": True}}, run=lambda i, c: "ok")
    answer = json.dumps({"thought": "done", "final": 'Take an "umbrella"\n— it rains 🌧'}, ensure_ascii=True)
    model = ScriptedModel([calls(("note", {"text": '"final": "no"'})), Reply(answer, chunk=3)])
    events = await collect(Agent(model=model, tools=[note]).run("go"))
    deltas = [e.text for e in events if e.type == "final_delta"]
    assert len(deltas) > 3 and "".join(deltas) == events[-1].text == 'Take an "umbrella"\n— it rains 🌧'
    first_final = next(i for i, e in enumerate(events) if e.type == "final_delta")
    assert all(e.type != "call" for e in events[first_final:])  # none came from the calls turn
    assert events[first_final].to_dict() == {"type": "final_delta", "text": events[first_final].text}


async def test_no_deltas_with_structured_output():
    model = ScriptedModel([json.dumps({"thought": "t", "final": {"city": "Lisbon"}})])
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    events = await collect(Agent(model=model, output=schema).run("go"))
    assert events[-1].output == {"city": "Lisbon"} and not [e for e in events if e.type == "final_delta"]


def test_surrogates_written_as_they_are_are_not_paired_escaped_ones_are():
    # json.loads pairs a high and a low surrogate only when both are \\u escapes
    for final in ("a\ud83d\ude00b", "\ud83d", "x\udc00\ud800y"):
        for ascii_ in (False, True):
            text = json.dumps({"thought": "t", "final": final}, ensure_ascii=ascii_)
            for size in (1, 2, 5, 64):
                reader = FinalText()
                got = "".join(reader.feed(text[i : i + size]) for i in range(0, len(text), size))
                assert got == json.loads(text)["final"], (final, ascii_, size)
    mixed = '{"final": "\\ud83d\ude00"}'  # an escaped high, then a low written as it is
    assert FinalText().feed(mixed) == json.loads(mixed)["final"]
