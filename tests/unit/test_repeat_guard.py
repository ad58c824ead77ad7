"""The repeat guard (``Limits.repeat_calls``): a call identical to an earlier one of the run is
answered with the earlier result, and one repeat too many in a row ends the run ``loop``."""

from __future__ import annotations

import json

import pytest
from helpers import Crash, CrashingStore, calls, collect, endings, final, kinds, run_coroutine
from hypothesis import given, settings
from hypothesis import strategies as st

from aerix import AerixError, Agent, Hooks, Limits, TurnFormat, tool
from aerix.events import Result, event_from_dict
from aerix.page import create_agent, event_view
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel
from aerix.turn import repeated_note


class Counted:
    """A lookup tool that counts its runs; ``fail`` makes its first runs fail."""

    def __init__(self, fail: int = 0):
        self.ran: list[str] = []
        self.fail = fail
        self.tool = tool(name="lookup", description="Find an address.", input={"who": {"type": "string", "required": True}}, run=self.run)

    def run(self, input, ctx):
        self.ran.append(input["who"])
        if len(self.ran) <= self.fail:
            raise ConnectionError("the directory did not answer")
        return f"{input['who']}@example.org"


def ask(who: str) -> tuple[str, dict]:
    return ("lookup", {"who": who})


def results(events) -> list:
    return [e for e in events if e.type == "result"]


def agent_with(script, lookup: Counted, **kw) -> Agent:
    return Agent(model=ScriptedModel(script), tools=[lookup.tool], **kw)


# -- a repeat is answered with the earlier result -------------------------------------------


async def test_the_second_identical_call_gets_the_earlier_result_without_running_the_tool():
    lookup = Counted()
    model = ScriptedModel([calls(ask("ana")), calls(ask("ana")), final("ana@example.org")])
    agent = Agent(model=model, tools=[lookup.tool])
    events = await collect(agent.run("Ana's address?"))
    assert lookup.ran == ["ana"]
    first, second = results(events)
    assert (first.id, first.text, first.error, first.repeat_of) == ("call_1", "ana@example.org", False, None)
    assert (second.id, second.error, second.repeat_of) == ("call_2", False, "call_1")
    assert second.text == repeated_note("lookup", "call_1", "ana@example.org")
    assert second.text.endswith("\nana@example.org") and "did not run again" in second.text
    # the model sees the note and the result, as the result of its own call
    sent = json.loads(model.calls[2].messages[-1]["content"])
    assert sent == {"results": [{"id": "call_2", "tool": "lookup", "result": second.text}]}
    assert events[-1].type == "final"


async def test_the_third_identical_call_in_a_row_ends_the_run_loop():
    lookup = Counted()
    agent = agent_with([calls(ask("ana")), calls(ask("ana")), calls(ask("ana")), final("never")], lookup)
    events = await collect(agent.run("Ana's address?"))
    assert kinds(events) == ["turn", "call", "result", "turn", "call", "result", "turn", "result", "end"]
    end = events[-1]
    assert len(endings(events)) == 1 and end.reason == "loop"
    assert end.message == "the model called lookup with the same input 3 times in a row (Limits.repeat_calls is 1)"
    assert results(events)[-1].text == f"cancelled: {end.message}" and results(events)[-1].error
    assert lookup.ran == ["ana"]
    assert agent.messages[-1]["role"] == "user", "the cancelled call's result closes the turn"
    with pytest.raises(AerixError) as e:
        await agent_with([calls(ask("ana"))] * 3, Counted()).ask("again")
    assert e.value.kind == "end" and e.value.reason == "loop"


async def test_identical_calls_in_one_turn_count_in_a_row_too():
    lookup = Counted()
    keep = TurnFormat(duplicate_calls="keep")  # by default the turn's repeats are dropped before they are calls
    events = await collect(agent_with([calls(ask("ana"), ask("ana")), final("ok")], lookup, turn_format=keep).run("go"))
    assert [r.repeat_of for r in results(events)] == [None, "call_1"] and events[-1].type == "final"
    lookup = Counted()
    events = await collect(agent_with([calls(ask("ana"), ask("ana"), ask("ana"), ask("bob"))], lookup, turn_format=keep).run("go"))
    assert events[-1].reason == "loop" and lookup.ran == ["ana"]
    assert [r.text.startswith("cancelled: ") for r in results(events)] == [False, False, True, True]


