"""The loop: phases, endings, limits, hooks, abort, ask, busy, the conversation."""

from __future__ import annotations

import asyncio

import pytest
from helpers import calls, collect, endings, final, kinds
from tools_fixture import TOOLS, clock, weather

from aerix import Abort, AerixError, Agent, Answer, Hooks, Limits, tool
from aerix.testing import Reply, ScriptedModel


def agent_with(script, **kw):
    kw.setdefault("tools", [weather, clock])
    model = ScriptedModel(script)
    return Agent(model=model, **kw), model


# -- the happy path ------------------------------------------------------------------------


async def test_a_tool_turn_then_a_final():
    agent, model = agent_with([calls(("weather", {"city": "Lisbon"})), final("No umbrella.")])
    events = await collect(agent.run("Umbrella for Lisbon?"))
    assert kinds(events) == ["turn", "call", "result", "turn", "final"]
    result = next(e for e in events if e.type == "result")
    assert (result.tool, result.text, result.error) == ("weather", "Sunny in Lisbon, 21°c", False)
    assert events[-1].text == "No umbrella."
    assert [e.type for e in events].count("usage") == 2


async def test_every_generation_is_sent_the_turn_schema_and_the_settings():
    agent, model = agent_with([calls(("clock", {})), final("noon")], generation={"temperature": 0, "seed": 7}, limits=Limits(max_tokens=99))
    await agent.ask("time?")
    assert len(model.calls) == 2
    for call in model.calls:
        assert call.options["constraint"] == agent.schema
        assert call.options["max_tokens"] == 99
        assert call.options["generation"] == {"temperature": 0, "seed": 7}


async def test_constrain_false_sends_no_schema_and_still_parses():
    agent, model = agent_with(["I think it is noon", final("noon")], constrain=False)
    events = await collect(agent.run("time?"))
    assert [c.options["constraint"] for c in model.calls] == [None, None]
    assert kinds(events) == ["retry", "turn", "final"]


async def test_calls_run_in_order_one_at_a_time():
    order = []

    async def slow(input, ctx):
        order.append(("start", input["n"]))
        await asyncio.sleep(0)
        order.append(("end", input["n"]))
        return str(input["n"])

    step = tool(name="step", description="A step.", input={"n": {"type": "integer", "required": True}}, run=slow)
    agent, _ = agent_with([calls(("step", {"n": 1}), ("step", {"n": 2})), final("ok")], tools=[step])
    await agent.ask("go")
    assert order == [("start", 1), ("end", 1), ("start", 2), ("end", 2)]


async def test_results_are_fed_back_as_one_user_message_in_call_order():
    agent, model = agent_with([calls(("clock", {}), ("weather", {"city": "Oslo"})), final("ok")])
    await agent.ask("go")
    sent = model.calls[1].messages[-1]
    assert sent["role"] == "user"
    assert sent["content"] == (
        '{"results": [{"id": "call_1", "tool": "clock", "result": "12:00"}, '
        '{"id": "call_2", "tool": "weather", "result": "Sunny in Oslo, 21°c"}]}'
    )


async def test_a_tool_error_never_ends_the_run():
    boom = tool(name="boom", description="Fails.", input={}, run=lambda i, c: 1 / 0)
    agent, _ = agent_with([calls(("boom", {})), calls(("weather", {"town": "Oslo"})), final("sorry")], tools=[boom, weather])
    events = await collect(agent.run("go"))
    results = [e for e in events if e.type == "result"]
    assert [r.error for r in results] == [True, True]
    assert results[0].text == "error: division by zero"
    assert "town: Extra inputs are not permitted" in results[1].text
    assert events[-1].type == "final"


async def test_long_results_are_cut_with_a_note():
    big = tool(name="big", description="Big.", input={}, run=lambda i, c: "x" * 50)
    agent, model = agent_with([calls(("big", {})), final("ok")], tools=[big], limits={"result_chars": 10})
    events = await collect(agent.run("go"))
    text = next(e for e in events if e.type == "result").text
    assert text == "x" * 10 + "\n[cut: the result was 50 characters; this is the first 10]"
    assert text in model.calls[1].messages[-1]["content"].replace("\\n", "\n")


# -- the conversation ----------------------------------------------------------------------


