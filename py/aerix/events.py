"""What a run tells its caller, in order.

Each event is a frozen dataclass with a literal ``type`` and converts to a plain dict with
``to_dict()`` (JSON values only), so it can cross into JavaScript unchanged.

A run yields, per generation: ``text`` deltas (and ``final_delta`` pieces of the answer as it
is written, or with structured output ``output_delta`` partial answers), one ``usage``; then either ``retry`` (the turn was
refused), or ``turn`` followed by ``call``/``result`` per call (an ``artifact`` per file the call kept,
then a ``taint`` before the first result from outside; a call of an agent as a tool,
``as_tool``, has its sub-run's events, each wrapped in a ``subagent`` event, between its ``call``
and its ``result``; after a handoff call's result, a ``handoff``); a run with attachments starts with their
``artifact`` events; before a generation whose prompt would not leave room, a ``compact``
(after its summary generation's ``usage``, when the model wrote the summary); and finally **exactly one ending**: ``final`` or ``end``. A durable run may
instead stop at a ``waiting`` event (an approval is pending) or an ``interrupted`` one (the agent
was drained) and give its remaining events, ending included, when it is resumed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, Union

__all__ = [
    "Call",
    "Compacted",
    "End",
    "EndReason",
    "Event",
    "Final",
    "FinalDelta",
    "Handoff",
    "Interrupted",
    "NewArtifact",
    "OutputDelta",
    "Result",
    "Retry",
    "SubagentEvent",
    "Taint",
    "Text",
    "Turn",
    "Usage",
    "Waiting",
    "event_from_dict",
]

EndReason = Literal["turns", "retries", "abort", "error", "timeout", "tokens", "loop", "context"]


def _plain(value: Any) -> Any:
    if isinstance(value, _EventBase):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class _EventBase:
    type: str

    def to_dict(self) -> dict[str, Any]:
        """The event as a plain dict of JSON values, ``type`` first."""
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name != "type":
                out[f.name] = _plain(getattr(self, f.name))
        return out


@dataclass(frozen=True)
class Text(_EventBase):
    """A piece of raw model text, as it streams."""

    text: str
    type: Literal["text"] = field(default="text", init=False)


@dataclass(frozen=True)
class FinalDelta(_EventBase):
    """A piece of the answer as it is written: the decoded characters of the turn's ``final``
    string that the latest ``text`` completed (escapes and ``\\uXXXX`` decoded). Joined, a
    generation's pieces are its final's text; a UI shows the answer word by word from them, while
    ``text`` keeps the raw JSON. A turn refused after its pieces streamed (cut, bad JSON) is
    followed by ``retry``: drop what it showed. Not sent with structured output (``output_delta`` is)."""

    text: str
    type: Literal["final_delta"] = field(default="final_delta", init=False)


@dataclass(frozen=True)
class OutputDelta(_EventBase):
    """With structured output (``Agent(output=...)``), the answer object as it is written: the
    turn's ``final`` value parsed so far, whole (not a diff), after a ``text`` that changed it.
    A string or number appears only once complete; an object or array as soon as it opens,
    with what of it is complete (``aerix.partial_output``). Each is valid JSON and extends the
    one before; the last of a generation is its final as written (the ``final`` event's
    ``output`` is it validated: a pydantic model's defaults filled in). A turn refused after
    them (bad JSON, a final that fails the schema) is followed by ``retry``: drop the object.
    Not sent without structured output."""

    output: Any
    type: Literal["output_delta"] = field(default="output_delta", init=False)


@dataclass(frozen=True)
class Usage(_EventBase):
    """Token counts of one generation; ``cached_tokens`` of the prompt were reused from the engine's cache."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    type: Literal["usage"] = field(default="usage", init=False)


@dataclass(frozen=True)
class Call(_EventBase):
    """A tool call the model asked for. Hooks receive it as ``call``."""

    id: str
    tool: str
    input: dict[str, Any]
    type: Literal["call"] = field(default="call", init=False)


@dataclass(frozen=True)
class Turn(_EventBase):
    """An accepted turn: generation number ``turn`` of this run, its thought and its calls (empty for a final).

    ``dropped``: the tool names of the calls the turn wrote again with the same tool and input
    (``TurnFormat.duplicate_calls="drop"``, the default): they do not run, get no id and no
    ``call`` event, and the results message tells the model so. Empty, and then left out of
    ``to_dict()``, when nothing was dropped."""

    turn: int
    thought: str | None
    calls: tuple[Call, ...]
    dropped: tuple[str, ...] = ()
    type: Literal["turn"] = field(default="turn", init=False)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if not out["dropped"]:
            del out["dropped"]
        return out


@dataclass(frozen=True)
class Result(_EventBase):
    """What a call gave back, exactly as the model will see it; ``error`` when it failed or was refused.

    ``repeat_of``: the id of the earlier call of this run with the same tool and input whose
    result this repeats (the tool did not run again; ``text`` says so to the model, see
    ``Limits.repeat_calls``); ``None`` otherwise, and then left out of ``to_dict()``."""

    id: str
    tool: str
    text: str
    error: bool
    repeat_of: str | None = None
    type: Literal["result"] = field(default="result", init=False)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out["repeat_of"] is None:
            del out["repeat_of"]
        return out


@dataclass(frozen=True)
class Retry(_EventBase):
    """Generation ``turn`` was refused (bad or cut); the model is asked again."""

    turn: int
    reason: str
    type: Literal["retry"] = field(default="retry", init=False)


@dataclass(frozen=True)
class Compacted(_EventBase):
    """The conversation was compacted before the next generation (``aerix.compaction``): its
    oldest ``dropped_turns`` turns became one summary message. ``tokens_before`` and
    ``tokens_after`` are the prompt's size in tokens before and after, as estimated from the
    engine's latest count. ``method``: who wrote the summary, ``"model"`` or ``"digest"``;
    ``note`` says why the digest stood in for the model's summary (``None`` when it did not)."""

    dropped_turns: int
    tokens_before: int
    tokens_after: int
    method: Literal["model", "digest"]
    note: str | None = None
    type: Literal["compact"] = field(default="compact", init=False)


@dataclass(frozen=True)
class Final(_EventBase):
    """The run's ending with an answer. With structured output (``Agent(output=...)``),
    ``output`` is the answer as plain JSON and ``text`` is that JSON written out; otherwise
    ``output`` is ``None`` and left out of ``to_dict()``."""

    text: str
    thought: str | None
    output: Any = None
    type: Literal["final"] = field(default="final", init=False)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out["output"] is None:
            del out["output"]
        return out


@dataclass(frozen=True)
class Waiting(_EventBase):
    """A durable run paused for a human: answer ``approval_id`` with ``Agent.approve``.

    Not an ending: the run's iteration stops here and goes on once the approval is answered."""

    run_id: str
    approval_id: str
    title: str
    body: str | None
    type: Literal["waiting"] = field(default="waiting", init=False)


@dataclass(frozen=True)
class End(_EventBase):
    """The run's ending without an answer: ``reason`` is turns, retries, abort, error, timeout,
    tokens, loop (the same call came once too often in a row: ``Limits.repeat_calls``) or context
    (the conversation does not fit in ``Limits.context_tokens``, compacted or not).

    ``problem``: the RFC 9457 problem document an OpenAI-compatible server sent with the failure
    that ended the run (reason ``error``), as it was sent; ``None`` otherwise, and then left out
    of ``to_dict()``."""

    reason: EndReason
    message: str
    problem: dict[str, Any] | None = None
    type: Literal["end"] = field(default="end", init=False)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        if out["problem"] is None:
            del out["problem"]
        return out


@dataclass(frozen=True)
class NewArtifact(_EventBase):
    """A run kept a file (``aerix.artifacts``): an attachment, before the first generation, or
    one a call put, after its ``call`` and before its ``result``. The bytes are in the store:
    ``Agent.artifact(id)``."""

    id: str
    media_type: str
    filename: str | None
    size: int
    type: Literal["artifact"] = field(default="artifact", init=False)


@dataclass(frozen=True)
class Taint(_EventBase):
    """The conversation now holds content from outside: the result of call ``at`` of the tool
    ``source`` (marked ``trust={"taint": ...}``). Emitted before that result; from here on the
    tools marked ``guard_when_tainted`` need a person's approval. Once per conversation."""

    source: str
    at: str
    type: Literal["taint"] = field(default="taint", init=False)


@dataclass(frozen=True)
class Handoff(_EventBase):
    """The conversation was handed from the agent ``source`` to the agent ``target``
    (``Agent(handoffs=...)``, ``aerix.handoffs``): after the handoff call's ``call`` and
    ``result``, the run goes on under the target's instructions, tools and limits."""

    source: str
    target: str
    type: Literal["handoff"] = field(default="handoff", init=False)


@dataclass(frozen=True)
class Interrupted(_EventBase):
    """A durable run stopped at a checkpoint without an ending (``Agent.drain``): resume it later.

    Not an ending, like ``waiting``: the run's iteration stops here."""

    run_id: str
    message: str
    type: Literal["interrupted"] = field(default="interrupted", init=False)


@dataclass(frozen=True)
class SubagentEvent(_EventBase):
    """An event of a sub-run, as it happens: ``event``, yielded by the run of the agent ``agent``
    that call ``call_id`` of the tool ``tool`` (``agent.as_tool(tool, ...)``) started. Between
    that call's ``call`` and its ``result``; the ``call`` comes early, with the first of them.
    ``event`` is any event, the sub-run's own ending (``final``, ``end``) or stop (``waiting``)
    included: it ends the sub-run, never this run. A sub-run's sub-run nests again (``event`` is
    then a ``subagent`` event of its own, its ``call_id`` a call of the sub-run). ``to_dict()``
    nests the inner event's dict."""

    call_id: str
    tool: str
    agent: str
    event: Event
    type: Literal["subagent"] = field(default="subagent", init=False)


Event = Union[Text, FinalDelta, OutputDelta, Usage, Compacted, Turn, Call, NewArtifact, Taint, Result, Handoff, Retry, SubagentEvent, Waiting, Interrupted, Final, End]


_BY_TYPE: dict[str, type] = {
    c.type: c for c in (Text, FinalDelta, OutputDelta, Usage, Compacted, Turn, Call, NewArtifact, Taint, Result, Handoff, Retry, SubagentEvent, Waiting, Interrupted, Final, End)
}


def event_from_dict(data: dict[str, Any]) -> Event:
    """The event a ``to_dict()`` came from (durable runs store their ending this way)."""
    cls = _BY_TYPE[data["type"]]
    args = {k: v for k, v in data.items() if k != "type"}
    if cls is Turn:
        args["calls"] = tuple(event_from_dict(c) for c in args["calls"])
    if cls is SubagentEvent:
        args["event"] = event_from_dict(args["event"])
    event: Event = cls(**args)
    return event
