"""Agent state: what an agent keeps between runs, per agent name, in its store (in memory
without one), and the state tools that let the model keep it.

    agent = Agent(model=model, name="planner", state={"todos": Todo}, state_tools=True, store=store)
    await agent.state.load()                       # every run loads it at its start
    agent.state.get("theme", "light")              # key-value: a sync read of the loaded state
    await agent.state.set("theme", "dark")         # a write: awaited
    todos = agent.state.collection("todos")
    await todos.upsert({"id": "t1", "title": "Buy milk"})   # checked by Todo; returns a Todo
    [t.title for t in await todos.list()]          # in the order first upserted

Sync or async: ``get`` reads the loaded state (sync, so a sync tool can call ``ctx.state.get``);
before anything loaded it (``load()``, a run, a write) it raises, rather than answer from an
empty state. Every other method is async: the collections' reads load the state first if they
must. Reads answer from the state as loaded, with this Agent's own writes; a write changes one
item (a value, a document) in the store, one write at a time per Agent. How it is kept, and what
two Agents writing at once get, is ``aerix.state_store``'s: by item where the store can (a write
costs the same however much the state holds), else the whole state read fresh and written.

A collection is ``name -> pydantic model`` with a required ``id: str`` field; its documents are
kept by ``id``, as the model dumps them to JSON.

**Taint.** A value or document written from inside a tool call of a tainted run (``ctx.state``,
or ``agent.state`` reached any other way while the call runs; the state tools' upserts too) is
kept with the run's taint mark, ``{"source", "at"}``: what first tainted that run. A read from
inside a call that returns a marked item (``get`` of its key, a collection's ``list`` holding it,
``get`` of its id; ``state_<c>_list``) taints the reading run: a ``taint`` event naming that
call's tool and id comes before its result, as for a tool marked ``trust={"taint": True}``.
So text from outside that a run put into state is outside text still when a later run, after
``reset()`` or in another Agent, reads it. A write outside a call (the developer's code) keeps
no mark and replaces the item's mark, as does a write of an untainted call; removing an item
removes its mark; reads outside a call taint nothing. ``tainted(key)`` / ``tainted(id)`` give
an item's mark.

State tools (``state_tools=True``): ``state_<c>_list`` (no input), ``state_<c>_upsert`` (the
model's fields, flat, as a tool's input) and ``state_<c>_remove`` (``id``). Upsert and remove are
effect tools, applied once across resume: in a durable run each write carries its effect key,
written with it in one store write, so a crash after the write and before the effect's record
finds the mark (``already_applied``) and does not write again.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from typing import Any

from .errors import AerixError
from .fields import fields_from_map, model_for, nests_deeper, validation_text
from .state_store import ABSENT, VERSION, Item, empty, item_name, keeping
from .state_taint import read as _read, writing_taint as _writing_taint
from .tools import Tool, ToolContext, tool

__all__ = ["AgentState", "Collection", "VERSION", "check_collections", "models_from_field_maps", "state_tools"]

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")  # state_<name>_upsert stays a tool name
_DEPTH = 100


def check_collections(spec: Any) -> dict[str, Any]:
    """``{collection name: pydantic model}``, checked; ``AerixError(kind="options")`` otherwise."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise AerixError("options", f"state must be a dict of collection name -> pydantic model, got {type(spec).__name__}")
    for name, model in spec.items():
        _check_name(name)
        if not (isinstance(model, type) and hasattr(model, "model_fields") and hasattr(model, "model_validate")):
            raise AerixError("options", f"state collection {name!r} needs a pydantic model class, got {model!r}")
        id_field = model.model_fields.get("id")
        if id_field is None or id_field.annotation is not str or not id_field.is_required():
            raise AerixError("options", f"state collection {name!r}: {model.__name__} needs a required field id: str (documents are kept by it)")
    return dict(spec)


