"""Evals for your own agents: cases, run on a fresh agent each, scored from the run's events.

    from aerix import evals

    cases = [
        evals.Case("Weather in Lisbon?", calls=[evals.call("weather", {"city": "Lisbon"})],
                   answer=evals.contains("Lisbon")),
        evals.Case("Hi!", calls=[], answer=evals.satisfies(lambda text: len(text) < 80)),
    ]
    report = await evals.run(cases, lambda case: Agent(model=model, tools=[weather]))
    print(report)              # a table; report.to_json() for JSON
    report.assert_passed()     # in a test: fails with the table

A case passes when each of its checks does:

- ``ending``: the run ended with a final answer (an ``end`` fails, its reason and message said);
- ``calls`` (when ``calls`` is given; ``[]`` expects none): the run's ``call`` events are these,
  as ``calls_match`` says: ``"in_order"`` (the default: these calls, in this order, no others),
  ``"any_order"`` (these calls, in any order, no others) or ``"first_turn"`` (the first
  generation was accepted, and its turn's calls are these, in order; what comes after is free);
- ``answer`` (when given): the final's text, or with ``Agent(output=...)`` its output, matches;
- each of ``checks``: a function of the case's :class:`~aerix.eval_report.Outcome`, failing
  when it returns ``False`` or raises.

``stop_after="turn"`` measures a model's first try as a function-calling benchmark does: the run
is stopped at its first accepted turn (a refused generation before it is retried as usual), so
no tool runs; its ``ending`` check passes when the run got that turn (``Outcome.ending`` is
``"turn"``), and ``calls`` are the turn's. Such a case may expect nothing more.

An expected call is ``call(tool, input)``, ``(tool, input)`` or just the tool's name (any
input); ``input`` is a matcher (:mod:`aerix.eval_matchers`) or a plain dict, matched exactly.

``agent``: a function that makes a **fresh** Agent for each case (of the case when it takes a
positional argument without a default, else of nothing; it may be async): nothing of one case's conversation, state or artifacts reaches the next. An
Agent itself is not taken (copying one is not well defined: its store, its state, its tools'
context), and a factory that hands out the same Agent twice is refused.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import time
from contextlib import aclosing
from dataclasses import dataclass, field, fields
from typing import Any, Awaitable, Callable, Literal, Mapping, Sequence, Union, get_args

from .agent import Agent
from .errors import AerixError
from .eval_matchers import Matcher, contains, exact, matcher, matcher_of, satisfies, short, subset, verdict
from .eval_report import CaseResult, CheckResult, Outcome, Report, Tokens
from .events import Call, End, Event, Final, Result, Retry, SubagentEvent, Turn, Usage

__all__ = [
    "Case",
    "CaseResult",
    "CheckResult",
    "ExpectedCall",
    "Matcher",
    "Outcome",
    "Report",
    "Tokens",
    "call",
    "contains",
    "exact",
    "matcher",
    "run",
    "run_sync",
    "satisfies",
    "score",
    "subset",
]

CallsMatch = Literal["in_order", "any_order", "first_turn"]
StopAfter = Literal["turn"]
Check = Callable[[Outcome], Any]
AgentFactory = Union[Callable[["Case"], Union[Agent, Awaitable[Agent]]], Callable[[], Union[Agent, Awaitable[Agent]]]]
_CASE_KEYS = frozenset({"prompt", "name", "calls", "answer", "calls_match", "stop_after"})


@dataclass(frozen=True)
class ExpectedCall:
    """A call a case expects: the tool's name, and a matcher of its input (``None``: any input)."""

    tool: str
    input: Matcher | None = None

    def __repr__(self) -> str:
        return self.tool if self.input is None else f"{self.tool}({self.input!r})"


def call(tool: str, input: Any = None) -> ExpectedCall:
    """A call of ``tool`` whose input matches ``input`` (a matcher; a plain dict is matched
    exactly; ``None``: any input)."""
    if not isinstance(tool, str) or not tool:
        raise AerixError("options", f"an expected call names its tool with a non-empty string, got {tool!r}")
    return ExpectedCall(tool, None if input is None else matcher_of(input, f"{tool}'s input"))


