"""The OpenAI client keeps its secrets (issue 26, items 10 and 11, and the low items on
Retry-After and a key streamed in the model's text): each test failed before its fix."""

from __future__ import annotations

import base64
import json
import time
from urllib.parse import quote

import pytest
from helpers import collect, final
from hypothesis import given, settings
from hypothesis import strategies as st

from aerix import AerixError, Agent, OpenAIModel
from aerix.engines.openai import Backoff, ChatClient, ContentDelta, MockTransport, Response, ToolCallDelta, replay
from aerix.engines.openai.backoff import retry_after_s
from aerix.engines.openai.redact import SecretForms, Secrets, TextRedactor
from aerix.stores import MemoryStore

KEY = "sk-SECRET-0123456789"
URL = "http://server.test/v1"
USER = [{"role": "user", "content": "hi"}]


def no_piece_of_the_key(text: str, key: str = KEY) -> bool:
    """Neither the key nor its first 4 characters or more: what a cut used to leave behind."""
    return key[:4] not in text


async def stream(reply, *, key: str = KEY, headers=None) -> list:
    transport = MockTransport(lambda r: reply if isinstance(reply, Response) else replay(reply, chunk=7))
    client = ChatClient(URL, "m", api_key=key, headers=headers, transport=transport)
    return [ev async for ev in client.stream_chat(USER)]


def said(events) -> str:
    return " ".join(repr(ev.to_dict()) for ev in events)


# -- 10. a cut never leaves the key's first characters behind ------------------------------


def frame(data: str) -> str:
    return f"data: {data}\n\n"


def straddling(length: int) -> list[int]:
    """Where the key starts so that a cut at ``length`` falls inside it, at every place."""
    return list(range(length - len(KEY) + 1, length))


@pytest.mark.parametrize("start", straddling(200))
async def test_a_frame_that_is_not_json_quotes_no_piece_of_a_key_across_its_cut(start):
    events = await stream(frame("x" * start + KEY + " not json"))
    assert [e.type for e in events] == ["error"] and "not JSON" in events[0].message
    assert no_piece_of_the_key(events[0].message), events[0].message


@pytest.mark.parametrize("start", straddling(500))
async def test_an_error_message_cut_at_500_quotes_no_piece_of_a_key(start):
    message = "y" * start + KEY + " trailing words"
    for reply in (frame(json.dumps({"error": {"message": message}})),  # an error frame
                  replay(json.dumps({"error": {"message": message}}), status=401, content_type="application/json"),
                  replay(message, status=401, content_type="text/plain"),
                  replay(json.dumps({"title": "Unauthorized", "detail": message[7:]}), status=401,
                         content_type="application/problem+json")):
        events = await stream(reply)
        assert [e.type for e in events] == ["error"]
        assert no_piece_of_the_key(events[0].message), events[0].message


@pytest.mark.parametrize("start", straddling(200))
async def test_every_other_quoted_value_is_redacted_before_its_cut(start):
    pad = "z" * (start - 1)  # json.dumps opens with a quote
    bad_delta = frame(json.dumps({"choices": [{"index": 0, "delta": pad + KEY}]}))
    bad_calls = frame(json.dumps({"choices": [{"index": 0, "delta": {"tool_calls": pad + KEY}}]}))
    deep = "[" * 600 + "x" * (start - 600) + KEY if start > 600 else "x" * start + KEY + "[" * 600
    for reply in (bad_delta, bad_calls, frame(json.dumps("x" * (start - 1) + KEY)),
                  replay(json.dumps([pad + KEY]), content_type="application/json"),
                  f"event: error\ndata: {deep}\n\n"):
        events = await stream(reply)
        assert events[-1].type == "error", reply[:80]
        assert no_piece_of_the_key(events[-1].message), events[-1].message


async def test_an_error_body_cut_at_its_64_kib_limit_inside_the_key_shows_none_of_it():
    body = " " * ((1 << 16) - 8) + KEY  # the limit falls 8 characters into the key
    events = await stream(replay(body, status=401, content_type="text/plain"))
    assert [e.type for e in events] == ["error"] and no_piece_of_the_key(events[0].message), events[0].message
    assert "[redacted]" in events[0].message


def test_redacting_a_text_cut_short_blanks_an_unfinished_secret_at_its_end():
    secrets = Secrets(KEY, URL)
    assert secrets.redact(f"said {KEY[:9]}", cut=True) == "said [redacted]"
    assert secrets.redact(f"said {KEY[:3]}", cut=True) == f"said {KEY[:3]}"  # 3 characters say nothing
    assert secrets.redact(f"said {KEY[:9]}") == f"said {KEY[:9]}"  # not cut: it is not the key


