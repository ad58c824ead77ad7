"""Durable runs racing each other through a slow store: ``recover()`` and ``resume()`` against a
run that finishes meanwhile, an executor whose lease lapsed while a sync tool blocked, and the
stale copies they hold. A :class:`Gated` store stops chosen calls until the test lets them go, so
each interleaving is played exactly, with no sleeps."""

from __future__ import annotations

import asyncio

import pytest
from helpers import calls, collect, final

from aerix import AerixError, Agent, Invoker, tool
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


class Gated(MemoryStore):
    """A ``MemoryStore`` whose chosen calls wait for the test: ``hold(method, when)`` stops the
    next call of ``method`` whose arguments ``when`` accepts, and returns ``(reached, release)``.
    A read is made first and answered late (the caller gets a copy that may be stale by then);
    a write waits first, then writes. Every record written is kept in ``written``."""

    def __init__(self) -> None:
        super().__init__()
        self.holds: list[tuple[str, object, asyncio.Event, asyncio.Event]] = []
        self.written: list[dict] = []

    def hold(self, method, when=lambda *args: True):
        reached, release = asyncio.Event(), asyncio.Event()
        self.holds.append((method, when, reached, release))
        return reached, release

    async def _gate(self, method, *args):
        for held in self.holds:
            if held[0] == method and held[1](*args):
                self.holds.remove(held)
                held[2].set()
                await held[3].wait()
                return

    async def get_run(self, run_id):
        run = await MemoryStore.get_run(self, run_id)
        await self._gate("get_run", run_id)
        return run

    async def list_runs(self):
        runs = await MemoryStore.list_runs(self)
        await self._gate("list_runs")
        return runs

    async def get_effect(self, key):
        result = await MemoryStore.get_effect(self, key)
        await self._gate("get_effect", key)
        return result

    async def save_run(self, run, revision=None, holder=None):
        await self._gate("save_run", run, holder)
        written = await MemoryStore.save_run(self, run, revision, holder)
        if written:
            self.written.append(run)
        return written

    async def put_effect(self, key, result, run_id=None, holder=None):
        await self._gate("put_effect", key, holder)
        return await MemoryStore.put_effect(self, key, result, run_id, holder)


def never_set_back(written: list[dict]) -> None:
    """Once a run's record ended, no later write changed it."""
    ended: dict[str, dict] = {}
    for run in written:
        if run["id"] in ended:
            assert run == ended[run["id"]], f"the ended run {run['id']} was written over: {run['status']}"
        if run["status"] in ("completed", "failed", "cancelled"):
            ended[run["id"]] = run


async def reach(held: asyncio.Event) -> None:
    """Wait for a held call to be reached (a bounded wait: a call never made fails the test)."""
    await asyncio.wait_for(held.wait(), 10)


async def until(condition) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


def gated_work(gate: asyncio.Event, ran: list[str]):
    async def work(input, ctx):
        ran.append("work")
        await gate.wait()
        return "worked"

    return tool(name="work", description="Works.", input={}, run=work)


# -- 2. recover() never sets back a run that finished after it was listed ----------------------


async def test_recover_does_not_set_back_a_run_that_ended_after_it_was_listed():
    store, gate, ran = Gated(), asyncio.Event(), []
    tools = [gated_work(gate, ran)]
    a = Agent(model=ScriptedModel([calls(("work", {})), final("done")]), tools=tools, store=store)
    other = Agent(model=ScriptedModel([]), tools=tools, store=store)  # another page, at start-up
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await until(lambda: ran)
    listed, answer = store.hold("list_runs")
    recovering = asyncio.ensure_future(other.recover())
    await reach(listed)  # recover() has read r1 as running ...
    gate.set()
    assert (await first)[-1].text == "done"  # ... and r1 ended (and gave its lease back) meanwhile
    answer.set()
    assert await recovering == [], "an ended run is not offered"
    record = await store.get_run("r1")
    assert record["status"] == "completed" and record["ending"]["text"] == "done"
    never_set_back(store.written)
    assert (await collect(other.resume("r1")))[-1].text == "done" and ran == ["work"], "it does not run again"


