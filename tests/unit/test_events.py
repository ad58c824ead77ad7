"""Events are frozen, tagged, and become plain dicts of JSON values."""

from __future__ import annotations

import dataclasses
import json

import pytest

from aerix import Call, End, Final, Result, Retry, Text, Turn, Usage


def test_to_dict_is_plain_json_with_type_first():
    turn = Turn(2, "hm", (Call("call_1", "clock", {}),))
    d = turn.to_dict()
    assert list(d) == ["type", "turn", "thought", "calls"]
    assert d == {"type": "turn", "turn": 2, "thought": "hm", "calls": [{"type": "call", "id": "call_1", "tool": "clock", "input": {}}]}
    json.dumps(d)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (Text("{"), {"type": "text", "text": "{"}),
        (Usage(10, 5, 3), {"type": "usage", "prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 3}),
        (Result("call_1", "clock", "12:00", False), {"type": "result", "id": "call_1", "tool": "clock", "text": "12:00", "error": False}),
        (Retry(1, "bad json: x"), {"type": "retry", "turn": 1, "reason": "bad json: x"}),
        (Final("hi", None), {"type": "final", "text": "hi", "thought": None}),
        (End("abort", "stopped"), {"type": "end", "reason": "abort", "message": "stopped"}),
    ],
)
def test_each_event_shape(event, expected):
    assert event.to_dict() == expected
    assert event.type == expected["type"]


def test_events_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Final("hi", None).text = "changed"  # type: ignore[misc]


def test_type_cannot_be_forged():
    with pytest.raises(TypeError):
        Text("x", type="final")  # type: ignore[call-arg]
