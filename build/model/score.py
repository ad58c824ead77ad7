"""Score one run of a task from its events (aerix events as plain dicts, Python or page keys).

- ``first_turn``: the first generation was accepted and is what the task needs: the right
  tools, in order, with the right arguments (a city or a note equal up to case and a final
  full stop; a number equal; an expression with the same value, or failing the same way); a
  final with no calls for a request no tool serves.
- ``quoted``: the run ended in a final that contains every tool result of the run (for a
  failed call, its message without the ``error: Error: `` prefix), and, asked whether to take
  an umbrella, gives the advice the weather calls for (take it when the sky is rainy, else
  leave it). Only tasks that need tools.
- ``final``: the run ended with ``final``, not ``end``.
A failure gets one category, the first that applies.

``eval_case(task)`` is the same scoring as an ``aerix.evals`` case (its ``calls`` check is
``first_turn``, its ``quoted`` check ``quoted``, its ``ending`` check ``final``), for a user's
own run of the demo's tasks; tests/unit/test_demo_eval_case.py shows the two agree.
"""

from __future__ import annotations

from typing import Any

from aerix import evals

from . import demo_tools as demo

__all__ = ["eval_case", "score", "summarize", "result_message"]


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


def first_turn_failure(task: dict[str, Any], events: list[dict[str, Any]]) -> str | None:
    """None when the first generation is right, else the failure's category."""
    for e in events:
        if e["type"] == "retry":
            return "first turn refused (" + e["reason"].split(":")[0] + ")"
        if e["type"] == "end":
            return f"no first turn (ended {e['reason']})"
        if e["type"] == "turn":
            got = [(c["tool"], c["input"]) for c in e["calls"]]
            want = [(c["tool"], c["input"]) for c in task["calls"]]
            if not want:
                return None if not got else "called a tool for a request no tool serves"
            if not got:
                return "answered without calling a tool"
            if [t for t, _ in got] != [t for t, _ in want]:
                if len(got) != len(want):
                    return f"made {len(got)} calls instead of {len(want)}"
                return "wrong tool"
            for (tool, gi), (_, wi) in zip(got, want):
                wrong = args_failure(tool, gi, wi)
                if wrong:
                    return wrong
            return None
    return "no first turn"


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


def score(task: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    ending = events[-1] if events else {"type": "end", "reason": "none"}
    results = [e for e in events if e["type"] == "result"]
    first = first_turn_failure(task, events)
    needs_tools = bool(task["calls"])
    quoted: bool | None = None
    quote_failure = None
    if needs_tools:
        quote_failure = quoting_failure(task, ending, results)
        quoted = quote_failure is None
    usage = [e for e in events if e["type"] == "usage"]
    return {
        "kind": task["kind"],
        "first_turn": first is None,
        "first_turn_failure": first,
        "quoted": quoted,
        "quote_failure": quote_failure,
        "final": ending["type"] == "final",
        "ending": ending["type"] if ending["type"] == "final" else f"end:{ending.get('reason')}",
        "turns": sum(1 for e in events if e["type"] == "turn"),
        "generations": len(usage),
        "retries": sum(1 for e in events if e["type"] == "retry"),
        "completion_tokens": sum(e.get("completion_tokens", e.get("completionTokens", 0)) for e in usage),
    }


def eval_case(task: dict[str, Any]) -> evals.Case:
    """The task as an aerix.evals case that scores a run as :func:`score` does."""

    def same_args(tool: str, want: dict[str, Any]) -> evals.Matcher:
        def args(got: Any) -> None:
            wrong = args_failure(tool, got, want)
            assert wrong is None, wrong

        return evals.satisfies(args, name=f"same args as {want}")

    def quoted(run: evals.Outcome) -> None:
        ending = run.events[-1].to_dict() if run.events else {"type": "end", "reason": "none"}
        wrong = quoting_failure(task, ending, [r.to_dict() for r in run.results])
        assert wrong is None, wrong

    calls = [evals.call(c["tool"], same_args(c["tool"], c["input"])) for c in task["calls"]]
    return evals.Case(task["prompt"], calls=calls, calls_match="first_turn", checks=[quoted] if task["calls"] else [])


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
