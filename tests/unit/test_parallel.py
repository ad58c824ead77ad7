"""Parallel calls (issue 31, part 4): ``tool(..., parallel=True)`` calls of one turn run together,
their results handed on in the turn's order (aerix.parallel). Concurrency is shown without
timing: tools that each wait for the other finish only when they run together, and the order in
which tools start and end tells one at a time from together."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import Crash, CrashingStore, calls, collect, endings, final, kinds

from aerix import AerixError, Agent, Hooks, Limits, TurnFormat, tool
from aerix.abort import Abort
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

GUARD_S = 10  # only a run that deadlocks (a test that fails) waits this long


def handshake(parallel: bool = True):
    """Two tools that each set their own event and wait for the other's: they finish only if
    they run at the same time (one at a time, the first waits for good)."""
    a, b = asyncio.Event(), asyncio.Event()

    async def ping(input, ctx):
        a.set()
        await b.wait()
        return "ping done"

    async def pong(input, ctx):
        b.set()
        await a.wait()
        return "pong done"

    return [
        tool(name="ping", description="Ping.", input={}, run=ping, parallel=parallel),
        tool(name="pong", description="Pong.", input={}, run=pong, parallel=parallel),
    ]


def tracing(log: list[str], parallel: bool, names=("a", "b")):
    """Tools that log when they start and end, yielding to the event loop in between."""

    def make(name):
        async def run(input, ctx):
            log.append(f"start {name}")
            for _ in range(3):
                await asyncio.sleep(0)
            log.append(f"end {name}")
            return f"{name} done"

        return tool(name=name, description=f"Tool {name}.", input={}, run=run, parallel=parallel)

    return [make(n) for n in names]


def results_message(agent: Agent) -> str:
    return next(m["content"] for m in agent.messages if m["role"] == "user" and "call_1" in m["content"])


async def test_parallel_tools_of_one_turn_run_together():
    agent = Agent(model=ScriptedModel([calls(("ping", {}), ("pong", {})), final("both")]), tools=handshake())
    events = await asyncio.wait_for(collect(agent.run("go")), GUARD_S)
    assert kinds(events) == ["turn", "call", "result", "call", "result", "turn", "final"]
    assert [(e.id, e.text) for e in events if e.type == "result"] == [("call_1", "ping done"), ("call_2", "pong done")]


async def test_the_same_tools_without_parallel_run_one_at_a_time():
    log: list[str] = []
    agent = Agent(model=ScriptedModel([calls(("a", {}), ("b", {})), final("ok")]), tools=tracing(log, parallel=False))
    await collect(agent.run("go"))
    assert log == ["start a", "end a", "start b", "end b"]
    # and the handshake, one at a time, never finishes: ping waits for pong, which never starts
    stuck = Agent(model=ScriptedModel([calls(("ping", {}), ("pong", {})), final("x")]), tools=handshake(parallel=False))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(collect(stuck.run("go")), 0.2)


async def test_with_parallel_they_start_together_and_a_call_alone_waits_for_the_group():
    log: list[str] = []
    alone = tracing(log, parallel=False, names=("c",))
    agent = Agent(model=ScriptedModel([calls(("a", {}), ("b", {}), ("c", {})), final("ok")]), tools=tracing(log, parallel=True) + alone)
    events = await collect(agent.run("go"))
    assert log[:2] == ["start a", "start b"] and log[4:] == ["start c", "end c"]
    assert [e.tool for e in events if e.type == "result"] == ["a", "b", "c"]


async def test_results_go_back_in_the_turns_order_though_the_later_call_finishes_first():
    done = asyncio.Event()
    order: list[str] = []

    async def slow(input, ctx):
        await done.wait()
        order.append("slow")
        return "slow result"

    async def fast(input, ctx):
        order.append("fast")
        done.set()
        return "fast result"

    tools = [tool(name="slow", description="Slow.", input={}, run=slow, parallel=True), tool(name="fast", description="Fast.", input={}, run=fast, parallel=True)]
    agent = Agent(model=ScriptedModel([calls(("slow", {}), ("fast", {})), final("ok")]), tools=tools)
    events = await asyncio.wait_for(collect(agent.run("go")), GUARD_S)
    assert order == ["fast", "slow"]
    shown = [(e.type, e.id) for e in events if e.type in ("call", "result")]
    assert shown == [("call", "call_1"), ("result", "call_1"), ("call", "call_2"), ("result", "call_2")]
    message = results_message(agent)
    assert message.index("slow result") < message.index("fast result")


async def test_a_tool_that_raises_is_its_own_error_result_and_the_others_go_on():
    async def broken(input, ctx):
        await asyncio.sleep(0)
        raise RuntimeError("disk on fire")

    tools = handshake() + [tool(name="broken", description="Breaks.", input={}, run=broken, parallel=True)]
    agent = Agent(model=ScriptedModel([calls(("ping", {}), ("broken", {}), ("pong", {})), final("ok")]), tools=tools)
    events = await asyncio.wait_for(collect(agent.run("go")), GUARD_S)
    assert [(e.tool, e.text, e.error) for e in events if e.type == "result"] == [
        ("ping", "ping done", False),
        ("broken", "error: disk on fire", True),
        ("pong", "pong done", False),
    ]
    assert events[-1].type == "final"


async def test_an_abort_mid_group_cancels_every_call_still_running_and_the_run_ends_once():
    signal, started, stopped = Abort(), [], []

    async def hang(input, ctx):
        started.append(input["n"])
        try:
            await asyncio.Event().wait()
        finally:
            stopped.append(input["n"])

    async def quick(input, ctx):
        started.append("quick")
        return "quick result"

    async def user():  # stops the run once the three calls started (and quick finished)
        while len(started) < 3:
            await asyncio.sleep(0)
        signal.abort("the user stopped it")

    tools = [
        tool(name="hang", description="Hangs.", input={"n": {"type": "integer", "required": True}}, run=hang, parallel=True),
        tool(name="quick", description="Quick.", input={}, run=quick, parallel=True),
    ]
    agent = Agent(model=ScriptedModel([calls(("hang", {"n": 1}), ("quick", {}), ("hang", {"n": 2})), final("never")]), tools=tools)
    stopping = asyncio.ensure_future(user())
    events = await asyncio.wait_for(collect(agent.run("go", signal=signal)), GUARD_S)
    await stopping
    assert sorted(stopped) == [1, 2], "both hung calls were cancelled and waited for"
    assert len(endings(events)) == 1 and events[-1].type == "end" and events[-1].reason == "abort"
    shown = [(e.type, e.tool, getattr(e, "text", None)) for e in events if e.type in ("call", "result")]
    assert shown == [
        ("result", "hang", "cancelled: the run was aborted"),
        ("call", "quick", None),
        ("result", "quick", "quick result"),  # it finished: it keeps its result
        ("result", "hang", "cancelled: the run was aborted"),
    ]
    assert "quick result" in agent.messages[-1]["content"] and agent.messages[-1]["content"].count("cancelled") == 2


async def test_a_non_parallel_call_between_parallel_ones_splits_the_groups():
    log: list[str] = []
    tools = tracing(log, parallel=True, names=("a", "b")) + tracing(log, parallel=False, names=("c",)) + tracing(log, parallel=True, names=("d", "e"))
    agent = Agent(model=ScriptedModel([calls(("a", {}), ("b", {}), ("c", {}), ("d", {}), ("e", {})), final("ok")]), tools=tools)
    await collect(agent.run("go"))
    assert log[:2] == ["start a", "start b"] and log[4:6] == ["start c", "end c"] and log[6:8] == ["start d", "start e"]


async def test_effect_tools_cannot_be_parallel_and_parallel_must_be_a_bool():
    with pytest.raises(AerixError) as e:
        tool(name="send", description="Send.", input={}, run=lambda i, c: "", effect=True, parallel=True)
    assert e.value.kind == "options" and "parallel=True does not apply to effect=True tools" in e.value.message
    with pytest.raises(AerixError) as e:
        tool(name="send", description="Send.", input={}, run=lambda i, c: "", parallel="yes")
    assert e.value.kind == "options" and "parallel must be True or False" in e.value.message

    @tool(parallel=True)
    def look(word: str) -> str:
        """Look a word up."""
        return word

    assert look.parallel and not tool(name="x", description="X.", input={}, run=lambda i, c: "").parallel


async def test_a_guarded_tool_runs_alone_after_the_calls_before_it():
    log: list[str] = []
    guarded = tool(name="post", description="Post.", input={}, run=lambda i, c: log.append("post") or "posted", parallel=True, trust={"guard_when_tainted": True})
    agent = Agent(model=ScriptedModel([calls(("a", {}), ("post", {}), ("b", {})), final("ok")]), tools=tracing(log, parallel=True) + [guarded])
    await collect(agent.run("go"))
    assert log == ["start a", "end a", "post", "start b", "end b"]


async def test_taint_is_handed_on_in_the_turns_order_before_the_model_sees_it():
    first_done = asyncio.Event()

    async def page(input, ctx):
        await first_done.wait()  # finishes after the mail
        return "page text"

    async def mail(input, ctx):
        first_done.set()
        return "mail text"

    tools = [
        tool(name="page", description="Read a page.", input={}, run=page, parallel=True, trust={"taint": True}),
        tool(name="mail", description="Read mail.", input={}, run=mail, parallel=True, trust={"taint": True}),
    ]
    agent = Agent(model=ScriptedModel([calls(("page", {}), ("mail", {})), final("ok")]), tools=tools)
    events = await asyncio.wait_for(collect(agent.run("go")), GUARD_S)
    assert kinds(events) == ["turn", "call", "taint", "result", "call", "result", "turn", "final"]
    assert [(e.source, e.at) for e in events if e.type == "taint"] == [("page", "call_1")]  # the first in turn order, though mail came first
    assert agent._conversation.taint == {"source": "page", "at": "call_1"}


async def test_the_repeat_guard_sees_what_it_sees_one_call_at_a_time():
    runs: list[int] = []

    async def look(input, ctx):
        runs.append(input["n"])
        await asyncio.sleep(0)
        return f"looked {input['n']}"

    look_tool = tool(name="look", description="Look.", input={"n": {"type": "integer", "required": True}}, run=look, parallel=True)
    script = [calls(("look", {"n": 1}), ("look", {"n": 1}), ("look", {"n": 2})), calls(("look", {"n": 2}), ("look", {"n": 3})), final("ok")]
    agent = Agent(model=ScriptedModel(script), tools=[look_tool], turn_format=TurnFormat(duplicate_calls="keep"))
    events = await collect(agent.run("go"))
    results = [(e.id, e.text.split("\n")[0] if e.repeat_of else e.text, e.repeat_of) for e in events if e.type == "result"]
    assert [r[2] for r in results] == [None, "call_1", None, "call_3", None]
    assert runs == [1, 2, 3], "a repeat ran no tool again"
    # three in a row of the same call still ends the run `loop`
    looping = Agent(model=ScriptedModel([calls(*[("look", {"n": 9})] * 3), final("x")]), tools=[look_tool], turn_format=TurnFormat(duplicate_calls="keep"))
    events = await collect(looping.run("go"))
    assert events[-1].type == "end" and events[-1].reason == "loop"


async def test_agents_as_parallel_tools_run_their_sub_runs_together():
    sub_tools = handshake()  # the two sub-agents' own tools wait for each other
    north = Agent(name="north", model=ScriptedModel([calls(("ping", {})), final("north done")]), tools=[sub_tools[0]])
    south = Agent(name="south", model=ScriptedModel([calls(("pong", {})), final("south done")]), tools=[sub_tools[1]])
    boss = Agent(
        model=ScriptedModel([calls(("north", {"task": "go north"}), ("south", {"task": "go south"})), final("both back")]),
        tools=[north.as_tool("north", "Goes north.", parallel=True), south.as_tool("south", "Goes south.", parallel=True)],
    )
    events = await asyncio.wait_for(collect(boss.run("go")), GUARD_S)
    assert [(e.tool, e.text) for e in events if e.type == "result"] == [("north", "north done"), ("south", "south done")]
    assert events[-1].type == "final" and len(endings(events)) == 1
    for call_id in ("call_1", "call_2"):  # each sub-run's events come after its own call event
        at = next(i for i, e in enumerate(events) if e.type == "call" and e.id == call_id)
        assert all(i > at for i, e in enumerate(events) if e.type == "subagent" and e.call_id == call_id)
        assert any(e.type == "subagent" and e.call_id == call_id for e in events)


# -- durable runs ------------------------------------------------------------------------------


class Replies:
    """A model whose reply depends only on the conversation so far; it counts what it was asked."""

    def __init__(self, replies):
        self.replies, self.asked = replies, []

    def model(self):
        def reply(messages, options):
            self.asked.append(json.dumps(messages))
            return self.replies[sum(1 for m in messages if m["role"] == "assistant")]

        return ScriptedModel(reply)


def counting_tools(runs: dict[str, int]):
    def make(name):
        async def run(input, ctx):
            runs[name] = runs.get(name, 0) + 1
            await asyncio.sleep(0)
            return f"{name} result"

        return tool(name=name, description=f"Tool {name}.", input={}, run=run, parallel=True)

    return [make("a"), make("b")]


async def test_a_durable_run_checkpoints_each_result_of_a_group():
    store, runs = CrashingStore(), {}
    agent = Agent(model=Replies([calls(("a", {}), ("b", {})), final("ok")]).model(), tools=counting_tools(runs), store=store)
    await collect(agent.run("go"))
    # start + generation 1 + 2 results + results fed back + generation 2 + the ending
    assert store.count == 7 and runs == {"a": 1, "b": 1}


@pytest.mark.parametrize("at", range(1, 7))
async def test_a_durable_run_with_parallel_calls_resumes_after_a_crash(at):
    store, runs, replies = CrashingStore(at=at), {}, Replies([calls(("a", {}), ("b", {})), final("ok")])
    first = Agent(model=replies.model(), tools=counting_tools(runs), store=store)
    with pytest.raises(Crash):
        await collect(first.run("go", run_id="r1"))
    second = Agent(model=replies.model(), tools=counting_tools(runs), store=store)
    assert [r.id for r in await second.recover()] == ["r1"]
    events = await collect(second.resume("r1"))
    assert events[-1].type == "final" and len(endings(events)) == 1
    assert len(set(replies.asked)) == len(replies.asked) == 2, "every generation was asked once"
    # a result checkpointed is not run again; b, which ran with a but was not yet checkpointed
    # when the page died at a's checkpoint (write 3), runs again
    assert runs == {"a": 1, "b": 2 if at == 3 else 1}
    message = next(m["content"] for m in second.messages if "call_1" in m["content"] and m["role"] == "user")
    assert message.index("a result") < message.index("b result")


async def test_a_call_of_a_group_that_waits_for_an_approval_pauses_the_run_and_runs_again():
    runs: dict[str, int] = {}
    a_done = asyncio.Event()

    async def pay(input, ctx):
        runs["pay"] = runs.get("pay", 0) + 1
        await a_done.wait()  # a is handed on before pay asks
        return "paid" if await ctx.approve("Pay?") else "not paid"

    async def a(input, ctx):
        runs["a"] = runs.get("a", 0) + 1
        a_done.set()
        return "a result"

    tools = [tool(name="pay", description="Pay.", input={}, run=pay, parallel=True), tool(name="a", description="A.", input={}, run=a, parallel=True), counting_tools(runs)[1]]
    agent = Agent(model=ScriptedModel([calls(("a", {}), ("pay", {}), ("b", {})), final("ok")]), tools=tools, store=MemoryStore())
    events = await collect(agent.run("go", run_id="r1"))
    assert kinds(events)[0] == "turn" and events[-1].type == "waiting" and events[-1].approval_id == "call_2.1"
    answered = await collect(agent.approve("r1", "call_2.1", True))
    shown = events + answered
    assert [(e.tool, e.text) for e in shown if e.type == "result"] == [("a", "a result"), ("pay", "paid"), ("b", "b result")]
    assert answered[-1].type == "final" and len(endings(shown)) == 1
    # a was handed on (recorded) before pay waited; pay runs again from its start, as alone; b,
    # stopped or dropped when pay waited, runs again with it
    assert runs == {"a": 1, "pay": 2, "b": 2}
    assert [e.tool for e in events if e.type == "call"] == ["a"]


class InterleavingStore(MemoryStore):
    """A store whose saves take a varying number of event-loop turns, as a real one's I/O does."""

    def __init__(self):
        super().__init__()
        self.saves = 0

    async def save_run(self, run, revision=None, holder=None):
        self.saves += 1
        for _ in range(3 - self.saves % 3):
            await asyncio.sleep(0)
        return await MemoryStore.save_run(self, run, revision, holder)


