"""Agent state by item (issue 26): on a store with the state item methods a collection write
costs the same however much the state holds, writers of different items never undo each other,
and a state kept whole by an older aerix moves into items; a store without them keeps working."""

from __future__ import annotations

import asyncio
import json

import pytest
from helpers import calls, collect, final
from pydantic import BaseModel

from aerix import AerixError, Agent
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel


class Todo(BaseModel):
    id: str
    title: str


class WholeStore(MemoryStore):
    get_state_items = get_state_item = put_state_items = None


class Yielding(MemoryStore):
    """A store whose every state method lets other tasks run first, as a real store's I/O does;
    and which records the size of every state write."""

    def __init__(self):
        super().__init__()
        self.written: list[int] = []

    async def get_state(self, agent):
        await asyncio.sleep(0)
        return await MemoryStore.get_state(self, agent)

    async def put_state(self, agent, state):
        await asyncio.sleep(0)
        self.written.append(len(json.dumps(state)))
        await MemoryStore.put_state(self, agent, state)

    async def get_state_item(self, agent, key):
        await asyncio.sleep(0)
        return await MemoryStore.get_state_item(self, agent, key)

    async def put_state_items(self, agent, items):
        await asyncio.sleep(0)
        self.written.append(len(json.dumps(items)))
        await MemoryStore.put_state_items(self, agent, items)


def agent(store, replies=(), **options):
    return Agent(model=ScriptedModel(list(replies)), name="planner", store=store, state={"todos": Todo}, **options)


async def test_a_collection_write_costs_the_same_however_many_documents_there_are():
    store = Yielding()
    todos = agent(store).state.collection("todos")
    for i in range(300):
        await todos.upsert({"id": f"t{i:03}", "title": "Buy milk"})
    first, last = store.written[0], store.written[-1]
    assert last == first, f"the 300th write sent {last} bytes, the first {first}: a write must not carry the whole state"
    assert len(await todos.list()) == 300


async def test_two_agents_writing_different_documents_at_once_lose_neither():
    store = Yielding()
    first, second = agent(store), agent(store)
    await asyncio.gather(
        *(first.state.collection("todos").upsert({"id": f"a{i}", "title": "A"}) for i in range(5)),
        *(second.state.collection("todos").upsert({"id": f"b{i}", "title": "B"}) for i in range(5)),
        first.state.set("theme", "dark"),
        second.state.set("size", 3),
    )
    reader = agent(store)
    ids = {t.id for t in await reader.state.collection("todos").list()}
    assert ids == {f"a{i}" for i in range(5)} | {f"b{i}" for i in range(5)}, "a write of one Agent undid the other's"
    assert (reader.state.get("theme"), reader.state.get("size")) == ("dark", 3)


async def test_a_store_without_the_item_methods_keeps_the_state_whole():
    store = WholeStore()
    a = agent(store)
    await a.state.collection("todos").upsert({"id": "t1", "title": "Buy milk"})
    await a.state.set("theme", "dark")
    kept = await store.get_state("planner")
    assert kept["collections"] == {"todos": {"t1": {"id": "t1", "title": "Buy milk"}}} and kept["values"] == {"theme": "dark"}
    assert kept["version"] == 1 and kept["tainted"] == {}


async def test_a_state_kept_whole_by_an_older_aerix_moves_into_items_at_its_first_load():
    store = MemoryStore()
    older = {"version": 1, "values": {"theme": "dark"}, "collections": {"todos": {"t2": {"id": "t2", "title": "B"}, "t1": {"id": "t1", "title": "A"}}}, "applied": [["r1:state_todos_upsert:x", '{"id": "t2"}']]}
    await store.put_state("planner", older)
    a = agent(store)
    assert [t.id for t in await a.state.collection("todos").list()] == ["t2", "t1"], "the order is kept"
    assert a.state.get("theme") == "dark"
    assert await store.get_state("planner") == {"version": 2, "items": True}
    assert list(await store.get_state_items("planner")) == ["value:theme", "doc:todos:t2", "doc:todos:t1", "applied:r1:state_todos_upsert:x"]
    assert await a.state.applied("r1:state_todos_upsert:x") == '{"id": "t2"}', "an effect mark moves too: a resume after the upgrade applies nothing twice"
    # an older aerix (whole, on the same data) refuses the moved state rather than read it empty
    older_view = WholeStore()
    older_view._state = store._state
    with pytest.raises(AerixError) as e:
        await agent(older_view).state.load()
    assert e.value.kind == "store" and "version 2" in e.value.message


async def test_a_load_that_finds_over_128_effect_marks_keeps_the_last_64():
    store = MemoryStore()
    await store.put_state_items("planner", {f"applied:e{i}": {"result": str(i)} for i in range(130)})
    a = agent(store)
    await a.state.load()
    marks = [k for k in await store.get_state_items("planner") if k.startswith("applied:")]
    assert marks == [f"applied:e{i}" for i in range(66, 130)]
    assert await a.state.applied("e129") == "129" and await a.state.applied("e0") is None


@pytest.mark.parametrize(
    ("items", "words"),
    [
        ({"value:k": {"val": 1}}, "'value:k'"),
        ({"doc:todos:t1": {"value": "not an object"}}, "not an object"),
        ({"other:k": {"value": 1}}, "'other:k'"),
        ({"value:k": {"value": 1, "taint": {"source": 1}}}, "taint"),
    ],
)
async def test_an_item_that_does_not_read_is_a_store_error(items, words):
    store = MemoryStore()
    await store.put_state_items("planner", items)
    with pytest.raises(AerixError) as e:
        await agent(store).state.load()
    assert e.value.kind == "store" and words in e.value.message


def test_a_store_with_some_item_methods_but_not_all_is_an_options_error():
    class Half(MemoryStore):
        put_state_items = None

    with pytest.raises(AerixError) as e:
        agent(Half())
    assert e.value.kind == "options" and "put_state_items" in e.value.message


async def test_state_tools_write_one_item_with_their_effect_mark():
    store = Yielding()
    a = agent(store, [calls(("state_todos_upsert", {"id": "t1", "title": "Buy milk"})), final("ok")], state_tools=True)
    events = await collect(a.run("go", run_id="r1"))
    assert events[-1].type == "final"
    items = await store.get_state_items("planner")
    marks = [k for k in items if k.startswith("applied:")]
    assert len(marks) == 1 and items[marks[0]] == {"result": '{"id": "t1", "title": "Buy milk"}'}
    assert items["doc:todos:t1"] == {"value": {"id": "t1", "title": "Buy milk"}}
