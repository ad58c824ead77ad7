"""Artifacts as JavaScript in the page sees them (:mod:`aerix.artifacts`).

A JS tool's ctx has ``artifacts: {put(data, mediaType, filename), get(id), list()}``: ``data`` a
string, a ``Uint8Array`` (or any typed array or ``ArrayBuffer``) or a ``Blob``; ``put`` and
``list`` give artifacts as ``{id, runId, mediaType, filename, size, sha256}``, ``get`` gives
``{meta, data}`` with ``data`` a ``Uint8Array`` (a missing id rejects, ``artifact_not_found``).
``agent.run(prompt, {attachments})`` takes ``File`` or ``Blob`` objects (a ``Blob`` without a type
is ``application/octet-stream``) or ``{data, mediaType, filename}``.

Values cross through ``aerix._js`` as everywhere: bytes go as a ``Uint8Array``, and a ``Blob`` is
read there (:func:`aerix._js.blob_bytes`).
"""

from __future__ import annotations

from typing import Any, Callable

from ._js import blob_bytes, js_callable
from .artifacts import Artifact, Artifacts
from .errors import AerixError

__all__ = ["artifact_view", "attachments_from_js", "js_artifacts"]


def artifact_view(art: Artifact) -> dict[str, Any]:
    """An artifact as the page sees it: camelCase keys."""
    return {"id": art.id, "runId": art.run_id, "mediaType": art.media_type, "filename": art.filename, "size": art.size, "sha256": art.sha256}


def js_artifacts(artifacts: Artifacts | None) -> tuple[dict[str, Any] | None, Callable[[], None]]:
    """``ctx.artifacts`` of one JS call, as JavaScript functions, and what releases them."""
    if artifacts is None:  # a ToolContext made outside a run
        return None, lambda: None

    async def put(data: Any, media_type: Any, filename: Any = None) -> dict[str, Any]:
        return artifact_view(await artifacts.put(await blob_bytes(data), media_type, filename))

    async def get(artifact_id: Any) -> dict[str, Any]:
        art, data = await artifacts.get(artifact_id)
        return {"meta": artifact_view(art), "data": data}

    async def list_all() -> list[dict[str, Any]]:
        return [artifact_view(a) for a in await artifacts.list()]

    made = {name: js_callable(fn) for name, fn in (("put", put), ("get", get), ("list", list_all))}

    def release() -> None:
        for _, free in made.values():
            free()

    return {name: proxy for name, (proxy, _) in made.items()}, release


async def attachments_from_js(attachments: Any) -> list[Any]:
    """``run(prompt, {attachments})`` from JavaScript as ``Agent.run`` takes them: each a
    ``File``/``Blob`` (still a proxy here) or a ``{data, mediaType, filename}`` object (a dict)."""
    if not isinstance(attachments, list):
        raise AerixError("options", f"attachments must be an array of File or Blob objects or {{data, mediaType, filename}}, got {type(attachments).__name__}")
    files: list[Any] = []
    for a in attachments:
        if isinstance(a, dict):
            unknown = sorted(set(a) - {"data", "mediaType", "filename"})
            if unknown:
                raise AerixError("options", f"an attachment has unknown key(s) {unknown}; known: ['data', 'filename', 'mediaType']")
            files.append({"data": await blob_bytes(a.get("data")), "media_type": a.get("mediaType"), "filename": a.get("filename")})
        else:  # a File or a Blob
            name = getattr(a, "name", None)
            files.append({"data": await blob_bytes(a), "media_type": str(getattr(a, "type", "") or "application/octet-stream"), "filename": None if name is None else str(name)})
    return files
