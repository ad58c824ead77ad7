"""Where durable runs live. A store keeps run records and effect results, as JSON, and the
leases that let one executor at a time run a run.

    class Store(Protocol):
        async def create_run(self, run: dict) -> dict      # or the existing run with its idempotency key
        async def get_run(self, run_id: str) -> dict | None
        async def save_run(self, run: dict, revision: int | None = None, holder: str | None = None) -> bool
        async def list_runs(self) -> list[dict]             # oldest first
        async def get_effect(self, key: str) -> str | None
        async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool
        async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool
        async def release_lease(self, name: str, holder: str) -> None
        async def get_lease(self, name: str) -> dict | None  # {"name", "holder", "expires_at"}
        async def put_artifact(self, meta: dict, data: bytes) -> None  # meta: Artifact.to_dict()
        async def get_artifact(self, artifact_id: str) -> tuple[dict, bytes] | None
        async def list_artifacts(self, run_id: str) -> list[dict]  # a run's, in put order
        async def get_state(self, agent: str) -> dict | None  # an agent's state, by agent name
        async def put_state(self, agent: str, state: dict) -> None  # replace it whole

Records. A run record is a JSON object with an ``id``; the store keeps it as given, never
reads into it, and lists every record, whatever it holds. A record the store cannot decode
(text that is not JSON, a damaged row) is listed and returned as ``{"id": <its id>, "corrupt":
<why>}``, never an exception: one bad record must not hide the others.

Writes that cannot go stale. A record carries ``revision`` (a record without one is at revision
0, and so is a record the store lacks); aerix reads a record at some revision and saves it as
``revision + 1``. ``save_run(run, revision, holder)`` replaces the record ``run["id"]`` with
``run`` and returns ``True`` only if, at the moment of the write,

- the stored record is still at ``revision`` (compare-and-set: a save from a stale copy, read
  before another executor or ``recover`` wrote the run, is refused), and
- ``holder`` holds the lease ``run:<id>``: the lease record names ``holder``, expired or not
  (fencing: once another executor took the lease over, or it was released, the old holder's
  writes are refused).

Otherwise it writes nothing and returns ``False``. Both checks and the write are one atomic step
(as ``acquire_lease`` is); ``None`` skips a check (``save_run(run)`` replaces the record
unconditionally: for tools and tests, never used by a run). ``put_effect(key, result, run_id,
holder)`` is fenced the same way by the lease ``run:<run_id>`` and returns whether it wrote.

A store written before revisions (``save_run(run)``, ``put_effect(key, result)`` answering
``None``) is refused when an ``Agent`` is made, naming what to change (:func:`check_store`); one
whose methods cannot be inspected is caught at its first write (a save answered ``None``). See
docs/durable.md, "Stores written before revisions".

Leases. ``acquire_lease`` gives the lease ``name`` to ``holder`` until ``expires_at`` when it is
free: nobody holds it, its holder's lease has expired (``expires_at <= now``), or ``holder``
holds it already (a renewal, which moves ``expires_at``). It returns whether ``holder`` holds
the lease now, and it is atomic: of concurrent acquirers, in this process or another one on
the same store, exactly one wins. ``release_lease`` gives the lease up if ``holder`` holds it;
anyone else's lease stays. ``get_lease`` returns the lease even once it has expired: the caller
compares ``expires_at`` with its ``now``. ``now`` is the caller's clock (an Agent's ``clock``), so that tests
control time; the store keeps no clock of its own. Lease names are ``run:<run id>`` and
``key:<concurrency key>``; leases live apart from run records (``save_run`` never touches
them).

State. ``put_state`` keeps one JSON object per key, replacing the one before; ``get_state``
returns a copy of it, or ``None``. The keys are agent names (what ``aerix.agent_state`` writes)
and ``conversation:<agent name>/<conversation id>`` (a kept conversation, ``aerix.conversations``):
any string, then. State lives apart from runs, effects and leases.

Runs by status (optional)::

        async def list_runs_by_status(self, statuses: list[str]) -> list[dict]  # oldest first

returns the runs whose ``status`` is one of ``statuses``, in ``list_runs``'s order (a record that
does not read has no status: it is not listed). A worker polls with it, so that each poll reads
the runs it may take, not every run the store ever kept; without it the worker reads
``list_runs`` and picks them out itself. :func:`has_runs_by_status` says whether a store has it.

State items (optional: a store may have all three, or none):

        async def get_state_items(self, agent: str) -> dict[str, dict]     # every item, in the order first put
        async def get_state_item(self, agent: str, key: str) -> dict | None
        async def put_state_items(self, agent: str, items: dict[str, dict | None]) -> None

With them ``aerix.agent_state`` keeps an agent's state as one item per value, document and
effect mark, so a write costs the same however much the state holds, and two writers of
different items never undo each other. Without them it reads and writes the whole state with
``get_state``/``put_state``: each write costs the size of the state, and of two writers the last
one wins. An item is a JSON object under a key (any string) within an agent name, apart from
what ``put_state`` keeps under that name. ``put_state_items`` is one transaction (all its items
land, or none): each item is kept, replacing the one with its key, which keeps its place in the
order; ``None`` deletes the item (a missing one: nothing to do), and one put again comes last.
Concurrent puts of different items all land. :func:`has_state_items` says whether a store has them.

Artifacts. ``put_artifact`` keeps ``data`` under ``meta["id"]`` with its JSON ``meta`` (``id``,
``run_id``, ``media_type``, ``filename``, ``size``, ``sha256``); a put of an id already kept
replaces its meta and bytes and keeps its place. ``get_artifact`` returns ``(meta, bytes)`` or
``None``; ``list_artifacts`` the metas of one run, in the order of their first put. Artifacts
live apart from run records: a checkpoint never holds their bytes.

Implementations, each importable from here: :class:`MemoryStore` (here), ``SQLiteStore``
(:mod:`aerix.stores.sqlite`; CPython and Pyodide), ``IndexedDBStore``
(:mod:`aerix.stores.indexeddb`; the page), ``PostgresStore`` (:mod:`aerix.stores.postgres`;
CPython with the ``postgres`` extra: many processes and machines on one database). The last
three are imported when first named (module ``__getattr__``), so importing this package loads
neither ``sqlite3`` (a package Pyodide loads apart), the page's store, nor psycopg. Every one passes :mod:`aerix.stores.contract`, which you can run on
a store of your own.
"""