@dataclass(frozen=True, init=False)
class Case:
    """One prompt and what its run should do; see the module's docstring. ``name`` (default:
    the prompt) names the case in the report, so each case's must be its own. ``stop_after``:
    ``None`` (the run goes to its ending) or ``"turn"`` (stopped at its first accepted turn)."""

    prompt: str
    name: str
    calls: tuple[ExpectedCall, ...] | None
    answer: Matcher | None
    calls_match: CallsMatch
    checks: tuple[Check, ...] = field(repr=False)
    stop_after: StopAfter | None = None

    def __init__(
        self,
        prompt: str,
        *,
        calls: Sequence[ExpectedCall | str | tuple[str, Any]] | None = None,
        answer: Any = None,
        checks: Sequence[Check] = (),
        calls_match: CallsMatch = "in_order",
        name: str | None = None,
        stop_after: StopAfter | None = None,
    ) -> None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise AerixError("options", f"a case's prompt must be a non-empty string, got {prompt!r}")
        label = " ".join(prompt.split()) if name is None else name
        if not isinstance(label, str) or not label:
            raise AerixError("options", f"a case's name must be a non-empty string, got {name!r}")
        if calls_match not in get_args(CallsMatch):
            raise AerixError("options", f"case {label!r}: unknown calls_match {calls_match!r} (known: {', '.join(get_args(CallsMatch))})")
        if isinstance(calls, (str, bytes)) or (calls is not None and not isinstance(calls, Sequence)):
            raise AerixError("options", f"case {label!r}: calls must be a list of expected calls, got {calls!r}")
        bad = [c for c in checks if not callable(c)] if isinstance(checks, Sequence) else [checks]
        if bad:
            raise AerixError("options", f"case {label!r}: checks must be functions of the outcome, got {bad[0]!r}")
        if stop_after is not None and stop_after not in get_args(StopAfter):
            raise AerixError("options", f"case {label!r}: unknown stop_after {stop_after!r} (known: None, {', '.join(map(repr, get_args(StopAfter)))})")
        if stop_after is not None and answer is not None:
            raise AerixError("options", f"case {label!r}: a run stopped after its first turn has no answer to match: drop answer= or stop_after=")
        if calls is None and answer is None and not checks and stop_after is None:
            raise AerixError("options", f"case {label!r} expects nothing: give it calls=, answer= or checks=")
        set_ = object.__setattr__
        set_(self, "prompt", prompt)
        set_(self, "name", label)
        set_(self, "calls", None if calls is None else tuple(_expected(c, label) for c in calls))
        set_(self, "answer", None if answer is None else matcher_of(answer, f"case {label!r}: answer"))
        set_(self, "calls_match", calls_match)
        set_(self, "checks", tuple(checks))
        set_(self, "stop_after", stop_after)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Case:
        """A case kept as data (JSON): ``prompt``, and ``name``, ``calls`` (``{"tool", "input"}``
        each), ``answer`` and ``calls_match`` as :class:`Case` takes them. A matcher there is
        ``{"match": "contains", "value": ...}`` (see :func:`~aerix.eval_matchers.matcher`);
        any other value is matched exactly. ``stop_after`` as :class:`Case` takes it."""
        if not isinstance(data, Mapping):
            raise AerixError("options", f"a case is a dict, got {type(data).__name__}")
        unknown = sorted(set(data) - _CASE_KEYS)
        if unknown:
            raise AerixError("options", f"unknown case key {unknown[0]!r} (known: {', '.join(sorted(_CASE_KEYS))})")
        calls = data.get("calls")
        if calls is not None:
            if not isinstance(calls, list) or not all(isinstance(c, dict) and "tool" in c for c in calls):
                raise AerixError("options", f"a case's calls are a list of {{'tool', 'input'}} dicts, got {calls!r}")
            calls = [call(c["tool"], _data_matcher(c.get("input"))) for c in calls]
        answer = _data_matcher(data.get("answer"))
        return cls(data.get("prompt"), calls=calls, answer=answer, calls_match=data.get("calls_match", "in_order"), name=data.get("name"), stop_after=data.get("stop_after"))  # type: ignore[arg-type]


def _data_matcher(value: Any) -> Any:
    if isinstance(value, dict) and "match" in value:
        extra = sorted(set(value) - {"match", "value"})
        if extra:
            raise AerixError("options", f"a matcher is {{'match': name, 'value': ...}}, got the key {extra[0]!r}")
        return matcher(value["match"], value.get("value"))
    return value


def _expected(spec: Any, case: str) -> ExpectedCall:
    if isinstance(spec, ExpectedCall):
        return spec
    if isinstance(spec, str):
        return call(spec)
    if isinstance(spec, tuple) and len(spec) == 2:
        return call(spec[0], spec[1])
    raise AerixError("options", f"case {case!r}: an expected call is call(tool, input), (tool, input) or a tool's name, got {spec!r}")


