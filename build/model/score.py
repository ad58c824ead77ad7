"""Score one run of a task through ``aerix.evals``: ``eval_case(task)`` is the task as a case, and
``row(result)`` what `make eval` and training record of its ``evals.CaseResult``.

- ``first_turn`` (the case's ``calls`` check, ``calls_match="first_turn"``): the first
  generation was accepted and is what the task needs: the right tools, in order, with the right
  arguments (a city or a note equal up to case and a final full stop; a number equal; an
  expression with the same value, or failing the same way); a final with no calls for a request
  no tool serves.
- ``quoted`` (its check ``quoted``): the run ended in a final that contains every tool result
  of the run (for a failed call, its message without the ``error: Error: `` prefix), and,
  asked whether to take an umbrella, gives the advice the weather calls for (take it when the
  sky is rainy, else leave it). Only tasks that need tools.
- ``final`` (its ``ending`` check): the run ended with ``final``, not ``end``.
A failed check's reason gives the failure one category (``category``), the first that applies.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from aerix import evals
from aerix.events import Retry, Turn, Usage

from . import demo_tools as demo

__all__ = ["category", "eval_case", "result_message", "row", "score", "summarize"]


def result_message(text: str) -> str:
    return text.removeprefix("error: ").removeprefix("Error: ")


def _same_arg(tool: str, key: str, got: Any, want: Any) -> bool:
    if tool == "calculate":
        return _value(str(got)) == _value(str(want)) if isinstance(got, str) else False
    if key == "value":
        return isinstance(got, (int, float)) and not isinstance(got, bool) and float(got) == float(want)
    if isinstance(got, str) and isinstance(want, str):
        norm = lambda s: s.strip().rstrip(".").casefold()  # noqa: E731
        return norm(got) == norm(want)
    return bool(got == want)


def _value(expression: str) -> str:
    try:
        return repr(demo.evaluate(expression))
    except demo.ToolFailed as e:
        return str(e)


def args_failure(tool: str, got: Any, want: dict[str, Any]) -> str | None:
    """None when a call's input is the task's (see _same_arg), else the failure's category."""
    if not isinstance(got, dict) or set(got) != set(want):
        return f"wrong argument names for {tool}"
    for key in want:
        if not _same_arg(tool, key, got[key], want[key]):
            return f"wrong {tool}.{key}"
    return None


RAINY = ("light rain", "showers", "rain")  # the skies of demo.weather that call for an umbrella
ADVICE = {True: "take an umbrella", False: "leave the umbrella"}  # what a final says, by rainy()


def rainy(results: list[tuple[str, str]]) -> bool:
    """Whether any weather result, as (tool, text), calls for an umbrella."""
    return any(text.startswith(RAINY) for tool, text in results if tool == "weather")


def right_advice(results: list[dict[str, Any]], final: str) -> bool:
    wet = rainy([(r["tool"], r["text"]) for r in results])
    return ADVICE[wet] in final and ADVICE[not wet] not in final


def quoting_failure(task: dict[str, Any], ending: dict[str, Any], results: list[dict[str, Any]]) -> str | None:
    """None when the run's final quotes every result (and gives the right umbrella advice),
    else the failure's category. Only for tasks that need tools."""
    if ending["type"] != "final":
        return f"ended {ending.get('reason')} before a final"
    if not results:
        return "final without any tool result"
    missing = [r for r in results if result_message(r["text"]) not in ending["text"]]
    if missing:
        return "final does not quote the result" if len(results) == 1 else "final misses a result"
    if task.get("umbrella") and not right_advice(results, ending["text"]):
        return "wrong umbrella advice"
    return None


def eval_case(task: dict[str, Any]) -> evals.Case:
    """The task as an aerix.evals case: its calls on the first turn (each input compared by
    :func:`args_failure`, a matcher named ``args``), and for a task that needs tools a check
    ``quoted`` (:func:`quoting_failure`); its ``ending`` check is the run's ``final``."""

    def same_args(tool: str, want: dict[str, Any]) -> evals.Matcher:
        def args(got: Any) -> None:
            wrong = args_failure(tool, got, want)
            assert wrong is None, wrong

        return evals.satisfies(args, name="args")

    def quoted(run: evals.Outcome) -> None:
        ending = run.events[-1].to_dict() if run.events else {"type": "end", "reason": "none"}
        wrong = quoting_failure(task, ending, [r.to_dict() for r in run.results])
        assert wrong is None, wrong

    calls = [evals.call(c["tool"], same_args(c["tool"], c["input"])) for c in task["calls"]]
    prompt = task.get("prompt") or f"a {task['kind']} task"  # recorded events scored without their prompt
    return evals.Case(prompt, calls=calls, calls_match="first_turn", checks=[quoted] if task["calls"] else [])