from __future__ import annotations

import copy
import inspect
import json
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import AerixError

if TYPE_CHECKING:
    from .indexeddb import IndexedDBStore
    from .postgres import PostgresStore
    from .sqlite import SQLiteStore

__all__ = ["IndexedDBStore", "MemoryStore", "PostgresStore", "SQLiteStore", "STATE_ITEM_METHODS", "STORE_METHODS", "Store", "check_store", "has_runs_by_status", "has_state_items", "read_record"]


def __getattr__(name: str) -> Any:
    """``SQLiteStore``, ``IndexedDBStore`` and ``PostgresStore``, imported from their modules when first asked for."""
    if name == "SQLiteStore":
        from .sqlite import SQLiteStore

        return SQLiteStore
    if name == "IndexedDBStore":
        from .indexeddb import IndexedDBStore

        return IndexedDBStore
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@runtime_checkable
class Store(Protocol):
    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]: ...
    async def get_run(self, run_id: str) -> dict[str, Any] | None: ...
    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> bool: ...
    async def list_runs(self) -> list[dict[str, Any]]: ...
    async def get_effect(self, key: str) -> str | None: ...
    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool: ...
    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool: ...
    async def release_lease(self, name: str, holder: str) -> None: ...
    async def get_lease(self, name: str) -> dict[str, Any] | None: ...
    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None: ...
    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None: ...
    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]: ...
    async def get_state(self, agent: str) -> dict[str, Any] | None: ...
    async def put_state(self, agent: str, state: dict[str, Any]) -> None: ...


STORE_METHODS: tuple[str, ...] = tuple(name for name, value in vars(Store).items() if not name.startswith("_") and callable(value))
"""The names of the protocol's methods, for a clear error naming what a store lacks."""

STATE_ITEM_METHODS: tuple[str, ...] = ("get_state_items", "get_state_item", "put_state_items")
"""The optional methods that keep agent state by item (see the module's docstring)."""


def has_runs_by_status(store: Any) -> bool:
    """Whether ``store`` has the optional ``list_runs_by_status`` (see the module's docstring)."""
    return callable(getattr(store, "list_runs_by_status", None))


def has_state_items(store: Any) -> bool:
    """Whether ``store`` has every one of :data:`STATE_ITEM_METHODS` (some but not all: an error
    naming the rest, since half of them cannot keep a state)."""
    have = [name for name in STATE_ITEM_METHODS if callable(getattr(store, name, None))]
    if have and len(have) < len(STATE_ITEM_METHODS):
        missing = [name for name in STATE_ITEM_METHODS if name not in have]
        raise AerixError("options", f"store has {have} but lacks {missing}: a store keeps state items with all three or none (see aerix.stores)")
    return bool(have)


# The writes that gained a compare-and-set and a fence, and the arguments they take now.
_FENCED: dict[str, tuple[Any, ...]] = {"save_run": ({"id": "r"}, 0, "holder"), "put_effect": ("key", "result", "r", "holder")}


