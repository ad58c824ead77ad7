"""A question's verdict by BFCL's own AST checker, as an ``aerix.evals`` case, and the table of a run.

``question_case`` is a question as an evals case: stopped at its first accepted turn
(``stop_after="turn"``), checked by BFCL's checker (its check ``bfcl``, a :class:`BfclCheck`).
``scored`` scores a logged record with it through ``evals.score`` (the record's events:
``bfcl_agent.events_of``) and gives the record its verdict; ``summary`` takes each category's
right answers and accuracy from the ``evals.Report`` of its results.

``verdict`` takes what the harness recorded for one question (``bench/bfcl.py``) and returns
``{"valid", "error_type", "error"}``. The error types are BFCL's, except the harness's own:

    aerix:unexpressed     aerix refused a tool made from the question's functions (AerixError)
    harness:unconverted   bench/bfcl_agent.py could not write a function as JSON Schema
    aerix:no_turn         the run ended before the parser accepted a turn (``end`` says how)
    checker:exception     the checker raised on this output (its message in ``error``)

``irrelevance`` is right when the first accepted turn has no calls (a final), as BFCL's
relevance runner has it; a turn with calls is its ``irrelevance_error:decoder_success``. In the
other categories a final is wrong as BFCL's decoder has it for text with no call
(``ast_decoder:decoder_failed``); calls go to the checker, in BFCL's format with BFCL's names.
"""

from __future__ import annotations

import copy
import statistics
from typing import Any, Callable

from aerix import evals
from bench.bfcl_agent import Unconvertible, bfcl_calls, events_of, prompt_of, turn_record
from bench.bfcl_data import MODEL_NAME

__all__ = ["BfclCheck", "Checker", "question_case", "scored", "summary", "table", "verdict"]

Checker = tuple[Callable[..., dict[str, Any]], Any]  # (ast_checker, Language.PYTHON), bfcl_data.checker()


def verdict(category: str, entry: dict[str, Any], answer: list[Any] | None, record: dict[str, Any], checker: Checker) -> dict[str, Any]:
    if record.get("unexpressed"):
        return _wrong("aerix:unexpressed", record["unexpressed"])
    if record.get("unconverted"):
        return _wrong("harness:unconverted", record["unconverted"])
    calls = record.get("calls")
    if calls is None:
        end = record.get("end") or {}
        return _wrong("aerix:no_turn", f"the run ended {end.get('reason')}: {end.get('message')}")
    if category == "irrelevance":
        if calls:
            return _wrong("irrelevance_error:decoder_success", f"{len(calls)} call(s) where none was wanted")
        return {"valid": True, "error_type": None, "error": []}
    if not calls:
        return _wrong("ast_decoder:decoder_failed", "the turn was a final answer, with no call")
    if answer is None:
        raise KeyError(f"{entry['id']}: no possible answer")
    check, python = checker
    try:  # copies: the checker must not change what is recorded
        out = check(copy.deepcopy(entry["function"]), copy.deepcopy(calls), copy.deepcopy(answer), python, category, MODEL_NAME)
    except Exception as e:  # its own failure on an output it did not foresee is a wrong answer, said so
        return _wrong("checker:exception", f"{type(e).__name__}: {e}")
    valid = bool(out.get("valid"))
    return {"valid": valid, "error_type": None if valid else out.get("error_type"), "error": [] if valid else out.get("error", [])}


def _wrong(error_type: str, message: str) -> dict[str, Any]:
    return {"valid": False, "error_type": error_type, "error": [message]}


class BfclCheck:
    """A question's evals check: BFCL's checker (:func:`verdict`) on the calls of the run's first
    turn, in BFCL's names; it fails with ``<error_type>: <first error>``. What aerix could not
    make into an agent (``unexpressed``, ``unconverted`` in ``harness``) has no run and fails
    so. ``verdict`` keeps the last verdict, for the record."""

    def __init__(self, category: str, entry: dict[str, Any], answer: list[Any] | None, checker: Checker, harness: dict[str, Any]) -> None:
        self.__name__ = "bfcl"  # the check's name in the report
        self.category, self.entry, self.answer, self.checker, self.harness = category, entry, answer, checker, harness
        self.verdict: dict[str, Any] | None = None

    def __call__(self, run: evals.Outcome) -> None:
        ran = turn_record(run)
        got = {k: self.harness[k] for k in ("unexpressed", "unconverted") if self.harness.get(k)}
        calls = bfcl_calls(ran, self.harness.get("names") or {})
        self.verdict = verdict(self.category, self.entry, self.answer, {**got, "calls": calls, "end": ran["end"]}, self.checker)
        assert self.verdict["valid"], f"{self.verdict['error_type']}: {(self.verdict['error'] or [''])[0]}"


