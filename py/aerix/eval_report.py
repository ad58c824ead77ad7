"""What :func:`aerix.evals.run` gives back: a :class:`Report` of one :class:`CaseResult` per case.

A case's result holds what its run did (an :class:`Outcome`: the calls, the results, the answer,
the ending, tokens and time, all read from the run's events) and its checks (``ending``,
``calls``, ``answer`` and the case's own), each passed or not with its reason. The report prints
as a plain-text table (``str(report)``), converts to JSON values (``to_dict()``, ``to_json()``)
and, in a test, ``report.assert_passed()`` fails with the table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from .events import Call, End, Event, Final, Interrupted, Result, SubagentEvent, Turn, Usage, Waiting

if TYPE_CHECKING:
    from .evals import Case

__all__ = ["CaseResult", "CheckResult", "Outcome", "Report", "Tokens"]

_WIDTH = {"case": 28, "calls": 34, "answer": 34}  # the table's widest columns, in characters


@dataclass(frozen=True)
class Tokens:
    """Token counts summed over generations (a sub-agent's included); ``cached`` of ``prompt``
    were reused from the engine's cache."""

    prompt: int = 0
    completion: int = 0
    cached: int = 0

    @property
    def total(self) -> int:
        return self.prompt + self.completion

    def __add__(self, other: Tokens) -> Tokens:
        return Tokens(self.prompt + other.prompt, self.completion + other.completion, self.cached + other.cached)

    def to_dict(self) -> dict[str, int]:
        return {"prompt": self.prompt, "completion": self.completion, "cached": self.cached}


@dataclass(frozen=True)
class Outcome:
    """What one case's run did, read from its events. ``calls`` and ``results`` are the run's
    own (a sub-agent's stay inside its tool's call); ``answer`` is the final's text and
    ``output`` its structured output (``None`` without one, or without a final); ``ending`` is
    ``final``, ``end:<reason>`` (``message`` says more), ``waiting``, ``interrupted``, ``turn``
    (the run was stopped at a turn, ``Case(stop_after="turn")``: its calls are that turn's, never
    run) or ``none``."""

    events: tuple[Event, ...] = field(repr=False)
    calls: tuple[Call, ...]
    results: tuple[Result, ...]
    answer: str | None
    output: Any
    ending: str
    message: str | None
    tokens: Tokens
    seconds: float

    @classmethod
    def of(cls, events: Sequence[Event], seconds: float = 0.0) -> Outcome:
        last = events[-1] if events else None
        message: str | None
        ending, message = "none", "the run gave no events"
        if isinstance(last, Final):
            ending, message = "final", None
        elif isinstance(last, End):
            ending, message = f"end:{last.reason}", last.message
        elif isinstance(last, Waiting):
            ending, message = "waiting", f"waiting for approval {last.approval_id}: {last.title}"
        elif isinstance(last, Interrupted):
            ending, message = "interrupted", last.message
        elif isinstance(last, Turn):
            ending, message = "turn", "the run was stopped after a turn, before its calls ran"
        elif last is not None:
            message = f"the run stopped at a {last.type} event"
        return cls(
            events=tuple(events),
            calls=tuple(e for e in events if isinstance(e, Call)) + (last.calls if isinstance(last, Turn) else ()),
            results=tuple(e for e in events if isinstance(e, Result)),
            answer=last.text if isinstance(last, Final) else None,
            output=last.output if isinstance(last, Final) else None,
            ending=ending,
            message=message,
            tokens=_tokens(events),
            seconds=seconds,
        )


def _tokens(events: Sequence[Event]) -> Tokens:
    total = Tokens()
    for e in events:
        while isinstance(e, SubagentEvent):
            e = e.event
        if isinstance(e, Usage):
            total += Tokens(e.prompt_tokens, e.completion_tokens, e.cached_tokens)
    return total


@dataclass(frozen=True)
class CheckResult:
    """One check of a case: ``ending``, ``calls``, ``answer`` or a check function's name."""

    name: str
    passed: bool
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "reason": self.reason}