async def test_different_inputs_are_not_caught_and_key_order_is_not_a_difference():
    lookup = Counted()
    script = [calls(ask("ana")), calls(ask("bob")), calls(ask("Ana")), calls(ask("ana ")), final("ok")]
    events = await collect(agent_with(script, lookup).run("go"))
    assert lookup.ran == ["ana", "bob", "Ana", "ana "]
    assert all(r.repeat_of is None for r in results(events)) and events[-1].type == "final"
    weather = tool(name="weather", description="Weather.", input={"city": {"type": "string"}, "unit": {"type": "string"}}, run=lambda i, c: "sunny")
    script = [calls(("weather", {"city": "Oslo", "unit": "c"})), calls(("weather", {"unit": "c", "city": "Oslo"})), final("ok")]
    events = await collect(Agent(model=ScriptedModel(script), tools=[weather]).run("go"))
    assert results(events)[1].repeat_of == "call_1"


async def test_interleaved_calls_reset_in_a_row_but_repeats_are_still_answered():
    lookup = Counted()
    script = [calls(ask("ana")), calls(ask("bob")), calls(ask("ana")), calls(ask("bob")), calls(ask("ana"), ask("ana")), calls(ask("bob")), final("ok")]
    events = await collect(agent_with(script, lookup, turn_format=TurnFormat(duplicate_calls="keep")).run("go"))
    assert events[-1].type == "final"
    assert lookup.ran == ["ana", "bob"]
    assert [r.repeat_of for r in results(events)] == [None, None, "call_1", "call_2", "call_1", "call_1", "call_2"]


async def test_a_repeat_of_a_failed_call_runs_again_and_still_counts_in_a_row():
    lookup = Counted(fail=1)
    events = await collect(agent_with([calls(ask("ana")), calls(ask("ana")), calls(ask("ana")), final("never")], lookup).run("go"))
    first, second, third = results(events)
    assert first.error and first.text.startswith("error: ") and first.repeat_of is None
    assert (second.text, second.error, second.repeat_of) == ("ana@example.org", False, None), "it ran again"
    assert events[-1].reason == "loop" and lookup.ran == ["ana", "ana"]
    assert third.text.startswith("cancelled: ")


async def test_a_call_refused_by_a_hook_is_not_remembered():
    seen = []

    def before_call(call):
        seen.append(call.id)
        return {"deny": "not now"} if call.id == "call_1" else None

    lookup = Counted()
    agent = agent_with([calls(ask("ana")), calls(ask("ana")), final("ok")], lookup, hooks=Hooks(before_call=before_call))
    events = await collect(agent.run("go"))
    assert [r.text for r in results(events)] == ["refused: not now", "ana@example.org"]
    assert seen == ["call_1", "call_2"] and lookup.ran == ["ana"]


async def test_a_repeat_runs_no_hook_and_repeats_the_text_the_hooks_shaped():
    seen = []
    hooks = Hooks(before_call=lambda call: seen.append(("before", call.id)), after_call=lambda call, result: seen.append(("after", call.id)) or {"result": "[redacted]"})
    agent = agent_with([calls(ask("ana")), calls(ask("ana")), final("ok")], Counted(), hooks=hooks)
    events = await collect(agent.run("go"))
    assert seen == [("before", "call_1"), ("after", "call_1")]
    assert results(events)[1].text == repeated_note("lookup", "call_1", "[redacted]")


async def test_the_guard_knows_only_the_calls_of_its_own_run():
    lookup = Counted()
    agent = agent_with([calls(ask("ana")), final("ok"), calls(ask("ana")), final("ok")], lookup)
    await agent.ask("first")
    events = await collect(agent.run("second"))
    assert lookup.ran == ["ana", "ana"] and results(events)[0].repeat_of is None


# -- the limit ---------------------------------------------------------------------------


async def test_repeat_calls_none_turns_the_guard_off():
    lookup = Counted()
    agent = agent_with([calls(ask("ana"))] * 5 + [final("ok")], lookup, limits=Limits(repeat_calls=None, turns=10))
    events = await collect(agent.run("go"))
    assert events[-1].type == "final" and lookup.ran == ["ana"] * 5
    assert all(r.repeat_of is None and r.text == "ana@example.org" for r in results(events))