def test_shortening_a_huge_text_looks_only_at_what_it_can_show():
    secrets = Secrets(KEY, URL)
    looked: list[int] = []
    sub = secrets._all.sub
    secrets._all.sub = lambda text: (looked.append(len(text)), sub(text))[1]
    assert secrets.shorten("x" * 190 + KEY + "y" * (16 << 20), 200) == "x" * 190 + "[redacted]"
    assert secrets.shorten("x" * 195 + KEY + "y" * 10, 200) == "x" * 195 + "[reda"
    assert looked and max(looked) <= 200 + 6 * len(KEY)  # not the 16 MiB


# -- 11. every form the client sends is redacted; a base_url's userinfo is refused ---------


@pytest.mark.parametrize("base_url", [
    f"http://user:{KEY}@server.test/v1",
    f"http://{KEY}@server.test/v1",
    f"https://:{KEY}@server.test/v1",
    f"http://user:{quote(KEY, safe='')}@server.test/v1?x=1",
])
def test_a_base_url_with_userinfo_is_refused_naming_the_fix(base_url):
    for build in (lambda: ChatClient(base_url, "m", transport=MockTransport(lambda r: None)),
                  lambda: OpenAIModel(base_url, "m", transport=MockTransport(lambda r: None))):
        with pytest.raises(AerixError) as e:
            build()
        assert e.value.kind == "options" and "api_key" in e.value.message and "headers" in e.value.message
        assert "SECRET" not in e.value.message and "SECRET" not in repr(e.value)


SLASHED = "sk-ab/cd+ef=0123456789"


def echoing(form):
    """A server whose 401 quotes what it got, in ``form``."""
    def answer(request):
        sent = request.headers.get("Authorization", "").partition(" ")[2]  # the key, after "Bearer "
        body = json.dumps({"error": {"message": f"denied: {form(sent)}"}, "got": form(sent)}, ensure_ascii=False)
        return replay(body, status=401, content_type="application/json")
    return answer


FORMS = {
    "as sent": lambda s: s,
    "JSON \\/": lambda s: s.replace("/", "\\/"),
    "JSON \\u002B": lambda s: s.replace("+", "\\u002B").replace("-", "\\u002d"),
    "every character \\u-escaped": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "percent-encoded": lambda s: quote(s, safe=""),
    "percent-encoded, lower case": lambda s: "".join(f"%{b:02x}" for b in s.encode()),
    "mixed": lambda s: "".join(f"%{ord(c):02X}" if i % 3 == 0 else f"\\u{ord(c):04X}" if i % 3 == 1 else c for i, c in enumerate(s)),
}


@pytest.mark.parametrize("form", list(FORMS), ids=list(FORMS))
async def test_a_key_echoed_in_any_form_is_redacted_from_the_error(form):
    transport = MockTransport(echoing(FORMS[form]))
    client = ChatClient(URL, "m", api_key=SLASHED, transport=transport)
    events = [ev async for ev in client.stream_chat(USER)]
    shown = said(events) + json.dumps(events[-1].to_dict())
    assert events[-1].type == "error" and "denied: [redacted]" in events[-1].message, shown
    assert FORMS[form](SLASHED)[-12:] not in shown, shown


async def test_a_basic_header_has_its_token_and_its_decoded_password_redacted():
    password = SLASHED + "??>"
    basic = base64.b64encode(f"me:{password}".encode()).decode()
    assert "/" in basic and "+" not in basic  # so that its JSON-escaped form differs
    echo = f"bad credentials me:{password} ({basic}) {basic.replace('/', chr(92) + '/')} {quote(basic, safe='')}"
    transport = MockTransport(lambda r: replay(echo, status=401, content_type="text/plain"))
    client = ChatClient(URL, "m", headers={"Authorization": f"Basic {basic}"}, transport=transport)
    events = [ev async for ev in client.stream_chat(USER)]
    shown = said(events)
    assert events[-1].message == "the server answered 401 Unauthorized: bad credentials [redacted] ([redacted]) [redacted] [redacted]"
    assert basic[:8] not in shown and "0123456789" not in shown


# -- a key streamed in the model's text reaches no event, conversation or record ----------


def content_frames(text: str, cuts: list[int]) -> str:
    """The model's text as content chunks split at ``cuts``, then stop, usage and [DONE]."""
    bounds = [0, *cuts, len(text)]
    frames = [{"choices": [{"index": 0, "delta": {"content": text[a:b]}}]} for a, b in zip(bounds, bounds[1:]) if b > a]
    frames += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
               {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 5}}]
    return "".join(frame(json.dumps(f)) for f in frames) + "data: [DONE]\n\n"


async def test_a_key_the_server_streams_as_the_models_text_is_in_no_event_conversation_or_record():
    turn = final(f"The header said Bearer {KEY}, and that is all.")
    at = turn.index(KEY)
    for cut in range(at - 1, at + len(KEY) + 1):  # the key split at every place, and in one piece
        for cuts in ([cut], [at + 2, cut] if cut > at + 2 else [cut]):
            store = MemoryStore()
            transport = MockTransport(lambda r, cuts=cuts: replay(content_frames(turn, cuts)))
            agent = Agent(model=OpenAIModel(URL, "tiny", api_key=KEY, transport=transport), store=store)
            events = await collect(agent.run("what did the header say?"))
            assert events[-1].type == "final" and events[-1].text == "The header said Bearer [redacted], and that is all."
            (record,) = await agent.runs()
            kept = json.dumps([ev.to_dict() for ev in events]) + json.dumps(agent.messages) + repr(record)
            assert KEY not in kept and no_piece_of_the_key(kept), cuts