async def test_the_conversation_is_append_only_and_byte_stable():
    t1 = calls(("clock", {}))
    agent, model = agent_with([t1, final("noon"), final("still noon")])
    await agent.ask("time?")
    await agent.ask("and now?")
    first, second, third = (c.messages for c in model.calls)
    assert second[: len(first)] == first and third[: len(second)] == second
    assert second[len(first)] == {"role": "assistant", "content": t1}
    assert agent.messages == third + [{"role": "assistant", "content": final("still noon")}]
    assert agent.messages[0] == {"role": "system", "content": agent.system}


async def test_the_fake_prefix_cache_sees_the_whole_previous_conversation_reused():
    agent, _ = agent_with([calls(("clock", {})), final("noon")])
    events = await collect(agent.run("time?"))
    usage = [e for e in events if e.type == "usage"]
    # everything sent before, plus the reply itself, is a prefix of the next prompt
    assert usage[1].cached_tokens == usage[0].prompt_tokens + usage[0].completion_tokens


async def test_reset_forgets_the_conversation_but_not_the_system_message():
    agent, model = agent_with([final("a"), final("b")])
    await agent.ask("one")
    agent.reset()
    await agent.ask("two")
    assert [m["role"] for m in model.calls[1].messages] == ["system", "user"]
    assert model.calls[1].messages[1]["content"] == "two"


async def test_messages_cannot_be_changed_from_outside():
    agent, _ = agent_with([final("a")])
    agent.messages.append({"role": "user", "content": "sneaky"})
    agent.messages[0]["content"] = "changed"
    assert len(agent.messages) == 1 and agent.messages[0]["content"] == agent.system


async def test_call_ids_are_unique_across_the_conversation():
    agent, _ = agent_with([calls(("clock", {})), final("a"), calls(("clock", {})), final("b")])
    first = await agent.ask("one")
    second = await agent.ask("two")
    ids = [e.id for e in first.events + second.events if e.type == "call"]
    assert ids == ["call_1", "call_2"]


# -- retries -------------------------------------------------------------------------------


async def test_a_bad_turn_is_kept_told_and_retried():
    agent, model = agent_with(['{"calls": [{"tool": "teleport", "input": {}}]}', final("ok")])
    events = await collect(agent.run("go"))
    retry = next(e for e in events if e.type == "retry")
    assert retry.turn == 1 and retry.reason.startswith("unknown tool: 'teleport'")
    sent = model.calls[1].messages
    assert sent[-2] == {"role": "assistant", "content": '{"calls": [{"tool": "teleport", "input": {}}]}'}
    assert sent[-1]["role"] == "user" and "refused (unknown tool" in sent[-1]["content"]
    assert events[-1].type == "final"


async def test_a_cut_turn_is_dropped_and_asked_again_shorter():
    cut = '{"thought": "a very long thou'
    agent, model = agent_with([Reply(cut, finish_reason="length"), final("short")], limits=Limits(max_tokens=16))
    events = await collect(agent.run("go"))
    assert kinds(events) == ["retry", "turn", "final"]
    assert next(e for e in events if e.type == "retry").reason.startswith("cut: the turn reached max_tokens (16)")
    sent = model.calls[1].messages
    assert all(m["content"] != cut for m in sent)
    assert sent[-1] == {"role": "user", "content": "Your last turn was cut off at 16 tokens before it ended. Write a shorter turn."}


async def test_a_turn_that_closed_exactly_at_max_tokens_is_accepted():
    agent, _ = agent_with([Reply(final("fits"), finish_reason="length")])
    assert (await agent.ask("go")).text == "fits"


async def test_unusable_engine_output_is_a_retry_not_a_dead_run():
    agent, model = agent_with([AerixError("output", "bytes that are not UTF-8"), final("ok")])
    events = await collect(agent.run("go"))
    assert kinds(events) == ["retry", "turn", "final"]
    assert events[0].reason == "engine output: bytes that are not UTF-8"
    assert model.calls[1].messages[-1]["role"] == "user"


async def test_retries_count_in_a_row_and_reset_after_a_good_turn():
    bad = "nope"
    script = [bad, bad, calls(("clock", {})), bad, bad, final("ok")]
    agent, _ = agent_with(script, limits=Limits(retries=2, turns=10))
    events = await collect(agent.run("go"))
    assert kinds(events).count("retry") == 4
    assert events[-1].type == "final"


# -- endings -------------------------------------------------------------------------------


