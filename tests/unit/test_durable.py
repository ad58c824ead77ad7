"""Durable runs: checkpoints, resume, idempotency, effect tools, approvals, budgets."""

from __future__ import annotations

import hashlib
import json

import pytest
from helpers import Crash, CrashingStore, calls, collect, endings, final, kinds

from aerix import AerixError, Agent, Hooks, Limits, tool
from aerix.stores import MemoryStore
from aerix.testing import Reply, ScriptedModel


class Conversation:
    """A model whose reply depends only on the conversation so far, and that fails the test if
    it is asked for a generation it already gave (same conversation twice)."""

    def __init__(self, replies):
        self.replies = replies
        self.asked: list[str] = []

    def model(self, allow_repeat_of=()):
        def reply(messages, options):
            key = hashlib.sha256(json.dumps(messages).encode()).hexdigest()
            if key in self.asked and key not in allow_repeat_of:
                raise AssertionError(f"generation {self.asked.index(key) + 1} was asked again")
            self.asked.append(key)
            n = sum(1 for m in messages if m["role"] == "assistant")
            return self.replies[n]

        return ScriptedModel(reply)


applied: list[str] = []


def send_run(input, ctx):
    applied.append(input["to"])
    return f"sent to {input['to']}"


def make_tools(with_marker: bool):
    lookup = tool(name="lookup", description="Find an address.", input={"who": {"type": "string", "required": True}}, run=lambda i, c: f"{i['who']}@example.org")
    clock = tool(name="clock", description="The time.", input={}, run=lambda i, c: "12:00")
    send = tool(
        name="send",
        description="Send a message (a side effect).",
        input={"to": {"type": "string", "required": True}},
        run=send_run,
        effect=True,
        already_applied=(lambda key, input: f"sent to {input['to']}" if input["to"] in applied else None) if with_marker else None,
    )
    return [lookup, clock, send]


THREE_TOOL_RUN = [
    calls(("lookup", {"who": "ana"})),
    calls(("send", {"to": "ana@example.org"}), ("clock", {})),
    final("Sent to Ana at 12:00."),
]


def agent_for(store, model, with_marker=True, **kw):
    return Agent(model=model, tools=make_tools(with_marker), store=store, **kw)


async def test_a_durable_run_checkpoints_after_every_generation_and_result():
    applied.clear()
    store = MemoryStore()
    convo = Conversation(THREE_TOOL_RUN)
    agent = agent_for(store, convo.model())
    events = await collect(agent.run("Message Ana"))
    assert kinds(events) == ["turn", "call", "result", "turn", "call", "result", "call", "result", "turn", "final"]
    (record,) = await agent.runs()
    assert record.status == "completed" and record.ending["type"] == "final"
    assert record.checkpoint["messages"] == agent.messages  # the last checkpoint holds the final turn
    assert record.checkpoint["generations"] == 3 and record.checkpoint["pending"]["final"] == "Sent to Ana at 12:00."
    assert applied == ["ana@example.org"]


async def test_reference_run_has_the_checkpoints_we_crash_at():
    applied.clear()
    store = CrashingStore()
    await agent_for(store, Conversation(THREE_TOOL_RUN).model()).ask("Message Ana")
    # start + 3 generations + 3 results + 2 "results fed back" + the ending = 10 writes
    assert store.count == 10


@pytest.mark.parametrize("at", range(1, 10))
async def test_a_crash_after_any_checkpoint_resumes_to_the_end_without_asking_again(at):
    applied.clear()
    store = CrashingStore(at=at)
    convo = Conversation(THREE_TOOL_RUN)
    first = agent_for(store, convo.model())
    with pytest.raises(Crash):
        await collect(first.run("Message Ana", run_id="r1"))
    # a new page: a new agent on the same store, resuming the run it finds interrupted
    second = agent_for(store, convo.model())
    resumable = await second.recover()
    assert [r.id for r in resumable] == ["r1"] and resumable[0].status == "interrupted"
    events = await collect(second.resume("r1"))
    assert events[-1].type == "final" and len(endings(events)) == 1
    assert applied == ["ana@example.org"], "the effect must be applied exactly once"
    assert len(convo.asked) == 3, "every generation was asked once"
    assert (await second.get_run("r1")).status == "completed"