async def test_the_models_text_that_only_begins_like_the_key_is_shown_whole():
    text = "The prefix sk- is public; so is s"
    events = await stream(content_frames(text, [12, 13, len(text) - 1]))
    assert "".join(e.content for e in events if isinstance(e, ContentDelta)) == text
    unfinished = await stream(content_frames(f"cut at {KEY[:9]}", [9]))  # the stream ends inside the key
    assert "".join(e.content for e in unfinished if isinstance(e, ContentDelta)) == "cut at [redacted]"


async def test_a_key_in_a_native_tool_calls_arguments_is_redacted_split_across_fragments():
    args = json.dumps({"header": f"Bearer {KEY}"})
    cut = args.index(KEY) + 5
    call = [{"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "f", "arguments": part}}]}}]}
            for part in (args[:cut], args[cut:])]
    body = "".join(frame(json.dumps(f)) for f in call) + frame(json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    events = await stream(body + "data: [DONE]\n\n")
    joined = "".join(e.args for e in events if isinstance(e, ToolCallDelta))
    assert json.loads(joined) == {"header": "Bearer [redacted]"} and KEY[:4] not in said(events)
    assert [e.type for e in events][-2:] == ["tool_call_end", "done"]


def test_holding_back_the_text_costs_little_per_delta():
    """Per delta the redactor looks at most at the key's written length of text, whatever came before."""
    redactor = Secrets(KEY, URL).stream()
    pieces = ["Hello s", "k-", "is not the key; ", "s", "k-SECRET-01234567", "89 is. "] * 2000
    start = time.perf_counter()
    shown = "".join(redactor.feed(p) for p in pieces) + redactor.close()
    per_delta = (time.perf_counter() - start) / len(pieces)
    assert KEY not in shown and shown.count("[redacted]") == 2000 and len(redactor.held) < len(KEY)
    assert per_delta < 500e-6, f"{per_delta * 1e6:.1f} µs per delta"  # about 10 µs here: generous for a loaded machine


# -- Retry-After: only ASCII digits or a date; anything else is the default backoff ---------


@pytest.mark.parametrize("value", ["²", "٣", "+5", "5_0", "0x10", "5.5", "1e3", "Fri, ٣ Dec 2024 00:00:00 GMT"])
def test_a_retry_after_that_is_not_ascii_digits_or_a_date_is_ignored(value):
    assert retry_after_s(value, now=0.0) is None


def test_a_retry_after_of_5000_digits_is_a_wait_too_long_not_a_crash():
    assert retry_after_s("9" * 5000) == float("inf") and retry_after_s("0" * 5000 + "7") == 7.0


@pytest.mark.parametrize("value", ["²", "9" * 5000])
async def test_a_client_told_retry_after_in_odd_digits_backs_off_as_usual(value):
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    replies = [replay(json.dumps({"error": {"message": "slow down"}}), status=429, content_type="application/json",
                      headers={"retry-after": value}), replay(content_frames("ok", []))]
    client = ChatClient(URL, "m", transport=MockTransport(lambda r: replies.pop(0)), backoff=Backoff(retries=2, sleep=sleep))
    events = [ev async for ev in client.stream_chat(USER)]
    if value == "²":  # ignored: the jittered wait, then the answer
        assert [e.type for e in events] == ["delta", "done"] and len(waits) == 1 and 0 <= waits[0] <= 0.5
    else:  # too long to wait: the server's error, saying why
        assert [e.type for e in events] == ["error"] and "longer than max_backoff_s" in events[0].message and waits == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet="sk-SECRET0123456789 \\u%2dD", max_size=12),
                          st.sampled_from([KEY, KEY[:7], KEY[:12], quote(KEY, safe=""), KEY.replace("-", "\\u002D"), KEY.replace("-", "%2d")])),
                max_size=6).map("".join),
       st.lists(st.integers(0, 120), max_size=6))
def test_text_in_pieces_is_redacted_as_the_whole_text_would_be(text, cuts):
    """However the text is cut into chunks, what comes out is what redacting it whole gives (its end
    taken as a cut): nothing lost, nothing held for good, no key let through."""
    forms = SecretForms([KEY])
    redactor = TextRedactor(forms)
    bounds = [0, *sorted(c for c in cuts if c <= len(text)), len(text)]
    out = "".join(redactor.feed(text[a:b]) for a, b in zip(bounds, bounds[1:])) + redactor.close()
    assert out == forms.cut(forms.sub(text))
