"""Whatever the model says, a run ends exactly once and never raises."""

from __future__ import annotations

import json

from helpers import collect, endings, run_coroutine
from hypothesis import given, settings
from hypothesis import strategies as st
from tools_fixture import TOOLS

from aerix import Agent, Limits
from aerix.testing import Reply, ScriptedModel

names = st.sampled_from(["weather", "convert", "note", "clock", "nope", ""])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
calls = st.lists(st.fixed_dictionaries({"tool": names, "input": json_values}), max_size=10)
turns = st.one_of(
    st.builds(lambda t, f: json.dumps({"thought": t, "final": f}), st.text(max_size=20), st.text(max_size=20)),
    st.builds(lambda c: json.dumps({"calls": c}), calls),
    st.builds(json.dumps, json_values),
    st.text(max_size=40),
)
replies = st.one_of(
    turns,
    st.builds(Reply, turns, st.sampled_from(["stop", "length"]), st.integers(1, 7)),
    st.sampled_from([RuntimeError("engine died"), ValueError("")]),
)


@settings(max_examples=150, deadline=None)
@given(
    script=st.lists(replies, max_size=12),
    turns_limit=st.integers(1, 6),
    retries=st.integers(0, 3),
    repeat_calls=st.sampled_from([None, 0, 1]),
    constrain=st.booleans(),
)
def test_any_model_output_yields_exactly_one_ending(script, turns_limit, retries, repeat_calls, constrain):
    limits = Limits(turns=turns_limit, retries=retries, repeat_calls=repeat_calls)
    agent = Agent(model=ScriptedModel(script), tools=TOOLS, limits=limits, constrain=constrain)
    events = run_coroutine(collect(agent.run("go")))
    ends = endings(events)
    assert len(ends) == 1 and events[-1] is ends[0]
    for ev in events:
        json.dumps(ev.to_dict())
    # the conversation stays alternating-safe: every assistant turn with calls is followed by results
    for i, m in enumerate(agent.messages):
        if m["role"] == "assistant" and '"calls"' in m["content"] and i + 1 < len(agent.messages):
            assert agent.messages[i + 1]["role"] == "user"
