"""The OpenAI path under faults (issue 17, items 2, 4, 5, 6, 14, 17): each test failed before its fix."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from helpers import calls, collect, final
from test_openai_model import sse

from aerix import Abort, AerixError, Agent, OpenAIModel, tool
from aerix.cli import parser, run_command
from aerix.engines.openai import ChatClient, ContentDelta, MockTransport, Response, replay
from aerix.engines.openai import sse as sse_module
from aerix.engines.openai.sse import MAX_CHARS, FrameTooLong, SSEDecoder


def stalled_body(*frames: bytes):
    """A body that sends ``frames`` and then goes quiet for good (a server thinking forever)."""

    async def chunks():
        for f in frames:
            yield f
        await asyncio.sleep(3600)

    return chunks()


# -- 2. cancelling the consumer propagates: a timeout is a TimeoutError, not an `end error` --


@pytest.mark.parametrize("with_signal", [True, False], ids=["with a signal", "without"])
async def test_a_timeout_around_a_stalled_generation_raises_timeout_error(with_signal):
    first = b'data: {"choices":[{"index":0,"delta":{"content":"{\\"th"}}]}\n\n'
    replies = [Response(200, {"content-type": "text/event-stream"}, stalled_body(first)), replay(sse(final("hi")))]
    transport = MockTransport(lambda r: replies.pop(0))
    agent = Agent(model=OpenAIModel("http://server.test/v1", "tiny", transport=transport))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await agent.ask("hi", signal=Abort() if with_signal else None)
    assert transport.responses[0].closed  # the server was told to stop
    assert (await agent.ask("again")).text == "hi"  # and the agent is free


class _StuckStream:
    """A model's stream (not a generator) that never answers and cannot be closed mid-read."""

    def __aiter__(self):
        return self

    async def __anext__(self):
        await asyncio.sleep(3600)

    async def aclose(self):
        raise RuntimeError("cannot close while a read is pending")


class _StuckModel:
    def chat(self, messages, options):
        return _StuckStream()


async def test_a_model_stream_that_fails_to_close_does_not_hide_the_cancellation():
    agent = Agent(model=_StuckModel())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await agent.ask("hi")


# -- 4. the API key reaches no message, error, repr or event -------------------------------

KEY = "sk-SECRET-0123456789"


def refuse_quoting_the_request(request):
    """A network failure whose text quotes the request, as h11 does for an illegal header value."""
    raise ValueError(f"Illegal header value {request.headers.get('Authorization', '').encode()!r} for {request.url}")


def everything_said(events, *objects) -> str:
    """Every message, problem and repr a user could see, in one text."""
    return " ".join([repr(ev.to_dict()) for ev in events] + [repr(o) for o in objects])


async def test_a_key_with_a_trailing_newline_is_stripped_and_never_shown():
    transport = MockTransport(refuse_quoting_the_request)
    model = OpenAIModel("http://server.test/v1", "tiny", api_key=f"  {KEY}\n", transport=transport)
    events = await collect(Agent(model=model).run("hi"))
    assert events[-1].type == "end" and events[-1].reason == "error"
    assert transport.requests[0].headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in everything_said(events, model, model.client, transport.requests[0])
    assert "[redacted]" in events[-1].message


@pytest.mark.parametrize("inside", ["\n", " ", "\t", "\x00", "é"])
def test_a_key_with_a_space_or_control_character_inside_is_refused_without_showing_it(inside):
    with pytest.raises(AerixError) as e:
        OpenAIModel("http://server.test/v1", "tiny", api_key=f"sk-SEC{inside}RET", transport=MockTransport(lambda r: None))
    assert e.value.kind == "options" and "api_key" in e.value.message
    assert "SEC" not in e.value.message and "RET" not in e.value.message and "SEC" not in repr(e.value)


async def test_a_server_that_echoes_the_key_has_it_redacted():
    body = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}.", "code": "invalid_api_key"}})
    problem = json.dumps({"title": "Unauthorized", "detail": f"bad key {KEY}", "key": KEY})
    for reply in (replay(body, status=401, content_type="application/json"),
                  replay(problem, status=401, content_type="application/problem+json"),
                  replay(f"event: error\ndata: {body}\n\n")):
        model = OpenAIModel("http://server.test/v1", "tiny", api_key=KEY, transport=MockTransport(lambda r, reply=reply: reply))
        events = await collect(Agent(model=model).run("hi"))
        assert events[-1].type == "end" and "[redacted]" in events[-1].message
        assert KEY not in everything_said(events), events[-1]


