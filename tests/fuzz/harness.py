"""The promises every fuzzed run must keep, and the driver that plays seeded cases against them.

A *case* is drawn from one ``random.Random`` (seeded by area and case seed, so one seed is one
case on every machine) and plays one or more runs through a :class:`Probe`. The probe checks,
on every run:

    raised      nothing escapes ``run()`` (a bad *call*, ``AerixError`` ``options``/``busy``
                raised before the run starts, is not a run and is not fuzzed)
    endings     exactly one stop (``final`` or ``end``, or ``waiting`` for an approval), last
    nesting     a sub-run's events (``subagent``) come between the ``call`` of their call id and
                its ``result``, and a sub-run's own stop, if it has one, is its last event; all
                the way down
    busy        the agent is free afterwards: a second run starts and, once the faults are
                gone, answers (``again``)
    to_dict     every event converts to plain JSON and has a repr
    stack       no event reports Python's own RecursionError: in Pyodide that depth has
                already overflowed the stack and killed the page
    key         the API key is in no event, message, stored record or repr
    forged      no message the model is sent holds a raw chat control token, except in the
                assistant turns the model itself wrote

and, for the areas that need them, ``recover`` (``runs()``/``recover()`` work once a store's
faults stop) and ``hung`` (the case did not finish within its time).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import sys
import time
import traceback
import warnings
from collections import Counter
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable

from aerix import AerixError
from aerix.events import Event

from .draw import CONTROL_TOKENS

__all__ = ["LINEAR_LIMIT", "AreaResult", "Case", "Failure", "Probe", "Problem", "fuzz", "report", "show"]

STOPS = ("final", "end", "waiting")
# Python's words for a RecursionError of its own: where CPython raises it, Pyodide's smaller
# stack has already overflowed, which kills the page (so deep data is refused before it is walked)
_OVERFLOW = "maximum recursion depth"
CASE_TIMEOUT_S = 20.0


def _misnested(events: list[Event]) -> str | None:
    """How the ``subagent`` events of ``events`` break the nesting promise, if they do."""
    open_calls: set[str] = set()
    inner: dict[str, list[Event]] = {}
    for ev in events:
        if ev.type == "call":
            open_calls.add(ev.id)  # type: ignore[union-attr]
        elif ev.type == "result":
            open_calls.discard(ev.id)  # type: ignore[union-attr]
        elif ev.type == "subagent":
            call_id = ev.call_id  # type: ignore[union-attr]
            if call_id not in open_calls:
                return f"{call_id}: a subagent event outside its call"
            inner.setdefault(call_id, []).append(ev.event)  # type: ignore[union-attr]
    for call_id, sub in inner.items():
        stops = [i for i, ev in enumerate(sub) if ev.type in STOPS]
        if stops and stops != [len(sub) - 1]:
            return f"{call_id}: a sub-run's stop is not its last event"
        deeper = _misnested(sub)
        if deeper is not None:
            return f"{call_id} › {deeper}"
    return None


@dataclass(frozen=True)
class Problem:
    """One broken promise: ``check`` names it, ``key`` groups the same fault across cases."""

    check: str
    key: str
    detail: str


@dataclass
class Case:
    """A drawn case: what was drawn (``inputs``, printed as its reproduction) and how it plays."""

    inputs: dict[str, Any]
    play: Callable[[Probe], Awaitable[None]]


class Probe:
    """Plays runs for one case and checks each against the promises; collects what broke."""

    def __init__(self, verbose: bool = False) -> None:
        self.problems: list[Problem] = []
        self.secret: str | None = None  # the API key, where the case gave one
        self.written: set[str] = set()  # each generation's text: the assistant turns the model wrote
        self.skipped: str | None = None  # why the case made no run (a bad call, refused up front)
        self.verbose = verbose
        self.transcript: list[str] = []
        self.runs = 0  # runs started: a case may play several (approvals, resumes, the second run)

    def fail(self, check: str, key: str, detail: str) -> None:
        self.problems.append(Problem(check, key, detail))

    # -- runs ------------------------------------------------------------------------------

    async def run(self, label: str, start: Callable[[], AsyncIterator[Event]], *, allow: Callable[[BaseException], bool] | None = None) -> list[Event] | None:
        """Start a run and drive it to its stop; ``None`` if it raised (a problem, unless
        ``allow`` accepts the exception: a documented refusal)."""
        events: list[Event] = []
        self.runs += 1
        try:
            stream = start()
            async with aclosing(stream) as s:  # type: ignore[type-var]
                async for ev in s:
                    events.append(ev)
        except BaseException as e:
            self._record_written(events)
            self._raised(label, e, events, allow)
            return None
        self._check_events(label, events)
        return events

    async def leave(self, label: str, start: Callable[[], AsyncIterator[Event]], after: int) -> None:
        """Start a run and ``break`` out of it after ``after`` events, as a caller may: the
        stream is dropped, not closed (the next run must still start)."""
        events: list[Event] = []
        self.runs += 1
        try:
            async for ev in start():
                events.append(ev)
                if len(events) >= after:
                    break
        except BaseException as e:
            self._raised(label, e, events, None)
        self._record_written(events)
        self.note(f"{label}: left after {len(events)} events")

    async def again(self, label: str, start: Callable[[], AsyncIterator[Event]], answer: str = "ok") -> None:
        """The agent is free and well: with the faults gone, a new run answers ``answer``."""
        events = await self.run(label, start)
        if events and not (events[-1].type == "final" and getattr(events[-1], "text", None) == answer):
            last = events[-1]
            self.fail("busy", f"{label} did not answer", f"{label}: ended {_summary(last)} instead of final {answer!r}")

    def _raised(self, label: str, e: BaseException, events: list[Event], allow: Callable[[BaseException], bool] | None) -> None:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise e
        task = asyncio.current_task()
        if isinstance(e, asyncio.CancelledError) and task is not None and task.cancelling():
            raise e  # the case timed out: the driver reports it
        if allow is not None and allow(e):
            self.note(f"{label}: refused with {describe(e)}")
            return
        if isinstance(e, AerixError) and e.kind == "busy":
            self.fail("busy", "busy", f"{label}: {describe(e)}")
            return
        self.fail("raised", f"{type(e).__name__}{where(e)}", f"{label}: {describe(e)}{where(e)} after {len(events)} events")

    def _check_events(self, label: str, events: list[Event]) -> None:
        stops = [ev for ev in events if ev.type in STOPS]
        if len(stops) != 1 or events[-1] is not stops[0]:
            last = _summary(events[-1]) if events else "nothing"
            self.fail("endings", f"{len(stops)} stops", f"{label}: {len(stops)} stops; last event {last}")
        misnested = _misnested(events)
        if misnested is not None:
            self.fail("nesting", misnested.split(": ")[-1], f"{label}: {misnested}")
        self._record_written(events)
        for ev in events:
            try:
                plain = json.dumps(ev.to_dict(), ensure_ascii=False)
                shown = repr(ev)
            except Exception as e:
                self.fail("to_dict", f"{ev.type}: {type(e).__name__}{where(e)}", f"{label}: {ev.type}.to_dict() or repr: {describe(e)}{where(e)}")
                continue
            self.look_for_key(f"{label}: {ev.type} event", plain, shown)
            if _OVERFLOW in plain:
                self.fail("stack", f"{ev.type} event", f"{label}: {ev.type} event says {plain[plain.find(_OVERFLOW) - 40 :][:160]!r}")
        if self.verbose:
            self.transcript.append(f"{label}: " + " · ".join(_summary(ev) for ev in events if ev.type != "text"))

    def _record_written(self, events: list[Event]) -> None:
        """Each generation's text, as its ``text`` events streamed it."""
        text: list[str] = []
        for ev in [*events, None]:
            if ev is not None and ev.type == "text":
                text.append(ev.text if isinstance(ev.text, str) else repr(ev.text))  # type: ignore[union-attr]
            elif ev is not None and ev.type == "final_delta":
                continue  # the answer decoded from the same stream: the generation goes on
            elif text:
                self.written.add("".join(text))
                text = []

    # -- what reaches the model, and what is kept --------------------------------------------

    def look_for_key(self, where_: str, *texts: str) -> None:
        if self.secret is None:
            return
        for text in texts:
            at = text.find(self.secret)
            if at >= 0:
                self.fail("key", where_.split(": ", 1)[-1], f"{where_}: ...{text[max(0, at - 60) : at + 30]!r}")
                return

    def check_sent(self, conversations: Iterable[list[dict[str, Any]]]) -> None:
        """The forged-turn check over every message list the model was sent."""
        written = self.written | {_sendable(t) for t in self.written}
        for messages in conversations:
            for m in messages:
                role, content = m.get("role"), m.get("content")
                if not isinstance(content, str):
                    self.fail("forged", f"{role} content {type(content).__name__}", f"a {role} message whose content is {content!r:.80}")
                    continue
                if role == "assistant" and content in written:
                    continue
                for token in CONTROL_TOKENS:
                    at = content.find(token)
                    if at >= 0:
                        self.fail("forged", f"{role} message holds {token}", f"{role} message: ...{content[max(0, at - 40) : at + 60]!r}")
                        return

    def check_records(self, label: str, records: Iterable[Any]) -> None:
        """Stored records: plain JSON, and free of the key."""
        for record in records:
            try:
                text = json.dumps(record, ensure_ascii=False)
            except Exception as e:
                self.fail("to_dict", f"record: {type(e).__name__}", f"{label}: a stored record is not JSON: {describe(e)}")
                continue
            self.look_for_key(f"{label}: stored record", text)

    def note(self, line: str) -> None:
        if self.verbose:
            self.transcript.append(line)


