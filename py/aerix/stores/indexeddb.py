"""A store in the page's IndexedDB, through ``web/store.mjs`` (the page's default store).

A lease there is also a Web Lock held by the tab, so a closed or reloaded tab frees its leases
at once, whatever their ``expires_at`` (and ``get_lease`` no longer reports them); while the tab
lives, another tab cannot take its lease even once it has expired, until it is released. Within
one tab, leases follow the record as in every store. See ``web/store.mjs``.

``saveRun(json, revision, holder)`` and ``putEffect(key, result, runId, holder)`` check the
revision and the lease record in the same IndexedDB transaction as the write (over the ``runs``
or ``effects`` and the ``leases`` object stores), and resolve to whether they wrote. A JS store
object of an older page answers ``undefined``: aerix refuses that write as a store failure
naming the cause. A record text that does not parse is listed ``corrupt``, never raised.
"""

from __future__ import annotations

import json
from typing import Any

from .._js import call_js, js_module
from ..errors import AerixError
from . import STATE_ITEM_METHODS, read_record

__all__ = ["IndexedDBStore"]


class IndexedDBStore:
    """Runs and effects in IndexedDB: they survive reloads, closed tabs and sleeping laptops.

    ``IndexedDBStore()`` opens the database ``"aerix"`` through the page that ``aerix.mjs``
    booted; ``IndexedDBStore(js_store)`` wraps a store object made in JavaScript, which has the
    methods of ``openStore`` (``createRun`` ... ``putEffect``, ``acquireLease``,
    ``releaseLease``, ``getLease``, ``getState``, ``putState``, ``putArtifact``,
    ``getArtifact``, ``listArtifacts``; ``getStateItems``, ``getStateItem`` and
    ``putStateItems`` if it has them, else agent state is kept whole).
    """

    def __init__(self, js_store: Any = None, name: str = "aerix") -> None:
        self._js = js_store if js_store is not None else js_module("aerix_page").openStore(name)
        self.name = str(getattr(self._js, "name", name))
        if getattr(self._js, "putStateItems", None) is None:
            # a store object made in JS before state items: agent state is kept whole (aerix.stores)
            for method in STATE_ITEM_METHODS:
                setattr(self, method, None)

    def __repr__(self) -> str:
        return f"IndexedDBStore({self.name!r})"

    # Records cross as JSON text: exact both ways, where JS objects would lose None.
    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        return json.loads(await call_js(self._js.createRun, json.dumps(run)))  # type: ignore[no-any-return]

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        text = await call_js(self._js.getRun, run_id)
        return read_record(run_id, text, "text") if text is not None else None

    # None crosses as undefined, which the JS store reads as "no check"; a store of an older page
    # ignores the extra arguments and answers undefined (None here): Durable refuses that answer.
    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> Any:
        return await call_js(self._js.saveRun, json.dumps(run), revision, holder)

    async def list_runs(self) -> list[dict[str, Any]]:
        return [read_record(f"unreadable record {i + 1}", text, "text") for i, text in enumerate(await call_js(self._js.listRuns))]

    async def get_effect(self, key: str) -> str | None:
        return await call_js(self._js.getEffect, key)  # type: ignore[no-any-return]

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> Any:
        return await call_js(self._js.putEffect, key, result, run_id, holder)

    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        return bool(await call_js(self._method("acquireLease"), name, holder, float(expires_at), float(now)))

    async def release_lease(self, name: str, holder: str) -> None:
        await call_js(self._method("releaseLease"), name, holder)

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        lease = await call_js(self._method("getLease"), name)
        if lease is None:
            return None
        return {"name": str(lease["name"]), "holder": str(lease["holder"]), "expires_at": float(lease["expires_at"])}

    # An artifact's meta crosses as JSON text, its bytes as a Uint8Array (aerix._js), kept as a Blob.
    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        await call_js(self._method("putArtifact"), json.dumps(meta), bytes(data))

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        found = await call_js(self._method("getArtifact"), artifact_id)
        return (json.loads(found["meta"]), bytes(found["data"])) if found is not None else None

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return [json.loads(text) for text in await call_js(self._method("listArtifacts"), run_id)]

    async def get_state(self, agent: str) -> dict[str, Any] | None:
        text = await call_js(self._method("getState"), agent)
        return json.loads(text) if text is not None else None

    async def put_state(self, agent: str, state: dict[str, Any]) -> None:
        await call_js(self._method("putState"), agent, json.dumps(state))

    # An item crosses as JSON text, each on its own, so it comes back exactly (JS numbers would not).
    async def get_state_items(self, agent: str) -> dict[str, dict[str, Any]]:
        return {str(key): json.loads(text) for key, text in await call_js(self._method("getStateItems"), agent)}

    async def get_state_item(self, agent: str, key: str) -> dict[str, Any] | None:
        text = await call_js(self._method("getStateItem"), agent, key)
        return json.loads(text) if text is not None else None

    async def put_state_items(self, agent: str, items: dict[str, dict[str, Any] | None]) -> None:
        pairs = [[key, None if item is None else json.dumps(item)] for key, item in items.items()]
        await call_js(self._method("putStateItems"), agent, json.dumps(pairs))

    def _method(self, name: str) -> Any:
        # a store object made in JS before leases existed: say what it lacks
        fn = getattr(self._js, name, None)
        if fn is None:
            raise AerixError("options", f"the store object {self.name!r} has no {name}(): see openStore in web/store.mjs")
        return fn
