"""The client's stream events, and the rules that turn a server's chunks into them.

One union ``StreamEvent`` of seven frozen dataclasses; each has a ``type`` (the constants below)
and ``to_dict()``:

    ContentDelta   delta            {content}                  a piece of the reply's text
    ToolCallStart  tool_call_start  {id, name}                 the model began a native tool call
    ToolCallDelta  tool_call_delta  {id, args}                 a fragment of that call's argument JSON
    ToolCallEnd    tool_call_end    {id}                       the call's arguments are complete
    Logprobs       logprobs         {content}                  generated tokens' log-probabilities (when asked)
    StreamDone     done             {stop_reason, usage}       the ending: stop | length | tool_calls | cancelled | closed
    StreamError    error            {message, code, problem}   the other ending: the request or the stream failed

These are the HTTP stream's words, one level below the model protocol of ``aerix.model``
(whose ``TextDelta``, ``LogprobsDelta`` and ``Done`` are what ``OpenAIModel`` makes of
``ContentDelta``, ``Logprobs`` and ``StreamDone``); the names differ so that the two cannot be mistaken for each other.

The rules, each with a test in ``tests/unit/test_client.py``:

- Tool-call fragments are keyed by the provider's ``delta.tool_calls[].index`` (the ``id``
  comes only in a call's first fragment; a call without one is ``call_<n>``).
- A choice's ``logprobs.content`` (a server sends it when the request asked ``logprobs: true``)
  is one ``logprobs`` event after that chunk's text, its objects as the server sent them
  (``{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}``); an empty or missing
  list is no event.
- Exactly one ending, always last. Before ``done``, every call still open gets its
  ``tool_call_end``. The endings: ``[DONE]``; a ``finish_reason`` of ``stop``, ``length`` or
  ``tool_calls`` (after it the stream is read on only for the usage chunk that servers send
  next, and ``done`` comes with that usage, or at ``[DONE]``, or when the body closes); a body
  that just closes (``stop_reason`` ``closed`` when no finish reason came). Any other
  ``finish_reason`` (``null``, ``content_filter``, ...) is ignored and the stream goes on.
- An error (a non-2xx answer, an ``{"error": ...}`` frame, an ``event: error`` frame, a frame
  that is not JSON, a ``delta`` or ``tool_calls`` of the wrong JSON type) is one ``error``, never
  an exception. ``message`` is for people (an error that says nothing is "no details");
  ``code`` is the HTTP status (or the provider's error code); an RFC 9457 problem document
  (``application/problem+json``) rides along as ``problem``.
- What a server sent is quoted in a message cut to a length (200 or 500 characters) by
  ``shorten`` (the client's ``Secrets.shorten``), which redacts the secrets *before* it cuts, so
  a cut never leaves the first characters of a key behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Final, Literal, Sequence, Union

from ...turn import nests_too_deep
from .sse import ServerSentEvent

__all__ = [
    "StreamEvent", "ContentDelta", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "Logprobs", "StreamDone", "StreamError",
    "DELTA", "TOOL_CALL_START", "TOOL_CALL_DELTA", "TOOL_CALL_END", "LOGPROBS", "DONE", "ERROR", "EVENT_TYPES", "STOP_REASONS",
    "collect_tool_calls",
]

DELTA: Final = "delta"
TOOL_CALL_START: Final = "tool_call_start"
TOOL_CALL_DELTA: Final = "tool_call_delta"
TOOL_CALL_END: Final = "tool_call_end"
LOGPROBS: Final = "logprobs"
DONE: Final = "done"
ERROR: Final = "error"
EVENT_TYPES = (DELTA, TOOL_CALL_START, TOOL_CALL_DELTA, TOOL_CALL_END, LOGPROBS, DONE, ERROR)

StopReason = Literal["stop", "length", "tool_calls", "cancelled", "closed"]
STOP_REASONS: tuple[str, ...] = ("stop", "length", "tool_calls", "cancelled", "closed")
_FINISHING = frozenset({"stop", "length", "tool_calls"})  # other finish reasons are ignored
Shorten = Callable[[str, int], str]  # (text, length) -> the text as it may be shown, at most length characters


def _first(text: str, length: int) -> str:
    return text[:length]


class _StreamEventBase:
    type: str

    def to_dict(self) -> dict[str, Any]:
        """The event as a plain dict, ``type`` first."""
        out: dict[str, Any] = {"type": self.type}
        for f in fields(self):  # type: ignore[arg-type]
            if f.name != "type":
                out[f.name] = getattr(self, f.name)
        return out


@dataclass(frozen=True)
class ContentDelta(_StreamEventBase):
    """A piece of the reply's text."""

    content: str
    type: Literal["delta"] = field(default=DELTA, init=False)


@dataclass(frozen=True)
class ToolCallStart(_StreamEventBase):
    """The model began native tool call ``id`` (the provider's id, or ``call_<n>`` if it gave none)."""

    id: str
    name: str
    type: Literal["tool_call_start"] = field(default=TOOL_CALL_START, init=False)