def models_from_field_maps(spec: Any) -> dict[str, Any]:
    """Collections given as flat field maps (the page's ``state: {todos: {id: {type: "string",
    required: true}, ...}}``): a strict pydantic model for each, whose optional fields take
    ``None`` (a field left out is kept as ``null``)."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise AerixError("options", f"state must be an object of collection name -> field map, got {type(spec).__name__}")
    for name in spec:
        _check_name(name)
    return {name: model_for(f"state_{name}", fields_from_map(f"state collection {name}", fields), nullable=True) for name, fields in spec.items()}


class AgentState:
    """One agent's state (``agent.state``, ``ctx.state``): key-value JSON and typed collections,
    kept in ``store`` under the agent's name, or in memory without a store."""

    def __init__(self, agent: str, collections: Any, store: Any) -> None:
        self.agent = agent
        self.models = check_collections(collections)
        self.store = store
        self._kept = keeping(agent, store)  # in memory, whole or by item (state_store.py)
        self._data: dict[str, Any] | None = empty() if store is None else None
        self._collections = {name: Collection(self, name, model) for name, model in self.models.items()}
        self._lock: tuple[Any, asyncio.Lock] | None = None

    def __repr__(self) -> str:
        return f"AgentState(agent={self.agent!r}, collections={list(self.models)})"

    async def load(self) -> None:
        """Read the state from the store (each run does this at its start); no-op in memory."""
        if self.store is not None:
            self._data = await self._kept.read()

    def get(self, key: str, default: Any = None) -> Any:
        """The value kept under ``key`` (a copy), or ``default``."""
        _check_key(key)
        data = self.loaded()
        if key not in data["values"]:
            return default
        _read(data, item_name((None, key)))
        return copy.deepcopy(data["values"][key])

    def tainted(self, key: str) -> dict[str, str] | None:
        """The taint mark ``{source, at}`` of the value under ``key``, or ``None``."""
        _check_key(key)
        mark = self.loaded()["tainted"].get(item_name((None, key)))
        return None if mark is None else dict(mark)

    async def set(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON: it must come back equal from ``json.loads(json.dumps(value))``)."""
        _check_key(key)
        await self.write((None, key), _json_copy(value, f"state value {key!r}"))

    async def delete(self, key: str) -> None:
        """Forget the value kept under ``key`` (nothing kept: nothing to do)."""
        _check_key(key)
        await self.write((None, key), ABSENT)

    def collection(self, name: str) -> Collection:
        if name not in self._collections:
            raise AerixError("options", f"no state collection {name!r} (collections: {sorted(self._collections) or 'none'}); give the Agent state={{name: Model}}")
        return self._collections[name]

    def loaded(self) -> dict[str, Any]:
        if self._data is None:
            raise AerixError("options", f"the state of agent {self.agent!r} is not loaded: await agent.state.load() first (every run loads it at its start)")
        return self._data

    async def write(self, item: Item, value: Any, mark: tuple[str, str] | None = None) -> bool:
        """Keep ``value`` as ``item`` (``ABSENT``: remove it; none there: nothing is written),
        with the writing run's taint and the effect ``mark``; whether the item was there."""
        taint = _writing_taint()
        async with self._lock_now():
            before, self._data = await self._kept.write(self._data, item, value, taint, mark)
            return before

    async def applied(self, key: str) -> str | None:
        """The result recorded with the write of effect ``key``, if that write happened."""
        return await self._kept.applied(key)

    def _lock_now(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()  # a Lock belongs to one event loop
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]


class Collection:
    """The documents of one collection, kept by their ``id`` and checked by ``model``."""

    def __init__(self, state: AgentState, name: str, model: Any) -> None:
        self.state, self.name, self.model = state, name, model

    def __repr__(self) -> str:
        return f"Collection({self.name!r}, {self.model.__name__})"

    async def list(self) -> list[Any]:
        """Every document, as model instances, in the order first upserted."""
        documents = await self._documents()
        for id in documents:
            _read(self.state.loaded(), item_name((self.name, id)))
        return [self._revive(doc) for doc in documents.values()]

    async def get(self, id: str) -> Any:
        """The document with this ``id``, or ``None``."""
        _check_id(id)
        doc = (await self._documents()).get(id)
        if doc is None:
            return None
        _read(self.state.loaded(), item_name((self.name, id)))
        return self._revive(doc)

    async def tainted(self, id: str) -> dict[str, str] | None:
        """The taint mark ``{source, at}`` of the document with this ``id``, or ``None``."""
        _check_id(id)
        await self._documents()
        mark = self.state.loaded()["tainted"].get(item_name((self.name, id)))
        return None if mark is None else dict(mark)

    async def upsert(self, doc: Any) -> Any:
        """Add ``doc`` (a dict or a model instance), or replace the document with its ``id``;
        the document as kept, as a model instance. One that fails the model is an options error."""
        kept = self.check(doc)
        await self.put(kept)
        return self._revive(kept)

    async def remove(self, id: str) -> bool:
        """Remove the document with this ``id``; whether there was one."""
        return await self.drop(id)

    async def put(self, kept: dict[str, Any], mark: str | None = None) -> str:
        """Write a checked document (with the effect ``mark``); the result text a tool gives."""
        text = json.dumps(kept, ensure_ascii=False)
        await self.state.write((self.name, kept["id"]), kept, None if mark is None else (mark, text))
        return text

    async def drop(self, id: str, mark: str | None = None) -> bool:
        """Remove a document (with the effect ``mark``) if the state holds it; whether it did."""
        _check_id(id)
        return await self.state.write((self.name, id), ABSENT, None if mark is None else (mark, f"removed {id}"))

    def check(self, doc: Any) -> dict[str, Any]:
        """``doc`` as the model checks it and dumps it to JSON; an options error naming the field."""
        from pydantic import BaseModel, ValidationError

        where = f"state collection {self.name!r} ({self.model.__name__})"
        if isinstance(doc, BaseModel):
            doc = doc.model_dump(mode="json")
        if not isinstance(doc, dict):
            raise AerixError("options", f"{where}: a document is a dict or a {self.model.__name__}, got {type(doc).__name__}")
        try:
            kept: dict[str, Any] = self.model.model_validate(doc).model_dump(mode="json")
        except ValidationError as e:
            raise AerixError("options", f"{where}: the document fails the model: {validation_text(e)}") from None
        if not kept.get("id"):
            raise AerixError("options", f"{where}: id must be a non-empty string")
        copied: dict[str, Any] = _json_copy(kept, f"{where}: the document")
        return copied

    async def _documents(self) -> dict[str, Any]:
        if self.state._data is None:
            await self.state.load()
        documents: dict[str, Any] = self.state.loaded()["collections"].get(self.name, {})
        return documents

    def _revive(self, doc: dict[str, Any]) -> Any:
        from pydantic import ValidationError

        try:
            return self.model.model_validate_json(json.dumps(doc))
        except ValidationError as e:
            raise AerixError("store", f"the state of agent {self.state.agent!r}: document {doc.get('id')!r} of {self.name!r} does not read as {self.model.__name__}: {validation_text(e)}") from None