async def test_durable_sub_runs_in_a_group_checkpoint_one_save_at_a_time():
    sub_tools = counting_tools({})
    north = Agent(name="north", model=ScriptedModel([calls(("a", {})), final("north done")]), tools=[sub_tools[0]])
    south = Agent(name="south", model=ScriptedModel([calls(("b", {})), final("south done")]), tools=[sub_tools[1]])
    boss = Agent(
        model=ScriptedModel([calls(("north", {"task": "n"}), ("south", {"task": "s"})), final("both back")]),
        tools=[north.as_tool("north", "Goes north.", parallel=True), south.as_tool("south", "Goes south.", parallel=True)],
        store=InterleavingStore(),
    )
    events = await collect(boss.run("go"))
    assert events[-1].type == "final", events[-1]
    assert [(e.tool, e.text) for e in events if e.type == "result"] == [("north", "north done"), ("south", "south done")]


async def test_hooks_and_limits_run_for_each_call_of_a_group():
    seen: list[str] = []

    def before(call, ctx):
        seen.append(call.id)
        return {"deny": "not today"} if call.tool == "pong" else None

    agent = Agent(
        model=ScriptedModel([calls(("a", {}), ("pong", {})), final("ok")]),
        tools=tracing([], parallel=True, names=("a",)) + handshake()[1:],
        hooks=Hooks(before_call=before),
        limits=Limits(turns=2),
    )
    events = await asyncio.wait_for(collect(agent.run("go")), GUARD_S)
    assert sorted(seen) == ["call_1", "call_2"]
    assert [(e.tool, e.text) for e in events if e.type == "result"] == [("a", "a done"), ("pong", "refused: not today")]
