"""The turn contract: golden system message and schema, and the parser on every refusal."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tools_fixture import TOOLS

from aerix import parse_turn, system_message, turn_schema
from aerix.turn import MAX_CALLS, THOUGHT_CHARS, TurnRefused

GOLDEN = Path(__file__).parent / "golden"
NAMES = {t.name for t in TOOLS}


def golden(name: str, actual: str) -> None:
    """Compare with the golden file; AERIX_UPDATE_GOLDEN=1 rewrites it (review the diff)."""
    path = GOLDEN / name
    if os.environ.get("AERIX_UPDATE_GOLDEN"):
        path.write_text(actual, encoding="utf-8")
    assert actual == path.read_text(encoding="utf-8"), f"{name} changed; if on purpose, rerun with AERIX_UPDATE_GOLDEN=1"


def test_system_message_golden():
    golden("system.txt", system_message("You are a travel helper.", TOOLS))


def test_system_message_without_tools_golden():
    golden("system-no-tools.txt", system_message("", []))


def test_turn_schema_golden():
    golden("schema.json", json.dumps(turn_schema(TOOLS), indent=2, ensure_ascii=False) + "\n")


def test_schema_without_tools_is_only_the_final_branch():
    schema = turn_schema([])
    assert schema["required"] == ["thought", "final"]
    assert "anyOf" not in schema


def test_schema_refuses_an_empty_calls_list_and_caps_at_eight():
    calls = turn_schema(TOOLS)["anyOf"][0]["properties"]["calls"]
    assert calls["minItems"] == 1
    assert calls["maxItems"] == MAX_CALLS == 8


def test_schema_puts_thought_first_in_both_branches():
    for branch in turn_schema(TOOLS)["anyOf"]:
        assert list(branch["properties"])[0] == "thought"
        assert branch["required"][0] == "thought"


def test_parse_a_final():
    turn = parse_turn('{"thought": "easy", "final": "42"}', NAMES)
    assert (turn.thought, turn.final, turn.calls) == ("easy", "42", ())


def test_parse_calls_in_order_without_thought():
    turn = parse_turn('{"calls": [{"tool": "clock", "input": {}}, {"tool": "weather", "input": {"city": "Oslo"}}]}', NAMES)
    assert turn.thought is None
    assert [(c.tool, c.input) for c in turn.calls] == [("clock", {}), ("weather", {"city": "Oslo"})]


def test_parse_keeps_the_first_eight_calls():
    calls = [{"tool": "clock", "input": {"n": i}} for i in range(11)]
    turn = parse_turn(json.dumps({"calls": calls}), NAMES)
    assert [c.input["n"] for c in turn.calls] == list(range(8))


def test_parse_cuts_the_thought():
    turn = parse_turn(json.dumps({"thought": "x" * 1000, "final": "ok"}), NAMES)
    assert turn.thought == "x" * THOUGHT_CHARS


def test_parse_reads_json_inside_a_markdown_fence():
    assert parse_turn('```json\n{"final": "ok"}\n```', NAMES).final == "ok"


@pytest.mark.parametrize(
    ("text", "start"),
    [
        ("{not json", "bad json"),
        ("", "bad json"),
        ('{"final": "a"} trailing', "bad json"),
        ("[1, 2]", "not a turn"),
        ('"just a string"', "not a turn"),
        ('{"thought": "hm"}', "not a turn"),
        ('{"final": "a", "calls": [{"tool": "clock", "input": {}}]}', "not a turn"),
        ('{"final": 3}', "not a turn"),
        ('{"thought": 3, "final": "a"}', "not a turn"),
        ('{"calls": {}}', "not a turn"),
        ('{"calls": ["clock"]}', "not a turn"),
        ('{"calls": []}', "empty calls"),
        ('{"calls": [{"tool": "teleport", "input": {}}]}', "unknown tool"),
        ('{"calls": [{"tool": "convert", "input": {"value": -3e+8052143714343434}}]}', "bad number"),
        ('{"final": "x", "n": NaN}', "bad json"),
        ('{"final": "x", "n": Infinity}', "bad json"),
    ],
)
def test_parse_refuses(text, start):
    with pytest.raises(TurnRefused) as e:
        parse_turn(text, NAMES)
    assert e.value.reason.startswith(start)


def test_unknown_tool_reason_names_the_tool_and_the_known_ones():
    with pytest.raises(TurnRefused) as e:
        parse_turn('{"calls": [{"tool": "teleport", "input": {}}]}', NAMES)
    assert "'teleport'" in e.value.reason and "weather" in e.value.reason