# -- the driver --------------------------------------------------------------------------


@dataclass
class Failure:
    area: str
    seed: int
    problems: list[Problem]
    inputs: dict[str, Any]


@dataclass
class AreaResult:
    """One area's figures: cases played, cases that made no run, failures, seconds, and notes
    (warnings, asyncio and unraisable reports seen while it ran: not failures, worth a look)."""

    area: str
    cases: int = 0
    runs: int = 0
    skipped: int = 0
    failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    notes: Counter[str] = field(default_factory=Counter)


async def fuzz(area: str, draw: Callable[[random.Random], Case], runs: int, seed: int, *, verbose: bool = False, out: Callable[[str], None] | None = None) -> AreaResult:
    """Play ``runs`` cases of one area, seeds ``seed`` .. ``seed + runs - 1``."""
    result = AreaResult(area)
    loop = asyncio.get_running_loop()
    handler, unraisable = loop.get_exception_handler(), sys.unraisablehook
    loop.set_exception_handler(lambda _loop, ctx: result.notes.update([f"asyncio: {ctx.get('message')} {ctx.get('exception')!r:.120}"]))
    sys.unraisablehook = lambda u: result.notes.update([f"unraisable: {u.exc_type.__name__}: {str(u.exc_value):.120}"])
    started = time.perf_counter()
    try:
        for case_seed in range(seed, seed + runs):
            case = draw(random.Random(f"{area}:{case_seed}"))
            probe = Probe(verbose)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    async with asyncio.timeout(CASE_TIMEOUT_S) as limit:
                        await case.play(probe)
                except TimeoutError:
                    if not limit.expired():
                        raise
                    probe.fail("hung", "hung", f"the case did not finish within {CASE_TIMEOUT_S:g} s")
                except Exception as e:  # outside any run: runs(), recover(), a harness bug
                    probe.fail("raised", f"{type(e).__name__}{where(e)}", f"outside a run: {describe(e)}{where(e)}")
            result.notes.update(f"warning: {w.category.__name__}: {str(w.message):.120}" for w in caught)
            result.cases += 1
            result.runs += probe.runs
            result.skipped += probe.skipped is not None
            if probe.problems:
                result.failures.append(Failure(area, case_seed, probe.problems, case.inputs))
            if verbose and out is not None:
                out(f"-- {area} seed {case_seed}: {show(case.inputs)}")
                for line in probe.transcript:
                    out(f"   {line}")
                for p in probe.problems:
                    out(f"   FAIL {p.check}: {p.detail}")
    finally:
        loop.set_exception_handler(handler)
        sys.unraisablehook = unraisable
    result.seconds = time.perf_counter() - started
    return result


