"""Artifacts: files a run keeps, put by its tools or given to it as attachments.

In a tool (``ctx.artifacts``), scoped to the run::

    art = await ctx.artifacts.put(b"a,b\\n1,2\\n", "text/csv", "table.csv")   # -> Artifact
    art, data = await ctx.artifacts.get(art.id)                               # (Artifact, bytes)
    every = await ctx.artifacts.list()                                        # this run's, in put order

An artifact is kept in the Agent's store apart from the run record (SQLite rows with a BLOB,
IndexedDB Blobs, a dict in ``MemoryStore``); without a store, in a memory of the Agent's own. A
checkpoint never holds the bytes: the conversation names an artifact only by what a tool says of
it (its id, typically), and the run's artifacts are found by its run id.

Ids are deterministic: the n-th put of call ``call_3`` of run ``r`` is always the same id, so a
call that runs again (a resumed effect tool whose record was lost in a crash, a call answered
after an approval) puts the same artifacts again in place, never a second copy. Attachments are
the puts of a call named ``input``.

``run(prompt, attachments=[...])`` stores the files as the run's first artifacts before the first
generation, emits an ``artifact`` event for each, and tells the model of them in the user message:
the prompt, a blank line, then one line per file with its name, media type and size (see
:func:`attachments_note`). A missing artifact is ``AerixError(kind="options", reason=
"artifact_not_found")``, its message starting ``artifact_not_found``; in a tool that becomes its
error result.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

from .errors import AerixError
from .events import NewArtifact

__all__ = ["Artifact", "Artifacts", "File", "RunArtifacts", "attachments_note", "check_attachments", "check_file", "list_artifacts", "not_found", "read_artifact"]

NOT_FOUND = "artifact_not_found"
INPUT = "input"  # the "call" that attachments are put by
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;[^\x00-\x1f\x7f]*)?$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Artifact:
    """What is known of an artifact besides its bytes; ``to_dict()`` is what a store keeps."""

    id: str
    run_id: str
    media_type: str
    filename: str | None
    size: int
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "run_id": self.run_id, "media_type": self.media_type, "filename": self.filename, "size": self.size, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, data: Any) -> Artifact:
        """The artifact a store's dict describes; ``AerixError(kind="store")`` if it does not read."""
        kinds: dict[str, Any] = {"id": str, "run_id": str, "media_type": str, "filename": (str, type(None)), "size": int, "sha256": str}
        if not isinstance(data, dict) or not all(isinstance(data.get(k), t) for k, t in kinds.items()):
            raise AerixError("store", f"store failed: an artifact record does not read: {repr(data)[:120]}")
        return cls(data["id"], data["run_id"], data["media_type"], data["filename"], data["size"], data["sha256"])

    def event(self) -> NewArtifact:
        return NewArtifact(self.id, self.media_type, self.filename, self.size)


@dataclass(frozen=True)
class File:
    """Checked bytes to keep: ``data``, its ``media_type`` and an optional ``filename``."""

    data: bytes
    media_type: str
    filename: str | None = None