async def test_a_crash_mid_generation_asks_that_generation_again_and_only_it():
    applied.clear()
    store = MemoryStore()
    convo = Conversation([THREE_TOOL_RUN[0], Reply(THREE_TOOL_RUN[1], chunk=5), THREE_TOOL_RUN[2]])
    now = [1000.0]
    first = agent_for(store, convo.model(), clock=lambda: now[0])
    with pytest.raises(Crash):
        async for ev in first.run("Message Ana", run_id="r1"):
            if ev.type == "text" and len(convo.asked) == 2:
                raise Crash("the page dies while generation 2 streams")  # no clean-up runs
    assert (await first.get_run("r1")).status == "running"
    second = agent_for(store, convo.model(allow_repeat_of=convo.asked[1:2]), clock=lambda: now[0])
    # the dead executor's lease is live until it expires: the run may still be executing
    assert await second.recover() == [] and (await second.get_run("r1")).status == "running"
    now[0] += first._runs.lease_s
    assert [r.status for r in await second.recover()] == ["interrupted"]
    events = await collect(second.resume("r1"))
    assert events[-1].type == "final"
    assert len(convo.asked) == 4 and convo.asked[1] == convo.asked[2], "only the cut generation was asked again"
    assert applied == ["ana@example.org"]


async def test_a_crash_between_an_effect_and_its_record():
    for with_marker, expected in ((True, 1), (False, 2)):
        applied.clear()
        store = CrashingStore(at=1, what="put_effect", before=True)  # the effect ran; its record did not land
        convo = Conversation(THREE_TOOL_RUN)
        with pytest.raises(Crash):
            await collect(agent_for(store, convo.model(), with_marker).run("Message Ana", run_id="r1"))
        second = agent_for(store, convo.model(), with_marker)
        await second.recover()
        events = await collect(second.resume("r1"))
        assert events[-1].type == "final"
        # with already_applied the effect is found; without it, it is applied again (documented)
        assert len(applied) == expected


async def test_a_recorded_effect_is_reused_not_run_again():
    applied.clear()
    store = MemoryStore()
    agent = agent_for(store, Conversation(THREE_TOOL_RUN).model(), with_marker=False)
    answer = await agent.ask("Message Ana")
    call_id = next(e.id for e in answer.events if e.type == "call" and e.tool == "send")
    digest = hashlib.sha256(json.dumps({"to": "ana@example.org"}).encode()).hexdigest()
    run_id = (await agent.runs())[0].id
    # the default key is the run, the call and the input (two identical calls are two effects)
    assert await store.get_effect(f"{run_id}:{call_id}:send:{digest}") == "sent to ana@example.org"


async def test_a_failed_effect_is_not_recorded():
    store = MemoryStore()
    tries = []

    def flaky(input, ctx):
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("smtp down")
        return "sent"

    send = tool(name="send", description="Send.", input={}, run=flaky, effect=True, effect_key=lambda input: "the-send")
    model = ScriptedModel([calls(("send", {})), calls(("send", {})), final("ok")])
    events = await collect(Agent(model=model, tools=[send], store=store).run("go"))
    assert [e.text for e in events if e.type == "result"] == ["error: smtp down", "sent"]
    assert await store.get_effect("the-send") == "sent"


async def test_idempotency_key_finds_the_existing_run():
    store = MemoryStore()
    agent = Agent(model=ScriptedModel([final("once")]), store=store)
    a = await agent.start("hi", idempotency_key="order-7")
    b = await agent.start("hi", idempotency_key="order-7")
    assert a.id == b.id and b.prompt == "hi"
    with pytest.raises(AerixError) as e:  # the key names one request: another prompt is refused
        await agent.start("hi again", idempotency_key="order-7")
    # it names the key, and nothing of the run found (it could be another caller's)
    assert e.value.kind == "options" and "order-7" in e.value.message and a.id not in e.value.message and "'hi'" not in e.value.message
    first = await collect(agent.resume(a.id))
    again = await collect(agent.run("hi", idempotency_key="order-7"))
    assert first[-1].text == "once"
    assert [e.type for e in again] == ["final"] and again[0].text == "once"
    assert len(await agent.runs()) == 1


async def test_resuming_with_other_tools_is_refused():
    store = MemoryStore()
    agent = Agent(model=ScriptedModel([calls(("clock", {}))]), tools=make_tools(True), store=store, limits=Limits(turns=1))
    await collect(agent.run("go", run_id="r1"))
    await store.save_run({**(await store.get_run("r1")), "status": "interrupted", "ending": None})
    other = Agent(model=ScriptedModel([]), instructions="different", store=store)
    with pytest.raises(AerixError) as e:
        await collect(other.resume("r1"))
    assert e.value.kind == "options" and "other instructions or tools" in str(e.value)


async def test_durable_methods_need_a_store():
    agent = Agent(model=ScriptedModel([]))
    for call in (lambda: agent.resume("x"), lambda: agent.approve("x", "a", True), lambda: agent.run("p", run_id="x")):
        with pytest.raises(AerixError) as e:
            call()
        assert e.value.kind == "options"


# -- approvals -----------------------------------------------------------------------------


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


