"""Servers that push back: a 429 or 503 is waited out and sent again (aerix.engines.openai.backoff).

Every wait goes through an injected ``sleep`` that records it (and a fake clock where the run's
time left matters), so nothing here waits in real time but the abort tests.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from email.utils import formatdate

import pytest

from helpers import collect, final, kinds

from aerix import Abort, AerixError, Agent, Limits, OpenAIModel
from aerix.engines.openai import Backoff, ChatClient, MockTransport, Response, StreamError, replay
from aerix.engines.openai.backoff import retry_after_s

URL = "http://server.test/v1"
PROBLEM = {"type": "https://server.test/problems/overloaded", "title": "Overloaded", "status": 503, "detail": "try again later"}


def sse(text: str) -> str:
    frames = [
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}},
    ]
    return "".join(f"data: {json.dumps(f)}\n\n" for f in frames) + "data: [DONE]\n\n"


def ok() -> Response:
    return replay(sse(final("hi")), chunk=11)


def busy(status: int = 429, retry_after: str | None = None) -> Response:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    if status == 503:
        return replay(json.dumps(PROBLEM), status=503, content_type="application/problem+json", headers=headers)
    return replay(json.dumps({"error": {"message": "rate limited", "code": 429}}), status=status, content_type="application/json", headers=headers)


class Clock:
    """A monotonic clock that only the fake sleep moves."""

    def __init__(self) -> None:
        self.now = 100.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def model_on(*answers: Response, clock: Clock | None = None, **kw) -> tuple[OpenAIModel, MockTransport, Clock]:
    queue = list(answers)
    clock = clock or Clock()
    transport = MockTransport(lambda request: queue.pop(0))
    model = OpenAIModel(URL, "tiny", transport=transport, sleep=clock.sleep, clock=clock, **kw)
    return model, transport, clock


async def ending(model: OpenAIModel, signal=None, **limits):
    events = await collect(Agent(model=model, limits=Limits(**limits)).run("hi", signal))
    return events, events[-1]


# -- retried --------------------------------------------------------------------------------


async def test_a_429_then_a_200_ends_final_and_the_request_went_twice():
    model, transport, clock = model_on(busy(429), ok(), rng=random.Random(7))
    events, end = await ending(model)
    assert kinds(events) == ["turn", "final"] and end.text == "hi"
    assert len(transport.requests) == 2 and transport.requests[0].body == transport.requests[1].body
    assert transport.responses[0].closed  # the pushed-back answer was read and let go
    assert clock.waits == [random.Random(7).random() * 0.5]  # full jitter under backoff_s, from the seeded source


async def test_retry_after_in_seconds_is_honoured():
    model, transport, clock = model_on(busy(503, "2"), ok())
    _, end = await ending(model)
    assert end.type == "final" and clock.waits == [2.0] and len(transport.requests) == 2


async def test_retry_after_as_an_http_date_is_honoured():
    model, _, clock = model_on(busy(429, formatdate(time.time() + 5, usegmt=True)), ok())
    _, end = await ending(model)
    assert end.type == "final" and len(clock.waits) == 1 and 3.5 < clock.waits[0] <= 5.0


def test_retry_after_is_read_as_seconds_or_an_http_date():
    now = 784111777.0  # Sun, 06 Nov 1994 08:49:37 GMT
    assert retry_after_s("120") == 120.0 and retry_after_s(" 0 ") == 0.0
    assert retry_after_s("Sun, 06 Nov 1994 08:49:47 GMT", now=now) == 10.0
    assert retry_after_s("Sun, 06 Nov 1994 08:49:47 -0000", now=now) == 10.0  # no zone: GMT
    assert retry_after_s("Sun, 06 Nov 1994 08:40:00 GMT", now=now) == 0.0  # a date gone by
    for unreadable in (None, "", "soon", "1.5", "-3", "Sun, 06 Nov"):
        assert retry_after_s(unreadable, now=now) is None, unreadable


async def test_an_unreadable_retry_after_falls_back_to_the_jittered_backoff():
    model, _, clock = model_on(busy(429, "soon"), ok(), rng=random.Random(1))
    _, end = await ending(model)
    assert end.type == "final" and clock.waits == [random.Random(1).random() * 0.5]


async def test_the_waits_double_up_to_max_backoff_s():
    rng = random.Random(3)
    model, _, clock = model_on(*[busy(429) for _ in range(5)], ok(), retries=5, backoff_s=1.0, max_backoff_s=4.0, rng=random.Random(3))
    _, end = await ending(model)
    assert end.type == "final"
    assert clock.waits == [rng.random() * cap for cap in (1.0, 2.0, 4.0, 4.0, 4.0)]


# -- given up -------------------------------------------------------------------------------


async def test_503_four_times_with_three_retries_ends_error_with_the_servers_problem():
    model, transport, clock = model_on(*[busy(503) for _ in range(4)], retries=3)
    events, end = await ending(model)
    assert kinds(events) == ["end"] and end.reason == "error"
    assert end.problem == PROBLEM and end.to_dict()["problem"] == PROBLEM
    assert "503" in end.message and "Overloaded: try again later" in end.message
    assert end.message.endswith("(gave up after 3 retries)")
    assert len(transport.requests) == 4 and len(clock.waits) == 3
    assert all(r.closed for r in transport.responses)


async def test_a_retry_after_longer_than_the_time_left_ends_at_once():
    model, transport, clock = model_on(busy(503, "30"), max_backoff_s=60.0)
    started = time.monotonic()
    _, end = await ending(model, timeout_s=5)
    assert time.monotonic() - started < 1.0
    assert end.reason == "error" and end.problem == PROBLEM
    assert clock.waits == [] and len(transport.requests) == 1
    # the time left as the model saw it: 5 s less the few ms the run took to get there (4.99 in Pyodide)
    assert re.search(r"\(not retried: the server asked to wait 30 s, and the run's timeout leaves (5\.00|4\.9\d) s\)", end.message), end.message


async def test_a_retry_after_longer_than_max_backoff_s_ends_at_once():
    model, transport, clock = model_on(busy(429, "2"), busy(429, "60"))
    _, end = await ending(model)
    assert end.reason == "error" and clock.waits == [2.0] and len(transport.requests) == 2
    assert end.message.endswith("(gave up after 1 retry: the server asked to wait 60 s, longer than max_backoff_s (8 s))")


async def test_the_waits_together_stay_within_the_time_left():
    # the fake clock moves with each wait: 2 s + 2 s, then 1 s is left for the third
    model, transport, clock = model_on(*[busy(429, "2") for _ in range(3)], ok())
    options = {"max_tokens": 64, "constraint": None, "signal": None, "generation": {}, "time_left_s": 5.0}
    with pytest.raises(AerixError) as raised:
        await collect(model.chat([{"role": "user", "content": "hi"}], options))
    assert raised.value.kind == "engine" and clock.waits == [2.0, 2.0] and len(transport.requests) == 3
    assert raised.value.message.endswith("(gave up after 2 retries: the server asked to wait 2 s, and the run's timeout leaves 1.00 s)")


async def test_a_jittered_wait_longer_than_the_time_left_is_not_taken_either():
    model, _, clock = model_on(busy(429), busy(429), backoff_s=100.0, max_backoff_s=100.0, rng=random.Random(5))
    options = {"max_tokens": 64, "constraint": None, "signal": None, "generation": {}, "time_left_s": 0.01}
    with pytest.raises(AerixError) as raised:
        await collect(model.chat([{"role": "user", "content": "hi"}], options))
    assert clock.waits == [] and "(not retried: the next wait is " in raised.value.message
    assert raised.value.message.endswith(", and the run's timeout leaves 0.01 s)")


# -- aborted while waiting --------------------------------------------------------------------


async def test_an_abort_during_the_wait_ends_the_run_abort_at_once():
    model = OpenAIModel(URL, "tiny", transport=MockTransport(lambda request: busy(429, "5")))  # the real sleep
    signal = Abort()
    asyncio.get_running_loop().call_later(0.05, signal.abort, "the user pressed stop")
    started = time.monotonic()
    _, end = await ending(model, signal)
    assert end.reason == "abort" and time.monotonic() - started < 1.0


async def test_a_signal_that_only_polls_still_ends_the_wait():
    class Flag:  # a signal without on_abort (like a JavaScript AbortSignal seen from Python)
        aborted = False

    flag = Flag()
    client = ChatClient(URL, "tiny", transport=MockTransport(lambda request: busy(503, "5")), backoff=Backoff())
    asyncio.get_running_loop().call_later(0.05, setattr, flag, "aborted", True)
    started = time.monotonic()
    events = await collect(client.stream_chat([{"role": "user", "content": "hi"}], signal=flag))
    assert [e.to_dict() for e in events] == [{"type": "done", "stop_reason": "cancelled", "usage": None}]
    assert time.monotonic() - started < 1.0


async def test_an_abort_from_inside_the_sleep_is_seen():
    signal = Abort()

    async def sleep(seconds: float) -> None:
        signal.abort("stop")
        await asyncio.sleep(3600)

    model = OpenAIModel(URL, "tiny", transport=MockTransport(lambda request: busy(429)), sleep=sleep)
    _, end = await asyncio.wait_for(ending(model, signal), timeout=2)
    assert end.reason == "abort"


# -- not retried ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 401, 404, 500, 502])
async def test_other_statuses_are_not_retried(status):
    model, transport, clock = model_on(busy(status, "1"), ok())
    _, end = await ending(model)
    assert end.reason == "error" and str(status) in end.message and "retr" not in end.message
    assert len(transport.requests) == 1 and clock.waits == []


async def test_a_retry_that_meets_another_error_ends_with_that_one():
    model, transport, _ = model_on(busy(429), replay("server on fire", status=500, content_type="text/plain"))
    _, end = await ending(model)
    assert end.reason == "error" and "500" in end.message and "server on fire" in end.message
    assert len(transport.requests) == 2


async def test_retries_0_turns_it_off():
    model, transport, clock = model_on(busy(503, "1"), retries=0)
    _, end = await ending(model)
    assert end.reason == "error" and end.problem == PROBLEM and end.message.endswith("Overloaded: try again later")
    assert len(transport.requests) == 1 and clock.waits == []


async def test_the_client_alone_does_not_retry_unless_given_a_backoff():
    transport = MockTransport(lambda request: busy(429, "0"))
    events = await collect(ChatClient(URL, "tiny", transport=transport).stream_chat([{"role": "user", "content": "hi"}]))
    assert [e.type for e in events] == ["error"] and len(transport.requests) == 1
    clock = Clock()
    client = ChatClient(URL, "tiny", transport=transport, backoff=Backoff(retries=2, sleep=clock.sleep, clock=clock))
    events = await collect(client.stream_chat([{"role": "user", "content": "hi"}]))
    assert events == [StreamError(events[0].message, code=429)] and events[0].message.endswith("(gave up after 2 retries)")
    assert len(transport.requests) == 4 and clock.waits == [0.0, 0.0]


# -- settings -------------------------------------------------------------------------------


def test_the_settings_are_keyword_only_values_with_a_repr():
    model = OpenAIModel(URL, "tiny", transport=MockTransport(lambda request: ok()))
    assert repr(model.backoff) == "Backoff(retries=3, backoff_s=0.5, max_backoff_s=8.0)"
    with pytest.raises(TypeError):
        Backoff(3)  # type: ignore[misc]
    for bad in ({"retries": -1}, {"retries": 1.5}, {"retries": True}, {"backoff_s": -0.1}, {"max_backoff_s": float("inf")}, {"backoff_s": "1"}):
        with pytest.raises(AerixError) as raised:
            OpenAIModel(URL, "tiny", transport=MockTransport(lambda request: ok()), **bad)
        assert raised.value.kind == "options"


async def test_the_loop_tells_the_model_its_time_left():
    seen: list = []

    class Recorder:
        async def chat(self, messages, options):
            seen.append(options["time_left_s"])
            yield {"type": "text", "text": final("hi")}
            yield {"type": "done", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cached_tokens": 0}}

    await collect(Agent(model=Recorder()).run("hi"))
    await collect(Agent(model=Recorder(), limits=Limits(timeout_s=30)).run("hi"))
    assert seen[0] is None and 29.0 < seen[1] <= 30.0
