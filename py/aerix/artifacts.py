"""Artifacts: files a run keeps, put by its tools or given to it as attachments.

In a tool (``ctx.artifacts``), scoped to the run::

    art = await ctx.artifacts.put(b"a,b\\n1,2\\n", "text/csv", "table.csv")   # -> Artifact
    art, data = await ctx.artifacts.get(art.id)                               # (Artifact, bytes)
    every = await ctx.artifacts.list()                                        # this run's, in put order

An artifact is kept in the Agent's store apart from the run record (SQLite rows with a BLOB,
IndexedDB Blobs, a dict in ``MemoryStore``); without a store, in a memory of the Agent's own
(:class:`ArtifactMemory`), which is bounded: it keeps the artifacts of the Agent's latest 16 runs
(:data:`MEMORY_RUNS`), at most 64 MiB in all (:data:`MEMORY_BYTES`), dropping the oldest run's
first, and ``Agent.reset()`` drops them all; a put that would take one run's own artifacts past
64 MiB is refused (``options``: in a tool, its error result). A checkpoint never holds the
bytes: the conversation names an artifact only by what a tool says of it (its id, typically),
and the run's artifacts are found by its run id.

Ids are deterministic: the n-th put of call ``call_3`` of run ``r`` is always the same id, so a
call that runs again (a resumed effect tool whose record was lost in a crash, a call answered
after an approval) puts the same artifacts again in place, never a second copy. Attachments are
the puts of a call named ``input``.

A file name is a plain name, or ``None``: at most 255 characters and 255 bytes of UTF-8; no path
separator nor a character drawn like one (``/``, ``\\``, ``:``, U+2044, U+2215, U+29F8, U+FF0F,
U+FF3C, ...); no control character, line or paragraph separator, or invisible format character
(bidi overrides and isolates U+202A-U+202E and U+2066-U+2069, marks U+200E, U+200F; the
zero-width joiners U+200C and U+200D are allowed); no blank or dot first or last (so neither
``.`` nor ``..``). Anything else is ``AerixError(kind="options")`` naming the name and why.

``run(prompt, attachments=[...])`` stores the files as the run's first artifacts before the first
generation, emits an ``artifact`` event for each, and tells the model of them in the user message:
the prompt, a blank line, then one line per file with its name, media type and size (see
:func:`attachments_note`). A missing artifact is ``AerixError(kind="options", reason=
"artifact_not_found")``, its message starting ``artifact_not_found``; in a tool that becomes its
error result.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

from .errors import AerixError
from .events import NewArtifact

__all__ = ["MEMORY_BYTES", "MEMORY_RUNS", "Artifact", "ArtifactMemory", "Artifacts", "File", "RunArtifacts", "attachments_note", "check_attachments", "check_file", "list_artifacts", "not_found", "read_artifact"]

NOT_FOUND = "artifact_not_found"
MEMORY_RUNS = 16  # without a store: the runs whose artifacts are kept
MEMORY_BYTES = 64 * 2**20  # without a store: their bytes, all together
INPUT = "input"  # the "call" that attachments are put by
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;[^\x00-\x1f\x7f]*)?$")
# "/" and "\\", ":" (the classic Mac OS separator, and Windows' drive and stream mark), and the
# characters drawn like a slash or a backslash
_SEPARATORS = frozenset("/\\:\u2044\u2215\u2216\u2571\u2572\u29f5\u29f8\u29f9\ufe68\uff0f\uff3c\u0338\u20e5")
_JOINERS = frozenset("\u200c\u200d")  # zero-width (non-)joiners: Persian words and emoji sequences need them


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
        if not isinstance(filename, str) or not filename.strip():
            raise AerixError("options", f"{what}: filename must be a non-empty string of at most 255 characters, or None; got {filename!r}")
        why = _bad_filename(filename)
        if why is not None:
            raise AerixError("options", f"{what}: filename {repr(filename)[:80]} {why}")
    return File(data, media_type, filename)


def _bad_filename(name: str) -> str | None:
    """Why ``name`` is no plain file name (see the module docstring), or ``None``."""
    if len(name) > 255 or len(name.encode("utf-8", "surrogatepass")) > 255:
        return "is longer than 255 characters or 255 bytes of UTF-8"
    for ch in name:
        if ch in _SEPARATORS:
            return f"holds a path separator or one that looks like it ({ch!r})"
        kind = unicodedata.category(ch)
        if kind in ("Cc", "Zl", "Zp", "Cs") or (kind == "Cf" and ch not in _JOINERS):
            return f"holds a control character or an invisible format character ({ch!r}: bidi overrides and isolates among them)"
    if name[0] in " ." or name[-1] in " ." or name[0].isspace() or name[-1].isspace():
        return "starts or ends with a blank or a dot (as '.' and '..' do)"
    return None


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
        if isinstance(self.store, ArtifactMemory):  # before the store, whose failures end a run
            self.store.room(self.run_id, art.id, len(f.data))
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


class ArtifactMemory:
    """Where an Agent without a store keeps artifacts: the latest ``runs`` runs' (by their latest
    put), at most ``max_bytes`` in all. A put makes room by dropping the oldest runs' artifacts
    (never its own run's); a run whose own artifacts would pass ``max_bytes`` is refused
    (:meth:`room`); ``Agent.reset()`` drops them all (:meth:`clear`). The store protocol's three
    artifact methods, as :class:`aerix.stores.MemoryStore` has them."""

    def __init__(self, runs: int = MEMORY_RUNS, max_bytes: int = MEMORY_BYTES) -> None:
        self.runs, self.max_bytes = runs, max_bytes
        self.size = 0
        self._by_run: dict[str, dict[str, tuple[dict[str, Any], bytes]]] = {}  # the latest run last; a run's in put order
        self._run_of: dict[str, str] = {}  # artifact id -> its run id

    def __repr__(self) -> str:
        return f"ArtifactMemory(runs={len(self._by_run)}/{self.runs}, bytes={self.size}/{self.max_bytes})"

    def room(self, run_id: str, artifact_id: str, size: int) -> None:
        """``AerixError(kind="options")`` if run ``run_id``'s artifacts, with ``size`` bytes put
        as ``artifact_id``, would pass ``max_bytes`` on their own."""
        own = size + sum(len(data) for id_, (_, data) in self._by_run.get(run_id, {}).items() if id_ != artifact_id)
        if own > self.max_bytes:
            raise AerixError(
                "options",
                f"this run's artifacts would take {own} bytes, over the {self.max_bytes} an Agent without a store keeps in memory; give the Agent a store (aerix.stores)",
            )

    async def put_artifact(self, meta: dict[str, Any], data: bytes) -> None:
        run_id, artifact_id = meta["run_id"], meta["id"]
        self.room(run_id, artifact_id, len(data))
        kept = self._by_run.pop(run_id, {})  # put back last: the latest run
        if artifact_id in kept:
            self.size -= len(kept[artifact_id][1])
        kept[artifact_id] = (copy.deepcopy(meta), bytes(data))  # a replaced id keeps its place
        self._by_run[run_id], self._run_of[artifact_id] = kept, run_id
        self.size += len(data)
        while len(self._by_run) > self.runs or self.size > self.max_bytes:
            self._drop(next(iter(self._by_run)))  # never this run's: it is last and fits alone

    async def get_artifact(self, artifact_id: str) -> tuple[dict[str, Any], bytes] | None:
        run_id = self._run_of.get(artifact_id)
        if run_id is None:
            return None
        meta, data = self._by_run[run_id][artifact_id]
        return copy.deepcopy(meta), data

    async def list_artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(meta) for meta, _ in self._by_run.get(run_id, {}).values()]

    def clear(self) -> None:
        for run_id in list(self._by_run):
            self._drop(run_id)

    def _drop(self, run_id: str) -> None:
        for artifact_id, (_, data) in self._by_run.pop(run_id).items():
            self.size -= len(data)
            del self._run_of[artifact_id]


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