# -- the report --------------------------------------------------------------------------


LINEAR_LIMIT = 24.0  # 8 MB over 1 MB: linear is about 8, quadratic about 64


def report(results: list[AreaResult], linear: dict[str, Any] | None = None) -> str:
    """The table, then each distinct failure once: how many cases, their seeds, and the
    shortest case's inputs as its reproduction; the SSE linearity figure when measured."""
    lines = [f"{'area':<10} {'cases':>7} {'runs':>7} {'no run':>7} {'failures':>9} {'seconds':>8}"]
    for r in results:
        lines.append(f"{r.area:<10} {r.cases:>7} {r.runs:>7} {r.skipped:>7} {len(r.failures):>9} {r.seconds:>8.1f}")
    groups: dict[tuple[str, str, str], list[tuple[Failure, Problem]]] = {}
    for r in results:
        for f in r.failures:
            for p in {(p.check, p.key): p for p in f.problems}.values():
                groups.setdefault((f.area, p.check, p.key), []).append((f, p))
    for (area, check, key), found in groups.items():
        shortest, problem = min(found, key=lambda fp: len(show(fp[0].inputs)))
        seeds = sorted({f.seed for f, _ in found})
        lines += [
            "",
            f"FAIL {area} · {check} · {key}: {len(seeds)} case(s), seeds {', '.join(map(str, seeds[:8]))}{' ...' if len(seeds) > 8 else ''}",
            f"  {problem.detail}",
            f"  again: python -m tests.fuzz --area {area} --seed {shortest.seed} --runs 1 -v",
            f"  inputs: {show(shortest.inputs)}",
        ]
    notes = Counter[str]()
    for r in results:
        notes.update({f"{r.area}: {n}": c for n, c in r.notes.items()})
    if notes:
        lines += ["", "notes (not failures):"] + [f"  {c:>5} × {n}" for n, c in notes.most_common(12)]
    cases, runs, failed = sum(r.cases for r in results), sum(r.runs for r in results), sum(len(r.failures) for r in results)
    if linear is not None:
        (t1, t8), ratio = linear["seconds"], linear["ratio"]
        ok = ratio <= LINEAR_LIMIT
        failed += not ok
        lines += ["", f"{'' if ok else 'FAIL '}sse linearity: one line of {linear['small'] >> 20} MB in {t1:.3f} s, of {linear['large'] >> 20} MB in {t8:.3f} s: "
                  f"ratio {ratio:.1f} (linear ≈ {linear['large'] // linear['small']}; over {LINEAR_LIMIT:g} fails); endings {' / '.join(linear['endings'])}"]
    lines += ["", f"fuzz: {cases} cases ({runs} runs), {failed} failure{'s' if failed != 1 else ''}"]
    return "\n".join(lines)


