"""The digest: compacted turns as deterministic text, one JSON object a line, with no generation.

``compaction.py`` writes it when ``Compaction(method="digest")`` or when the model's summary
fails, and sizes it: the most detail that fits, then, when even the user's messages alone do
not fit, the fewest of the oldest of them left out (:func:`digest`'s ``drop``), with a note
line that says how many. It also holds the heads that start a compaction's message, and
:func:`reply_object`, which reads a turn back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .turn import nests_too_deep

__all__ = ["COMPACTED_HEAD", "DIGEST_HEAD", "SUMMARY_HEAD", "digest", "droppable", "reply_object"]

# the start of the message that stands for the compacted turns (conversations.transcript skips it)
COMPACTED_HEAD = _HEAD = "Earlier in this conversation (compacted to make room): "
SUMMARY_HEAD = _HEAD + "your summary of it.\n\n"
DIGEST_HEAD = _HEAD + 'a digest, a JSON object a line ("length": the characters before it was shortened).\n\n'
_NOTE = re.compile(r"Your last turn was (refused \(.*\)\. Answer with one JSON object that follows the turn contract|cut off at \d+ tokens before it ended\. Write a shorter turn)\.", re.S)


def reply_object(text: str) -> dict[str, Any]:
    """An assistant message as a turn's JSON object, or ``{}`` when it does not read as one."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and "\n" in body:
        body = body[body.index("\n") + 1 : -3]
    if nests_too_deep(body):
        return {}
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def digest(messages: list[dict[str, str]], detail: int, drop: int = 0) -> str:
    """The messages (those after the system message) as JSON lines: ``{"user": text}`` for each
    user message, verbatim; ``{"call": tool, "input": ...}``, ``{"id", "tool", "result"}`` and
    ``{"answer": text}`` cut to ``detail`` characters (``"length"``: how many there were), or
    left out at ``detail`` 0; an earlier digest's lines cut the same way, an earlier summary as
    ``{"summary": text}``; a refused turn and its note left out. ``drop`` (at ``detail`` 0): the
    oldest lines left out (user messages and summaries, the only ones left; at most
    :func:`droppable`); a first line ``{"dropped": n, "note": ...}`` then counts the user
    messages left out, an earlier digest's included."""
    dropped, gone_summary, entries = _read(messages)
    kept = [e for e in (_cut(e, detail) for e in entries) if e is not None]
    if drop:
        assert detail == 0 and drop <= len(kept)
        dropped += sum(1 for e in kept[:drop] if "user" in e)
        gone_summary = gone_summary or any("summary" in e for e in kept[:drop])
        kept = kept[drop:]
    if dropped or gone_summary:
        kept.insert(0, _dropped_line(dropped, gone_summary))
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in kept)


def droppable(messages: list[dict[str, str]]) -> int:
    """How many lines :func:`digest` at ``detail`` 0 may drop: the user messages and summaries."""
    return sum(1 for e in _read(messages)[2] if "user" in e or "summary" in e)


def _dropped_line(dropped: int, summary: bool) -> dict[str, Any]:
    parts = [f"the {dropped} earliest user messages" if dropped != 1 else "the earliest user message"] if dropped else []
    parts += ["an earlier summary"] if summary else []
    line: dict[str, Any] = {"dropped": dropped, "note": f"left out to make room: {' and '.join(parts)}, with what answered them"}
    if summary:
        line["summary_dropped"] = True
    return line


def _read(messages: list[dict[str, str]]) -> tuple[int, bool, list[dict[str, Any]]]:
    """The user messages an earlier digest dropped, whether it dropped a summary, and the
    entries of ``messages`` in order."""
    entries: list[dict[str, Any]] = []
    reply: dict[str, Any] = {}
    said: list[dict[str, Any]] = []  # the latest reply's entries, kept unless a note refuses it
    for i, m in enumerate(messages):
        text = m["content"]
        if m["role"] == "assistant":
            entries += said
            reply = reply_object(text)
            calls, final = reply.get("calls"), reply.get("final")
            if isinstance(calls, list):
                said = [{"call": c.get("tool"), "input": c.get("input", {})} for c in calls if isinstance(c, dict)]
            else:
                said = [] if final is None else [{"answer": final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)}]
            continue
        results = _results(text) if isinstance(reply.get("calls"), list) else None
        reply = {}
        if _NOTE.fullmatch(text):
            said = []
            continue
        entries += said
        said = []
        if i == 0 and text.startswith(DIGEST_HEAD):  # an earlier compaction's message comes first
            entries += _entries(text[len(DIGEST_HEAD) :])
        elif i == 0 and text.startswith(SUMMARY_HEAD):
            entries.append({"summary": text[len(SUMMARY_HEAD) :]})
        elif results is not None:
            entries += [{"id": r.get("id"), "tool": r.get("tool"), "result": str(r.get("result"))} for r in results]
        else:
            entries.append({"user": text})
    entries += said
    notes = [e for e in entries if _is_dropped_line(e)]
    dropped = sum(e["dropped"] for e in notes)
    return dropped, any(e.get("summary_dropped") is True for e in notes), [e for e in entries if not _is_dropped_line(e)]


def _is_dropped_line(entry: dict[str, Any]) -> bool:
    return set(entry) <= {"dropped", "note", "summary_dropped"} and isinstance(entry.get("dropped"), int) and not isinstance(entry.get("dropped"), bool)


def _entries(body: str) -> list[dict[str, Any]]:
    """An earlier digest's entries (a line that does not read is kept as a user's, to lose nothing)."""
    out = []
    for line in body.split("\n"):
        entry = reply_object(line)
        out.append(entry if entry else {"user": line})
    return out


def _cut(entry: dict[str, Any], detail: int) -> dict[str, Any] | None:
    """``entry`` with its result, answer or input cut to ``detail`` characters; at 0, only the
    user's messages and summaries stay."""
    if "user" in entry or "summary" in entry:
        return entry
    if detail == 0:
        return None
    out = dict(entry)
    if "input" in out and not isinstance(out["input"], str):
        shown = json.dumps(out["input"], ensure_ascii=False)
        if len(shown) > detail:
            out["input"] = shown[:detail] + "…"
    for key in ("result", "answer"):
        text = out.get(key)
        if isinstance(text, str) and len(text) > detail:
            out.setdefault("length", len(text))
            out[key] = text[:detail] + "…"
    return out


def _results(text: str) -> list[dict[str, Any]] | None:
    data = reply_object(text)
    results = data.get("results")
    if set(data) != {"results"} or not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return None
    return results
