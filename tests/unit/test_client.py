"""The streaming client, rule by rule, over recorded byte streams (tests/unit/streams/)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from tools_fixture import convert, weather

from aerix import Abort, AerixError
from aerix.engines.openai import (
    DELTA,
    DONE,
    ERROR,
    EVENT_TYPES,
    LOGPROBS,
    TOOL_CALL_DELTA,
    TOOL_CALL_END,
    TOOL_CALL_START,
    ChatClient,
    ContentDelta,
    Logprobs,
    MockTransport,
    Response,
    StreamDone,
    StreamError,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    collect_tool_calls,
    replay,
    tools_for_llm,
)
from aerix.engines.openai.stream import STOP_REASONS

STREAMS = Path(__file__).parent / "streams"
USER = [{"role": "user", "content": "Umbrella for Lisbon?"}]


def recorded(name: str) -> bytes:
    return (STREAMS / name).read_bytes()


def frame(obj) -> str:
    return f"data: {json.dumps(obj)}\n\n"


def chunk(content=None, finish=None, tool_calls=None, usage=None, choices=True) -> str:
    delta = {}
    if content is not None:
        delta["content"] = content
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    body = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else []}
    if usage is not None:
        body["usage"] = usage
    return frame(body)


async def stream(body=None, *, handler=None, signal=None, tools=(), client=None, **replay_args):
    transport = MockTransport(handler or (lambda request: replay(body, **replay_args)))
    client = ChatClient("http://server.test/v1", "m", transport=transport, **(client or {}))
    events = [ev async for ev in client.stream_chat(USER, tools, signal=signal)]
    return events, transport


def endings(events):
    return [e for e in events if e.type in (DONE, ERROR)]


def assert_one_ending_last(events):
    assert len(endings(events)) == 1 and events[-1].type in (DONE, ERROR), [e.type for e in events]


# -- the event shapes ----------------------------------------------------------------------


def test_seven_event_types_are_published_as_constants():
    assert EVENT_TYPES == ("delta", "tool_call_start", "tool_call_delta", "tool_call_end", "logprobs", "done", "error")
    assert (DELTA, TOOL_CALL_START, TOOL_CALL_DELTA, TOOL_CALL_END, LOGPROBS, DONE, ERROR) == EVENT_TYPES
    assert STOP_REASONS == ("stop", "length", "tool_calls", "cancelled", "closed")
    token = {"token": "A", "logprob": -0.1, "top_logprobs": []}
    shapes = [ContentDelta("x"), ToolCallStart("c", "n"), ToolCallDelta("c", "{"), ToolCallEnd("c"), Logprobs([token]), StreamDone("stop"), StreamError("m")]
    assert [e.to_dict() for e in shapes] == [
        {"type": "delta", "content": "x"},
        {"type": "tool_call_start", "id": "c", "name": "n"},
        {"type": "tool_call_delta", "id": "c", "args": "{"},
        {"type": "tool_call_end", "id": "c"},
        {"type": "logprobs", "content": [token]},
        {"type": "done", "stop_reason": "stop", "usage": None},
        {"type": "error", "message": "m", "code": None, "problem": None},
    ]


def test_the_new_modules_declare_all_and_it_resolves():
    import importlib

    openai = ("", ".model", ".client", ".stream", ".sse", ".redact", ".transports", ".transports.base", ".transports.mock", ".transports.httpx", ".transports.fetch")
    for name in ("cli", *(f"engines.openai{part}" for part in openai)):
        module = importlib.import_module(f"aerix.{name}")
        assert module.__all__, name
        for symbol in module.__all__:
            assert hasattr(module, symbol), f"aerix.{name}.{symbol}"


# -- the request ---------------------------------------------------------------------------


def test_the_request_streams_with_usage_and_prepends_the_system_prompt():
    client = ChatClient("http://server.test/v1/", "m", api_key="k", transport=MockTransport(lambda r: None))
    request = client.request(USER, system_prompt="Be brief.")
    assert (request.method, request.url) == ("POST", "http://server.test/v1/chat/completions")
    assert request.headers["Authorization"] == "Bearer k"
    assert request.headers["Content-Type"] == "application/json"
    assert request.json() == {
        "model": "m",
        "messages": [{"role": "system", "content": "Be brief."}, *USER],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert "k" not in repr(request) and "k" not in repr(client).replace("ChatClient", "")


def test_tools_send_tool_choice_auto_and_parallel_calls_and_no_tools_sends_no_key():
    client = ChatClient("http://server.test/v1", "m", transport=MockTransport(lambda r: None))
    with_tools = client.request(USER, tools=[weather, convert]).json()
    assert with_tools["tools"] == tools_for_llm([weather, convert])
    assert with_tools["tool_choice"] == "auto" and with_tools["parallel_tool_calls"] is True
    without = client.request(USER, tools=[]).json()
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(without)
    assert "Authorization" not in client.request(USER).headers


def test_temperature_is_sent_only_when_set():
    unset = ChatClient("http://server.test/v1", "m", transport=MockTransport(lambda r: None))
    assert "temperature" not in unset.request(USER).json()
    zero = ChatClient("http://server.test/v1", "m", temperature=0.0, transport=MockTransport(lambda r: None))
    assert zero.request(USER).json()["temperature"] == 0.0


def test_params_add_body_fields_but_cannot_replace_the_clients_own():
    client = ChatClient("http://server.test/v1", "m", transport=MockTransport(lambda r: None))
    assert client.request(USER, params={"max_tokens": 9, "seed": 1}).json()["max_tokens"] == 9
    for key in ("stream", "messages", "model", "tools"):
        try:
            client.request(USER, params={key: 1})
        except AerixError as e:
            assert e.kind == "options" and key in e.message
        else:
            raise AssertionError(f"params set {key}")


def test_bad_options_raise_where_they_are_made():
    for args in (("server.test/v1", "m"), ("http://server.test/v1", "")):
        try:
            ChatClient(*args, transport=MockTransport(lambda r: None))
        except AerixError as e:
            assert e.kind == "options"
        else:
            raise AssertionError(args)


def test_tools_for_llm_is_the_openai_function_shape():
    (spec,) = tools_for_llm([weather])
    assert spec == {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Today's forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }


async def test_the_request_goes_through_the_transport_as_built():
    events, transport = await stream(chunk("hi") + chunk(finish="stop") + "data: [DONE]\n\n")
    (request,) = transport.requests
    assert request.json()["stream"] is True and request.url == "http://server.test/v1/chat/completions"
    assert [e.to_dict() for e in events] == [{"type": "delta", "content": "hi"}, {"type": "done", "stop_reason": "stop", "usage": None}]
    assert transport.responses[0].closed


# -- framing and reassembly, on recorded streams -------------------------------------------

TOOL_CALLS = [
    ToolCallStart("call_Lx1", "weather"),
    ToolCallDelta("call_Lx1", '{"ci'),
    ToolCallStart("call_Pt2", "convert"),
    ToolCallDelta("call_Lx1", 'ty": "Lis'),
    ToolCallDelta("call_Pt2", '{"value": 3'),
    ToolCallDelta("call_Lx1", 'bon"}'),
    ToolCallDelta("call_Pt2", ', "unit": "km"}'),
    ToolCallEnd("call_Lx1"),
    ToolCallEnd("call_Pt2"),
]


async def test_interleaved_tool_call_fragments_are_keyed_by_index():
    events, _ = await stream(recorded("openai-tool-calls.sse"))
    assert events[:-1] == TOOL_CALLS
    assert events[-1].stop_reason == "tool_calls" and events[-1].usage["prompt_tokens_details"]["cached_tokens"] == 64
    calls = collect_tool_calls(events)
    assert [(c["id"], c["name"], json.loads(c["args"])) for c in calls] == [
        ("call_Lx1", "weather", {"city": "Lisbon"}),
        ("call_Pt2", "convert", {"value": 3, "unit": "km"}),
    ]


async def test_every_network_chunking_of_a_recorded_stream_gives_the_same_events():
    for name in sorted(p.name for p in STREAMS.glob("*.sse")):
        body = recorded(name)
        whole, _ = await stream(body)
        assert_one_ending_last(whole)
        for size in (1, 2, 3, 7, 64):
            split, _ = await stream(body, chunk=size)
            assert split == whole, (name, size)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_chunkings_of_a_recorded_stream_give_the_same_events(data):
    from helpers import run_coroutine

    body = recorded("openai-tool-calls.sse")
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body) - 1), max_size=30))))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]
    events, _ = run_coroutine(stream(pieces))
    assert events[:-1] == TOOL_CALLS


async def test_a_call_without_an_id_gets_one_and_a_reused_index_with_a_new_id_is_a_new_call():
    body = (
        chunk(tool_calls=[{"index": 0, "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}])
        + chunk(tool_calls=[{"index": 0, "id": "b", "function": {"name": "weather", "arguments": {"city": "Rome"}}}])
        + chunk(finish="tool_calls")
        + "data: [DONE]\n\n"
    )
    events, _ = await stream(body)
    assert events == [
        ToolCallStart("call_1", "weather"),
        ToolCallDelta("call_1", '{"city": "Oslo"}'),
        ToolCallEnd("call_1"),
        ToolCallStart("b", "weather"),
        ToolCallDelta("b", '{"city": "Rome"}'),  # arguments sent as an object become JSON text
        ToolCallEnd("b"),
        StreamDone("tool_calls"),
    ]


async def test_content_and_tool_calls_in_one_reply():
    body = chunk("Let me look. ") + chunk(tool_calls=[{"index": 0, "id": "a", "function": {"name": "weather", "arguments": "{}"}}])
    events, _ = await stream(body + chunk(finish="tool_calls") + "data: [DONE]\n\n")
    assert [e.type for e in events] == [DELTA, TOOL_CALL_START, TOOL_CALL_DELTA, TOOL_CALL_END, DONE]


async def test_recorded_llama_server_streams():
    turn, _ = await stream(recorded("llama-server-turn.sse"))
    text = "".join(e.content for e in turn if e.type == DELTA)
    assert json.loads(text)["calls"][0]["tool"] == "weather"  # a noise model, but the grammar held
    assert turn[-1] == StreamDone("stop", {"completion_tokens": 68, "prompt_tokens": 516, "total_tokens": 584, "prompt_tokens_details": {"cached_tokens": 93}})
    cut, _ = await stream(recorded("llama-server-cut.sse"))
    assert "".join(e.content for e in cut if e.type == DELTA) == '{"thou' and cut[-1].stop_reason == "length"
    saved = json.loads(recorded("llama-server-400.json"))
    error, _ = await stream(saved["body"], status=saved["status"], content_type=saved["content_type"])
    assert error == [
        StreamError(
            "the server answered 400 Bad Request: the server reported an error: request (20501 tokens) exceeds "
            "the available context size (4096 tokens), try increasing it",
            code=400,
        )
    ]


async def test_a_choices_logprobs_are_one_event_after_its_text():
    events, _ = await stream(recorded("llama-server-logprobs.sse"))
    assert [e.type for e in events] == [DELTA, LOGPROBS, DELTA, LOGPROBS, DONE]
    first = events[1].content[0]
    assert (first["token"], first["logprob"], len(first["top_logprobs"])) == ("B", -0.3285, 6)
    odd = frame({"choices": [{"index": 0, "delta": {"content": "x"}, "logprobs": {"content": [7, {"token": "x", "logprob": -1}]}, "finish_reason": None}]})
    none = frame({"choices": [{"index": 0, "delta": {"content": "y"}, "logprobs": {"content": []}, "finish_reason": None}]})
    events, _ = await stream(odd + none + frame({"choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]}))
    assert events[:3] == [ContentDelta("x"), Logprobs([{"token": "x", "logprob": -1}]), ContentDelta("y")]


# -- termination ---------------------------------------------------------------------------

OPEN_CALL = chunk(tool_calls=[{"index": 0, "id": "a", "function": {"name": "weather", "arguments": '{"ci'}}])


async def test_done_frame_ends_open_calls_then_done():
    events, _ = await stream(OPEN_CALL + "data: [DONE]\n\n" + chunk("never read"))
    assert events[-2:] == [ToolCallEnd("a"), StreamDone("closed")]
    assert_one_ending_last(events)


async def test_each_finishing_reason_ends_open_calls_at_once_then_done_comes_with_the_usage():
    usage = {"prompt_tokens": 5, "completion_tokens": 2}
    for reason in ("stop", "length", "tool_calls"):
        body = OPEN_CALL + chunk(finish=reason) + chunk("ignored after the finish") + chunk(usage=usage, choices=False)
        events, transport = await stream(body + "data: [DONE]\n\n", hang=True)
        assert events[1:] == [ToolCallDelta("a", '{"ci'), ToolCallEnd("a"), StreamDone(reason, usage)], reason
        assert transport.responses[0].closed  # done with the usage: no wait for [DONE]


async def test_a_finish_reason_and_usage_in_one_chunk_end_the_stream_there():
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    events, _ = await stream(chunk("a") + chunk(finish="stop", usage=usage), hang=True)
    assert events == [ContentDelta("a"), StreamDone("stop", usage)]


async def test_a_body_that_just_closes_ends_open_calls_then_done():
    events, _ = await stream(chunk("a") + OPEN_CALL)
    assert events[-2:] == [ToolCallEnd("a"), StreamDone("closed")]
    finished, _ = await stream(chunk("a") + chunk(finish="length"))  # no usage, no [DONE]: the close ends it
    assert finished == [ContentDelta("a"), StreamDone("length")]


async def test_other_finish_reasons_are_ignored_and_the_stream_goes_on():
    body = chunk("a", finish="content_filter") + chunk("b", finish="function_call") + chunk("c", finish=None)
    events, _ = await stream(body + chunk(finish="stop") + "data: [DONE]\n\n")
    assert events == [ContentDelta("a"), ContentDelta("b"), ContentDelta("c"), StreamDone("stop")]


async def test_keep_alives_empty_frames_and_other_choices_are_skipped():
    other = frame({"choices": [{"index": 1, "delta": {"content": "second choice"}, "finish_reason": None}]})
    events, _ = await stream(": keep-alive\n\n" + "data:\n\n" + other + chunk("a") + "data: [DONE]\n\n")
    assert events == [ContentDelta("a"), StreamDone("closed")]


FRAMES = st.sampled_from(
    [
        chunk("x"),
        chunk(""),
        OPEN_CALL,
        chunk(tool_calls=[{"index": 1, "function": {"arguments": "1"}}]),
        chunk(tool_calls=[{"index": 1, "id": "z", "function": {"name": "convert"}}]),
        chunk(finish="stop"),
        chunk(finish="length"),
        chunk(finish="tool_calls"),
        chunk(finish="content_filter"),
        chunk(usage={"prompt_tokens": 1}, choices=False),
        "data: [DONE]\n\n",
        ": comment\n\n",
        'data: {"error": {"message": "boom"}}\n\n',
        "data: not json\n\n",
        "data: {\"cut",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(FRAMES, max_size=12), st.sampled_from([None, 1, 5]))
def test_any_stream_ends_exactly_once_and_every_started_call_ends_before_done(frames, size):
    from helpers import run_coroutine

    events, _ = run_coroutine(stream("".join(frames), chunk=size))
    assert_one_ending_last(events)
    started = [e.id for e in events if e.type == TOOL_CALL_START]
    ended = [e.id for e in events if e.type == TOOL_CALL_END]
    if events[-1].type == DONE:
        assert sorted(started) == sorted(ended)
    assert all(e.type in EVENT_TYPES for e in events)


# -- cancellation --------------------------------------------------------------------------


async def test_a_signal_aborted_before_the_request_sends_nothing():
    signal = Abort()
    signal.abort()
    events, transport = await stream(chunk("a"), signal=signal)
    assert events == [StreamDone("cancelled")] and transport.requests == []


async def test_cancel_while_the_server_is_quiet_ends_done_cancelled_and_closes_the_stream():
    signal = Abort()
    asyncio.get_running_loop().call_later(0.1, signal.abort)
    events, transport = await stream(OPEN_CALL + chunk("a"), hang=True, signal=signal)
    assert events[-3:] == [ContentDelta("a"), ToolCallEnd("a"), StreamDone("cancelled")]
    assert transport.responses[0].closed


async def test_cancel_while_waiting_for_the_headers():
    signal = Abort()

    async def never_answers(request):
        signal.abort()
        await asyncio.get_running_loop().create_future()

    events, _ = await stream(handler=never_answers, signal=signal)
    assert events == [StreamDone("cancelled")]


async def test_cancel_between_deltas_is_never_an_error():
    signal = Abort()
    client = ChatClient("http://server.test/v1", "m", transport=MockTransport(lambda r: replay(chunk("a") * 50, delay=0.001)))
    events = []
    async for ev in client.stream_chat(USER, signal=signal):
        events.append(ev)
        if len(events) == 3:
            signal.abort()
    assert events[-1] == StreamDone("cancelled") and len(events) == 4
    assert not [e for e in events if e.type == ERROR]


async def test_a_consumer_that_stops_reading_closes_the_response():
    transport = MockTransport(lambda r: replay(chunk("a") * 10, hang=True))
    client = ChatClient("http://server.test/v1", "m", transport=transport)
    stream_ = client.stream_chat(USER)
    async for _ in stream_:
        break
    await stream_.aclose()
    assert transport.responses[0].closed


# -- errors --------------------------------------------------------------------------------


async def test_a_non_2xx_response_is_one_error_with_the_servers_message():
    body = json.dumps({"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}})
    events, _ = await stream(body, status=400, content_type="application/json; charset=utf-8")
    assert events == [StreamError("the server answered 400 Bad Request: the server reported an error: the request exceeds the available context size", code=400)]


async def test_a_problem_document_rides_along_and_the_message_stays_human():
    problem = {"type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.", "status": 403, "detail": "Your current balance is 30, but that costs 50.", "balance": 30}
    events, _ = await stream(json.dumps(problem), status=403, content_type="application/problem+json")
    (error,) = events
    assert error.problem == problem and error.code == 403
    assert error.message == "the server answered 403 Forbidden: You do not have enough credit.: Your current balance is 30, but that costs 50."


async def test_a_plain_text_error_page_is_read_and_cut():
    events, _ = await stream("upstream  down\n" * 2, status=502, content_type="text/plain")
    assert events == [StreamError("the server answered 502 Bad Gateway: upstream down upstream down", code=502)]
    long, _ = await stream("x" * 100_000, status=500, content_type="text/html")
    assert len(long[0].message) < 600


async def test_an_error_after_the_200_has_begun_is_one_error_and_nothing_follows():
    body = chunk("a") + 'data: {"error": {"message": "the slot was lost", "type": "server_error"}}\n\n' + chunk("b")
    events, _ = await stream(body + "data: [DONE]\n\n")
    assert events == [ContentDelta("a"), StreamError("the server reported an error: the slot was lost", code="server_error")]


async def test_an_error_event_frame_with_a_problem_document():
    problem = {"title": "Overloaded", "detail": "try again in 5 s", "status": 503}
    events, _ = await stream(chunk("a") + f"event: error\ndata: {json.dumps(problem)}\n\n")
    assert events == [ContentDelta("a"), StreamError("Overloaded: try again in 5 s", code=503, problem=problem)]


async def test_a_frame_that_is_not_json_is_an_error():
    events, _ = await stream(chunk("a") + "data: {oops\n\n" + "data: [DONE]\n\n")
    assert [e.type for e in events] == [DELTA, ERROR] and "not JSON" in events[-1].message


async def test_a_network_failure_before_the_response_is_an_error():
    def refuse(request):
        raise ConnectionRefusedError("connection refused")

    events, _ = await stream(handler=refuse)
    assert events == [StreamError("could not reach http://server.test/v1/chat/completions: ConnectionRefusedError: connection refused")]


async def test_a_connection_that_breaks_mid_stream_is_an_error():
    events, transport = await stream(chunk("a"), fail=ConnectionResetError("reset by peer"))
    assert events == [ContentDelta("a"), StreamError("the stream broke off: ConnectionResetError: reset by peer")]
    assert transport.responses[0].closed


async def test_a_server_that_answers_without_streaming_gives_the_same_events():
    answer = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    events, _ = await stream(json.dumps(answer), content_type="application/json")
    assert events == [ContentDelta("hi"), ToolCallStart("a", "weather"), ToolCallDelta("a", "{}"), ToolCallEnd("a"), StreamDone("tool_calls", answer["usage"])]
    error, _ = await stream(json.dumps({"error": "model not loaded"}), content_type="application/json")
    assert error == [StreamError("the server reported an error: model not loaded")]


# -- the transport values ------------------------------------------------------------------


async def test_response_reads_at_most_its_limit_and_closes_once():
    closes = []
    response = Response(200, {"Content-Type": "text/plain"}, [b"ab", b"cd", b"ef"], close=lambda: closes.append(1))
    assert response.content_type == "text/plain" and response.reason == "OK"
    assert await response.aread(3) == b"abc"
    await response.aclose()
    await response.aclose()
    assert closes == [1] and response.closed


# -- the body's end after the last frame ---------------------------------------------------


class Tail:
    """A body in the given chunks that notes whether it was read to its end or closed before."""

    def __init__(self, *parts: str, hang: bool = False) -> None:
        self.parts, self.hang = parts, hang
        self.read_to_end = False

    async def chunks(self):
        for part in self.parts:
            yield part.encode()
        if self.hang:
            await asyncio.get_running_loop().create_future()  # a body kept open after [DONE]
        self.read_to_end = True


async def test_a_body_is_read_to_its_end_after_done_so_the_request_finishes_instead_of_being_cancelled():
    # A page saw `net::ERR_ABORTED` on a chat request that had answered in full: the reader was
    # cancelled after [DONE], a moment before the body's end arrived.
    for last in ("data: [DONE]\n\n", chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 1})):
        body = Tail(chunk("hi"), last, "")
        events, transport = await stream(handler=lambda request: Response(200, {"content-type": "text/event-stream"}, body.chunks()))
        assert body.read_to_end, last
        assert events[0] == ContentDelta("hi") and endings(events) == events[-1:] and transport.responses[0].closed


async def test_a_body_kept_open_after_done_is_closed_after_a_short_wait_and_its_tail_is_not_read_as_frames():
    body = Tail(chunk("hi"), "data: [DONE]\n\n", chunk("after the end"), hang=True)
    events, transport = await asyncio.wait_for(
        stream(handler=lambda request: Response(200, {"content-type": "text/event-stream"}, body.chunks())), 30
    )
    assert events == [ContentDelta("hi"), StreamDone("closed")]
    assert not body.read_to_end and transport.responses[0].closed