async def test_recover_leaves_alone_a_run_that_moved_on_after_it_was_listed():
    # the run checkpointed after the listing and is waiting now, not running: recover reads it
    # again under the lease, so it neither writes the older copy nor calls it interrupted
    store = Gated()

    async def pay(input, ctx):
        return "paid" if await ctx.approve("Pay?") else "not paid"

    tools = [tool(name="pay", description="Pays.", input={}, run=pay)]
    a = Agent(model=ScriptedModel([calls(("pay", {})), final("done")]), tools=tools, store=store)
    other = Agent(model=ScriptedModel([]), tools=tools, store=store)
    first_save, go_on = store.hold("save_run", lambda run, holder: run["status"] == "running" and run["checkpoint"]["generations"] == 1)
    started = asyncio.ensure_future(collect(a.run("pay", run_id="r1")))
    await reach(first_save)
    listed, answer = store.hold("list_runs")
    recovering = asyncio.ensure_future(other.recover())
    await reach(listed)
    go_on.set()
    assert (await started)[-1].type == "waiting"
    answer.set()
    (offered,) = await recovering
    assert offered.status == "waiting" and offered.pending_approval() is not None
    assert (await store.get_run("r1"))["status"] == "waiting"


# -- 7. resume() takes the lease before it reads the run ---------------------------------------


async def test_resume_reads_the_run_under_its_lease_not_before():
    store, gate, ran = Gated(), asyncio.Event(), []
    tools = [gated_work(gate, ran)]
    a = Agent(model=ScriptedModel([calls(("work", {})), final("done")]), tools=tools, store=store)
    b_model = ScriptedModel([calls(("work", {})), final("again")])
    b = Agent(model=b_model, tools=tools, store=store)
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await until(lambda: ran)
    read, answer = store.hold("get_run", lambda run_id: run_id == "r1")
    second = asyncio.ensure_future(collect(b.resume("r1")))
    await asyncio.sleep(0)  # b reads r1 (if it reads before it takes the lease) or is refused
    gate.set()
    assert (await first)[-1].text == "done"  # r1 ended, its lease given back
    answer.set()
    try:
        events = await second
    except AerixError as e:
        assert e.kind == "busy"  # it took the lease first: r1 was executing
        events = await collect(b.resume("r1"))
    assert [e.type for e in events] == ["final"] and events[0].text == "done", "the ending again, nothing run"
    assert ran == ["work"] and b_model.calls == []
    never_set_back(store.written)


# -- 8. fencing: an executor whose lease lapsed while it was blocked writes nothing more --------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def blocking_tools(clock: Clock, sent: list[str]):
    def block(input, ctx):  # a sync tool: the event loop, and the lease's keeper, stand still
        clock.now += 100.0  # past the lease (30 s)
        return "blocked a while"

    def send(input, ctx):
        sent.append(input["to"])
        return f"sent to {input['to']}"

    return [
        tool(name="block", description="Blocks.", input={}, run=block),
        tool(name="send", description="Sends.", input={"to": {"type": "string", "required": True}}, run=send, effect=True),
    ]


def two_executors(store, clock, sent, a_replies, b_replies):
    tools = blocking_tools(clock, sent)
    a = Agent(model=ScriptedModel(a_replies), tools=tools, store=store, clock=clock)
    b = Agent(model=ScriptedModel(b_replies), tools=tools, store=store, clock=clock)
    return a, b


async def test_an_executor_whose_lease_lapsed_during_a_sync_tool_does_not_write_over_the_new_one():
    store, clock, sent = Gated(), Clock(), []
    a, b = two_executors(store, clock, sent, [calls(("block", {})), final("A's answer")], [final("B's answer")])
    # a's first write after the sync tool (its checkpoint with the result) waits: b takes over then
    after_block, go_on = store.hold("save_run", lambda run, holder: "blocked" in str(run["checkpoint"]["pending"]))  # a's: b has not begun
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await reach(after_block)
    taken_over = await collect(b.resume("r1"))  # a's lease expired at 1030; the clock reads 1100
    assert taken_over[-1].text == "B's answer"
    go_on.set()
    events = await first
    assert events[-1].type == "end" and "lease" in events[-1].message, "a stops: another executor has the run"
    assert [e.type for e in events].count("final") == 0, "a yields no ending of its own"
    record = await store.get_run("r1")
    assert record["status"] == "completed" and record["ending"]["text"] == "B's answer", "b's ending stands"
    never_set_back(store.written)


