"""`make eval` scores through aerix.evals (issue 31 part 3): each held-out task is an evals case
(score.eval_case), a run's events go through evals.score, and what eval.json records of a run
(score.row: first turn, quoted, final and each failure's category) is read from the case's
result. Here on held-out tasks of every kind under several model behaviours, right and wrong, on
hand-written events, and on a page run's camelCase events as build/model/eval.py gets them."""

from __future__ import annotations

import json
import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("build/model runs on CPython: Pyodide has no build/", allow_module_level=True)

from helpers import final

from aerix import Agent, evals
from aerix.testing import ScriptedModel
from build.model import corpus, eval as page_eval, score
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


def _expected(task: dict, behaviour: str, row: dict) -> None:
    """What each behaviour must give, category included."""
    needs = bool(task["calls"])
    first, quote = row["first_turn_failure"], row["quote_failure"]
    if behaviour == "right" or (not needs and behaviour in ("wrong_advice", "no_quote", "no_call", "wrong_args", "out_of_turns")):
        assert (first, row["quoted"] if needs else None, row["final"]) == (None, True if needs else None, True)
    elif behaviour == "wrong_advice":
        assert first is None and quote == ("wrong umbrella advice" if task.get("umbrella") else None)
    elif behaviour == "no_quote":
        assert first is None and quote == ("final does not quote the result" if len(task["calls"]) == 1 else "final misses a result")
    elif behaviour == "no_call":
        assert (first, quote) == ("answered without calling a tool", "final without any tool result")
    elif behaviour == "refused_first":
        assert first == "first turn refused (bad json)" and row["retries"] == 1 and row["final"]
    elif behaviour == "wrong_args" and first is None:  # "563 / 0 now" fails as "563 / 0" does: the same
        assert task["kind"] == "div_zero", row
    elif behaviour == "wrong_args":  # a wrong value, or one the tool's input check refuses
        assert first.startswith(tuple(f"wrong {c['tool']}." for c in task["calls"])) or first.startswith("first turn refused ("), first
    elif behaviour == "out_of_turns":
        assert (first, quote, row["final"], row["ending"]) == (None, "ended turns before a final", False, "end:turns")
    elif behaviour == "calls_when_none_needed":
        assert first == (None if needs else "called a tool for a request no tool serves")


async def test_each_behaviour_on_held_out_tasks_of_every_kind_gets_its_verdict_and_category():
    tasks, per_kind = [], {}
    for t in corpus.eval_tasks():  # the first 6 of each kind (all 210 take 7 s)
        per_kind[t.kind] = per_kind.get(t.kind, 0) + 1
        if per_kind[t.kind] <= 6:
            tasks.append(t.to_dict())
    assert len(per_kind) >= 10 and len(tasks) >= 60
    by_name = {f"{b} {i}": (t, b) for i, t in enumerate(tasks) for b in BEHAVIOURS}
    # the demo's eval cases, renamed: a prompt may come back under another behaviour
    cases = [evals.Case(t["prompt"], name=name, calls=c.calls, calls_match="first_turn", checks=c.checks)
             for name, (t, _) in by_name.items() for c in [score.eval_case(t)]]  # fmt: skip

    def agent(case):
        task, behaviour = by_name[case.name]
        limits = {"turns": 1} if behaviour == "out_of_turns" else None
        return Agent(model=ScriptedModel(_script(task, behaviour)), instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools(), limits=limits)

    report = await evals.run(cases, agent)
    seen = {"first_turn": set(), "quoted": set(), "final": set()}
    for r in report.results:
        task, behaviour = by_name[r.case.name]
        row = score.row(r)
        _expected(task, behaviour, row)
        # eval.py's "ok" is the case's passing; recorded dicts score as the events did
        assert r.passed == (row["first_turn"] and row["quoted"] is not False and row["final"])
        assert score.score(task, [e.to_dict() for e in r.outcome.events]) == {"kind": task["kind"], **row}
        for key in seen:
            seen[key].add(row[key])
    assert seen == {"first_turn": {True, False}, "quoted": {True, False, None}, "final": {True, False}}  # both sides of each