async def test_ending_retries():
    agent, model = agent_with(["x", "y", "z", final("never")], limits=Limits(retries=2))
    events = await collect(agent.run("go"))
    assert kinds(events) == ["retry", "retry", "retry", "end"]
    assert events[-1].reason == "retries"
    assert len(model.calls) == 3


async def test_ending_turns_counts_generations_retries_included():
    agent, model = agent_with(["bad", calls(("clock", {})), calls(("clock", {})), final("late")], limits=Limits(turns=3))
    events = await collect(agent.run("go"))
    assert events[-1].type == "end" and events[-1].reason == "turns"
    assert len(model.calls) == 3


async def test_ending_error_on_engine_failure_never_raises_out_of_run():
    agent, _ = agent_with([RuntimeError("wasm trap")])
    events = await collect(agent.run("go"))
    assert kinds(events) == ["end"]
    assert events[-1].reason == "error" and "wasm trap" in events[-1].message


async def test_ending_error_when_the_stream_has_no_done():
    class NoDone:
        async def chat(self, messages, options):
            yield {"type": "text", "text": final("x")}

    events = await collect(Agent(model=NoDone()).run("go"))
    assert kinds(events) == ["end"] and "without a done" in events[-1].message


async def test_ending_error_on_an_item_out_of_protocol():
    class Weird:
        async def chat(self, messages, options):
            yield {"type": "image"}

    events = await collect(Agent(model=Weird()).run("go"))
    assert kinds(events) == ["end"] and "out of protocol" in events[-1].message


async def test_the_model_may_be_used_again_after_an_engine_failure():
    agent, _ = agent_with([RuntimeError("hiccup"), final("fine")])
    assert endings(await collect(agent.run("one")))[0].reason == "error"
    assert (await agent.ask("two")).text == "fine"


# -- abort ---------------------------------------------------------------------------------


async def test_abort_before_the_run():
    signal = Abort()
    signal.abort()
    agent, model = agent_with([final("never")])
    events = await collect(agent.run("go", signal=signal))
    assert kinds(events) == ["end"] and events[-1].reason == "abort"
    assert model.calls == []


async def test_abort_during_a_generation_stops_the_stream():
    signal = Abort()
    agent, model = agent_with([Reply(final("a long answer that streams"), chunk=3)])
    events = []
    async for ev in agent.run("go", signal=signal):
        events.append(ev)
        if ev.type == "text":
            signal.abort()
    assert [e.type for e in events] == ["text", "end"]
    assert events[-1].reason == "abort"


async def test_a_js_style_signal_works_as_it_is():
    class JsLikeSignal:  # what a proxied AbortSignal looks like: only .aborted matters
        aborted = 0

    signal = JsLikeSignal()
    agent, _ = agent_with([Reply(final("streaming"), chunk=2)])
    events = []
    async for ev in agent.run("go", signal=signal):
        events.append(ev)
        signal.aborted = 1
    assert events[-1].reason == "abort"


async def test_abort_during_a_tool_skips_the_rest_and_keeps_the_conversation_whole():
    signal = Abort()

    def stop(input, ctx):
        ctx.signal.abort()
        return "stopped"

    stopper = tool(name="stopper", description="Aborts.", input={}, run=stop)
    agent, model = agent_with([calls(("stopper", {}), ("clock", {})), final("next run")], tools=[stopper, clock])
    events = await collect(agent.run("go", signal=signal))
    assert kinds(events) == ["turn", "call", "result", "result", "end"]
    assert events[-1].reason == "abort"
    skipped = events[-2]
    assert skipped.tool == "clock" and skipped.error and skipped.text.startswith("cancelled")
    # the next run on the same agent works, and the model saw both results of the aborted turn
    assert (await agent.ask("again")).text == "next run"
    assert '"stopped"' in model.calls[1].messages[-2]["content"] and "cancelled" in model.calls[1].messages[-2]["content"]


async def test_abort_is_passed_to_the_model_and_the_tools():
    seen = []
    signal = Abort()

    def spy_run(input, ctx):
        seen.append((ctx.signal, ctx.signal.aborted))
        signal.abort()  # the caller aborts while the tool runs: the tool's signal says so at once
        seen.append((ctx.signal, ctx.signal.aborted))
        return "ok"

    spy = tool(name="spy", description="Spy.", input={}, run=spy_run)
    agent, model = agent_with([calls(("spy", {})), final("ok")], tools=[spy])
    events = await collect(agent.run("go", signal=signal))
    # the model and the tools get the run's own signal, which follows the caller's (the run's
    # timeout aborts it too, and must not abort the caller's object)
    (first, before), (second, after) = seen
    assert model.calls[0].options["signal"] is first is second
    assert (before, after) == (False, True) and events[-1].reason == "abort"