def check_file(data: Any, media_type: Any, filename: Any = None, what: str = "an artifact") -> File:
    """``data`` (bytes, or a str kept as UTF-8), a ``type/subtype`` media type and a plain file
    name (or ``None``) as a :class:`File`; ``AerixError(kind="options")`` saying what is wrong."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise AerixError("options", f"{what}: data must be bytes or a str, got {type(data).__name__}")
    if not isinstance(media_type, str) or not media_type.strip():
        raise AerixError("options", f"{what}: media_type must be a non-empty string such as 'text/plain', got {media_type!r}")
    if len(media_type) > 255 or not _MEDIA_TYPE.fullmatch(media_type):
        raise AerixError("options", f"{what}: media_type must look like 'type/subtype' (e.g. 'text/csv'), got {media_type[:80]!r}")
    if filename is not None:
        if not isinstance(filename, str) or not filename.strip() or len(filename) > 255:
            raise AerixError("options", f"{what}: filename must be a non-empty string of at most 255 characters, or None; got {filename!r}")
        if _CONTROL.search(filename) or "/" in filename or "\\" in filename:
            raise AerixError("options", f"{what}: filename {filename[:80]!r} holds a path separator or a control character")
    return File(data, media_type, filename)


def check_attachments(attachments: Any) -> list[File]:
    """``run(attachments=...)``: a list of ``(data, media_type[, filename])`` tuples or dicts with
    ``data``, ``media_type`` and optionally ``filename`` (an :class:`Artifact`'s keys)."""
    if attachments is None:
        return []
    if not isinstance(attachments, (list, tuple)):
        raise AerixError("options", f"attachments must be a list of (data, media_type, filename) tuples or dicts, got {type(attachments).__name__}")
    files = []
    for n, a in enumerate(attachments, 1):
        what = f"attachment {n}"
        if isinstance(a, tuple) and len(a) in (2, 3):
            files.append(check_file(a[0], a[1], a[2] if len(a) == 3 else None, what=what))
        elif isinstance(a, dict) and not set(a) - {"data", "media_type", "filename"}:
            files.append(check_file(a.get("data"), a.get("media_type"), a.get("filename"), what=what))
        else:
            raise AerixError("options", f"{what} must be a (data, media_type, filename) tuple or a dict with data, media_type and filename; got {repr(a)[:80]}")
    return files


def attachments_note(prompt: str, files: Sequence[File]) -> str:
    """The user message of a run with attachments: the prompt, a blank line, one line per file.
    File names are JSON strings, so a name cannot start a line of its own; no id is named (ids
    hang on the run id, which ``start`` may choose), so the same request is the same message."""
    if not files:
        return prompt
    lines = [f"{n}. {'(no name)' if f.filename is None else json.dumps(f.filename, ensure_ascii=False)} ({f.media_type}, {len(f.data)} bytes)" for n, f in enumerate(files, 1)]
    return f"{prompt}\n\nAttached files (the run's first artifacts, in this order):\n" + "\n".join(lines)


def not_found(artifact_id: Any, where: str) -> AerixError:
    return AerixError("options", f"{NOT_FOUND}: no artifact {artifact_id!r} {where}", reason=NOT_FOUND)


class RunArtifacts:
    """The artifacts of one run, in ``store``; a run kept in memory gets a run id of its own."""

    def __init__(self, store: Any, run_id: str | None = None) -> None:
        self.store = store
        self.run_id = run_id if run_id is not None else f"mem-{uuid.uuid4().hex[:16]}"

    def for_call(self, call_id: str) -> Artifacts:
        """What one execution of call ``call_id`` sees as ``ctx.artifacts``."""
        return Artifacts(self, call_id)

    async def attach(self, files: Sequence[File]) -> list[NewArtifact]:
        """Keep the run's attachments (before its first generation); their events."""
        inputs = self.for_call(INPUT)
        for f in files:
            await inputs.keep(f)
        return inputs.made

    async def keep(self, call_id: str, n: int, f: File) -> Artifact:
        digest = hashlib.sha256(f"{self.run_id}\n{call_id}\n{n}".encode()).hexdigest()
        art = Artifact(f"art_{digest[:24]}", self.run_id, f.media_type, f.filename, len(f.data), hashlib.sha256(f.data).hexdigest())
        await _use(self.store, "put_artifact", art.to_dict(), f.data)
        return art

    async def get(self, artifact_id: str) -> tuple[Artifact, bytes]:
        found = await read_artifact(self.store, artifact_id)
        if found is None or found[0].run_id != self.run_id:
            raise not_found(artifact_id, f"in run {self.run_id}")
        return found

    async def list(self) -> list[Artifact]:
        return await list_artifacts(self.store, self.run_id)


class Artifacts:
    """``ctx.artifacts``: the run's artifacts as one execution of one call sees them. Its n-th
    ``put`` has the id of the n-th put of that call in any execution."""

    def __init__(self, run: RunArtifacts, call_id: str) -> None:
        self._run = run
        self._call_id = call_id
        self._puts = 0
        self.made: list[NewArtifact] = []  # the ``artifact`` events of this execution

    @property
    def run_id(self) -> str:
        return self._run.run_id

    async def put(self, data: bytes | str, media_type: str, filename: str | None = None) -> Artifact:
        """Keep ``data`` (bytes, or a str as UTF-8) as an artifact of this run."""
        return await self.keep(check_file(data, media_type, filename))

    async def keep(self, f: File) -> Artifact:
        self._puts += 1
        art = await self._run.keep(self._call_id, self._puts, f)
        self.made.append(art.event())
        return art

    async def get(self, artifact_id: str) -> tuple[Artifact, bytes]:
        """``(artifact, data)``; an id not of this run is ``artifact_not_found``."""
        return await self._run.get(artifact_id)

    async def list(self) -> list[Artifact]:
        """This run's artifacts, in put order (attachments first)."""
        return await self._run.list()


async def read_artifact(store: Any, artifact_id: Any) -> tuple[Artifact, bytes] | None:
    """The artifact ``artifact_id`` of any run in ``store``, with its bytes; ``None`` if missing."""
    if not isinstance(artifact_id, str) or not artifact_id:
        raise AerixError("options", f"an artifact id is a non-empty string, got {artifact_id!r}")
    found = await _use(store, "get_artifact", artifact_id)
    if found is None:
        return None
    if not isinstance(found, (tuple, list)) or len(found) != 2 or not isinstance(found[1], (bytes, bytearray, memoryview)):
        raise AerixError("store", f"store failed: get_artifact answered {type(found).__name__}, not (meta, bytes)")
    art, data = Artifact.from_dict(found[0]), bytes(found[1])
    if art.id != artifact_id or hashlib.sha256(data).hexdigest() != art.sha256:
        raise AerixError("store", f"store failed: artifact {artifact_id!r} does not match its record (id or sha256)")
    return art, data


async def list_artifacts(store: Any, run_id: str) -> list[Artifact]:
    found = await _use(store, "list_artifacts", run_id, returns=list)
    return [Artifact.from_dict(meta) for meta in found]


async def _use(store: Any, method: str, *args: Any, returns: type | tuple[type, ...] | None = None) -> Any:
    from .durable.book import use_store  # not at import: the durable package imports the loop, which imports this

    return await use_store(method, lambda: getattr(store, method)(*args), returns)