async def test_repeat_calls_counts_the_repeats_allowed_in_a_row():
    lookup = Counted()
    events = await collect(agent_with([calls(ask("ana")), calls(ask("ana"))], lookup, limits=Limits(repeat_calls=0)).run("go"))
    assert events[-1].reason == "loop" and "2 times in a row" in events[-1].message
    lookup = Counted()
    script = [calls(ask("ana")), calls(ask("bob")), calls(ask("ana")), final("ok")]  # not in a row: answered
    events = await collect(agent_with(script, lookup, limits=Limits(repeat_calls=0)).run("go"))
    assert events[-1].type == "final" and results(events)[-1].repeat_of == "call_1"
    lookup = Counted()
    events = await collect(agent_with([calls(ask("ana"))] * 4 + [final("ok")], lookup, limits=Limits(repeat_calls=3)).run("go"))
    assert events[-1].type == "final" and lookup.ran == ["ana"]


@pytest.mark.parametrize("bad", [-1, True, 1.5, "1"])
def test_repeat_calls_must_be_a_count_or_none(bad):
    with pytest.raises(AerixError) as e:
        Limits(repeat_calls=bad)
    assert e.value.kind == "options" and "repeat_calls" in e.value.message


def test_the_default_is_on_with_one_repeat_in_a_row():
    assert Limits().repeat_calls == 1 and Limits.of({"repeat_calls": None}).repeat_calls is None


# -- events ------------------------------------------------------------------------------


def test_a_result_names_the_call_it_repeats_only_when_it_does():
    plain, repeat = Result("call_1", "lookup", "x", False), Result("call_2", "lookup", "y", False, "call_1")
    assert plain.to_dict() == {"type": "result", "id": "call_1", "tool": "lookup", "text": "x", "error": False}
    assert repeat.to_dict()["repeat_of"] == "call_1" and event_from_dict(repeat.to_dict()) == repeat
    assert event_from_dict(plain.to_dict()) == plain
    assert event_view(repeat)["repeatOf"] == "call_1" and "repeatOf" not in event_view(plain)


def test_the_page_names_the_limit_repeat_calls():
    page = create_agent(ScriptedModel([]), {"tools": [], "limits": {"repeatCalls": None}})
    assert page.agent.limits.repeat_calls is None


# -- durable runs ------------------------------------------------------------------------


def by_turn(*replies):
    """A model whose reply depends on how many turns the conversation holds (so a resumed run
    is asked the same thing again)."""
    return ScriptedModel(lambda messages, options: replies[sum(1 for m in messages if m["role"] == "assistant")])


# a model that keeps asking for the same lookup
LOOPING = [calls(ask("ana")), calls(ask("ana")), calls(ask("ana")), calls(ask("ana")), final("never")]


# 10 writes: the start, per turn its generation, its result and the results fed back, then the
# turn closed with the third call cancelled (9), the ending (10). A crash after write 9 resumes
# as after any ending the store did not record: the model is asked again with the cancelled
# result in view, and the state it resumes with still counts 2 in a row, so its next identical
# call ends the run at once.
@pytest.mark.parametrize("at", range(1, 10))
async def test_a_resumed_run_remembers_the_calls_before_its_checkpoint(at):
    lookup = Counted()
    store = CrashingStore(at=at)
    with pytest.raises(Crash):
        await collect(Agent(model=by_turn(*LOOPING), tools=[lookup.tool], store=store).run("go", run_id="r1"))
    events = await collect(Agent(model=by_turn(*LOOPING), tools=[lookup.tool], store=store).resume("r1"))
    assert len(endings(events)) == 1 and events[-1].reason == "loop"
    assert lookup.ran == ["ana"], "the lookup ran once, before or after the crash"
    record = await store.get_run("r1")
    assert record["status"] == "failed" and record["checkpoint"]["calls_seen"]["in_row"] == 2


