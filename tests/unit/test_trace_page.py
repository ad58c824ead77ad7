"""The page's in-memory view of traces (issue 31, part 2): the JS agent option ``tracer: {keep:
true}`` keeps each run's spans, and ``agent.traces()`` (``PageAgent.traces``) gives them as plain
data, times in milliseconds; on CPython, with the JavaScript edge left out."""

from __future__ import annotations

import pytest
from helpers import calls, final

from aerix import AerixError
from aerix.page import PageAgent, span_view
from aerix.page_options import agent_from_js
from aerix.testing import ScriptedModel
from aerix.trace_export import OtlpExporter
from aerix.tracing import Span, SpanCollector

ADD = {"name": "add", "description": "Adds two numbers.", "input": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "run": lambda i, ctx: i["a"] + i["b"]}


def raw(method):
    """A ``js_facing`` method as Python calls it (no conversion to JavaScript, which CPython lacks)."""
    return getattr(PageAgent, method).__wrapped__


async def test_keep_gives_each_runs_spans_as_a_tree_with_durations():
    model = ScriptedModel([calls(("add", {"a": 2, "b": 3})), final("5"), final("again")])
    page = PageAgent(agent_from_js(model, {"name": "calc", "tools": [ADD], "tracer": {"keep": True}}))
    assert (await page.agent.ask("2 + 3?")).text == "5"
    (trace,) = raw("traces")(page)
    assert [s["name"] for s in trace] == ["invoke_agent calc", "chat", "execute_tool add", "chat"]
    run = trace[0]
    assert run["parentId"] is None and all(s["parentId"] == run["spanId"] for s in trace[1:])
    assert {s["traceId"] for s in trace} == {run["traceId"]}
    for span in trace:
        assert set(span) == {"name", "traceId", "spanId", "parentId", "kind", "startMs", "endMs", "durationMs", "attributes", "status", "statusMessage"}
        # milliseconds since 1970 as floats: exact enough for JavaScript's numbers, never a BigInt
        assert isinstance(span["startMs"], float) and 1.6e12 < span["startMs"] < 2**53
        assert span["durationMs"] == pytest.approx(span["endMs"] - span["startMs"], abs=1e-3) and span["durationMs"] >= 0
        assert run["startMs"] <= span["startMs"] and span["endMs"] <= run["endMs"]
    assert trace[2]["attributes"]["gen_ai.tool.name"] == "add" and trace[2]["kind"] == "internal" and trace[1]["kind"] == "client"
    assert run["attributes"]["aerix.run.end_reason"] == "final"
    await page.agent.ask("again?")
    assert [len(t) for t in raw("traces")(page)] == [4, 2]  # oldest first


def test_span_view_is_to_dict_in_camel_case_with_times_in_ms():
    span = Span("chat m", "a" * 32, "b" * 16, "c" * 16, "client", 1_700_000_000_123_456_789, 1_700_000_000_125_456_789, {"gen_ai.response.finish_reasons": ["stop"]}, "error", "engine")
    view = span_view(span)
    assert view == {
        "name": "chat m", "traceId": "a" * 32, "spanId": "b" * 16, "parentId": "c" * 16, "kind": "client",
        "startMs": pytest.approx(1_700_000_000_123.456789), "endMs": pytest.approx(1_700_000_000_125.456789), "durationMs": pytest.approx(2.0),
        "attributes": {"gen_ai.response.finish_reasons": ["stop"]}, "status": "error", "statusMessage": "engine",
    }
    assert span_view(Span("open", "a" * 32, "b" * 16, None, "internal", 1))["endMs"] is None


def test_keep_and_url_together_post_and_keep():
    agent = agent_from_js(ScriptedModel([]), {"tracer": {"url": "/v1/traces", "keep": True, "content": True}})
    assert [type(e) for e in agent.tracer.exporters] == [OtlpExporter, SpanCollector] and agent.tracer.content
    (only,) = agent_from_js(ScriptedModel([]), {"tracer": {"keep": True}}).tracer.exporters
    assert isinstance(only, SpanCollector)


@pytest.mark.parametrize(
    ("tracer", "words"),
    [
        ({}, "tracer needs a url to post each run's trace to, or keep: true"),
        ({"keep": False}, "tracer needs a url"),
        ({"keep": "yes"}, "tracer.keep must be true or false, got 'yes'"),
        ({"keep": True, "last": 3}, "unknown tracer option(s) ['last']; known: ['content', 'headers', 'keep', 'url']"),
    ],
)
def test_bad_tracer_options_are_refused_naming_what(tracer, words):
    with pytest.raises(AerixError) as refused:
        agent_from_js(ScriptedModel([]), {"tracer": tracer})
    assert refused.value.kind == "options" and words in refused.value.message


@pytest.mark.parametrize("options", [{}, {"tracer": {"url": "/v1/traces"}}])
def test_traces_without_keep_is_refused_saying_how(options):
    page = PageAgent(agent_from_js(ScriptedModel([]), options))
    with pytest.raises(AerixError, match=r"agent.traces\(\) needs the agent option tracer: \{keep: true\}") as refused:
        raw("traces")(page)
    assert refused.value.kind == "options"