@dataclass(frozen=True)
class ToolCallDelta(_StreamEventBase):
    """A fragment of call ``id``'s argument JSON; the fragments joined are the arguments."""

    id: str
    args: str
    type: Literal["tool_call_delta"] = field(default=TOOL_CALL_DELTA, init=False)


@dataclass(frozen=True)
class ToolCallEnd(_StreamEventBase):
    """Call ``id``'s arguments are complete."""

    id: str
    type: Literal["tool_call_end"] = field(default=TOOL_CALL_END, init=False)


@dataclass(frozen=True)
class Logprobs(_StreamEventBase):
    """The log-probabilities of generated tokens, one object per token in order, as the server
    sent them (``{token, logprob, top_logprobs: [{token, logprob}, ...]}`` in OpenAI's shape)."""

    content: list[dict[str, Any]]
    type: Literal["logprobs"] = field(default=LOGPROBS, init=False)


@dataclass(frozen=True)
class StreamDone(_StreamEventBase):
    """The stream ended. ``usage`` is the server's last usage object as it sent it, or ``None``."""

    stop_reason: StopReason
    usage: dict[str, Any] | None = None
    type: Literal["done"] = field(default=DONE, init=False)


@dataclass(frozen=True)
class StreamError(_StreamEventBase):
    """The request or the stream failed. ``code``: the HTTP status, or the provider's error code;
    ``problem``: the RFC 9457 problem document, when the server sent one."""

    message: str
    code: int | str | None = None
    problem: dict[str, Any] | None = None
    type: Literal["error"] = field(default=ERROR, init=False)


StreamEvent = Union[ContentDelta, ToolCallStart, ToolCallDelta, ToolCallEnd, Logprobs, StreamDone, StreamError]


def collect_tool_calls(events: Sequence[StreamEvent]) -> list[dict[str, str]]:
    """The native tool calls of a finished stream: ``[{id, name, args}]`` in the order they began,
    each ``args`` its fragments joined (the JSON text, unparsed)."""
    calls: dict[str, dict[str, str]] = {}
    for ev in events:
        if isinstance(ev, ToolCallStart):
            calls[ev.id] = {"id": ev.id, "name": ev.name, "args": ""}
        elif isinstance(ev, ToolCallDelta) and ev.id in calls:
            calls[ev.id]["args"] += ev.args
    return list(calls.values())


# -- from frames to events (used by the client) ---------------------------------------------


class StreamState:
    """The state of one stream: open tool calls by index, the finish reason, the last usage."""

    def __init__(self, shorten: Shorten = _first) -> None:
        self.shorten = shorten  # how an error quotes what the server sent: redacted, then cut
        self.calls: dict[int, str] = {}  # provider index -> our call id, in the order they began
        self.started = 0
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None
        self.ended = False

    def frame(self, frame: ServerSentEvent) -> list[StreamEvent]:
        data = frame.data.strip()
        if data == "[DONE]":
            return self.end(None)
        if frame.event == "error":
            return self.fail(_error_from(_json_or_text(data, self.shorten), self.shorten))
        if not data:
            return []  # an empty keep-alive frame
        try:
            if nests_too_deep(data):  # before parsing: deep JSON overflows Pyodide's stack first
                raise ValueError("nested too deep")
            chunk = json.loads(data)
        except ValueError:
            return self.fail(StreamError(f"the server sent a frame that is not JSON: {self.shorten(data, 200)!r}"))
        if not isinstance(chunk, dict):
            return self.fail(StreamError(f"the server sent a frame that is not a JSON object: {self.shorten(data, 200)!r}"))
        if chunk.get("error"):
            return self.fail(_error_from(chunk, self.shorten))
        return self.chunk(chunk)

    def chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self.finish is None:
            choice = _first_choice(chunk.get("choices"))
            if choice is not None:
                events = self._choice(choice)
                if self.ended:
                    return events
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        if self.finish is not None and self.usage is not None:
            events.extend(self.end(None))  # the usage that follows the finish reason has come
        return events

    def _choice(self, choice: dict[str, Any]) -> list[StreamEvent]:
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):  # a server off the protocol: said in an error, never raised
            return self.fail(StreamError(f"the server sent a delta that is not a JSON object: {_short(delta, self.shorten)}"))
        tool_calls = delta.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            return self.fail(StreamError(f"the server sent tool_calls that are not a JSON list: {_short(tool_calls, self.shorten)}"))
        events: list[StreamEvent] = []
        content = delta.get("content")
        if isinstance(content, str) and content:
            events.append(ContentDelta(content))
        logprobs = choice.get("logprobs")
        tokens = logprobs.get("content") if isinstance(logprobs, dict) else None
        if isinstance(tokens, list) and any(isinstance(t, dict) for t in tokens):
            events.append(Logprobs([t for t in tokens if isinstance(t, dict)]))
        for position, call in enumerate(tool_calls):
            if isinstance(call, dict):
                events.extend(self._tool_call(position, call))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish in _FINISHING:
            self.finish = finish
            events.extend(self._end_calls())
        return events

    def whole(self, body: bytes) -> list[StreamEvent]:
        """A non-streamed answer (``application/json``), told as the same events."""
        parsed = _json_or_text(body.decode("utf-8", "replace"), self.shorten)
        if not isinstance(parsed, dict):
            return self.fail(StreamError(f"the server answered with JSON that is not an object: {self.shorten(str(parsed), 200)!r}"))
        if parsed.get("error"):
            return self.fail(_error_from(parsed, self.shorten))
        return self.chunk(parsed) + ([] if self.ended else self.end(None))

    def end(self, reason: str | None) -> list[StreamEvent]:
        """Every open call ends, then the one ``done``."""
        if self.ended:
            return []
        self.ended = True
        stop = reason or self.finish or "closed"
        return [*self._end_calls(), StreamDone(stop, self.usage)]  # type: ignore[arg-type]

    def fail(self, error: StreamError) -> list[StreamEvent]:
        self.ended = True
        return [error]

    def _tool_call(self, position: int, call: dict[str, Any]) -> list[StreamEvent]:
        index = call.get("index")
        if not isinstance(index, int):
            index = position
        function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        given_id = call.get("id")
        events: list[StreamEvent] = []
        current = self.calls.get(index)
        if current is not None and given_id and given_id != current:
            events.append(ToolCallEnd(current))  # the index was reused for a new call
            del self.calls[index]
            current = None
        if current is None:
            self.started += 1
            current = given_id if isinstance(given_id, str) and given_id else f"call_{self.started}"
            self.calls[index] = current
            events.append(ToolCallStart(current, str(function.get("name") or "")))
        args = function.get("arguments")
        if isinstance(args, dict):  # a few servers send the arguments as an object
            args = json.dumps(args, ensure_ascii=False)
        if isinstance(args, str) and args:
            events.append(ToolCallDelta(current, args))
        return events

    def _end_calls(self) -> list[StreamEvent]:
        ended: list[StreamEvent] = [ToolCallEnd(call_id) for call_id in self.calls.values()]
        self.calls.clear()
        return ended