async def test_an_engine_error_after_abort_is_an_abort():
    signal = Abort()

    async def script(messages, options):
        signal.abort()
        return RuntimeError("AbortError: the operation was aborted")

    agent = Agent(model=ScriptedModel(script))
    events = await collect(agent.run("go", signal=signal))
    assert kinds(events) == ["end"] and events[-1].reason == "abort"


async def test_breaking_out_early_closes_the_model_stream_and_frees_the_agent():
    closed = []

    class Endless:
        async def chat(self, messages, options):
            try:
                while True:
                    yield {"type": "text", "text": "{"}
                    await asyncio.sleep(0)
            finally:
                closed.append(True)

    agent = Agent(model=Endless())
    stream = agent.run("go")
    async for ev in stream:
        break
    await stream.aclose()
    assert closed == [True]
    agent.reset()  # not busy any more


# -- hooks ---------------------------------------------------------------------------------


async def test_before_call_deny():
    ran = []
    spy = tool(name="spy", description="Spy.", input={}, run=lambda i, c: ran.append(1) or "ok")
    hooks = Hooks(before_call=lambda call: {"deny": "not allowed"} if call.tool == "spy" else None)
    agent, _ = agent_with([calls(("spy", {}), ("clock", {})), final("ok")], tools=[spy, clock], hooks=hooks)
    events = await collect(agent.run("go"))
    results = [e for e in events if e.type == "result"]
    assert (results[0].text, results[0].error) == ("refused: not allowed", True)
    assert results[1].text == "12:00" and ran == []


async def test_before_call_replaces_the_input_which_is_checked_again():
    async def rewrite(call):
        return {"input": {"city": call.input["city"].upper()}} if call.input.get("city") != "bad" else {"input": {"city": 5}}

    agent, _ = agent_with([calls(("weather", {"city": "oslo"}), ("weather", {"city": "bad"})), final("ok")], hooks={"before_call": rewrite})
    events = await collect(agent.run("go"))
    calls_seen = [e for e in events if e.type == "call"]
    results = [e for e in events if e.type == "result"]
    assert calls_seen[0].input == {"city": "OSLO"}
    assert results[0].text == "Sunny in OSLO, 21°c"
    assert results[1].error and "city: Input should be a valid string" in results[1].text


async def test_after_call_replaces_the_result():
    hooks = Hooks(after_call=lambda call, result: {"result": result.text + " (checked)"})
    agent, model = agent_with([calls(("clock", {})), final("ok")], hooks=hooks)
    events = await collect(agent.run("go"))
    assert next(e for e in events if e.type == "result").text == "12:00 (checked)"
    assert "12:00 (checked)" in model.calls[1].messages[-1]["content"]


async def test_on_final_continue_gives_another_turn():
    seen = []

    def on_final(text):
        seen.append(text)
        return {"continue": "Check the weather first."} if len(seen) == 1 else None

    agent, model = agent_with([final("guess"), calls(("weather", {"city": "Rome"})), final("sunny")], hooks=Hooks(on_final=on_final))
    events = await collect(agent.run("go"))
    assert kinds(events) == ["turn", "turn", "call", "result", "turn", "final"]
    assert seen == ["guess", "sunny"]
    assert model.calls[1].messages[-1] == {"role": "user", "content": "Check the weather first."}


async def test_on_final_continue_stays_within_turns():
    agent, _ = agent_with([final("a"), final("b")], hooks=Hooks(on_final=lambda t: {"continue": "more"}), limits=Limits(turns=2))
    events = await collect(agent.run("go"))
    assert events[-1].type == "end" and events[-1].reason == "turns"


@pytest.mark.parametrize(
    "hooks",
    [
        Hooks(before_call=lambda call: 1 / 0),
        Hooks(before_call=lambda call: {"allow": True}),
        Hooks(before_call=lambda call: {"deny": 42}),
        Hooks(after_call=lambda call, result: 1 / 0),
        Hooks(after_call=lambda call, result: "just text"),
        Hooks(on_final=lambda text: 1 / 0),
        Hooks(on_final=lambda text: {"continue": None}),
    ],
)
async def test_a_hook_that_throws_or_answers_wrong_ends_the_run_with_error(hooks):
    agent, _ = agent_with([calls(("clock", {})), final("ok")], hooks=hooks)
    events = await collect(agent.run("go"))
    assert len(endings(events)) == 1
    assert events[-1].type == "end" and events[-1].reason == "error"
    assert "hook" in events[-1].message


