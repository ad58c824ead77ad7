"""The demo-task eval's scoring (build/model/score.py) expressed as aerix.evals cases
(score.eval_case, issue 31 part 3): for the same events the two agree, on held-out tasks of
every kind under several model behaviours, right and wrong, and on the scorer's own hand-written events."""

from __future__ import annotations

import json
import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("build/model runs on CPython: Pyodide has no build/", allow_module_level=True)

from helpers import final

from aerix import Agent, evals
from aerix.testing import ScriptedModel
from build.model import corpus, score
from build.model import demo_tools as demo

BEHAVIOURS = ("right", "wrong_advice", "no_quote", "no_call", "refused_first", "wrong_args", "out_of_turns", "calls_when_none_needed")


def _turn(calls: list[dict]) -> str:
    return json.dumps({"thought": "", "calls": calls})


def _wrong(value):
    return value + " now" if isinstance(value, str) else value + 1 if isinstance(value, (int, float)) else value


def _script(task: dict, behaviour: str):
    """A model that behaves so on this task: a function of the conversation, so its final can
    quote the results the run really got."""
    calls = [dict(c) for c in task["calls"]] or ([{"tool": "weather", "input": {"city": "Paris"}}] if behaviour == "calls_when_none_needed" else [])
    if behaviour == "wrong_args":
        calls = [{"tool": c["tool"], "input": {k: _wrong(v) for k, v in c["input"].items()}} for c in calls]
    first = [] if behaviour == "no_call" else calls
    generations = (["not json"] if behaviour == "refused_first" else []) + ([_turn(first)] if first else [])

    asked = []

    def reply(messages, options):
        asked.append(1)
        if len(asked) <= len(generations):
            return generations[len(asked) - 1]
        results = messages[-1]["content"] if first else ""
        wet = any(sky in results for sky in score.RAINY)
        advice = score.ADVICE[wet != (behaviour == "wrong_advice")]
        return final("Done." if behaviour == "no_quote" else f"{results} So {advice}.")

    return reply


def _agree(task: dict, events: list[dict]) -> None:
    row = score.score(task, events)
    result = evals.score(score.eval_case(task), events)
    assert result.check("calls").passed == row["first_turn"], (row["first_turn_failure"], result.check("calls").reason)
    assert result.check("ending").passed == row["final"]
    if row["quoted"] is None:
        assert [c.name for c in result.checks] == ["ending", "calls"]
    else:
        assert (result.check("quoted").passed, result.check("quoted").reason) == (row["quoted"], row["quote_failure"])
    assert result.passed == (row["first_turn"] and row["quoted"] is not False and row["final"])  # eval.py's "ok"


async def test_score_and_its_evals_case_agree_on_held_out_tasks_of_every_kind_under_each_behaviour():
    tasks, per_kind = [], {}
    for t in corpus.eval_tasks():  # the first 6 of each kind (all 210 take 7 s)
        per_kind[t.kind] = per_kind.get(t.kind, 0) + 1
        if per_kind[t.kind] <= 6:
            tasks.append(t.to_dict())
    assert len(per_kind) >= 10 and len(tasks) >= 60
    by_name = {f"{b} {i}": (t, b) for i, t in enumerate(tasks) for b in BEHAVIOURS}
    cases = [evals.Case(t["prompt"] or "-", name=name, checks=[lambda run: True]) for name, (t, _) in by_name.items()]

    def agent(case):
        task, behaviour = by_name[case.name]
        limits = {"turns": 1} if behaviour == "out_of_turns" else None
        return Agent(model=ScriptedModel(_script(task, behaviour)), instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools(), limits=limits)

    report = await evals.run(cases, agent)
    outcomes = {"first_turn": set(), "quoted": set(), "final": set()}
    for r in report.results:
        task = by_name[r.case.name][0]
        events = [e.to_dict() for e in r.outcome.events]
        _agree(task, events)
        row = score.score(task, events)
        for key in outcomes:
            outcomes[key].add(row[key])
    assert outcomes == {"first_turn": {True, False}, "quoted": {True, False, None}, "final": {True, False}}  # both sides of each


def _events(calls, results, final_text):
    """The events as tests/model/test_training_data.py writes them: dicts, calls without a type."""
    evs = [{"type": "turn", "turn": 1, "thought": "", "calls": [{"id": f"c{i}", "tool": t, "input": x} for i, (t, x) in enumerate(calls)]}]
    evs += [{"type": "result", "id": f"c{i}", "tool": t, "text": r, "error": False} for i, ((t, _), r) in enumerate(zip(calls, results))]
    evs += [{"type": "usage", "completion_tokens": 10}, {"type": "final", "text": final_text}]
    return evs


@pytest.mark.parametrize(
    "calls, result, final_text",
    [
        ([("weather", {"city": "kano."})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano."),
        ([("weather", {"city": "Kano now"})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano."),
        ([("time", {"city": "Kano"})], "sunny and 20°C in Kano", "It is sunny and 20°C in Kano."),
        ([("weather", {"city": "Kano"})], "light rain and 9°C in Kano", "Expect light rain and 9°C in Kano, so take an umbrella."),
        ([("weather", {"city": "Kano"})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano, so take an umbrella."),
        ([("weather", {"town": "Kano"})], "sunny and 20°C in Kano", "Sunny."),
        ([], None, "Sunny."),
    ],
)
@pytest.mark.parametrize("umbrella", [False, True])
def test_they_agree_on_the_scorers_own_events(calls, result, final_text, umbrella):
    task = {"kind": "weather", "prompt": "Umbrella in Kano?", "umbrella": umbrella, "calls": [{"tool": "weather", "input": {"city": "Kano"}}]}
    _agree(task, _events(calls, [result] if calls else [], final_text))


def test_a_calculate_input_with_the_same_value_is_the_same_in_both():
    task = {"kind": "calculate", "prompt": "2+3*4?", "calls": [{"tool": "calculate", "input": {"expression": "2+3*4"}}]}
    for expression, same in (("2 + (3*4)", True), ("(2+3)*4", False)):
        events = _events([("calculate", {"expression": expression})], ["14"], "It is 14.")
        _agree(task, events)
        assert evals.score(score.eval_case(task), events).check("calls").passed is same