# -- errors --------------------------------------------------------------------------------


def http_error(status: int, reason: str, content_type: str, body: bytes, shorten: Shorten = _first) -> StreamError:
    """The ``error`` for a non-2xx answer: its status, and the words or problem document of its
    body, cut by ``shorten``."""
    text = body.decode("utf-8", "replace").strip()
    parsed = _json_or_text(text, shorten)
    problem = None
    if content_type == "application/problem+json" and isinstance(parsed, dict):
        problem = parsed
        detail = _problem_text(parsed)
    elif isinstance(parsed, dict):
        detail = _error_from(parsed, shorten).message if parsed.get("error") else str(parsed.get("detail") or parsed.get("message") or text)
    else:
        detail = text
    head = f"the server answered {status} {reason}".rstrip()
    detail = shorten(" ".join(detail.split()), 500)
    return StreamError(f"{head}: {detail}" if detail else head, code=status, problem=problem)


def _error_from(parsed: Any, shorten: Shorten = _first) -> StreamError:
    """An error frame or body: ``{"error": {"message", "code"|"type"}}``, ``{"error": "text"}``,
    a problem document, an error object itself (``{"message", "type"}``, as an ``event: error``
    frame may carry), or plain text. Nothing said is "no details", never "None"."""
    if isinstance(parsed, dict) and _is_problem(parsed):
        return StreamError(_problem_text(parsed), code=parsed.get("status"), problem=parsed)
    error = (parsed.get("error") or parsed) if isinstance(parsed, dict) else parsed
    code = None
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or (json.dumps(error, ensure_ascii=False) if error else "")
        code = error.get("code") if error.get("code") is not None else error.get("type")
    else:
        message = "" if error is None else error
    text = shorten(" ".join(str(message).split()), 500) or "no details"
    return StreamError(f"the server reported an error: {text}", code=code if isinstance(code, (int, str)) else None)


def _is_problem(doc: dict[str, Any]) -> bool:
    return "error" not in doc and any(isinstance(doc.get(k), str) for k in ("title", "detail"))


def _problem_text(problem: dict[str, Any]) -> str:
    parts = [str(problem[k]) for k in ("title", "detail") if isinstance(problem.get(k), str) and problem[k]]
    return ": ".join(parts) or str(problem.get("type") or "a problem without a title")


def _first_choice(choices: Any) -> dict[str, Any] | None:
    if not isinstance(choices, list) or not choices:
        return None
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None


def _short(value: Any, shorten: Shorten) -> str:
    return shorten(json.dumps(value, ensure_ascii=False), 200)


def _json_or_text(text: str, shorten: Shorten = _first) -> Any:
    if nests_too_deep(text):
        return shorten(text, 200)
    try:
        return json.loads(text)
    except ValueError:
        return text