def show(value: Any, limit: int = 1500) -> str:
    """A value as a short repr: long strings cut in the middle, the whole cut at ``limit``."""

    def cut(v: Any) -> Any:
        if isinstance(v, str) and len(v) > 240:
            return f"{v[:200]}…[{len(v)} chars]…{v[-30:]}"
        if isinstance(v, dict):
            return {k: cut(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(cut(x) for x in v) if len(v) <= 12 else [*(cut(x) for x in v[:12]), f"…{len(v)} items"]
        if v is None or isinstance(v, (bool, int, float, bytes)):
            return v
        try:
            return _Shown(repr(v))
        except Exception:
            return _Shown(f"<{type(v).__name__} whose repr raises>")

    text = repr(cut(value))
    return text if len(text) <= limit else text[:limit] + "…"


def _sendable(text: str) -> str:
    """``text`` as a client sends it: a lone surrogate (no UTF-8 form) as U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class _Shown:
    def __init__(self, text: str) -> None:
        self.text = text if len(text) <= 160 else text[:150] + "…"

    def __repr__(self) -> str:
        return self.text


def describe(e: BaseException) -> str:
    try:
        text = str(e).strip()
    except Exception:
        text = "<str() raised>"
    text = re.sub(r"\s+", " ", text)
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


def where(e: BaseException) -> str:
    """The innermost aerix frame the exception passed through, as `` (aerix/loop.py:123)``."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/aerix/" in f.filename.replace("\\", "/")]
    if not frames:
        return ""
    f = frames[-1]
    return f" ({'aerix/' + f.filename.replace(chr(92), '/').rsplit('/aerix/', 1)[1]}:{f.lineno})"


def _summary(ev: Any) -> str:
    try:
        fields_ = {k: v for k, v in ev.to_dict().items() if k != "type"}
    except Exception:
        return f"{getattr(ev, 'type', '?')} <to_dict() raised>"
    return f"{ev.type} {show(fields_, 160)}"
