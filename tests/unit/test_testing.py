"""ScriptedModel: the fake that users test with must behave like the protocol says."""

from __future__ import annotations

import pytest
from helpers import collect

from aerix import Abort, AerixError
from aerix.testing import Reply, ScriptedModel

OPTIONS = {"max_tokens": 8, "constraint": None, "signal": None, "generation": {"temperature": 0}}


async def test_streams_in_chunks_and_ends_with_one_done():
    model = ScriptedModel([Reply("abcdefg", chunk=3)])
    items = await collect(model.chat([{"role": "user", "content": "hi"}], OPTIONS))
    assert [i["text"] for i in items[:-1]] == ["abc", "def", "g"]
    assert items[-1]["type"] == "done" and items[-1]["finish_reason"] == "stop"


async def test_answers_length_and_raises_script_exceptions():
    model = ScriptedModel([Reply("{", finish_reason="length"), ValueError("boom")])
    items = await collect(model.chat([], OPTIONS))
    assert items[-1]["finish_reason"] == "length"
    with pytest.raises(ValueError, match="boom"):
        await collect(model.chat([], OPTIONS))


async def test_records_copies_of_what_it_was_sent():
    model = ScriptedModel(["a"])
    messages = [{"role": "user", "content": "hi"}]
    await collect(model.chat(messages, OPTIONS))
    messages[0]["content"] = "changed"
    assert model.calls[0].messages == [{"role": "user", "content": "hi"}]
    assert model.calls[0].options["max_tokens"] == 8


async def test_a_function_script_sees_messages_and_options():
    model = ScriptedModel(lambda messages, options: f"{len(messages)}:{options['max_tokens']}")
    items = await collect(model.chat([{"role": "user", "content": "x"}], OPTIONS))
    assert items[0]["text"] == "1:8"


async def test_running_out_of_script_is_an_engine_error():
    model = ScriptedModel([])
    with pytest.raises(AerixError) as e:
        await collect(model.chat([], OPTIONS))
    assert e.value.kind == "engine"


async def test_stops_when_its_signal_is_aborted():
    signal = Abort()
    model = ScriptedModel([Reply("abcdef", chunk=1)])
    stream = model.chat([], dict(OPTIONS, signal=signal))
    assert (await stream.__anext__())["text"] == "a"
    signal.abort()
    with pytest.raises(AerixError) as e:
        await stream.__anext__()
    assert e.value.kind == "abort"


async def test_scripted_logprobs_come_only_when_asked_and_k_at_most():
    model = ScriptedModel([Reply("A", logprobs=[{"B": -2.0, "A": -0.1, "C": -3.0}])] * 2)
    plain = await collect(model.chat([], OPTIONS))
    assert [d["type"] for d in plain] == ["text", "done"]
    asked = await collect(model.chat([], {**OPTIONS, "top_logprobs": 2}))
    assert asked[1] == {"type": "logprobs", "content": [{"token": "A", "logprob": -0.1, "top_logprobs": [{"token": "A", "logprob": -0.1}, {"token": "B", "logprob": -2.0}]}]}