@pytest.mark.parametrize("base_url", [
    f"http://server.test/v1?key={KEY}",
    f"http://server.test/v1?api-version=1&key={KEY}",
])
async def test_a_secret_in_base_url_is_never_shown(base_url):
    transport = MockTransport(refuse_quoting_the_request)
    model = OpenAIModel(base_url, "tiny", transport=transport)
    events = await collect(Agent(model=model).run("hi"))
    assert events[-1].type == "end" and "could not reach http://" in events[-1].message
    assert KEY not in everything_said(events, model, model.client, transport.requests[0])
    assert KEY in transport.requests[0].url  # the request itself still carries it
    assert transport.requests[0].url.split("?")[0].endswith("/v1/chat/completions")
    with pytest.raises(AerixError) as e:  # nor in an options error
        OpenAIModel(base_url.replace("http", "htp", 1), "tiny", transport=transport)
    assert KEY not in e.value.message


# -- 5. a lone surrogate in the conversation does not break every later request -----------


def echo_tool():
    return tool(name="echo", description="Says it back.", input={"text": {"type": "string", "required": True}},
                run=lambda i, c: f"you said {i['text']}")


async def test_a_lone_surrogate_echoed_by_a_tool_leaves_the_agent_usable():
    # The model writes the JSON escape "\ud800" (legal JSON, not a character); the tool echoes it.
    replies = [sse(calls(("echo", {"text": "\ud800"}))), sse(final("echoed")), sse(final("still here"))]
    transport = MockTransport(lambda r: replay(replies.pop(0), chunk=17))
    agent = Agent(model=OpenAIModel("http://server.test/v1", "tiny", transport=transport), tools=[echo_tool()])
    first = await collect(agent.run("echo a surrogate"))
    assert first[-1].type == "final" and first[-1].text == "echoed", first[-1]
    second = await collect(agent.run("and again"))
    assert second[-1].type == "final" and second[-1].text == "still here", second[-1]
    sent = transport.requests[-1].body.decode("utf-8")  # valid UTF-8: what any server can read
    assert any("you said \ufffd" in m["content"] for m in json.loads(sent)["messages"])


def test_surrogates_in_a_request_are_replaced_and_a_split_pair_is_joined():
    client = ChatClient("http://server.test/v1", "m", transport=MockTransport(lambda r: None))
    body = client.request([{"role": "user", "content": "a\ud800b \ud83d\ude00 \udfff"}]).body
    assert json.loads(body)["messages"][0]["content"] == "a\ufffdb \U0001F600 \ufffd"


# -- 6. SSE framing is linear in the body, and a line past the cap is refused --------------


class CountingPattern:
    """Stands in for ``sse._LINE_BREAK`` and counts the characters handed to it: the work of framing."""

    def __init__(self, pattern):
        self.pattern, self.scanned = pattern, 0

    def finditer(self, text, *args):
        self.scanned += len(text)
        return self.pattern.finditer(text, *args)

    def search(self, text, *args):
        self.scanned += len(text)
        return self.pattern.search(text, *args)


def one_long_line(size: int) -> bytes:
    text = "x" * size
    return f'data: {{"choices":[{{"index":0,"delta":{{"content":"{text}"}}}}]}}\n\n'.encode()


@pytest.mark.parametrize("size", [1 << 20, 4 << 20])
def test_one_long_line_in_small_chunks_is_framed_in_linear_work(size, monkeypatch):
    counter = CountingPattern(sse_module._LINE_BREAK)
    monkeypatch.setattr(sse_module, "_LINE_BREAK", counter)
    body = one_long_line(size)
    decoder = SSEDecoder()
    events = [ev for i in range(0, len(body), 1024) for ev in decoder.feed(body[i : i + 1024])]
    assert len(events) == 1 and len(events[0].data) == len(body) - len("data: \n\n")
    assert counter.scanned <= 2 * len(body)  # each character looked at about once, not once per chunk


def test_a_line_longer_than_the_cap_is_refused_naming_the_cap():
    decoder = SSEDecoder(max_chars=1000)
    decoder.feed(b"data: " + b"x" * 900)
    with pytest.raises(FrameTooLong) as e:
        decoder.feed(b"x" * 200)
    assert "1000 characters" in str(e.value)
    with pytest.raises(FrameTooLong):  # whole in one chunk, too
        SSEDecoder(max_chars=1000).feed(b"data: " + b"x" * 1000 + b"\n\n")
    with pytest.raises(FrameTooLong):  # and one event's data lines together
        SSEDecoder(max_chars=1000).feed(b"data: " + b"x" * 600 + b"\ndata: " + b"x" * 600 + b"\n")
    assert SSEDecoder(max_chars=1000).feed(b"data: " + b"x" * 900 + b"\n\n")[0].data == "x" * 900