async def test_async_hooks_are_awaited():
    async def deny(call):
        await asyncio.sleep(0)
        return {"deny": "later"}

    agent, _ = agent_with([calls(("clock", {})), final("ok")], hooks=Hooks(before_call=deny))
    events = await collect(agent.run("go"))
    assert next(e for e in events if e.type == "result").text == "refused: later"


# -- ask and busy --------------------------------------------------------------------------


async def test_ask_returns_the_answer_with_its_events():
    agent, _ = agent_with([calls(("clock", {})), final("noon", thought="read the clock")])
    answer = await agent.ask("time?")
    assert isinstance(answer, Answer)
    assert (answer.text, answer.thought) == ("noon", "read the clock")
    assert answer.events[-1].type == "final"


@pytest.mark.parametrize(
    ("script", "limits", "reason"),
    [
        (["x", "x", "x"], Limits(retries=2), "retries"),
        ([calls(("clock", {}))] * 2, Limits(turns=2), "turns"),
        ([RuntimeError("down")], None, "error"),
    ],
)
async def test_ask_raises_on_every_other_ending(script, limits, reason):
    agent, _ = agent_with(script, limits=limits)
    with pytest.raises(AerixError) as e:
        await agent.ask("go")
    assert e.value.kind == "end" and e.value.reason == reason
    assert e.value.events[-1].type == "end"


async def test_ask_raises_on_abort():
    signal = Abort()
    signal.abort()
    agent, _ = agent_with([final("x")])
    with pytest.raises(AerixError) as e:
        await agent.ask("go", signal=signal)
    assert e.value.reason == "abort"


async def test_a_second_run_while_one_is_going_is_busy():
    gate = asyncio.Event()

    async def wait(input, ctx):
        await gate.wait()
        return "done"

    waiter = tool(name="waiter", description="Waits.", input={}, run=wait)
    agent, _ = agent_with([calls(("waiter", {})), final("ok"), final("again")], tools=[waiter])
    first = asyncio.ensure_future(agent.ask("one"))
    await asyncio.sleep(0.01)
    with pytest.raises(AerixError) as e:
        agent.run("two")
    assert e.value.kind == "busy"
    with pytest.raises(AerixError) as e:
        await agent.ask("two")
    assert e.value.kind == "busy"
    with pytest.raises(AerixError):
        agent.reset()
    gate.set()
    assert (await first).text == "ok"
    assert (await agent.ask("three")).text == "again"


# -- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(model=object()),
        dict(instructions=3),
        dict(tools=weather),
        dict(tools=["weather"]),
        dict(limits={"turns": 0}),
        dict(limits={"retries": -1}),
        dict(limits={"max_tokens": "many"}),
        dict(limits={"result_chars": True}),
        dict(limits={"tokens": 5}),
        dict(limits=[8]),
        dict(hooks={"before_call": "not callable"}),
        dict(hooks={"before": print}),
        dict(generation={"max_tokens": 5}),
        dict(generation={"response_format": {}}),
        dict(generation=[("temperature", 0)]),
        dict(constrain="yes"),
    ],
)
def test_bad_options_raise_options_errors(kwargs):
    kwargs.setdefault("model", ScriptedModel([]))
    with pytest.raises(AerixError) as e:
        Agent(**kwargs)
    assert e.value.kind == "options"


def test_limits_defaults_and_none_turns_limits_off():
    assert Limits() == Limits(turns=8, retries=2, max_tokens=512, result_chars=4000)
    assert Limits.of({"turns": None, "result_chars": None}).turns is None
    assert "max_tokens=512" in repr(Limits())


def test_a_bad_prompt_is_an_options_error():
    agent, _ = agent_with([])
    for prompt in ("", "   ", None, 3):
        with pytest.raises(AerixError) as e:
            agent.run(prompt)
        assert e.value.kind == "options"


def test_all_tools_of_the_fixture_build_one_agent():
    agent = Agent(model=ScriptedModel([]), tools=TOOLS)
    assert [t.name for t in agent.tools] == ["weather", "convert", "note", "clock"]