async def test_an_executor_whose_lease_lapsed_does_not_record_over_the_new_ones_effect():
    store, clock, sent = Gated(), Clock(), []
    a, b = two_executors(store, clock, sent, [calls(("send", {"to": "ana"}), ("block", {})), final("A")], [final("B")])
    # a sends, then blocks (lease lapses) and its checkpoint after the block waits; b takes over
    # from the checkpoint after the send and ends; then a goes on
    after_block, go_on = store.hold("save_run", lambda run, holder: "blocked" in str(run["checkpoint"]["pending"]))  # a's: b has not begun
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await reach(after_block)
    assert (await collect(b.resume("r1")))[-1].text == "B"
    effects = dict(store._effects)
    go_on.set()
    assert (await first)[-1].type == "end"
    assert store._effects == effects and sent == ["ana"], "a records no effect and applies none once b has the run"
    assert (await store.get_run("r1"))["ending"]["text"] == "B"
    never_set_back(store.written)


async def test_a_stale_executors_effect_record_is_refused():
    store, clock, sent = Gated(), Clock(), []
    a, b = two_executors(store, clock, sent, [calls(("send", {"to": "ana"})), final("A")], [final("B")])
    # a applies the effect; before its record lands its lease lapses and b takes the run over
    recording, go_on = store.hold("put_effect")  # a's: b has not begun
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await reach(recording)
    clock.now += 100.0
    assert (await collect(b.resume("r1")))[-1].text == "B"  # b applies it again: the outcome of a's was unknown
    (key,) = store._effects
    recorded = store._effects[key]
    go_on.set()
    assert (await first)[-1].type == "end"
    assert store._effects[key] == recorded and (await store.get_run("r1"))["ending"]["text"] == "B"
    never_set_back(store.written)


async def test_a_stale_executor_does_not_apply_an_effect_after_the_run_was_taken_over_and_ended():
    store, clock, sent = Gated(), Clock(), []
    a, b = two_executors(store, clock, sent, [calls(("send", {"to": "ana"})), final("A")], [final("B")])
    # a looks for the effect's record and is slow to hear "none"; meanwhile its lease lapses, b
    # takes the run over, applies the effect, ends and gives the lease back
    looking, answer = store.hold("get_effect")
    first = asyncio.ensure_future(collect(a.run("go", run_id="r1")))
    await reach(looking)
    clock.now += 100.0
    assert (await collect(b.resume("r1")))[-1].text == "B"
    answer.set()
    assert (await first)[-1].type == "end"
    assert sent == ["ana"], "the effect is applied once: a's lease could be taken again, but the run had moved on"
    assert (await store.get_run("r1"))["ending"]["text"] == "B"
    never_set_back(store.written)


async def test_a_store_that_answers_a_save_with_none_is_a_clear_store_failure():
    class Unconditional(MemoryStore):  # written before revisions, with a signature that still binds
        async def save_run(self, run, *args):
            await MemoryStore.save_run(self, run)

    events = await collect(Agent(model=ScriptedModel([final("hi")]), store=Unconditional()).run("go"))
    assert events[-1].type == "end" and "before revisions" in events[-1].message


def test_a_store_written_before_revisions_is_refused_when_the_agent_is_made():
    class Old(MemoryStore):
        async def save_run(self, run):
            await MemoryStore.save_run(self, run)

        async def put_effect(self, key, result):
            await MemoryStore.put_effect(self, key, result)

    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), store=Old())
    assert e.value.kind == "options" and "save_run and put_effect take no revision and holder" in e.value.message