# -- state tools -----------------------------------------------------------------------------


def state_tools(state: AgentState, enabled: Any) -> list[Tool]:
    """The state tools of every collection when ``enabled`` (``Agent(state_tools=True)``)."""
    if not isinstance(enabled, bool):
        raise AerixError("options", f"state_tools must be True or False, got {enabled!r}")
    if enabled and not state.models:
        raise AerixError("options", "state_tools=True offers tools for state collections: give the Agent state={name: Model}")
    if not enabled:
        return []
    return [t for name in state.models for t in _collection_tools(state.collection(name))]


def _collection_tools(coll: Collection) -> list[Tool]:
    name, title, state = coll.name, coll.model.__name__, coll.state
    upserts, removes = _Marks(state), _Marks(state)

    async def listed(input: dict[str, Any], ctx: ToolContext) -> Any:
        return [doc.model_dump(mode="json") for doc in await coll.list()]

    async def upsert(input: dict[str, Any], ctx: ToolContext) -> str:
        return await coll.put(coll.check(input), upserts.take(input))

    async def remove(input: dict[str, Any], ctx: ToolContext) -> str:
        if not await coll.drop(input["id"], removes.take(input)):
            raise LookupError(f"no {title} with id {input['id']!r} in {name}")
        return f"removed {input['id']}"

    return [
        tool(name=f"state_{name}_list", description=f"List the {name} kept in this agent's state (each a {title}).", input={}, run=listed),
        tool(name=f"state_{name}_upsert", description=f"Add a {title} to {name}, or replace the one with the same id.", input=coll.model, run=upsert, effect=True, already_applied=upserts.applied),
        tool(
            name=f"state_{name}_remove",
            description=f"Remove the {title} with this id from {name}.",
            input={"id": {"type": "string", "description": f"the id of the {title}", "required": True}},
            run=remove,
            effect=True,
            already_applied=removes.applied,
        ),
    ]


class _Marks:
    """Effect keys on their way from ``already_applied`` to the write. A durable run asks
    ``already_applied(key, input)`` right before it runs the tool with that input (``run_effect``),
    so the key it was not found under is the one the write then carries."""

    def __init__(self, state: AgentState) -> None:
        self.state = state
        self.keys: dict[str, str] = {}

    async def applied(self, key: str, input: dict[str, Any]) -> str | None:
        done = await self.state.applied(key)
        if done is None:
            self.keys[_canonical(input)] = key
        return done

    def take(self, input: dict[str, Any]) -> str | None:
        return self.keys.pop(_canonical(input), None)


# -- small things --------------------------------------------------------------------------


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise AerixError("options", f"state collection name {name!r} must match {_NAME.pattern}")


def _check_key(key: Any) -> None:
    if not isinstance(key, str) or not key:
        raise AerixError("options", f"a state key is a non-empty string, got {key!r}")


def _check_id(id: Any) -> None:
    if not isinstance(id, str) or not id:
        raise AerixError("options", f"a document id is a non-empty string, got {id!r}")


def _json_copy(value: Any, what: str) -> Any:
    """``value`` through JSON and back; an options error unless it comes back equal."""
    if nests_deeper(value, _DEPTH):
        raise AerixError("options", f"{what} nests deeper than {_DEPTH} levels")
    try:
        back = json.loads(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as e:
        raise AerixError("options", f"{what} is not JSON: {e}") from None
    if back != value:
        raise AerixError("options", f"{what} does not come back equal from JSON (a tuple, a non-string key?): {value!r}")
    return back


def _canonical(input: dict[str, Any]) -> str:
    return json.dumps(input, sort_keys=True, ensure_ascii=False)