async def test_the_client_ends_with_an_error_past_the_default_cap_of_16_mib():
    assert MAX_CHARS == 16 * 1024 * 1024
    transport = MockTransport(lambda r: replay(one_long_line(MAX_CHARS + 10), chunk=1 << 16))
    client = ChatClient("http://server.test/v1", "m", transport=transport)
    events = [ev async for ev in client.stream_chat([{"role": "user", "content": "hi"}])]
    assert [e.type for e in events] == ["error"]
    assert "16 MiB" in events[0].message and "line" in events[0].message
    assert transport.responses[0].closed


# -- 14. malformed answers are one error that says what came -------------------------------


async def stream_events(body, **replay_args):
    transport = MockTransport(lambda r: replay(body, **replay_args))
    client = ChatClient("http://server.test/v1", "m", transport=transport)
    return [ev async for ev in client.stream_chat([{"role": "user", "content": "hi"}])]


def frame(obj) -> str:
    return f"data: {json.dumps(obj)}\n\n"


@pytest.mark.parametrize("choice", [
    {"index": 0, "delta": "hi"},
    {"index": 0, "delta": ["hi"]},
    {"index": 0, "delta": {"tool_calls": 5}},
    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "f"}]}},
    {"index": 0, "delta": {}, "finish_reason": ["stop"]},
], ids=["string delta", "list delta", "number tool_calls", "string function", "list finish reason"])
async def test_a_malformed_chunk_is_one_error_not_an_exception(choice):
    events = await stream_events(frame({"choices": [{"index": 0, "delta": {"content": "a"}}]}) + frame({"choices": [choice]}) + "data: [DONE]\n\n")
    assert [e.type for e in events][-1] in ("error", "done") and sum(e.type in ("error", "done") for e in events) == 1
    assert events[0] == ContentDelta("a")


async def test_a_string_delta_is_an_error_that_says_so():
    events = await stream_events(frame({"choices": [{"index": 0, "delta": "hi"}]}))
    assert [e.type for e in events] == ["error"] and "delta" in events[0].message and "not a JSON object" in events[0].message


@pytest.mark.parametrize("data, words", [
    ('{"message": "Overloaded", "type": "overloaded_error"}', "Overloaded"),
    ('{"error": null, "message": "rate limited", "code": 429}', "rate limited"),
    ("null", "no details"),
    ("{}", "no details"),
    ("", "no details"),
])
async def test_an_event_error_frame_says_what_the_server_said(data, words):
    events = await stream_events(f"event: error\ndata: {data}\n\n")
    assert [e.type for e in events] == ["error"]
    assert words in events[0].message and "None" not in events[0].message, events[0].message


async def test_an_html_page_answered_with_200_is_an_error_not_a_retry():
    page = "<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>hello</body></html>"
    events = await stream_events(page, content_type="text/html; charset=utf-8")
    assert [e.type for e in events] == ["error"]
    assert "HTML" in events[0].message and "not an event stream" in events[0].message
    replies = [replay(page, content_type="text/html")] * 3
    agent = Agent(model=OpenAIModel("http://server.test/v1", "tiny", transport=MockTransport(lambda r: replies.pop(0))))
    run = await collect(agent.run("hi"))
    assert [e.type for e in run] == ["end"] and run[0].reason == "error" and "HTML" in run[0].message


# -- 17. the CLI never prints the model's terminal escape sequences raw --------------------

NASTY = "red\x1b[31m \x1b]0;pwned\x07 back\r\x08 csi\x9b2J del\x7f ok\tok\nline2"


@pytest.mark.parametrize("json_lines", [False, True], ids=["terminal", "json lines"])
async def test_the_cli_escapes_control_characters_from_the_model(json_lines):
    nasty_turn = json.dumps({"thought": NASTY, "calls": [{"tool": "nope\x1b[2J", "input": {"x": NASTY}}]})
    replies = [sse(NASTY), sse(nasty_turn), sse(final(NASTY, thought=NASTY))]
    transport = MockTransport(lambda r: replay(replies.pop(0), chunk=7))
    out = io.StringIO()
    args = parser().parse_args(["run", "--base-url", "http://server.test/v1", "--model", "tiny", *(["--json"] if json_lines else []), "hi"])
    status = await run_command(args, out=out, transport=transport)
    text = out.getvalue()
    assert status == 0 and "pwned" in text and "line2" in text
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F})
    assert bad == [], bad
    if json_lines:  # still JSON, and the text is all there
        assert json.loads(text.splitlines()[-1])["text"] == NASTY
    else:
        assert "\\x1b[31m" in text  # shown, not obeyed