@dataclass(frozen=True)
class CaseResult:
    """A case, what its run did, and its checks. It passed when every check did."""

    case: Case
    outcome: Outcome
    checks: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def reasons(self) -> list[str]:
        """Why it did not pass: each failed check's reason, named by the check."""
        return [f"{c.name}: {c.reason}" for c in self.checks if not c.passed]

    def check(self, name: str) -> CheckResult:
        """The check named ``name`` (``KeyError`` when the case had none so named)."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(f"case {self.case.name!r} has no check {name!r} (it has: {', '.join(c.name for c in self.checks)})")

    def to_dict(self) -> dict[str, Any]:
        o = self.outcome
        out: dict[str, Any] = {"name": self.case.name, "prompt": self.case.prompt, "passed": self.passed, "reasons": self.reasons}
        out["checks"] = [c.to_dict() for c in self.checks]
        out["calls"] = [{"id": c.id, "tool": c.tool, "input": c.input} for c in o.calls]
        out["results"] = [{"id": r.id, "tool": r.tool, "text": r.text, "error": r.error} for r in o.results]
        out.update(answer=o.answer, ending=o.ending, message=o.message, tokens=o.tokens.to_dict(), seconds=round(o.seconds, 6))
        if o.output is not None:
            out["output"] = o.output
        return out


@dataclass(frozen=True)
class Report:
    """Every case's result, in the cases' order, and their totals."""

    results: tuple[CaseResult, ...]

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def failed(self) -> int:
        return len(self.results) - self.passed

    @property
    def pass_rate(self) -> float:
        """Passed cases over all of them (1.0 for no case)."""
        return self.passed / len(self.results) if self.results else 1.0

    @property
    def tokens(self) -> Tokens:
        return sum((r.outcome.tokens for r in self.results), Tokens())

    @property
    def seconds(self) -> float:
        """The cases' times summed (with ``concurrency`` above 1, more than the wall clock's)."""
        return sum(r.outcome.seconds for r in self.results)

    def __getitem__(self, name: str) -> CaseResult:
        for r in self.results:
            if r.case.name == name:
                return r
        raise KeyError(f"no case named {name!r}")

    def totals(self) -> dict[str, Any]:
        return {"cases": len(self.results), "passed": self.passed, "failed": self.failed, "pass_rate": self.pass_rate, "tokens": self.tokens.to_dict(), "seconds": round(self.seconds, 6)}

    def to_dict(self) -> dict[str, Any]:
        """JSON values: ``{"cases": [each case's result], "totals": {...}}``."""
        return {"cases": [r.to_dict() for r in self.results], "totals": self.totals()}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, default=repr)

    def table(self) -> str:
        """One row per case (a failed case's reasons on the lines under it), then the totals."""
        head = ["case", "passed", "calls", "answer", "tokens", "time"]
        rows = [_row(r) for r in self.results]
        widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
        right = {4, 5}  # numbers

        def line(cells: list[str]) -> str:
            return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

        out = [line(head)]
        for r, row in zip(self.results, rows):
            out.append(line(row))
            out.extend(f"    {why}" for why in r.reasons)
        out.append(self.summary())
        return "\n".join(out)

    def summary(self) -> str:
        """One line: cases, passed, failed, tokens and time."""
        t = self.tokens
        return (
            f"{len(self.results)} cases: {self.passed} passed, {self.failed} failed ({self.pass_rate:.0%}); "
            f"{t.total:,} tokens ({t.prompt:,} prompt, {t.completion:,} completion, {t.cached:,} cached); {self.seconds:.2f} s"
        )

    def __str__(self) -> str:
        return self.table()

    def assert_passed(self, at_least: float = 1.0) -> None:
        """For tests: raise ``AssertionError`` with the table unless at least ``at_least`` of
        the cases passed (all of them by default; ``0.9`` lets one in ten fail)."""
        if self.pass_rate < at_least:
            want = "every case to pass" if at_least >= 1.0 else f"at least {at_least:.0%} of the cases to pass"
            raise AssertionError(f"expected {want}, {self.passed} of {len(self.results)} did:\n{self.table()}")


def _row(r: CaseResult) -> list[str]:
    o = r.outcome
    calls = ", ".join(f"{c.tool}({_args(c.input)})" for c in o.calls) or "-"
    answer = o.answer if o.answer is not None else f"({o.ending})"
    return [_cut(r.case.name, "case"), "yes" if r.passed else "NO", _cut(calls, "calls"), _cut(answer, "answer"), f"{o.tokens.total:,}", f"{o.seconds:.2f}s"]


def _args(value: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=repr)}" for k, v in value.items())


def _cut(text: str, column: str) -> str:
    text = " ".join(text.split())  # one line
    width = _WIDTH[column]
    return text if len(text) <= width else text[: width - 1] + "…"
