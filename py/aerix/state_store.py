"""How an agent's state is kept: in memory without a store, in a store by item where the store
has the state item methods (``aerix.stores``), else whole.

The state as ``aerix.agent_state`` holds it once loaded:

    {"version": 1, "values": {key: JSON}, "collections": {name: {id: document}},
     "tainted": {item: {"source": tool, "at": call id}}, "applied": [[effect key, result], ...]}

An *item* is one value (``value:<key>``) or one document (``doc:<collection>:<id>``); ``tainted``
holds the taint mark of each item last written by a call of a tainted run (see
``aerix.agent_state``). ``applied``: the effect marks of the state tools' writes.

- **In memory** (no store): that dict, changed in place.
- **Whole** (a store without the item methods): that dict under the agent's name
  (``put_state``). A write reads it fresh, changes its item and writes it whole, with the last 64
  effect marks in ``applied``: each write costs the size of the state, and of two Agents writing
  at the same moment the last one wins.
- **By item** (a store with them): one item per value and per document, ``{"value": JSON}``, with
  ``"taint": {source, at}`` when it has a mark, and one item ``applied:<effect key>`` ->
  ``{"result": text}`` per effect mark. A write puts its item and its mark in one
  ``put_state_items``: it costs the same however much the state holds, and writers of different
  items never undo each other. The agent's name then holds ``{"version": 2, "items": true}``
  under ``put_state``, so an older aerix refuses the state instead of reading it empty; a state
  kept whole before (an older aerix, on the same store) moves into items at its first load. The
  oldest effect marks beyond 64 are deleted at a load that finds more than 128.
"""

from __future__ import annotations

import copy
from typing import Any, Protocol

from .durable.book import use_store
from .errors import AerixError
from .stores import has_state_items

__all__ = ["ABSENT", "Item", "Keeping", "VERSION", "change", "empty", "item_name", "keeping"]

VERSION = 1
_IN_ITEMS = {"version": 2, "items": True}  # what the agent's name holds once its state is kept by item
_MARKS = 64  # effect marks kept: a crash leaves at most one per executing run unrecorded
ABSENT: Any = object()  # a write of ABSENT removes the item

Item = tuple[str | None, str]
"""An item's address: ``(None, key)`` for a value, ``(collection name, id)`` for a document."""


class Keeping(Protocol):
    async def read(self) -> dict[str, Any]: ...

    async def write(self, data: dict[str, Any] | None, item: Item, value: Any, taint: dict[str, str] | None, mark: tuple[str, str] | None) -> tuple[bool, dict[str, Any]]:
        """Keep ``value`` (``ABSENT``: remove the item; none there: nothing to do) with its taint
        mark and the effect ``mark``; whether the item was there before, and the state after."""
        ...

    async def applied(self, key: str) -> str | None: ...


def keeping(agent: str, store: Any) -> Keeping:
    if store is None:
        return _InMemory()
    return _ByItem(agent, store) if has_state_items(store) else _Whole(agent, store)


class _InMemory:
    async def read(self) -> dict[str, Any]:
        return empty()

    async def write(self, data: dict[str, Any] | None, item: Item, value: Any, taint: dict[str, str] | None, mark: tuple[str, str] | None) -> tuple[bool, dict[str, Any]]:
        assert data is not None
        before = holds(data, item)
        if before or value is not ABSENT:
            change(data, item, value, taint)
            if mark is not None:
                data["applied"] = (data["applied"] + [list(mark)])[-_MARKS:]
        return before, data

    async def applied(self, key: str) -> str | None:
        return None  # no store, no durable run: nothing to resume


class _Whole:
    def __init__(self, agent: str, store: Any) -> None:
        self.agent, self.store = agent, store

    async def read(self) -> dict[str, Any]:
        data = await use_store("get_state", lambda: self.store.get_state(self.agent), (dict, type(None)))
        return empty() if data is None else readable(self.agent, data)

    async def write(self, data: dict[str, Any] | None, item: Item, value: Any, taint: dict[str, str] | None, mark: tuple[str, str] | None) -> tuple[bool, dict[str, Any]]:
        fresh = await self.read()
        before = holds(fresh, item)
        if before or value is not ABSENT:
            change(fresh, item, value, taint)
            if mark is not None:
                fresh["applied"] = (fresh["applied"] + [list(mark)])[-_MARKS:]
            await use_store("put_state", lambda: self.store.put_state(self.agent, fresh))
        return before, fresh

    async def applied(self, key: str) -> str | None:
        return next((text for k, text in (await self.read())["applied"] if k == key), None)