def check_store(store: Any) -> None:
    """``AerixError(kind="options")`` naming what ``store`` lacks: a method of the protocol, or
    the revision and holder arguments of ``save_run`` and ``put_effect`` (a store written
    before revisions, whose saves could replace a newer record with a stale copy)."""
    missing = [m for m in STORE_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise AerixError("options", f"store lacks {missing}: see aerix.stores.Store")
    old = [m for m, args in _FENCED.items() if not _takes(getattr(store, m), args)]
    if old:
        raise AerixError(
            "options",
            f"store's {' and '.join(old)} take no revision and holder: a store written before revisions could "
            "replace a newer run record with a stale copy; see aerix.stores.Store and docs/durable.md",
        )


def _takes(method: Any, args: tuple[Any, ...]) -> bool:
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return True  # not inspectable (a JS function, a C method): its first answer tells
    try:
        signature.bind(*args)
    except TypeError:
        return False
    return True


class MemoryStore:
    """A store in a dict: for tests, and for runs that need not outlive the process."""

    def __init__(self) -> None:
        self._runs: dict[str, dict[str, Any]] = {}
        self._effects: dict[str, str] = {}
        self._leases: dict[str, dict[str, Any]] = {}
        self._artifacts: dict[str, tuple[dict[str, Any], bytes]] = {}  # by id, in put order
        self._state: dict[str, dict[str, Any]] = {}
        self._state_items: dict[str, dict[str, dict[str, Any]]] = {}  # agent -> key -> item, in put order

    def __repr__(self) -> str:
        return f"MemoryStore(runs={len(self._runs)}, effects={len(self._effects)})"

    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        key = run.get("idempotency_key")
        if key is not None:
            for existing in self._runs.values():
                if existing.get("idempotency_key") == key:
                    return copy.deepcopy(existing)
        if run["id"] in self._runs:
            return copy.deepcopy(self._runs[run["id"]])
        self._runs[run["id"]] = copy.deepcopy(run)
        return copy.deepcopy(run)

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        run = self._runs.get(run_id)
        return copy.deepcopy(run) if run is not None else None

    # Atomic without a lock, as acquire_lease: nothing is awaited between the checks and the write.
    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> bool:
        if revision is not None and _revision_of(self._runs.get(run["id"])) != revision:
            return False
        if not self._holds(run["id"], holder):
            return False
        self._runs[run["id"]] = copy.deepcopy(run)
        return True

    async def list_runs(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(r) for r in sorted(self._runs.values(), key=lambda r: (r.get("created_at", 0), r["id"]))]

    async def list_runs_by_status(self, statuses: list[str]) -> list[dict[str, Any]]:
        runs = sorted((r for r in self._runs.values() if r.get("status") in statuses), key=lambda r: (r.get("created_at", 0), r["id"]))
        return [copy.deepcopy(r) for r in runs]

    async def get_effect(self, key: str) -> str | None:
        return self._effects.get(key)

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool:
        if run_id is not None and not self._holds(run_id, holder):
            return False
        self._effects[key] = result
        return True

    def _holds(self, run_id: str, holder: str | None) -> bool:
        """Whether ``holder`` holds the lease of run ``run_id`` (``None``: no fence)."""
        lease = self._leases.get(f"run:{run_id}")
        return holder is None or (lease is not None and lease["holder"] == holder)

    # Atomic without a lock: nothing is awaited between the check and the write.
    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        lease = self._leases.get(name)
        if lease is not None and lease["holder"] != holder and lease["expires_at"] > now:
            return False
        self._leases[name] = {"name": name, "holder": holder, "expires_at": float(expires_at)}
        return True

    async def release_lease(self, name: str, holder: str) -> None:
        lease = self._leases.get(name)
        if lease is not None and lease["holder"] == holder:
            del self._leases[name]

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        lease = self._leases.get(name)
        return dict(lease) if lease is not None else None

    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        self._artifacts[meta["id"]] = (copy.deepcopy(meta), bytes(data))  # a dict keeps a replaced key's place

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        found = self._artifacts.get(artifact_id)
        return (copy.deepcopy(found[0]), found[1]) if found is not None else None

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(meta) for meta, _ in self._artifacts.values() if meta.get("run_id") == run_id]

    async def get_state(self, agent: str) -> dict[str, Any] | None:
        state = self._state.get(agent)
        return copy.deepcopy(state) if state is not None else None

    async def put_state(self, agent: str, state: dict[str, Any]) -> None:
        self._state[agent] = copy.deepcopy(state)

    async def get_state_items(self, agent: str) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self._state_items.get(agent, {}))

    async def get_state_item(self, agent: str, key: str) -> dict[str, Any] | None:
        item = self._state_items.get(agent, {}).get(key)
        return copy.deepcopy(item) if item is not None else None

    # all or nothing without a lock: nothing is awaited while the items change
    async def put_state_items(self, agent: str, items: dict[str, dict[str, Any] | None]) -> None:
        kept = self._state_items.setdefault(agent, {})
        for key, item in copy.deepcopy(items).items():
            if item is None:
                kept.pop(key, None)
            else:
                kept[key] = item  # a dict keeps a replaced key's place


def _revision_of(run: dict[str, Any] | None) -> Any:
    """A stored record's revision: 0 for none, or for a record written before revisions."""
    return 0 if run is None else run.get("revision", 0)


def read_record(run_id: str, data: Any, what: str = "data") -> dict[str, Any]:
    """A stored run record from its JSON; one that does not decode (not JSON: a damaged row, a
    BLOB or a number where the text was; not an object) is ``{"id": run_id, "corrupt": <why>}``,
    listed, never raised. ``what`` names the stored form in the reason ("data", "text")."""
    try:
        run = json.loads(data)
    except (ValueError, TypeError) as e:
        return {"id": run_id, "corrupt": f"its stored {what} is not JSON ({e})"}
    if not isinstance(run, dict):
        return {"id": run_id, "corrupt": f"its stored {what} is a {type(run).__name__}, not an object"}
    return run
