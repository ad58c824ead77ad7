"""``python -m aerix run``: its arguments, what it prints, its exit status (a recorded server)."""

from __future__ import annotations

import io
import json

from helpers import final
from test_openai_model import sse

from aerix import Abort
from aerix.cli import parser, run_command
from aerix.engines.openai import MockTransport, replay

BASE = ["run", "--base-url", "http://server.test/v1", "--model", "tiny"]


def transport_of(*bodies):
    queue = list(bodies)
    return MockTransport(lambda request: replay(queue.pop(0), chunk=11))


def test_the_arguments():
    args = parser().parse_args([*BASE, "--temperature", "0.5", "--max-tokens", "64", "--json", "Hello"])
    assert (args.prompt, args.base_url, args.model, args.temperature, args.max_tokens, args.json) == (
        "Hello", "http://server.test/v1", "tiny", 0.5, 64, True)
    assert parser().parse_args([*BASE, "x"]).temperature is None


async def test_it_streams_text_then_a_line_per_event_and_exits_0_on_a_final():
    out = io.StringIO()
    transport = transport_of(sse(final("Take an umbrella.")))
    status = await run_command(parser().parse_args([*BASE, "--seed", "3", "Umbrella?"]), out=out, transport=transport)
    assert status == 0
    text = out.getvalue().splitlines()
    assert text[0] == final("Take an umbrella.")  # the raw turn, as it streamed
    assert text[1] == "· usage: 50 prompt tokens (0 cached), 10 generated"
    assert text[2:] == ["· turn 1: final answer", "final: Take an umbrella."]
    body = transport.requests[0].json()
    assert body["seed"] == 3 and "temperature" not in body and body["response_format"]["json_schema"]["name"] == "turn"


async def test_json_lines_are_the_events_as_dicts():
    out = io.StringIO()
    status = await run_command(parser().parse_args([*BASE, "--json", "Hi"]), out=out, transport=transport_of(sse(final("hi"))))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 0 and lines[-1] == {"type": "final", "text": "hi", "thought": "done"}
    assert {"text", "final_delta", "usage", "turn", "final"} == {line["type"] for line in lines}


async def test_no_constrain_sends_no_schema_and_a_failed_run_exits_1():
    out = io.StringIO()
    transport = transport_of(*[sse("not a turn")] * 3)
    status = await run_command(parser().parse_args([*BASE, "--no-constrain", "--retries", "1", "Hi"]), out=out, transport=transport)
    assert status == 1 and "response_format" not in transport.requests[0].json()
    assert out.getvalue().splitlines()[-1].startswith("end retries:")


async def test_an_unreachable_server_ends_error():
    def refuse(request):
        raise ConnectionRefusedError("connection refused")

    out = io.StringIO()
    status = await run_command(parser().parse_args([*BASE, "Hi"]), out=out, transport=MockTransport(refuse))
    assert status == 1 and "end error: engine failed: could not reach http://server.test/v1/chat/completions" in out.getvalue()


async def test_an_aborted_run_exits_130():
    signal = Abort()
    signal.abort()
    out = io.StringIO()
    status = await run_command(parser().parse_args([*BASE, "Hi"]), out=out, signal=signal, transport=transport_of(sse(final("x"))))
    assert status == 130 and out.getvalue().startswith("end abort:")
