"""OpenAIModel: the model protocol over the streaming client, and an Agent on it (recorded streams)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from helpers import collect, final, kinds
from tools_fixture import weather

from aerix import Abort, AerixError, Agent, OpenAIModel
from aerix.engines.openai.model import usage_counts
from aerix.engines.openai.transports import MockTransport, Response, default_transport, replay
from aerix.model import Model

STREAMS = Path(__file__).parent / "streams"


def sse(text: str, finish: str = "stop", usage: dict | None = None, pieces: int = 3) -> str:
    """A reply as llama-server streams it: role chunk, content chunks, finish chunk, usage chunk, [DONE]."""
    frames = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}]
    step = max(1, len(text) // pieces)
    frames += [{"choices": [{"index": 0, "delta": {"content": text[i : i + step]}, "finish_reason": None}]} for i in range(0, len(text), step)]
    frames.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    frames.append({"choices": [], "usage": usage or {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60, "prompt_tokens_details": {"cached_tokens": 0}}})
    return "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"


def model_on(*replies, **kw) -> tuple[OpenAIModel, MockTransport]:
    queue = list(replies)

    def answer(request):
        item = queue.pop(0)
        return item if isinstance(item, Response) else replay(item, chunk=17)

    transport = MockTransport(answer)
    return OpenAIModel("http://server.test/v1", "tiny", transport=transport, **kw), transport


OPTIONS = {"max_tokens": 64, "constraint": None, "signal": None, "generation": {}}


async def deltas(model, options=OPTIONS, messages=None):
    return [d async for d in model.chat(messages or [{"role": "user", "content": "hi"}], dict(options))]


def test_it_is_a_model_and_its_repr_keeps_the_key_out():
    model = OpenAIModel("http://server.test/v1", "tiny", api_key="sk-secret", transport=MockTransport(lambda r: None))
    assert isinstance(model, Model)
    assert repr(model) == "OpenAIModel(base_url='http://server.test/v1', model='tiny')"
    assert (model.base_url, model.model) == ("http://server.test/v1", "tiny")


async def test_a_constraint_goes_as_a_strict_json_schema_named_turn():
    model, transport = model_on(sse(final("hi")))
    schema = {"type": "object"}
    await deltas(model, {**OPTIONS, "constraint": schema, "generation": {"temperature": 0.7, "seed": 3}})
    body = transport.requests[0].json()
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "turn", "schema": schema, "strict": True}}
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (64, 0.7, 3)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "tools" not in body  # the turn contract carries the tools; no native tool calling


async def test_without_a_constraint_nothing_is_sent_and_temperature_only_when_set():
    model, transport = model_on(sse(final("hi")), params={"cache_prompt": True})
    await deltas(model)
    body = transport.requests[0].json()
    assert "response_format" not in body and "temperature" not in body
    assert body["cache_prompt"] is True


async def test_text_streams_and_done_carries_usage_with_cached_tokens():
    usage = {"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129, "prompt_tokens_details": {"cached_tokens": 96}}
    model, _ = model_on(sse('{"thought": "", "final": "hi"}', usage=usage))
    out = await deltas(model)
    assert "".join(d["text"] for d in out if d["type"] == "text") == '{"thought": "", "final": "hi"}'
    assert out[-1] == {"type": "done", "finish_reason": "stop", "usage": {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 96}}
    assert [d["type"] for d in out].count("done") == 1


def test_usage_counts_reads_what_servers_send():
    assert usage_counts(None) == {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    assert usage_counts({"prompt_tokens": 3, "completion_tokens": 2}) == {"prompt_tokens": 3, "completion_tokens": 2, "cached_tokens": 0}
    assert usage_counts({"prompt_tokens": 3, "prompt_tokens_details": None})["cached_tokens"] == 0
    assert usage_counts({"prompt_tokens": -1, "completion_tokens": True})["prompt_tokens"] == 0


async def test_length_maps_to_length():
    model, _ = model_on(sse('{"thought": "abc', finish="length"))
    assert (await deltas(model))[-1]["finish_reason"] == "length"


async def expect_error(model, kind: str) -> AerixError:
    try:
        await deltas(model)
    except AerixError as e:
        assert e.kind == kind, e
        return e
    raise AssertionError(f"no AerixError({kind!r})")


async def test_an_error_event_is_an_engine_error_with_the_servers_words():
    model, _ = model_on(replay(json.dumps({"error": {"code": 404, "message": "model 'x' not found"}}), status=404, content_type="application/json"))
    e = await expect_error(model, "engine")
    assert "404" in e.message and "model 'x' not found" in e.message


PROBLEM = {
    "type": "https://server.test/problems/overloaded",
    "title": "Overloaded",
    "status": 503,
    "detail": "try again in 5 s",
    "retry_after": 5,
}


def problem_answer() -> Response:
    return replay(json.dumps(PROBLEM), status=503, content_type="application/problem+json")


async def test_a_problem_document_rides_on_the_engine_error():
    model, _ = model_on(problem_answer(), retries=0)  # a 503 is retried by default: test_openai_backoff.py
    e = await expect_error(model, "engine")
    assert e.problem == PROBLEM
    assert "503" in e.message and "Overloaded: try again in 5 s" in e.message


async def test_a_problem_sent_in_the_stream_rides_on_the_engine_error_too():
    begun = 'data: {"choices": [{"index": 0, "delta": {"content": "{\\"tho"}, "finish_reason": null}]}\n\n'
    model, _ = model_on(begun + f"event: error\ndata: {json.dumps(PROBLEM)}\n\n")
    e = await expect_error(model, "engine")
    assert e.problem == PROBLEM and e.message == "Overloaded: try again in 5 s"


async def test_an_error_without_a_problem_document_has_none():
    model, _ = model_on(replay("server on fire", status=500, content_type="text/plain"))
    assert (await expect_error(model, "engine")).problem is None


async def test_a_stream_that_closes_without_a_finish_reason_is_unusable_output():
    model, _ = model_on('data: {"choices": [{"index": 0, "delta": {"content": "{\\"tho"}}]}\n\n')
    await expect_error(model, "output")


async def test_a_native_tool_call_is_unusable_output():
    body = 'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "x", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}\n\ndata: [DONE]\n\n'
    model, _ = model_on(body)
    await expect_error(model, "output")


async def test_a_cancelled_stream_is_an_abort():
    signal = Abort()
    model, transport = model_on(replay(sse(final("x") * 3)[:40], hang=True))
    asyncio.get_running_loop().call_later(0.05, signal.abort)
    try:
        await deltas(model, {**OPTIONS, "signal": signal})
    except AerixError as e:
        assert e.kind == "abort"
    else:
        raise AssertionError("no abort")
    assert transport.responses[0].closed


async def test_the_transport_is_a_seam():
    # Inside Pyodide the default is the page's fetch; on CPython, httpx (the `openai` extra).
    name = type(default_transport()).__name__
    assert name == ("FetchTransport" if sys.platform == "emscripten" else "HttpxTransport")


def test_without_httpx_the_message_names_the_extra():
    from aerix.engines.openai import HttpxTransport

    saved = sys.modules.get("httpx")
    sys.modules["httpx"] = None  # type: ignore[assignment]  # what an absent package looks like to import
    try:
        HttpxTransport()
    except AerixError as e:
        assert e.kind == "options" and "aerix[openai]" in e.message
    else:
        raise AssertionError("HttpxTransport without httpx")
    finally:
        if saved is None:
            del sys.modules["httpx"]
        else:
            sys.modules["httpx"] = saved


async def test_the_fetch_transport_belongs_to_the_page():
    from aerix.engines.openai import FetchTransport, Request

    injected = object()
    assert FetchTransport(fetch=injected).fetch is injected  # a test or an embedder may bring its own
    if sys.platform == "emscripten":
        # Here it is the real one; awaiting JavaScript needs the page's event loop, so the page
        # tests (tests/e2e/test_openai_server.py) drive it against a real server.
        from aerix._js import IN_PYODIDE

        assert IN_PYODIDE
        return
    try:
        await FetchTransport().send(Request("POST", "http://server.test/v1/chat/completions"))
    except AerixError as e:
        assert e.kind == "options" and "Pyodide" in e.message
    else:
        raise AssertionError("fetch on CPython")


# -- an Agent on it --------------------------------------------------------------------------


async def test_an_agent_runs_tools_and_answers_with_the_schema_on_every_request():
    call = json.dumps({"thought": "look", "calls": [{"tool": "weather", "input": {"city": "Lisbon"}}]})
    model, transport = model_on(sse(call), sse(final("Take an umbrella.")))
    agent = Agent(model=model, tools=[weather], limits={"max_tokens": 200})
    events = await collect(agent.run("Umbrella for Lisbon?"))
    assert kinds(events) == ["turn", "call", "result", "turn", "final"]
    assert events[-1].text == "Take an umbrella."
    for request in transport.requests:
        assert request.json()["response_format"]["json_schema"]["schema"] == agent.schema
    assert transport.requests[1].json()["messages"] == agent.messages[:-1]


async def test_a_cut_turn_is_retried():
    model, transport = model_on(sse('{"thought": "a very long', finish="length"), sse(final("short")))
    events = await collect(Agent(model=model, limits={"max_tokens": 8}).run("hi"))
    assert kinds(events) == ["retry", "turn", "final"] and events[[e.type for e in events].index("retry")].reason.startswith("cut:")
    assert len(transport.requests) == 2


async def test_abort_ends_the_run_abort_and_the_next_run_works():
    signal = Abort()
    model, transport = model_on(replay(sse('{"thought": "' + "la " * 200, pieces=100)[:600], delay=0.01, chunk=20, hang=True), sse(final("ok")))
    agent = Agent(model=model)
    events = []
    async for ev in agent.run("Write a lot.", signal):
        events.append(ev)
        if ev.type == "text":
            signal.abort()
    assert events[-1].type == "end" and events[-1].reason == "abort"
    assert transport.responses[0].closed
    assert (await agent.ask("Now briefly.")).text == "ok"


async def test_cached_tokens_reach_the_usage_event():
    model, _ = model_on(
        sse(final("one"), usage={"prompt_tokens": 80, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}),
        sse(final("two"), usage={"prompt_tokens": 100, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 84}}),
    )
    agent = Agent(model=model)
    first = await agent.ask("one")
    second = await agent.ask("two")
    usage = [e for e in first.events + second.events if e.type == "usage"]
    assert [u.cached_tokens for u in usage] == [0, 84]


async def test_a_server_error_ends_the_run_error():
    model, _ = model_on(replay("server on fire", status=500, content_type="text/plain"))
    events = await collect(Agent(model=model).run("hi"))
    assert events[-1].type == "end" and events[-1].reason == "error"
    assert "500" in events[-1].message and "server on fire" in events[-1].message


async def test_a_problem_document_reaches_the_runs_end_event():
    model, _ = model_on(problem_answer(), retries=0)  # a 503 is retried by default: test_openai_backoff.py
    events = await collect(Agent(model=model).run("hi"))
    assert events[-1].type == "end" and events[-1].reason == "error"
    assert events[-1].problem == PROBLEM
    assert events[-1].to_dict()["problem"] == PROBLEM


async def test_a_recorded_llama_server_turn_drives_the_agent():
    model, _ = model_on((STREAMS / "llama-server-turn.sse").read_bytes(), sse(final("done")))
    events = await collect(Agent(model=model, tools=[weather]).run("Umbrella for Lisbon?"))
    assert kinds(events) == ["turn", "call", "result", "turn", "final"]
    usage = [e for e in events if e.type == "usage"]
    assert (usage[0].prompt_tokens, usage[0].completion_tokens, usage[0].cached_tokens) == (516, 68, 93)


async def test_the_openai_model_yields_logprobs_only_when_asked():
    stream = (STREAMS / "llama-server-logprobs.sse").read_text(encoding="utf-8")
    model, transport = model_on(stream, stream)
    plain = await deltas(model)
    assert [d["type"] for d in plain] == ["text", "text", "done"] and "logprobs" not in transport.requests[0].json()
    asked = await deltas(model, {**OPTIONS, "top_logprobs": 6})
    assert transport.requests[1].json()["logprobs"] is True and transport.requests[1].json()["top_logprobs"] == 6
    assert [d["type"] for d in asked] == ["text", "logprobs", "text", "logprobs", "done"]
    assert asked[1]["content"][0]["top_logprobs"][1] == {"id": 32, "token": "A", "bytes": [65], "logprob": -1.6402}