async def ask_first(input, ctx):
    decision = await ctx.approve(f"Pay {input['amount']}?", body="to ACME")
    return "paid" if decision.approved else f"not paid: {decision.reason}"


def pay_agent(store, clock, script):
    pay = tool(name="pay", description="Pay.", input={"amount": {"type": "integer", "required": True}}, run=ask_first)
    return Agent(model=ScriptedModel(script), tools=[pay], store=store, clock=clock)


PAY = [calls(("pay", {"amount": 5})), final("done")]


async def start_waiting(store, clock):
    events = await collect(pay_agent(store, clock, PAY).run("pay 5", run_id="r1"))
    waiting = events[-1]
    assert waiting.type == "waiting" and len(endings(events)) == 0
    assert (waiting.run_id, waiting.approval_id, waiting.title, waiting.body) == ("r1", "call_1.1", "Pay 5?", "to ACME")
    record = await store.get_run("r1")
    assert record["status"] == "waiting" and record["approvals"]["call_1.1"]["decision"] is None
    return waiting


@pytest.mark.parametrize(("approved", "reason", "text"), [(True, None, "paid"), (False, "too much", "not paid: too much")])
async def test_an_approval_waits_across_agents_and_the_call_runs_again_with_the_decision(approved, reason, text):
    store, clock = MemoryStore(), Clock()
    waiting = await start_waiting(store, clock)
    later = pay_agent(store, clock, PAY[1:])  # a new page: the generation with the call is not asked again
    events = await collect(later.approve("r1", waiting.approval_id, approved, reason))
    assert kinds(events) == ["call", "result", "turn", "final"]
    assert next(e for e in events if e.type == "result").text == text
    with pytest.raises(AerixError, match="already answered"):
        await collect(later.approve("r1", waiting.approval_id, True))


async def test_an_unanswered_approval_is_denied_when_it_times_out():
    store, clock = MemoryStore(), Clock()
    await start_waiting(store, clock)
    clock.now += 3600
    again = await collect(pay_agent(store, clock, PAY[1:]).resume("r1"))
    assert again[-1].type == "waiting", "within its timeout the run still waits"
    clock.now += 86400
    events = await collect(pay_agent(store, clock, PAY[1:]).resume("r1"))
    assert next(e for e in events if e.type == "result").text == "not paid: approval timed out"
    assert events[-1].type == "final"


async def test_a_before_call_hook_can_ask_for_approval():
    store, clock = MemoryStore(), Clock()

    async def gate(call, ctx):
        decision = await ctx.approve(f"Run {call.tool}?")
        return None if decision else {"deny": decision.reason or "denied"}

    def make(script):
        t = tool(name="clock", description="The time.", input={}, run=lambda i, c: "12:00")
        return Agent(model=ScriptedModel(script), tools=[t], store=store, clock=clock, hooks=Hooks(before_call=gate))

    events = await collect(make([calls(("clock", {})), final("noon")]).run("time?", run_id="r1"))
    assert events[-1].type == "waiting" and events[-1].title == "Run clock?"
    events = await collect(make([final("no time")]).approve("r1", "call_1.1", False, "not now"))
    assert next(e for e in events if e.type == "result").text == "refused: not now"


def waiting_agent(how, script):
    """An agent whose ``pay`` call waits for approval: asked by the tool, by a before_call hook,
    or as a tool guarded once the run is tainted (by ``read``)."""
    run = ask_first if how == "tool" else (lambda i, c: "paid")
    pay = tool(name="pay", description="Pay.", input={"amount": {"type": "integer", "required": True}}, run=run,
               trust={"guard_when_tainted": True} if how == "taint" else None)
    read = tool(name="read", description="Read a page.", input={}, run=lambda i, c: "outside text", trust={"taint": True})

    async def gate(call, ctx):
        return None if await ctx.approve(f"Run {call.tool}?") else {"deny": "no"}

    hooks = Hooks(before_call=gate) if how == "hook" else None
    return Agent(model=ScriptedModel(script), tools=[pay, read], store=MemoryStore(), clock=Clock(), hooks=hooks)


@pytest.mark.parametrize("how", ["tool", "hook", "taint"])
async def test_a_call_that_waits_has_its_turn_then_waiting_and_its_call_event_only_when_it_runs(how):
    # The order docs/python.md states (issue 28): turn, waiting; then, in the approve that answers
    # it, the call's call and result (a call event says how the call ran, so it comes when it runs).
    script = [calls(("read", {}))] if how == "taint" else []
    script += [calls(("pay", {"amount": 5})), final("done")]
    agent = waiting_agent(how, script)
    events = await collect(agent.run("pay 5", run_id="r1"))
    before = ["turn", "call", "taint", "result"] if how == "taint" else []
    assert kinds(events) == [*before, "turn", "waiting"]
    assert events[-1].approval_id == events[-2].calls[0].id + ".1"
    answered = await collect(agent.approve("r1", events[-1].approval_id, True))
    assert kinds(answered) == ["call", "result", "turn", "final"]
    assert answered[0].id == events[-2].calls[0].id