async def test_a_checkpoint_written_before_the_guard_still_resumes():
    lookup = Counted()
    store = CrashingStore(at=4)  # after the first call's results were fed back
    with pytest.raises(Crash):
        await collect(Agent(model=by_turn(*LOOPING), tools=[lookup.tool], store=store).run("go", run_id="r1"))
    run = await store.get_run("r1")
    del run["checkpoint"]["calls_seen"]
    await store.save_run(run)
    events = await collect(Agent(model=by_turn(*LOOPING), tools=[lookup.tool], store=store).resume("r1"))
    assert events[-1].reason == "loop" and lookup.ran == ["ana", "ana"], "it knew nothing of the first call"


async def test_calls_seen_that_do_not_read_make_the_record_corrupt():
    store = MemoryStore()
    await collect(agent_with([calls(ask("ana")), final("ok")], Counted(), store=store).run("go", run_id="r1"))
    run = await store.get_run("r1")
    run["status"], run["ending"] = "interrupted", None
    run["checkpoint"]["calls_seen"] = {"answered": {"k": ["call_1"]}, "last": None, "in_row": 0}
    await store.save_run(run)
    (record,) = await Agent(model=ScriptedModel([]), tools=[Counted().tool], store=store).runs()
    assert record.status == "corrupt" and "calls seen" in record.error


async def test_a_call_that_waited_for_an_approval_is_counted_once():
    paid = []

    async def pay_run(input, ctx):
        decision = await ctx.approve(f"Pay {input['amount']}?")
        paid.append(input["amount"])
        return "paid" if decision.approved else "not paid"

    pay = tool(name="pay", description="Pay.", input={"amount": {"type": "integer", "required": True}}, run=pay_run)
    script = [calls(("pay", {"amount": 5})), calls(("pay", {"amount": 5})), calls(("pay", {"amount": 5})), final("never")]
    store = MemoryStore()
    waiting = (await collect(Agent(model=by_turn(*script), tools=[pay], store=store).run("pay", run_id="r1")))[-1]
    assert waiting.type == "waiting"
    events = await collect(Agent(model=by_turn(*script), tools=[pay], store=store).approve("r1", waiting.approval_id, True))
    assert [r.repeat_of for r in results(events)] == [None, "call_1", None]
    assert events[-1].reason == "loop" and paid == [5], "paid once; the wait did not count as a call"


async def test_an_identical_effect_call_is_not_applied_again():
    sent = []
    send = tool(name="send", description="Send.", input={"to": {"type": "string", "required": True}}, run=lambda i, c: sent.append(i["to"]) or "sent", effect=True)
    script = [calls(("send", {"to": "ana"})), calls(("send", {"to": "ana"})), final("sent once")]
    events = await collect(Agent(model=ScriptedModel(script), tools=[send], store=MemoryStore()).run("send"))
    assert sent == ["ana"] and results(events)[1].repeat_of == "call_1"


# -- exactly one ending, whatever the calls ----------------------------------------------

few_calls = st.lists(st.sampled_from([ask("ana"), ask("bob"), ("clock", {}), ("nope", {})]), min_size=1, max_size=4)
turns = st.one_of(st.builds(lambda cs: calls(*cs), few_calls), st.just(final("ok")), st.just("not json"))


@settings(max_examples=120, deadline=None)
@given(script=st.lists(turns, max_size=10), repeat_calls=st.sampled_from([None, 0, 1, 2]), fail=st.integers(0, 2))
def test_any_sequence_of_calls_yields_exactly_one_ending(script, repeat_calls, fail):
    lookup = Counted(fail=fail)
    clock = tool(name="clock", description="The time.", input={}, run=lambda i, c: "12:00")
    agent = Agent(model=ScriptedModel(script), tools=[lookup.tool, clock], limits=Limits(turns=10, repeat_calls=repeat_calls))
    events = run_coroutine(collect(agent.run("go")))
    ends = endings(events)
    assert len(ends) == 1 and events[-1] is ends[0]
    if repeat_calls is not None:  # a lookup that succeeded never runs again with the same input
        done = [r for r in results(events) if r.tool == "lookup" and not r.error and r.repeat_of is None]
        assert len(done) == len({json.dumps(agent_call_input(events, r.id)) for r in done})
    if ends[0].type == "end" and ends[0].reason == "loop":
        assert repeat_calls is not None


def agent_call_input(events, call_id):
    return next(c.input for e in events if e.type == "turn" for c in e.calls if c.id == call_id)