# -- running ----------------------------------------------------------------------------------


async def run(cases: Sequence[Case], agent: AgentFactory, *, concurrency: int = 1) -> Report:
    """Run each case on a fresh agent from ``agent`` and score it; ``concurrency`` cases at a
    time (1, the default, suits a local engine that decodes one run at a time). The report keeps
    the cases' order. The factory's own errors are raised, not scored."""
    cases = _check_cases(cases)
    if isinstance(agent, Agent) or not callable(agent):
        raise AerixError("options", f"agent must be a function that makes a fresh Agent for each case (e.g. lambda case: Agent(...)), got {type(agent).__name__}")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise AerixError("options", f"concurrency must be a whole number of at least 1, got {concurrency!r}")
    made: list[Agent] = []  # kept, so that the same Agent handed out twice is seen
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case) -> CaseResult:
        async with gate:
            fresh = await _make(agent, case, made)
            started = time.perf_counter()
            events: list[Event] = []
            async with aclosing(fresh.run(case.prompt)) as stream:
                async for ev in stream:
                    events.append(ev)
                    if case.stop_after == "turn" and isinstance(ev, Turn):
                        break  # closing the run stops it here: its calls never run
            return score(case, events, time.perf_counter() - started)

    tasks = [asyncio.ensure_future(one(c)) for c in cases]
    try:
        return Report(tuple(await asyncio.gather(*tasks)))
    finally:  # a factory that raised: stop the other cases' runs, and let none outlive this call
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def run_sync(cases: Sequence[Case], agent: AgentFactory, *, concurrency: int = 1) -> Report:
    """:func:`run` for code without an event loop (a script, a plain pytest test), on CPython.
    Where a loop is running (Pyodide, Jupyter, an async test) ``await evals.run(...)`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run(cases, agent, concurrency=concurrency))
    raise AerixError("options", "run_sync cannot run inside a running event loop (Pyodide, Jupyter, an async test): await evals.run(...) instead")


def _check_cases(cases: Any) -> list[Case]:
    if isinstance(cases, (str, Case)) or not isinstance(cases, Sequence):
        raise AerixError("options", f"cases must be a list of evals.Case, got {type(cases).__name__}")
    seen: set[str] = set()
    for c in cases:
        if not isinstance(c, Case):
            raise AerixError("options", f"cases must be evals.Case objects (Case.from_dict for data), got {type(c).__name__}")
        if c.name in seen:
            raise AerixError("options", f"two cases are named {c.name!r}: give each its own name=")
        seen.add(c.name)
    return list(cases)


async def _make(factory: Callable[..., Any], case: Case, made: list[Agent]) -> Agent:
    try:  # the case goes to a factory with a positional parameter that has no default
        takes_case = any(_positional(p) for p in inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it the case
        takes_case = True
    fresh = factory(case) if takes_case else factory()
    if inspect.isawaitable(fresh):
        fresh = await fresh
    if not isinstance(fresh, Agent):
        raise AerixError("options", f"case {case.name!r}: the agent factory returned {type(fresh).__name__}, not an Agent")
    if any(fresh is a for a in made):
        raise AerixError("options", f"case {case.name!r}: the agent factory returned an Agent it made before; each case needs a fresh one")
    made.append(fresh)
    return fresh


def _positional(p: inspect.Parameter) -> bool:
    if p.kind is p.VAR_POSITIONAL:
        return True
    return p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty


# -- scoring ----------------------------------------------------------------------------------


def score(case: Case, events: Sequence[Event | Mapping[str, Any]], seconds: float = 0.0) -> CaseResult:
    """Score one run of ``case`` from its events: aerix events, or their dicts (``to_dict()``,
    or the page's camelCase ones), so a run recorded elsewhere (the page, a log) scores too.
    With ``stop_after="turn"`` only the events up to the first turn count, as if it stopped there."""
    scored = [e for e in map(_event, events) if e is not None]
    if case.stop_after == "turn":
        scored = scored[: next((i + 1 for i, e in enumerate(scored) if isinstance(e, Turn)), len(scored))]
    outcome = Outcome.of(scored, seconds)
    ended = "turn" if case.stop_after == "turn" else "final"
    checks = [CheckResult("ending", outcome.ending == ended, None if outcome.ending == ended else f"{outcome.ending}: {outcome.message}")]
    if case.calls is not None:
        why = _first_turn(case.calls, outcome.events) if case.calls_match == "first_turn" else _calls(case.calls, outcome.calls, case.calls_match)
        checks.append(CheckResult("calls", why is None, why))
    if case.answer is not None:
        value = outcome.output if outcome.output is not None else outcome.answer
        why = case.answer(value) if outcome.ending == "final" else f"no answer (the run ended {outcome.ending})"
        checks.append(CheckResult("answer", why is None, why))
    for fn in case.checks:
        name = getattr(fn, "__name__", "check")
        why = verdict(fn, outcome)
        checks.append(CheckResult(name, why is None, why))
    return CaseResult(case, outcome, tuple(checks))


def _calls(expected: tuple[ExpectedCall, ...], got: Sequence[Call], how: str) -> str | None:
    if not expected and got:
        return f"expected no calls, got {len(got)} ({_names(got)})"
    if len(expected) != len(got):
        return f"expected {_count(len(expected))} ({_names(expected)}), got {len(got)} ({_names(got)})"
    if how == "in_order":
        for i, (want, have) in enumerate(zip(expected, got), 1):
            why = _one(want, have)
            if why is not None:
                return f"call {i}: {why}"
        return None
    return _any_order(expected, list(got))


def _any_order(expected: Sequence[ExpectedCall], got: list[Call]) -> str | None:
    """None when each expected call matches its own call (tried every way: calls are few)."""
    if not expected:
        return None
    first, rest = expected[0], expected[1:]
    for i, have in enumerate(got):
        if _one(first, have) is None and _any_order(rest, got[:i] + got[i + 1 :]) is None:
            return None
    if all(_one(first, have) is not None for have in got):
        reasons = "; ".join(f"{c.tool}: {_one(first, c)}" for c in got)
        return f"no call matches {first!r} ({reasons})"
    return f"no way to match each expected call to its own call ({_names(expected)})"


def _first_turn(expected: tuple[ExpectedCall, ...], events: Sequence[Event]) -> str | None:
    for e in events:
        if isinstance(e, Retry):
            return f"the first generation was refused: {e.reason}"
        if isinstance(e, End):
            return f"no turn: the run ended {e.reason}: {e.message}"
        if isinstance(e, Turn):
            why = _calls(expected, e.calls, "in_order")
            return None if why is None else f"first turn: {why}"
    return "no turn"


def _one(want: ExpectedCall, have: Call) -> str | None:
    if want.tool != have.tool:
        return f"expected {want.tool}, got {have.tool}"
    why = None if want.input is None else want.input(have.input)
    return None if why is None else f"{have.tool}: {why}"


def _count(n: int) -> str:
    return "no calls" if n == 0 else f"{n} call" if n == 1 else f"{n} calls"


def _names(calls: Sequence[ExpectedCall | Call]) -> str:
    return ", ".join(c.tool for c in calls) or "none"


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
_SCORED: dict[str, Any] = {c.type: c for c in (Call, Result, Turn, Retry, Usage, Final, End, SubagentEvent)}
_DEFAULTS: dict[str, dict[str, Any]] = {  # what a recorded dict may leave out
    "turn": {"turn": 0, "thought": None, "calls": []},
    "final": {"thought": None},
    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0},
    "result": {"error": False},
    "end": {"message": ""},
}


def _event(e: Event | Mapping[str, Any]) -> Event | None:
    """An event from itself or its dict; ``None`` for a dict of a type scoring does not read
    (deltas, taints, artifacts, and those of a newer aerix)."""
    if not isinstance(e, Mapping):
        if not callable(getattr(e, "to_dict", None)):
            raise AerixError("options", f"events are aerix events or their dicts, got {type(e).__name__}")
        return e
    kind = e.get("type")
    if not isinstance(kind, str) or kind not in _SCORED:
        return None
    cls = _SCORED[kind]
    data = {**_DEFAULTS.get(kind, {}), **{_CAMEL.sub(r"_\1", k).lower(): v for k, v in e.items() if k != "type"}}
    if kind == "turn":
        data["calls"] = tuple(_event({"type": "call", **c}) for c in data["calls"])
    if kind == "subagent":
        data["event"] = _event(data["event"]) if isinstance(data.get("event"), Mapping) else None
        if data["event"] is None:
            return None
    names = {f.name for f in fields(cls) if f.init}
    try:
        event: Event = cls(**{k: v for k, v in data.items() if k in names})
    except TypeError:
        raise AerixError("options", f"not a {kind} event: {short(dict(e))}") from None
    return event
