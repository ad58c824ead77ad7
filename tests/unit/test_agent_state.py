"""Agent state (issue 19, point 3): key-value JSON and typed collections, kept per agent name in
the Agent's store (memory without one); state tools, applied once across resume."""

from __future__ import annotations

from typing import Literal

import pytest
from helpers import calls, collect, final
from pydantic import BaseModel, field_validator

from aerix import AerixError, Agent, tool
from aerix.agent_state import AgentState, models_from_field_maps
from aerix.page import create_agent
from aerix.stores import MemoryStore
from aerix.stores.sqlite import SQLiteStore
from aerix.testing import ScriptedModel


class Todo(BaseModel):
    id: str
    title: str
    done: bool = False

    @field_validator("title")
    @classmethod
    def not_blank(cls, title: str) -> str:
        if not title.strip():
            raise ValueError("a title is not blank")
        return title


class Note(BaseModel):
    id: str
    text: str
    kind: Literal["idea", "fact"] = "idea"


class Crash(BaseException):
    """The page dies: nothing after it runs, no clean-up (a BaseException, as in test_durable)."""


class WholeStore(MemoryStore):
    """A store without the state item methods: agent state is kept whole (get_state/put_state)."""

    get_state_items = get_state_item = put_state_items = None


class CrashingStore(MemoryStore):
    """A store that dies right after its n-th write of a kind, and counts state writes (by item,
    or whole with ``whole=True``)."""

    def __init__(self, what=None, at=1, whole=False):
        super().__init__()
        self.what, self.at, self.counts = what, at, {}
        if whole:
            self.get_state_items = self.get_state_item = self.put_state_items = None

    async def _after(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1
        if what == self.what and self.counts[what] == self.at:
            self.what = None
            raise Crash(f"{what} #{self.at}")

    async def save_run(self, run, revision=None, holder=None):
        written = await MemoryStore.save_run(self, run, revision, holder)
        await self._after("save_run")
        return written

    async def put_effect(self, key, result, run_id=None, holder=None):
        written = await MemoryStore.put_effect(self, key, result, run_id, holder)
        await self._after("put_effect")
        return written

    async def put_state(self, agent, state):
        await MemoryStore.put_state(self, agent, state)
        await self._after("state")

    async def put_state_items(self, agent, items):
        await MemoryStore.put_state_items(self, agent, items)
        await self._after("state")


def agent(store=None, replies=(), name="planner", **options):
    return Agent(model=ScriptedModel(list(replies)), name=name, store=store, state={"todos": Todo, "notes": Note}, **options)


def results(events):
    return [(e.text, e.error) for e in events if e.type == "result"]


# -- key-value -------------------------------------------------------------------------------


async def test_get_and_set_json_values_in_memory():
    a = agent()
    assert a.state.get("theme") is None and a.state.get("theme", "light") == "light"
    await a.state.set("theme", "dark")
    await a.state.set("prefs", {"size": 3, "tags": ["a", "b"], "on": True, "none": None})
    assert a.state.get("theme") == "dark"
    prefs = a.state.get("prefs")
    prefs["tags"].append("changed")  # a copy: the state keeps its own
    assert a.state.get("prefs") == {"size": 3, "tags": ["a", "b"], "on": True, "none": None}
    await a.state.set("off", False)
    await a.state.delete("off")
    await a.state.delete("never-set")
    assert a.state.get("off", "gone") == "gone"


@pytest.mark.parametrize("value", [object(), (1, 2), {1: "a"}, float("nan"), {"s": {1, 2}}])
async def test_a_value_that_is_not_json_is_an_options_error(value):
    a = agent()
    with pytest.raises(AerixError) as e:
        await a.state.set("k", value)
    assert e.value.kind == "options" and "'k'" in e.value.message
    assert a.state.get("k") is None


async def test_a_bad_key_is_an_options_error():
    a = agent()
    for key in ("", 3, None):
        with pytest.raises(AerixError) as e:
            a.state.get(key)
        assert e.value.kind == "options"
        with pytest.raises(AerixError):
            await a.state.set(key, 1)


# -- collections -------------------------------------------------------------------------------


async def test_collections_list_get_upsert_remove():
    todos = agent().state.collection("todos")
    assert await todos.list() == [] and await todos.get("t1") is None
    milk = await todos.upsert({"id": "t1", "title": "Buy milk"})
    assert isinstance(milk, Todo) and milk == Todo(id="t1", title="Buy milk")
    await todos.upsert(Todo(id="t2", title="Call Ana"))
    await todos.upsert({"id": "t1", "title": "Buy milk", "done": True})  # replaced, in its place
    assert [(t.id, t.done) for t in await todos.list()] == [("t1", True), ("t2", False)]
    assert (await todos.get("t2")).title == "Call Ana"
    assert await todos.remove("t1") is True and await todos.remove("t1") is False
    assert [t.id for t in await todos.list()] == ["t2"]


@pytest.mark.parametrize(
    ("doc", "field"),
    [({"id": "t1"}, "title"), ({"id": "t1", "title": "  "}, "title"), ({"title": "x"}, "id"), ({"id": "t1", "title": "x", "done": "maybe"}, "done")],
)
async def test_a_document_that_fails_its_model_is_an_options_error_naming_the_field(doc, field):
    a = agent()
    with pytest.raises(AerixError) as e:
        await a.state.collection("todos").upsert(doc)
    assert e.value.kind == "options" and f"{field}:" in e.value.message and "todos" in e.value.message
    assert await a.state.collection("todos").list() == []


async def test_bad_collection_calls_are_options_errors():
    a = agent()
    with pytest.raises(AerixError) as unknown:
        a.state.collection("nope")
    assert unknown.value.kind == "options" and "'nope'" in unknown.value.message
    todos = a.state.collection("todos")
    for call in (lambda: todos.upsert("t1"), lambda: todos.upsert({"id": "", "title": "x"}), lambda: todos.get(3), lambda: todos.remove("")):
        with pytest.raises(AerixError) as e:
            await call()
        assert e.value.kind == "options"


class NoId(BaseModel):
    title: str


class IntId(BaseModel):
    id: int


class OptionalId(BaseModel):
    id: str = "default"


class Nested(BaseModel):
    id: str
    tags: list[str]


@pytest.mark.parametrize(
    ("state", "words"),
    [
        ({"todos": NoId}, "id: str"),
        ({"todos": IntId}, "id: str"),
        ({"todos": OptionalId}, "id: str"),
        ({"todos": dict}, "pydantic model"),
        ({"todos": "Todo"}, "pydantic model"),
        ({"To-dos": Todo}, "must match"),
        ({"": Todo}, "must match"),
        ({"x" * 60: Todo}, "must match"),
        ([Todo], "dict of collection name"),
    ],
)
def test_a_bad_collection_is_an_options_error_at_construction(state, words):
    with pytest.raises(AerixError) as e:
        Agent(model=ScriptedModel([]), state=state)
    assert e.value.kind == "options" and words in e.value.message


def test_bad_state_tools_options_are_options_errors():
    for options, words in (
        ({"state_tools": True}, "state={name: Model}"),
        ({"state": {"todos": Todo}, "state_tools": "yes"}, "True or False"),
        ({"state": {"todos": Todo}, "state_tools": True, "tools": [tool(name="state_todos_list", description="Mine.", input={}, run=lambda i: "x")]}, "two tools"),
    ):
        with pytest.raises(AerixError) as e:
            Agent(model=ScriptedModel([]), **options)
        assert e.value.kind == "options" and words in e.value.message, e.value.message
    Agent(model=ScriptedModel([]), state={"todos": Nested})  # nested fields are fine without state tools
    nested = Agent(model=ScriptedModel([]), state={"todos": Nested}, state_tools=True)  # and with them: a rich tool input
    assert nested.tool_named("state_todos_upsert").input_schema()["properties"]["tags"] == {"items": {"type": "string"}, "type": "array"}


def test_the_system_message_changes_only_with_state_tools():
    plain = Agent(model=ScriptedModel([]))
    assert Agent(model=ScriptedModel([]), state={"todos": Todo}).system == plain.system
    with_tools = Agent(model=ScriptedModel([]), state={"todos": Todo}, state_tools=True)
    assert [t.name for t in with_tools.tools] == ["state_todos_list", "state_todos_upsert", "state_todos_remove"]
    assert "## state_todos_upsert" in with_tools.system and "- title (string, required)" in with_tools.system
    upsert = with_tools.tool_named("state_todos_upsert")
    assert upsert.effect and upsert.input_schema()["required"] == ["id", "title"]
    assert with_tools.tool_named("state_todos_remove").input_schema()["properties"] == {"id": {"type": "string"}}


# -- persistence -----------------------------------------------------------------------------


@pytest.fixture(params=["memory", "whole", "sqlite"])
def stores(request, tmp_path):
    """Two stores on the same data: the same MemoryStore twice (by item, or whole), or two
    SQLite connections."""
    if request.param in ("memory", "whole"):
        store = MemoryStore() if request.param == "memory" else WholeStore()
        yield store, store
        return
    path = str(tmp_path / "state.sqlite3")
    first, second = SQLiteStore(path), SQLiteStore(path)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


async def test_state_persists_across_two_agents_on_one_store(stores):
    first_store, second_store = stores
    first = agent(first_store)
    await first.state.set("theme", "dark")
    await first.state.collection("todos").upsert({"id": "t1", "title": "Buy milk"})
    await first.state.collection("notes").upsert({"id": "n1", "text": "héllo ✓", "kind": "fact"})
    second = agent(second_store)
    with pytest.raises(AerixError) as e:
        second.state.get("theme")  # nothing loaded yet: a clear error, never an empty answer
    assert e.value.kind == "options" and "load()" in e.value.message
    assert [t.title for t in await second.state.collection("todos").list()] == ["Buy milk"]  # loads
    assert second.state.get("theme") == "dark"
    assert (await second.state.collection("notes").get("n1")).kind == "fact"
    await second.state.collection("todos").remove("t1")
    await first.state.load()
    assert await first.state.collection("todos").list() == []
    assert first.state.get("theme") == "dark"


async def test_agents_with_different_names_keep_apart(stores):
    first_store, second_store = stores
    planner, writer = agent(first_store, name="planner"), agent(second_store, name="writer")
    await planner.state.set("theme", "dark")
    await writer.state.set("theme", "light")
    await writer.state.collection("todos").upsert({"id": "w1", "title": "Write"})
    await planner.state.load()
    assert planner.state.get("theme") == "dark" and await planner.state.collection("todos").list() == []
    again = agent(first_store, name="writer")
    await again.state.load()
    assert again.state.get("theme") == "light" and [t.id for t in await again.state.collection("todos").list()] == ["w1"]


@pytest.mark.parametrize("store_kind", [MemoryStore, WholeStore])
async def test_a_write_reads_the_state_fresh_so_another_agents_write_is_kept(store_kind):
    store = store_kind()
    first, second = agent(store), agent(store)
    await first.state.load()
    await second.state.set("b", 2)
    await first.state.set("a", 1)  # first's snapshot predates b: the write must not drop it
    await second.state.load()
    assert (second.state.get("a"), second.state.get("b")) == (1, 2)


@pytest.mark.parametrize("store_kind", [MemoryStore, WholeStore])
async def test_concurrent_writes_of_one_agent_all_land(store_kind):
    import asyncio

    store = store_kind()
    a = agent(store)
    await asyncio.gather(*(a.state.set(f"k{i}", i) for i in range(10)))
    again = agent(store)
    await again.state.load()
    assert [again.state.get(f"k{i}") for i in range(10)] == list(range(10))


async def test_a_stored_state_that_does_not_read_is_a_store_error():
    store = MemoryStore()
    await store.put_state("planner", {"version": 99})
    with pytest.raises(AerixError) as e:
        await agent(store).state.load()
    assert e.value.kind == "store" and "version 99" in e.value.message
    events = await collect(agent(store, [final("hi")]).run("hello"))
    assert events[-1].type == "end" and events[-1].reason == "error" and "version 99" in events[-1].message


# -- in a run: ctx.state and the state tools -------------------------------------------------


async def test_tools_see_ctx_state_the_same_agent_state_loaded_at_the_run_start():
    store = MemoryStore()
    seen = []
    theme = tool(name="theme", description="The theme.", input={}, run=lambda i, ctx: seen.append(ctx.state) or ctx.state.get("theme"))
    await agent(store).state.set("theme", "dark")  # another Agent wrote it; this one loads at the run's start
    a = Agent(model=ScriptedModel([calls(("theme", {})), final("ok")]), name="planner", tools=[theme], store=store, state={"todos": Todo})
    events = await collect(a.run("go"))
    assert results(events) == [("dark", False)] and seen == [a.state]


async def test_state_tools_end_to_end(stores):
    store = stores[0]
    replies = [
        calls(("state_todos_upsert", {"id": "t1", "title": "Buy milk"}), ("state_todos_upsert", {"id": "t2", "title": "Call Ana", "done": True})),
        calls(("state_todos_remove", {"id": "t2"}), ("state_todos_list", {}), ("state_todos_remove", {"id": "t9"})),
        final("Done"),
    ]
    a = agent(store, replies, state_tools=True)
    events = await collect(a.run("Plan my day"))
    assert events[-1].type == "final"
    assert results(events) == [
        ('{"id": "t1", "title": "Buy milk", "done": false}', False),
        ('{"id": "t2", "title": "Call Ana", "done": true}', False),
        ("removed t2", False),
        ('[{"id": "t1", "title": "Buy milk", "done": false}]', False),
        ("error: no Todo with id 't9' in todos", True),
    ]
    assert [t.id for t in await a.state.collection("todos").list()] == ["t1"]
    later = agent(stores[1])
    assert [t.title for t in await later.state.collection("todos").list()] == ["Buy milk"]


async def test_a_bad_document_from_the_model_is_an_error_result_not_a_crash():
    replies = [
        calls(("state_todos_upsert", {"id": "t1"}), ("state_todos_upsert", {"id": "t1", "title": " "}), ("state_notes_upsert", {"id": "n1", "text": "x", "kind": "rumour"})),
        final("Sorry"),
    ]
    a = agent(MemoryStore(), replies, state_tools=True)
    events = await collect(a.run("go"))
    assert events[-1].type == "final"
    (missing, error1), (blank, error2), (kind, error3) = results(events)
    assert error1 and error2 and error3
    assert missing.startswith("error: invalid input for state_todos_upsert: title:")
    assert "title:" in blank and "a title is not blank" in blank
    assert kind.startswith("error: invalid input for state_notes_upsert: kind:")
    assert await a.state.collection("todos").list() == [] and await a.state.collection("notes").list() == []


async def test_state_tools_without_a_store_keep_the_state_in_memory():
    a = agent(None, [calls(("state_todos_upsert", {"id": "t1", "title": "Milk"})), final("ok")], state_tools=True)
    await collect(a.run("go"))
    assert [t.title for t in await a.state.collection("todos").list()] == ["Milk"]


# -- applied once across resume --------------------------------------------------------------

UPSERT_RUN = [calls(("state_todos_upsert", {"id": "t1", "title": "Buy milk"})), final("Saved")]
REMOVE_RUN = [calls(("state_todos_remove", {"id": "t1"})), final("Removed")]


SAVED = [('{"id": "t1", "title": "Buy milk", "done": false}', False)]


@pytest.mark.parametrize(
    ("what", "at", "again"),
    [
        ("state", 1, SAVED),  # the write landed; its effect record and the checkpoint did not: the mark answers
        ("put_effect", 1, SAVED),  # the effect record landed; the checkpoint did not: the record answers
        ("save_run", 3, []),  # the checkpoint with the result landed (1: start, 2: the turn, 3: the result)
    ],
)
@pytest.mark.parametrize("whole", [False, True], ids=["by-item", "whole"])
async def test_a_crash_after_an_upserts_write_resumes_without_applying_it_twice(what, at, again, whole):
    store = CrashingStore(what, at, whole)
    with pytest.raises(Crash):
        await collect(agent(store, UPSERT_RUN, state_tools=True).run("Save it", run_id="r1"))
    assert store.counts["state"] == 1
    # between the crash and the resume, a person edits the document: a second apply would undo it
    person = agent(store)
    await person.state.collection("todos").upsert({"id": "t1", "title": "Buy oat milk"})
    second = agent(store, UPSERT_RUN[1:], state_tools=True)
    assert [r.id for r in await second.recover()] == ["r1"]
    events = await collect(second.resume("r1"))
    assert events[-1].type == "final"
    assert store.counts["state"] == 2, "the resumed run wrote the state again"
    assert [t.title for t in await second.state.collection("todos").list()] == ["Buy oat milk"]
    assert results(events) == again


@pytest.mark.parametrize("whole", [False, True], ids=["by-item", "whole"])
async def test_a_crash_after_a_removes_write_resumes_without_applying_it_twice(whole):
    store = CrashingStore(whole=whole)
    await agent(store).state.collection("todos").upsert({"id": "t1", "title": "Buy milk"})
    store.what = "state"
    store.at = 2
    with pytest.raises(Crash):
        await collect(agent(store, REMOVE_RUN, state_tools=True).run("Remove it", run_id="r1"))
    await agent(store).state.collection("todos").upsert({"id": "t1", "title": "Buy milk again"})
    second = agent(store, REMOVE_RUN[1:], state_tools=True)
    await second.recover()
    events = await collect(second.resume("r1"))
    assert results(events) == [("removed t1", False)] and events[-1].type == "final"
    assert [t.title for t in await second.state.collection("todos").list()] == ["Buy milk again"]


async def test_two_runs_upserting_the_same_document_both_apply():
    store = MemoryStore()
    for title in ("one", "two"):
        await collect(agent(store, [calls(("state_todos_upsert", {"id": "t1", "title": "x"})), final("ok")], state_tools=True).run("go"))
        await agent(store).state.collection("todos").upsert({"id": "t1", "title": title})
    # each run is its own effect (its own key): the third run writes again
    a = agent(store, [calls(("state_todos_upsert", {"id": "t1", "title": "x"})), final("ok")], state_tools=True)
    await collect(a.run("go"))
    assert (await a.state.collection("todos").get("t1")).title == "x"


# -- the page's options ----------------------------------------------------------------------


def test_the_page_takes_collections_as_field_maps():
    fields = {"id": {"type": "string", "required": True}, "title": {"type": "string", "required": True}, "done": {"type": "boolean"}}
    page = create_agent(ScriptedModel([]), {"name": "planner", "state": {"todos": fields}, "stateTools": True})
    assert isinstance(page.agent.state, AgentState) and list(page.agent.state.models) == ["todos"]
    assert "## state_todos_upsert" in page.agent.system
    for bad, words in (({"todos": {"title": {"type": "string"}}}, "id: str"), ({"todos": {"id": {"type": "list"}}}, "type must be"), ({"To-dos": fields}, "must match")):
        with pytest.raises(AerixError) as e:
            create_agent(ScriptedModel([]), {"state": bad})
        assert e.value.kind == "options" and words in e.value.message


async def test_a_field_map_collection_checks_strictly():
    page = create_agent(ScriptedModel([]), {"state": {"todos": {"id": {"type": "string", "required": True}, "n": {"type": "integer"}}}})
    todos = page.agent.state.collection("todos")
    with pytest.raises(AerixError) as e:
        await todos.upsert({"id": "t1", "n": "3"})
    assert "n:" in e.value.message
    assert (await todos.upsert({"id": "t1", "n": 3})).n == 3


TODO_FIELDS = {"id": {"type": "string", "required": True}, "title": {"type": "string"}, "done": {"type": "boolean"}, "size": {"type": "integer", "enum": [1, 2]}}


async def test_a_field_map_collection_keeps_a_document_that_leaves_out_optional_fields():
    """Issue 28: upsert({"id": "t1"}) stored done: null, which the model then refused, so the
    upsert and every later list() of the collection failed with a store error."""
    store = MemoryStore()
    todos = Agent(model=ScriptedModel([]), name="planner", store=store, state=models_from_field_maps({"todos": TODO_FIELDS})).state.collection("todos")
    kept = await todos.upsert({"id": "t1"})
    assert (kept.id, kept.title, kept.done, kept.size) == ("t1", None, None, None)
    await todos.upsert({"id": "t2", "title": "Buy milk", "done": True, "size": 2})
    assert [(t.id, t.title, t.done) for t in await todos.list()] == [("t1", None, None), ("t2", "Buy milk", True)]
    assert (await todos.get("t1")).done is None
    again = Agent(model=ScriptedModel([]), name="planner", store=store, state=models_from_field_maps({"todos": TODO_FIELDS}))
    assert [t.model_dump() for t in await again.state.collection("todos").list()] == [
        {"id": "t1", "title": None, "done": None, "size": None},
        {"id": "t2", "title": "Buy milk", "done": True, "size": 2},
    ]


async def test_the_state_tools_of_a_field_map_collection_keep_a_document_that_leaves_out_optional_fields():
    replies = [calls(("state_todos_upsert", {"id": "t1", "title": "x"})), calls(("state_todos_list", {})), final("ok")]
    a = Agent(model=ScriptedModel(replies), name="planner", state=models_from_field_maps({"todos": TODO_FIELDS}), state_tools=True)
    upsert = next(t for t in a.tools if t.name == "state_todos_upsert")
    assert upsert.input_schema()["properties"]["done"] == {"type": "boolean"}  # the model sees no null
    events = await collect(a.run("go"))
    assert results(events) == [('{"id": "t1", "title": "x", "done": null, "size": null}', False), ('[{"id": "t1", "title": "x", "done": null, "size": null}]', False)]
    assert events[-1].type == "final"


async def test_a_document_an_older_aerix_kept_with_a_left_out_field_as_null_reads():
    store = MemoryStore()
    await store.put_state_items("planner", {"doc:todos:t1": {"value": {"id": "t1", "title": None, "done": None, "size": None}}})
    todos = Agent(model=ScriptedModel([]), name="planner", store=store, state=models_from_field_maps({"todos": TODO_FIELDS})).state.collection("todos")
    assert [(t.id, t.done) for t in await todos.list()] == [("t1", None)]