async def test_each_waiting_call_of_a_turn_gets_its_call_event_when_its_approval_is_answered():
    script = [calls(("clock", {}), ("pay", {"amount": 1}), ("pay", {"amount": 2})), final("done")]
    clock = tool(name="clock", description="The time.", input={}, run=lambda i, c: "12:00")
    pay = tool(name="pay", description="Pay.", input={"amount": {"type": "integer", "required": True}}, run=ask_first)
    agent = Agent(model=ScriptedModel(script), tools=[clock, pay], store=MemoryStore(), clock=Clock())
    events = await collect(agent.run("pay both", run_id="r1"))
    assert kinds(events) == ["turn", "call", "result", "waiting"] and events[-1].title == "Pay 1?"
    events = await collect(agent.approve("r1", events[-1].approval_id, True))
    assert kinds(events) == ["call", "result", "waiting"] and events[-1].title == "Pay 2?"
    events = await collect(agent.approve("r1", events[-1].approval_id, True))
    assert kinds(events) == ["call", "result", "turn", "final"]


async def test_approve_without_a_store_is_a_tool_error():
    t = tool(name="pay", description="Pay.", input={"amount": {"type": "integer", "required": True}}, run=ask_first)
    events = await collect(Agent(model=ScriptedModel([calls(("pay", {"amount": 1})), final("x")]), tools=[t]).run("go"))
    assert next(e for e in events if e.type == "result").text == "error: approvals need a durable run: give the Agent a store"


# -- budgets -------------------------------------------------------------------------------


async def test_timeout_ends_the_run_and_a_resumed_run_keeps_counting():
    store, clock = MemoryStore(), Clock()

    def slow(messages, options):
        clock.now += 4
        return calls(("clock", {}))

    t = tool(name="clock", description="The time.", input={}, run=lambda i, c: "12:00")
    agent = Agent(model=ScriptedModel(slow), tools=[t], store=store, clock=clock, limits=Limits(timeout_s=10, turns=20))
    stream = agent.run("go", run_id="r1")
    async for ev in stream:
        if ev.type == "result":
            break
    await stream.aclose()
    clock.now += 10_000  # the page was closed for a long time: that does not count
    events = await collect(Agent(model=ScriptedModel(slow), tools=[t], store=store, clock=clock, limits=Limits(timeout_s=10, turns=20)).resume("r1"))
    assert events[-1].type == "end" and events[-1].reason == "timeout"
    # 4 s before the pause; after it, one generation (8 s), then the next is cut at 12 s mid-stream
    assert sum(1 for e in events if e.type == "usage") == 1
    assert events[-1].message == "the run ran 12.0 s; its timeout is 10 s"


async def test_max_total_tokens_ends_the_run():
    agent = Agent(model=ScriptedModel([Reply(calls(("clock", {})))] * 5), tools=make_tools(True), limits=Limits(max_total_tokens=1500))
    events = await collect(agent.run("go"))
    assert events[-1].type == "end" and events[-1].reason == "tokens"
    used = sum(e.prompt_tokens + e.completion_tokens for e in events if e.type == "usage")
    assert used >= 1500


async def test_an_ephemeral_timeout_with_a_fake_clock():
    clock = Clock()

    def slow(messages, options):
        clock.now += 6
        return "not json"

    events = await collect(Agent(model=ScriptedModel(slow), clock=clock, limits=Limits(timeout_s=10, retries=9)).run("go"))
    assert events[-1].reason == "timeout" and kinds(events) == ["retry", "end"]  # the 2nd generation is cut mid-stream


async def test_approve_reads_the_run_once_after_taking_its_lease():
    class Counting(MemoryStore):
        reads = 0

        async def get_run(self, run_id):
            self.reads += 1
            return await MemoryStore.get_run(self, run_id)

    async def pay(input, ctx):
        return "paid" if await ctx.approve("Pay?") else "not paid"

    store = Counting()
    agent = Agent(model=ScriptedModel([calls(("pay", {})), final("done")]), tools=[tool(name="pay", description="Pays.", input={}, run=pay)], store=store)
    waiting = (await collect(agent.run("pay")))[-1]
    store.reads = 0
    events = await collect(agent.approve(waiting.run_id, waiting.approval_id, True))
    assert events[-1].type == "final"
    assert store.reads == 1  # once, under the lease: a record read before it could be stale