def _events(calls, results, final_text):
    """The events as tests/model/test_training_data.py writes them: dicts, calls without a type."""
    evs = [{"type": "turn", "turn": 1, "thought": "", "calls": [{"id": f"c{i}", "tool": t, "input": x} for i, (t, x) in enumerate(calls)]}]
    evs += [{"type": "result", "id": f"c{i}", "tool": t, "text": r, "error": False} for i, ((t, _), r) in enumerate(zip(calls, results))]
    evs += [{"type": "usage", "completion_tokens": 10}, {"type": "final", "text": final_text}]
    return evs


KANO = {"kind": "weather", "prompt": "Umbrella in Kano?", "calls": [{"tool": "weather", "input": {"city": "Kano"}}]}


@pytest.mark.parametrize(
    "calls, result, final_text, umbrella, first, quote",
    [
        ([("weather", {"city": "kano."})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano.", False, None, None),
        ([("weather", {"city": "Kano now"})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano.", False, "wrong weather.city", None),
        ([("time", {"city": "Kano"})], "sunny and 20°C in Kano", "It is sunny and 20°C in Kano.", False, "wrong tool", None),
        ([("weather", {"city": "Kano"})], "light rain and 9°C in Kano", "Expect light rain and 9°C in Kano, so take an umbrella.", True, None, None),
        ([("weather", {"city": "Kano"})], "sunny and 20°C in Kano", "Expect sunny and 20°C in Kano, so take an umbrella.", True, None, "wrong umbrella advice"),
        ([("weather", {"city": "Kano"})], "sunny and 20°C in Kano", "Expect sun in Kano.", False, None, "final does not quote the result"),
        ([("weather", {"town": "Kano"})], "sunny and 20°C in Kano", "Sunny.", False, "wrong argument names for weather", "final does not quote the result"),
        ([("weather", {"city": "Kano"}), ("time", {"city": "Kano"})], "x", "x", False, "made 2 calls instead of 1", None),
        ([], None, "Sunny.", False, "answered without calling a tool", "final without any tool result"),
    ],
)
def test_each_failure_of_hand_written_events_gets_its_category(calls, result, final_text, umbrella, first, quote):
    row = score.score({**KANO, "umbrella": umbrella}, _events(calls, [result] * len(calls), final_text))
    assert (row["first_turn_failure"], row["quote_failure"]) == (first, quote)
    assert (row["first_turn"], row["quoted"], row["final"], row["turns"], row["completion_tokens"]) == (first is None, quote is None, True, 1, 10)


def test_a_run_that_ends_before_a_turn_or_gives_no_events_and_a_calculate_input_of_the_same_value():
    ended = score.score(KANO, [{"type": "end", "reason": "error", "message": "the engine failed"}])
    assert (ended["first_turn_failure"], ended["quote_failure"], ended["ending"], ended["final"]) == (
        "no first turn (ended error)", "ended error before a final", "end:error", False)  # fmt: skip
    assert score.score(KANO, [])["first_turn_failure"] == "no first turn"
    task = {"kind": "calculate", "prompt": "2+3*4?", "calls": [{"tool": "calculate", "input": {"expression": "2+3*4"}}]}
    for expression, failure in (("2 + (3*4)", None), ("(2+3)*4", "wrong calculate.expression")):
        assert score.score(task, _events([("calculate", {"expression": expression})], ["14"], "It is 14."))["first_turn_failure"] == failure


def test_a_reason_no_pattern_knows_is_its_own_category():
    assert score.category(evals.CheckResult("calls", False, "first turn: something new")) == "first turn: something new"
    assert score.category(evals.CheckResult("calls", True)) is None


def test_a_page_run_scores_from_its_camel_case_events_and_a_failed_one_keeps_evals_reasons():
    task = corpus.Task(kind="weather", prompt="Weather in Kano?", calls=[("weather", {"city": "Kano"})])
    events = [{"type": "text", "text": "{"}, {"type": "usage", "promptTokens": 300, "completionTokens": 21, "cachedTokens": 0},
              {"type": "turn", "turn": 1, "thought": "", "calls": [{"type": "call", "id": "call_1", "tool": "weather", "input": {"city": "Kano"}}]},
              {"type": "call", "id": "call_1", "tool": "weather", "input": {"city": "Kano"}},
              {"type": "result", "id": "call_1", "tool": "weather", "text": "sunny and 20°C in Kano", "error": False},
              {"type": "usage", "promptTokens": 340, "completionTokens": 12, "cachedTokens": 290},
              {"type": "finalDelta", "text": "Expect"}, {"type": "final", "text": "Expect sunny and 20°C in Kano.", "thought": ""}]  # fmt: skip
    out = {"events": events, "raw": ["t1", "t2"], "genMs": [100.0, 60.0], "ms": 180.4, "system": ""}
    result, row, run = page_eval.scored_run(task, out)
    assert result.passed and result.outcome.seconds == pytest.approx(0.1804)
    assert row == {"kind": "weather", "first_turn": True, "first_turn_failure": None, "quoted": True, "quote_failure": None, "final": True,
                   "ending": "final", "turns": 1, "generations": 2, "retries": 0, "completion_tokens": 33}  # fmt: skip
    assert run == {**task.to_dict(), **row, "ms": 180} and "events" not in run
    missed = {**out, "events": [*events[:-1], {"type": "final", "text": "Sunny.", "thought": ""}]}
    result, row, run = page_eval.scored_run(task, missed)
    assert run["reasons"] == ["quoted: final does not quote the result"] and run["turns_raw"] == ["t1", "t2"]
    assert [e["type"] for e in run["events"]] == ["text", "turn", "call", "result", "finalDelta", "final"]
    summary = page_eval.mode_summary(evals.Report((result,)), [row], gen_ms=160.0, wall_ms=180.4)
    assert summary["evals"] == {"cases": 1, "passed": 0, "failed": 1, "pass_rate": 0.0, "tokens": {"prompt": 640, "completion": 33, "cached": 290}, "seconds": 0.1804}
    assert summary["tokens_per_s"] == pytest.approx(33 / 0.16) and summary["failures"] == {"final does not quote the result": 1}


def test_the_results_name_the_model_that_was_measured_not_the_bundled_one(tmp_path):
    """A reported fault: eval-general*.json recorded the bundled model's sha256 (from
    models/aerix-tools.json) whatever --model the page ran. model_sha256 is now the served file's."""
    import hashlib

    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "aerix-tools.gguf").write_bytes(b"GGUF bundled")
    (tmp_path / "models" / "aerix-general-q8_0.gguf").write_bytes(b"GGUF general")
    assert page_eval.served_sha256(tmp_path, "/models/aerix-general-q8_0.gguf") == hashlib.sha256(b"GGUF general").hexdigest()
    assert page_eval.served_sha256(tmp_path, "/models/aerix-tools.gguf") == hashlib.sha256(b"GGUF bundled").hexdigest()
    assert page_eval.served_sha256(tmp_path, "/models/missing.gguf") is None
    (tmp_path / "outside.gguf").write_bytes(b"GGUF elsewhere")
    assert page_eval.served_sha256(tmp_path / "models", "/../outside.gguf") is None  # not on the site
    assert "CPUs" in page_eval.machine()


def test_no_committed_result_names_one_model_and_the_bundled_ones_sha256():
    """The same fault in the files it had written: four SmolLM2 results (smollm2-q8_0-*.json) carried
    the bundled model's sha256. A committed result of the page's eval that names the bundled model
    carries its sha256, and one that names another model does not."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    bundled = json.loads((root / "models" / "aerix-tools.json").read_text())["sha256"]
    seen = 0
    for path in sorted((root / "bench" / "results").glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("model"), str) or "model_sha256" not in data:
            continue
        seen += 1
        names_bundled = data["model"].rsplit("/", 1)[-1] == "aerix-tools.gguf"
        assert (data["model_sha256"] == bundled) == names_bundled, (path.name, data["model"], data["model_sha256"])
    assert seen >= 20, seen
