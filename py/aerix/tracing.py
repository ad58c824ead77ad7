"""Traces of runs, named and attributed as the OpenTelemetry GenAI semantic conventions say.

    spans = SpanCollector()
    agent = Agent(model=..., tools=[...], tracer=Tracer(exporters=[spans]))
    await agent.ask("...")
    print(spans.tree())     # invoke_agent agent / chat m / execute_tool t / chat m, with durations

A run is one trace (an ``as_tool`` sub-run is inside its caller's): a span per run
(``invoke_agent {agent}``), per generation (``chat {model}``) and per tool call
(``execute_tool {tool}``), each a child of the run it belongs to, and a sub-run's run span a
child of the calling tool's span. The spans are built from the run's events as they pass
(``trace_spans.py``), not inside the loop: the loop does not know it is traced. Attribute names
follow the GenAI conventions of semantic-conventions v1.41 (status Development): see
docs/traces.md for the list. Prompts, answers, the model's turns, tool inputs and results are
recorded only with ``content=True``.

Who receives the spans (``exporters``), each an object with

- ``export(spans)``: a finished trace's spans, the run's span first, once the run stopped (its
  stop was yielded, or its consumer stopped reading). It may be async: it then runs in a task
  of its own, which :meth:`Tracer.flush` waits for. Built in: :class:`SpanCollector` (in memory,
  for a UI or a test), ``trace_export.OtlpExporter`` (OTLP/HTTP JSON to a URL: httpx on CPython,
  the page's fetch in Pyodide);
- optionally ``on_start(span)`` and ``on_end(span)``, told as spans open and close (a span may
  open after its start time: a generation's span opens with its first event):
  ``trace_export.OtelExporter`` hands the spans to ``opentelemetry-api``
  (``pip install 'aerix[otel]'``, with an SDK configured by the application).

An exporter that fails never fails a run: what it raised is kept in :attr:`Tracer.failures`.
``Agent(tracer=...)`` traces that agent's runs; :func:`configure` sets the tracer of every Agent
that has none of its own.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import secrets
import time
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Literal, Sequence, Union

from .errors import AerixError, describe
from .events import Event

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["AttributeValue", "Span", "SpanCollector", "Tracer", "check_tracer", "configure", "configured", "traced"]

AttributeValue = Union[str, bool, int, float, list[str], list[int], list[float], list[bool]]


@dataclass
class Span:
    """One timed operation of a trace. Times are unix nanoseconds; ``end_ns`` is ``None`` while
    it is open. ``status`` is ``"unset"`` (it did not fail), ``"ok"`` (a run that answered) or
    ``"error"`` (with ``status_message``). Ids are lower-case hex (32 and 16 digits)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: Literal["internal", "client"]
    start_ns: int
    end_ns: int | None = None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    status: Literal["unset", "ok", "error"] = "unset"
    status_message: str = ""

    @property
    def duration_s(self) -> float | None:
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e9

    def to_dict(self) -> dict[str, Any]:
        """The span as plain JSON values (it crosses into JavaScript so)."""
        return {
            "name": self.name, "trace_id": self.trace_id, "span_id": self.span_id, "parent_id": self.parent_id, "kind": self.kind,
            "start_ns": self.start_ns, "end_ns": self.end_ns, "attributes": {k: list(v) if isinstance(v, list) else v for k, v in self.attributes.items()},
            "status": self.status, "status_message": self.status_message,
        }