# -- 15. idempotency keys are scoped to their invoker; a refusal says nothing of another's run --


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ((Invoker("a/b"), "c"), (Invoker("a"), "b/c")),  # '/' in an id
        ((Invoker("ana", kind="user:x"), "k"), (Invoker("x:ana", kind="user"), "k")),  # ':' in a kind or an id
        ((None, "user:ana/k"), (Invoker("ana"), "k")),  # a key without an invoker that reads as an invoker's
        ((None, "-/user:ana/k"), (None, "user:ana/k")),  # and the form that escape takes
        ((Invoker("%3A"), "k"), (Invoker(":"), "k")),
    ],
)
async def test_idempotency_keys_of_different_invokers_never_meet(one, other):
    store = MemoryStore()
    first = Agent(model=ScriptedModel([final("first's answer")]), store=store)
    second = Agent(model=ScriptedModel([final("second's answer")]), store=store)
    (who, key), (who2, key2) = one, other
    mine = await collect(first.run("the same words", idempotency_key=key, invoker=who))
    theirs = await collect(second.run("the same words", idempotency_key=key2, invoker=who2))
    assert mine[-1].text == "first's answer" and theirs[-1].text == "second's answer", "another invoker's key is another run"
    assert len({r.idempotency_key for r in await first.runs()}) == 2


async def test_a_run_id_of_another_invokers_run_is_refused_without_telling_of_it():
    store = MemoryStore()
    agent = Agent(model=ScriptedModel([final("the secret answer")]), store=store)
    await collect(agent.run("ana's private prompt", run_id="r1", invoker=Invoker("ana")))
    for prompt in ("ana's private prompt", "another prompt"):
        with pytest.raises(AerixError) as e:
            await agent.start(prompt, run_id="r1", invoker=Invoker("eve"))
        assert e.value.kind == "options" and "run id 'r1' is taken" in e.value.message
        assert "private" not in e.value.message and "ana" not in e.value.message
    legacy = Agent(model=ScriptedModel([]), store=store)
    # a run kept before keys were scoped, whose raw key reads as ana's scoped one: refused, saying nothing of it
    await store.create_run({**(await store.get_run("r1")), "id": "old", "idempotency_key": "user:ana/k", "invoker": None, "created_at": 2.0})
    with pytest.raises(AerixError) as e:
        await legacy.start("ana's private prompt", idempotency_key="k", invoker=Invoker("ana"))
    assert "idempotency key 'k' was used by another request" in e.value.message and "old" not in e.value.message


async def test_bad_run_ids_and_idempotency_keys_are_refused():
    agent = Agent(model=ScriptedModel([]), store=MemoryStore())
    for bad in ("", 5, ["k"]):
        for field in ("run_id", "idempotency_key"):
            with pytest.raises(AerixError) as e:
                await agent.start("go", **{field: bad})
            assert e.value.kind == "options" and field in e.value.message


# -- a run belongs to the Agent (by name) that started it ---------------------------------------


async def test_an_agent_of_another_name_may_not_resume_answer_or_recover_a_run():
    store = MemoryStore()

    async def pay(input, ctx):
        return "paid" if await ctx.approve("Pay?") else "not paid"

    tools = [tool(name="pay", description="Pays.", input={}, run=pay)]
    planner = Agent(model=ScriptedModel([calls(("pay", {})), final("done")]), tools=tools, store=store, name="planner")
    waiting = (await collect(planner.run("pay", run_id="r1")))[-1]
    assert (await planner.get_run("r1")).agent == "planner"
    writer = Agent(model=ScriptedModel([final("hijacked")]), tools=tools, store=store, name="writer")
    for attempt in (lambda: writer.resume("r1"), lambda: writer.approve("r1", waiting.approval_id, True)):
        with pytest.raises(AerixError) as e:
            await collect(attempt())
        assert e.value.kind == "options" and "'planner'" in e.value.message
    assert await writer.recover() == []
    with pytest.raises(AerixError):
        await writer.start("pay", run_id="r1")
    assert (await planner.recover())[0].id == "r1"
    assert (await collect(planner.approve("r1", waiting.approval_id, True)))[-1].text == "done"


async def test_a_run_recorded_before_agent_names_is_anyones():
    store = MemoryStore()
    await store.create_run({"id": "r1", "prompt": "go", "status": "queued", "created_at": 1.0, "updated_at": 1.0})  # no agent, no revision
    agent = Agent(model=ScriptedModel([final("ok")]), store=store, name="any")
    assert (await collect(agent.resume("r1")))[-1].text == "ok"
    record = await store.get_run("r1")
    assert record["status"] == "completed" and record["revision"] > 0
