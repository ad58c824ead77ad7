"""SSE framing: the text/event-stream rules, whatever the network chunks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aerix.engines.openai.sse import SSEDecoder, ServerSentEvent


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [ev for chunk in chunks for ev in decoder.feed(chunk)]
    return events + decoder.close()


def test_data_frames_end_at_a_blank_line():
    assert decode(b"data: one\n\ndata: two\n\n") == [ServerSentEvent("one"), ServerSentEvent("two")]


def test_lines_end_with_crlf_lf_or_cr():
    assert decode(b"data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r\n\n") == [
        ServerSentEvent(x) for x in "abcd"
    ]


def test_a_crlf_split_between_two_chunks_is_one_line_break():
    # Were the LF read as a second line break, "data: a" would end before "data: b" joined it.
    assert decode(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [ServerSentEvent("a\nb")]


def test_a_utf8_character_split_between_chunks_arrives_whole():
    body = "data: Lisboa é 🌧\n\n".encode()
    cut = body.index("🌧".encode()) + 2
    assert decode(body[:cut], body[cut:]) == [ServerSentEvent("Lisboa é 🌧")]


def test_comments_are_keep_alives_and_yield_nothing():
    assert decode(b": ping\n\n:\n\ndata: x\n: inside\n\n") == [ServerSentEvent("x")]


def test_data_lines_join_with_newlines_and_one_leading_space_goes():
    assert decode(b"data:  two spaces\ndata:none\ndata\n\n") == [ServerSentEvent(" two spaces\nnone\n")]


def test_event_type_and_id_are_read():
    events = decode(b"event: error\nid: 7\ndata: {}\n\ndata: after\n\n")
    assert events == [ServerSentEvent("{}", "error", "7"), ServerSentEvent("after", "message", "7")]


def test_a_leading_bom_is_dropped():
    assert decode(b"\xef\xbb\xbfdata: x\n\n") == [ServerSentEvent("x")]


def test_an_event_without_data_is_not_dispatched():
    assert decode(b"event: ping\n\nretry: 10\n\n") == []


def test_an_unterminated_last_event_is_dropped():
    # The standard: what is pending when the body ends may be cut short, so it goes.
    assert decode(b"data: whole\n\ndata: {\"half") == [ServerSentEvent("whole")]
    assert decode(b"data: whole\n\ndata: line but no blank line\n") == [ServerSentEvent("whole")]


STREAM = "data: α\r\n\r\n: c\n\nevent: x\ndata: 1\ndata: 2\r\rdata: [DONE]\n\n".encode()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_chunking_gives_the_same_events(cuts):
    points = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0, *points], [*points, len(STREAM)])]
    assert decode(*chunks) == decode(STREAM)
    assert decode(STREAM) == [ServerSentEvent("α"), ServerSentEvent("1\n2", "x"), ServerSentEvent("[DONE]")]


def test_the_last_event_id_and_the_retry_the_server_gave_are_kept_for_a_reconnection():
    # MCP's resumption: an event without data (a priming event) sets the last id too, as the
    # standard's "last event ID string"; an id whose event never ended does not.
    decoder = SSEDecoder()
    assert (decoder.last_id, decoder.retry) == (None, None)
    assert decoder.feed(b"id: 7\nretry: 1500\ndata:\n\n") == [ServerSentEvent("", id="7")]
    assert (decoder.last_id, decoder.retry) == ("7", 1500)
    assert decoder.feed(b"id: 8\n\nretry: soon\nid: 9\ndata: half") == []
    assert (decoder.last_id, decoder.retry) == ("8", 1500)  # "retry: soon" is no number; event 9 is cut short