class Tracer:
    """Where a traced run's spans go (``exporters``) and what they hold: with ``content=True``
    also the prompt, the answer, each generation's text and each call's input and result
    (``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.tool.call.arguments``,
    ``gen_ai.tool.call.result``); without it, names, counts, times and outcomes only.
    ``clock``: unix nanoseconds (for tests); the tracer's times never repeat or go back (a page's
    clock may tick once a millisecond: spans keep the order they started in)."""

    def __init__(self, *, exporters: Sequence[Any] = (), content: bool = False, clock: Callable[[], int] | None = None) -> None:
        for exporter in exporters:
            if not callable(getattr(exporter, "export", None)):
                raise AerixError("options", f"a tracer's exporter needs an export(spans) method, got {type(exporter).__name__}")
        if not isinstance(content, bool):
            raise AerixError("options", f"content must be True or False, got {content!r}")
        self.exporters, self.content = tuple(exporters), content
        self._clock, self._last = clock or time.time_ns, 0
        self.failures: list[str] = []  # what an exporter raised, newest last
        self._pending: set[asyncio.Future[Any]] = set()

    def __repr__(self) -> str:
        return f"Tracer(exporters={[type(e).__name__ for e in self.exporters]}, content={self.content})"

    def clock(self) -> int:
        """Now, in unix nanoseconds, after every time given before."""
        self._last = max(self._clock(), self._last + 1)
        return self._last

    def new_id(self, digits: int) -> str:
        return secrets.token_hex(digits // 2)

    def started(self, span: Span) -> None:
        self._tell("on_start", span)

    def ended(self, span: Span) -> None:
        self._tell("on_end", span)

    def finished(self, spans: list[Span]) -> None:
        """A trace is whole: hand it to each exporter (an async export runs in a task)."""
        for exporter in self.exporters:
            try:
                result = exporter.export(list(spans))
            except Exception as e:
                self.failures.append(f"{type(exporter).__name__}: {describe(e)}")
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._pending.add(task)
                task.add_done_callback(functools.partial(self._settled, name=type(exporter).__name__))

    async def flush(self) -> None:
        """Wait for the exports still under way (an OTLP post)."""
        while self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    def _settled(self, task: asyncio.Future[Any], name: str) -> None:
        self._pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            self.failures.append(f"{name}: {describe(task.exception())}")  # type: ignore[arg-type]

    def _tell(self, method: str, span: Span) -> None:
        for exporter in self.exporters:
            hook = getattr(exporter, method, None)
            if hook is None:
                continue
            try:
                hook(span)
            except Exception as e:
                self.failures.append(f"{type(exporter).__name__}.{method}: {describe(e)}")


class SpanCollector:
    """An exporter that keeps finished traces in memory, for a UI or a test: ``spans`` (every
    span, trace after trace, each trace's run span first), at most ``limit`` of them (the oldest
    traces go first)."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.spans: list[Span] = []

    def __repr__(self) -> str:
        return f"SpanCollector(spans={len(self.spans)})"

    def export(self, spans: list[Span]) -> None:
        self.spans.extend(sorted(spans, key=lambda s: (s.parent_id is not None, s.start_ns)))
        while len(self.spans) > self.limit:
            oldest = self.spans[0].trace_id
            self.spans = [s for s in self.spans if s.trace_id != oldest]

    def clear(self) -> None:
        self.spans.clear()

    def traces(self) -> list[list[Span]]:
        """The spans by trace, oldest trace first."""
        out: dict[str, list[Span]] = {}
        for span in self.spans:
            out.setdefault(span.trace_id, []).append(span)
        return list(out.values())

    def tree(self, trace: list[Span] | None = None) -> str:
        """A trace (the latest by default) as an indented timeline: name, start offset and duration."""
        spans = trace if trace is not None else (self.traces() or [[]])[-1]
        children: dict[str | None, list[Span]] = {}
        for span in sorted(spans, key=lambda s: s.start_ns):
            children.setdefault(span.parent_id, []).append(span)
        roots = [s for s in spans if s.parent_id not in {x.span_id for x in spans}]
        lines: list[str] = []

        def walk(span: Span, depth: int) -> None:
            at, took = (span.start_ns - roots[0].start_ns) / 1e6, (span.duration_s or 0.0) * 1e3
            lines.append(f"{'  ' * depth}{span.name}  +{at:.1f} ms  {took:.1f} ms{'  ' + span.status if span.status != 'unset' else ''}")
            for child in children.get(span.span_id, []):
                walk(child, depth + 1)

        for root in roots:
            walk(root, 0)
        return "\n".join(lines)


_configured: list[Tracer | None] = [None]


def configure(tracer: Tracer | None) -> None:
    """Trace the runs of every Agent without a tracer of its own with ``tracer`` (``None``: stop)."""
    _configured[0] = check_tracer(tracer)


def configured() -> Tracer | None:
    """The tracer :func:`configure` set, if any."""
    return _configured[0]


def check_tracer(tracer: Any) -> Tracer | None:
    if tracer is not None and not isinstance(tracer, Tracer):
        raise AerixError("options", f"tracer must be an aerix.tracing.Tracer, got {type(tracer).__name__}")
    return tracer


def traced(agent: Agent, events: AsyncGenerator[Event, None], prompt: str | None = None) -> AsyncGenerator[Event, None]:
    """``events`` (a run of ``agent``) traced by its tracer, or the configured one; unchanged without."""
    tracer = agent.tracer or _configured[0]
    return events if tracer is None else _traced(tracer, agent, events, prompt)


async def _traced(tracer: Tracer, agent: Agent, events: AsyncGenerator[Event, None], prompt: str | None) -> AsyncGenerator[Event, None]:
    from .trace_spans import RunTrace

    trace = RunTrace(tracer, agent, prompt)
    raised: BaseException | None = None
    try:
        async with aclosing(events) as stream:
            while True:
                trace.asked()
                try:
                    ev = await stream.__anext__()
                except StopAsyncIteration:
                    break
                trace.on(ev)
                yield ev
    except BaseException as e:  # the run raised (a developer's mistake), or its consumer stopped reading
        raised = e
        raise
    finally:
        tracer.finished(trace.close(raised))