def question_case(category: str, entry: dict[str, Any], answer: list[Any] | None, checker: Checker, harness: dict[str, Any]) -> evals.Case:
    """The question as an evals case, named by its id: stopped at its first accepted turn and
    checked by BFCL's checker (:class:`BfclCheck`; ``harness``: the logged record's ``names``,
    and its ``unexpressed`` or ``unconverted`` when no agent was made)."""
    try:
        prompt = prompt_of(entry)
    except Unconvertible:
        prompt = entry["id"]  # counted as unconverted: never asked
    return evals.Case(prompt, name=entry["id"], checks=[BfclCheck(category, entry, answer, checker, harness)], stop_after="turn")


def scored(record: dict[str, Any], entry: dict[str, Any], answer: list[Any] | None, checker: Checker) -> tuple[dict[str, Any], evals.CaseResult]:
    """A logged record scored through evals: its case's result, and the record with the
    verdict (``valid`` is the case's passing, ``error_type`` and ``error`` BFCL's)."""
    case = question_case(record["category"], entry, answer, checker, record)
    result = evals.score(case, events_of(record), record.get("seconds") or 0.0)
    (check,) = case.checks
    said = check.verdict if isinstance(check, BfclCheck) else None
    if said is None:  # the harness's own bug (no possible answer for a question): said, not scored
        raise RuntimeError(f"{entry['id']}: BFCL's check did not run: {result.check('bfcl').reason}")
    return record | said | {"valid": result.passed}, result


def summary(results: list[tuple[dict[str, Any], evals.CaseResult]], categories: list[str]) -> dict[str, dict[str, Any]]:
    """Per category and ``all``, from the scored records and their evals results: questions,
    right and accuracy (the ``evals.Report`` of the category's results), the share aerix could not
    express, the runs that never got a turn, median seconds per question and prompt tokens (first
    generation)."""
    out: dict[str, dict[str, Any]] = {}
    for name in [*categories, "all"]:
        rows = [r for r, _ in results if name == "all" or r["category"] == name]
        if not rows:
            continue
        report = evals.Report(tuple(res for r, res in results if name == "all" or r["category"] == name))
        seconds = [r["seconds"] for r in rows if r.get("seconds") is not None]
        prompts = [r["usage"][0][0] for r in rows if r.get("usage")]
        out[name] = {
            "questions": len(report.results),
            "right": report.passed,
            "accuracy": report.pass_rate,
            "unexpressed": sum(1 for r in rows if r["error_type"] in ("aerix:unexpressed", "harness:unconverted")) / len(rows),
            "no_turn": sum(1 for r in rows if r["error_type"] == "aerix:no_turn"),
            "seconds_median": statistics.median(seconds) if seconds else None,
            "prompt_tokens_median": statistics.median(prompts) if prompts else None,
        }
    return out


def table(model: str, summaries: dict[str, dict[str, Any]]) -> str:
    """The Markdown table bench/README.md shows for one model and variant."""
    lines = [f"| {model} | questions | accuracy | not expressed | no turn | s/question (median) | prompt tokens (median) |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, s in summaries.items():
        secs = "" if s["seconds_median"] is None else f"{s['seconds_median']:.2f}"
        toks = "" if s["prompt_tokens_median"] is None else f"{s['prompt_tokens_median']:.0f}"
        lines.append(f"| {name} | {s['questions']} | {s['accuracy']:.1%} ({s['right']}) | {s['unexpressed']:.1%} | {s['no_turn']} | {secs} | {toks} |")
    return "\n".join(lines)