class _ByItem:
    def __init__(self, agent: str, store: Any) -> None:
        self.agent, self.store = agent, store

    async def read(self) -> dict[str, Any]:
        whole = await use_store("get_state", lambda: self.store.get_state(self.agent), (dict, type(None)))
        if whole is not None and whole.get("version") != _IN_ITEMS["version"]:
            return await self._move(readable(self.agent, whole))
        items = await use_store("get_state_items", lambda: self.store.get_state_items(self.agent), dict)
        data, marks = _from_items(self.agent, items)
        if len(marks) > 2 * _MARKS:
            await self._put({name: None for name in marks[:-_MARKS]})
        return data

    async def write(self, data: dict[str, Any] | None, item: Item, value: Any, taint: dict[str, str] | None, mark: tuple[str, str] | None) -> tuple[bool, dict[str, Any]]:
        if data is None:
            data = await self.read()
        name = item_name(item)
        before = holds(data, item)
        if value is ABSENT:  # whether there is one to remove, as the store has it now
            before = await use_store("get_state_item", lambda: self.store.get_state_item(self.agent, name), (dict, type(None))) is not None
            if not before:
                change(data, item, ABSENT, None)
                return False, data
        batch: dict[str, Any] = {name: None if value is ABSENT else _envelope(value, taint)}
        if mark is not None:
            batch[f"applied:{mark[0]}"] = {"result": mark[1]}
        await self._put(batch)
        change(data, item, value, taint)
        return before, data

    async def applied(self, key: str) -> str | None:
        found = await use_store("get_state_item", lambda: self.store.get_state_item(self.agent, f"applied:{key}"), (dict, type(None)))
        if found is None:
            return None
        if not isinstance(found.get("result"), str):
            raise AerixError("store", f"the state of agent {self.agent!r} does not read: item 'applied:{key}' has no result text")
        result: str = found["result"]
        return result

    async def _move(self, data: dict[str, Any]) -> dict[str, Any]:
        """A state kept whole (by an older aerix) into items, then the name marked as moved."""
        batch: dict[str, Any] = {}
        for c, holder in [(None, data["values"]), *data["collections"].items()]:
            for key, value in holder.items():
                name = item_name((c, key))
                batch[name] = _envelope(value, data["tainted"].get(name))
        batch.update({f"applied:{key}": {"result": text} for key, text in data["applied"]})
        await self._put(batch)
        await use_store("put_state", lambda: self.store.put_state(self.agent, dict(_IN_ITEMS)))
        data["applied"] = []
        return data

    async def _put(self, batch: dict[str, Any]) -> None:
        await use_store("put_state_items", lambda: self.store.put_state_items(self.agent, batch))


# -- the formats -------------------------------------------------------------------------------


def empty() -> dict[str, Any]:
    return {"version": VERSION, "values": {}, "collections": {}, "tainted": {}, "applied": []}


def item_name(item: Item) -> str:
    collection, key = item
    return f"value:{key}" if collection is None else f"doc:{collection}:{key}"


def holds(data: dict[str, Any], item: Item) -> bool:
    collection, key = item
    return key in (data["values"] if collection is None else data["collections"].get(collection, {}))


def change(data: dict[str, Any], item: Item, value: Any, taint: dict[str, str] | None) -> None:
    """Set (or with ``ABSENT`` remove) the item in ``data``, with its taint mark or none."""
    collection, key = item
    name = item_name(item)
    if value is ABSENT:
        (data["values"] if collection is None else data["collections"].get(collection, {})).pop(key, None)
    else:
        (data["values"] if collection is None else data["collections"].setdefault(collection, {}))[key] = value
    if value is ABSENT or taint is None:
        data["tainted"].pop(name, None)
    else:
        data["tainted"][name] = dict(taint)


def _envelope(value: Any, taint: dict[str, str] | None) -> dict[str, Any]:
    return {"value": value} if taint is None else {"value": value, "taint": dict(taint)}


def _is_mark(mark: Any) -> bool:
    return isinstance(mark, dict) and set(mark) == {"source", "at"} and all(isinstance(v, str) for v in mark.values())


def readable(agent: str, data: dict[str, Any]) -> dict[str, Any]:
    """A state kept whole, with what is missing filled in; a store error if it does not read."""
    out = {**empty(), **copy.deepcopy(data)}
    why = None
    if out["version"] != VERSION:
        why = f"version {out['version']!r} (this aerix reads version {VERSION})"
    elif not isinstance(out["values"], dict):
        why = "'values' is not an object"
    elif not isinstance(out["collections"], dict) or not all(isinstance(c, dict) for c in out["collections"].values()):
        why = "'collections' is not an object of objects"
    elif not isinstance(out["tainted"], dict) or not all(_is_mark(m) for m in out["tainted"].values()):
        why = "'tainted' is not an object of {source, at} marks"
    elif not isinstance(out["applied"], list) or not all(isinstance(m, list) and len(m) == 2 for m in out["applied"]):
        why = "'applied' is not a list of [key, result] pairs"
    if why is not None:
        raise AerixError("store", f"the state of agent {agent!r} does not read: {why}")
    return out


def _from_items(agent: str, items: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The state from its items, and the names of its effect marks, oldest first."""
    data, marks = empty(), []
    for name, item in items.items():
        if not isinstance(name, str) or not isinstance(item, dict):
            raise AerixError("store", f"the state of agent {agent!r} does not read: item {name!r} is not a JSON object")
        if name.startswith("applied:"):
            marks.append(name)
            continue
        kind, _, rest = name.partition(":")
        collection, _, key = rest.partition(":") if kind == "doc" else (None, "", rest)
        why = None
        if kind not in ("value", "doc") or not key or "value" not in item or set(item) - {"value", "taint"}:
            why = "is not {value, taint} under value:<key> or doc:<collection>:<id>"
        elif "taint" in item and not _is_mark(item["taint"]):
            why = "has a taint that is not {source, at}"
        elif collection is not None and not isinstance(item["value"], dict):
            why = "is a document that is not an object"
        if why is not None:
            raise AerixError("store", f"the state of agent {agent!r} does not read: item {name!r} {why}")
        change(data, (collection, key), item["value"], item.get("taint"))
    return data, marks
