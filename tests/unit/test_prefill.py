"""Agent.prefill: the engine reads the agent's prompt before the first question, so the first run
reads only its new message (aerix.prefill). The conversation stays as it was, no reply is used up,
and a stop or an engine failure is a named error."""

from __future__ import annotations

import asyncio

import pytest
from helpers import collect, final
from tools_fixture import TOOLS

from aerix import Abort, AerixError, Agent, Limits
from aerix.testing import ScriptedModel


def agent_on(model, **kw) -> Agent:
    return Agent(model=model, instructions="You are a travel helper.", tools=TOOLS, **kw)


async def test_after_a_prefill_the_first_run_reads_only_its_new_message():
    model = ScriptedModel([final("Sunny.")])
    agent = agent_on(model)
    before = agent.messages
    usage = await agent.prefill()
    assert usage["prompt_tokens"] > 100 and usage["cached_tokens"] == 0  # nothing was read before
    assert agent.messages == before and model.calls == [] and model.prefills == [before]  # no reply used up
    events = await collect(agent.run("Weather in Porto?"))
    first = next(e for e in events if e.type == "usage")
    assert first.cached_tokens >= len(agent.system)  # the system message came from the engine's cache
    assert events[-1].type == "final" and events[-1].text == "Sunny."
    cold = [e for e in await collect(agent_on(ScriptedModel([final("Sunny.")])).run("Weather in Porto?")) if e.type == "usage"][0]
    assert cold.cached_tokens == 0  # the same run without a prefill reads everything


async def test_a_model_without_its_own_prefill_gets_one_token_of_its_chat_and_the_text_is_dropped():
    seen = []

    class Plain:
        async def chat(self, messages, options):
            seen.append((messages, options))
            yield {"type": "text", "text": '{"thought": "x"'}
            yield {"type": "done", "finish_reason": "length", "usage": {"prompt_tokens": 420, "completion_tokens": 1, "cached_tokens": 7}}

    agent = agent_on(Plain(), generation={"temperature": 0.2})
    assert await agent.prefill() == {"prompt_tokens": 420, "completion_tokens": 1, "cached_tokens": 7}
    (messages, options), = seen
    assert messages == agent.messages == [{"role": "system", "content": agent.system}]
    assert options["max_tokens"] == 1 and options["constraint"] is None and options["generation"] == {"temperature": 0.2}
    assert len(agent.messages) == 1  # the conversation is unchanged


async def test_a_kept_conversation_is_read_whole():
    model = ScriptedModel([final("Sunny."), final("Rain.")])
    agent = agent_on(model)
    await agent.ask("Weather in Porto?")
    await agent.prefill()
    assert model.prefills[-1] == agent.messages and len(agent.messages) == 3
    events = await collect(agent.run("And in Lisbon?"))
    usage = next(e for e in events if e.type == "usage")
    assert usage.cached_tokens >= sum(len(m["content"]) for m in agent.messages[:3])


async def test_a_model_that_gives_no_usage_returns_none():
    class Quiet:
        async def chat(self, messages, options):
            yield {"type": "text", "text": "{"}
            yield {"type": "done", "finish_reason": "length", "usage": None}

    assert await agent_on(Quiet()).prefill() is None


async def test_a_stop_is_an_abort_and_an_engine_failure_is_engine():
    class Slow:
        async def chat(self, messages, options):
            await asyncio.sleep(30)
            yield {"type": "done", "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 0, "cached_tokens": 0}}

    stop = Abort()
    asyncio.get_running_loop().call_later(0.05, stop.abort, "the person left")
    with pytest.raises(AerixError) as e:
        await agent_on(Slow()).prefill(stop)
    assert e.value.kind == "abort" and "the person left" in e.value.message
    with pytest.raises(AerixError) as e:
        await agent_on(Slow(), limits=Limits(timeout_s=0.05)).prefill()
    assert e.value.kind == "abort" and "timeout_s" in e.value.message

    class Broken:
        async def chat(self, messages, options):
            raise RuntimeError("wasm trap")
            yield  # pragma: no cover

    with pytest.raises(AerixError) as e:
        await agent_on(Broken()).prefill()
    assert e.value.kind == "engine" and "wasm trap" in e.value.message


async def test_the_page_gives_the_usage_in_camel_case():
    from aerix.page import PageAgent, create_agent

    page = create_agent(ScriptedModel([]), {"instructions": "Help."})
    got = await PageAgent.prefill.__wrapped__(page)  # as JavaScript calls it, less the conversion CPython lacks
    assert set(got) == {"promptTokens", "cachedTokens", "completionTokens"} and got["promptTokens"] > 0