# evals' reasons for a failed first turn (aerix/evals.py), and the category each gives
_REASONS: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]] = [
    (re.compile(r"the first generation was refused: ([^:]*)"), lambda m: f"first turn refused ({m[1]})"),
    (re.compile(r"no turn: the run ended ([^:]*):"), lambda m: f"no first turn (ended {m[1]})"),
    (re.compile(r"no turn$"), lambda m: "no first turn"),
    (re.compile(r"first turn: expected no calls, got "), lambda m: "called a tool for a request no tool serves"),
    (re.compile(r"first turn: expected \S+ calls? \(.*\), got 0 \("), lambda m: "answered without calling a tool"),
    (re.compile(r"first turn: expected (\S+) calls? \(.*\), got (\d+) \("), lambda m: f"made {m[2]} calls instead of {m[1]}"),
    (re.compile(r"first turn: call \d+: expected \S+, got "), lambda m: "wrong tool"),
    (re.compile(r"first turn: call \d+: \S+: args: (.*)"), lambda m: m[1]),
]


def category(check: evals.CheckResult) -> str | None:
    """A failed check's category (None when it passed): the ``calls`` check's from evals' reason
    (``wrong tool``, ``wrong weather.city``, ``first turn refused (cut)``...; a reason no pattern
    knows is its own category), any other check's is its reason (``quoted``'s is already one)."""
    if check.passed:
        return None
    why = check.reason or ""
    if check.name == "calls":
        for pattern, name in _REASONS:
            m = pattern.match(why)
            if m:
                return name(m)
    return why


def row(result: evals.CaseResult) -> dict[str, Any]:
    """What `make eval` records of a task's scored run (its ``evals.CaseResult``)."""
    o = result.outcome
    quoted = [c for c in result.checks if c.name == "quoted"]
    return {
        "first_turn": result.check("calls").passed,
        "first_turn_failure": category(result.check("calls")),
        "quoted": quoted[0].passed if quoted else None,
        "quote_failure": category(quoted[0]) if quoted else None,
        "final": result.check("ending").passed,
        "ending": o.ending,
        "turns": sum(1 for e in o.events if isinstance(e, Turn)),
        "generations": sum(1 for e in o.events if isinstance(e, Usage)),
        "retries": sum(1 for e in o.events if isinstance(e, Retry)),
        "completion_tokens": o.tokens.completion,
    }


def score(task: dict[str, Any], events: list[dict[str, Any]], seconds: float = 0.0) -> dict[str, Any]:
    """One run of ``task`` scored from its events (dicts, Python's or the page's keys): the
    task's :func:`eval_case` through ``evals.score``, as :func:`row` records it, with the kind."""
    return {"kind": task["kind"], **row(evals.score(eval_case(task), events, seconds))}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    quotable = [r for r in rows if r["quoted"] is not None]
    failures: dict[str, int] = {}
    for r in rows:
        for key in ("first_turn_failure", "quote_failure"):
            if r[key]:
                failures[r[key]] = failures.get(r[key], 0) + 1
        if not r["final"]:
            failures[f"run {r['ending']}"] = failures.get(f"run {r['ending']}", 0) + 1
    by_kind: dict[str, dict[str, Any]] = {}
    for r in rows:
        k = by_kind.setdefault(r["kind"], {"tasks": 0, "first_turn": 0, "quoted": 0, "quotable": 0, "final": 0})
        k["tasks"] += 1
        k["first_turn"] += r["first_turn"]
        k["final"] += r["final"]
        if r["quoted"] is not None:
            k["quotable"] += 1
            k["quoted"] += r["quoted"]
    return {
        "tasks": n,
        "first_turn": sum(r["first_turn"] for r in rows) / n,
        "quoted": sum(bool(r["quoted"]) for r in quotable) / max(len(quotable), 1),
        "quotable_tasks": len(quotable),
        "final": sum(r["final"] for r in rows) / n,
        "turns_per_task": sum(r["turns"] for r in rows) / n,
        "generations_per_task": sum(r["generations"] for r in rows) / n,
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "failures": dict(sorted(failures.items(), key=lambda kv: -kv[1])),
        "by_kind": by_kind,
    }
