"""The streaming client for OpenAI-compatible ``/chat/completions`` servers, normalised to six events.

    client = ChatClient("http://127.0.0.1:8080/v1", "my-model")
    async for ev in client.stream_chat(messages, tools=[weather], system_prompt="Be brief.", signal=signal):
        if ev.type == DELTA:
            print(ev.content, end="")

Any server that speaks the protocol works the same: llama.cpp's llama-server, vLLM, Ollama,
OpenAI. The events, one union ``StreamEvent`` (the ``type`` strings are the constants below):

    delta            {content}                  a piece of the reply's text
    tool_call_start  {id, name}                 the model began a native tool call
    tool_call_delta  {id, args}                 a fragment of that call's argument JSON
    tool_call_end    {id}                       the call's arguments are complete
    done             {stop_reason, usage}       the ending: stop | length | tool_calls | cancelled | closed
    error            {message, code, problem}   the other ending: the request or the stream failed

The rules, each with a test in ``tests/unit/test_client.py``:

- The request: ``POST {base_url}/chat/completions`` with ``stream: true``,
  ``stream_options: {include_usage: true}`` and the system prompt prepended; a non-empty
  ``tools`` list also sends ``tool_choice: "auto"`` and ``parallel_tool_calls: true``, an empty
  one no ``tools`` key; ``temperature`` only when set.
- Framing is ours (``aerix.sse``): lines split across network chunks, ``data:`` frames,
  comments, ``[DONE]``. Tool-call fragments are keyed by the provider's
  ``delta.tool_calls[].index`` (the ``id`` comes only in a call's first fragment).
- Exactly one ending, always last. Before ``done``, every call still open gets its
  ``tool_call_end``. The endings: ``[DONE]``; a ``finish_reason`` of ``stop``, ``length`` or
  ``tool_calls`` (after it the stream is read on only for the usage chunk that servers send
  next, and ``done`` comes with that usage, or at ``[DONE]``, or when the body closes); a body
  that just closes (``stop_reason`` ``closed`` when no finish reason came). Any other
  ``finish_reason`` (``null``, ``content_filter``, ...) is ignored and the stream goes on.
- Cancellation (the ``signal``'s ``.aborted``, polled while waiting on the network) closes the
  response, which stops the server, and ends ``done {stop_reason: "cancelled"}``: never an error.
- A non-2xx response, a network failure, or an error that arrives after the 200 has begun (an
  ``{"error": ...}`` frame, an ``event: error`` frame, a frame that is not JSON, a broken
  connection) is one ``error``. ``message`` is for people; ``code`` is the HTTP status (or the
  provider's error code); an RFC 9457 problem document (``application/problem+json``) rides
  along as ``problem``.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing
from dataclasses import dataclass, field, fields
from typing import Any, AsyncIterator, Literal, Sequence, Union

from .abort import is_aborted
from .errors import AerixError
from .sse import SSEDecoder, ServerSentEvent
from .tools import Tool
from .transports.base import Request, Response, Transport, default_transport

__all__ = [
    "DELTA",
    "DONE",
    "ERROR",
    "EVENT_TYPES",
    "STOP_REASONS",
    "TOOL_CALL_DELTA",
    "TOOL_CALL_END",
    "TOOL_CALL_START",
    "ChatClient",
    "Delta",
    "Done",
    "StreamError",
    "StreamEvent",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "collect_tool_calls",
    "tools_for_llm",
]

DELTA = "delta"
TOOL_CALL_START = "tool_call_start"
TOOL_CALL_DELTA = "tool_call_delta"
TOOL_CALL_END = "tool_call_end"
DONE = "done"
ERROR = "error"
EVENT_TYPES = (DELTA, TOOL_CALL_START, TOOL_CALL_DELTA, TOOL_CALL_END, DONE, ERROR)

StopReason = Literal["stop", "length", "tool_calls", "cancelled", "closed"]
STOP_REASONS: tuple[str, ...] = ("stop", "length", "tool_calls", "cancelled", "closed")
_FINISHING = frozenset({"stop", "length", "tool_calls"})  # other finish reasons are ignored

# Body keys the client owns; `params` may not set them.
_OWN_KEYS = frozenset({"model", "messages", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls"})
_ERROR_BODY_LIMIT = 1 << 16
POLL_SECONDS = 0.05  # how often the signal is looked at while the network is quiet


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
class Delta(_StreamEventBase):
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
class Done(_StreamEventBase):
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


StreamEvent = Union[Delta, ToolCallStart, ToolCallDelta, ToolCallEnd, Done, StreamError]


def tools_for_llm(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """aerix tools as the OpenAI ``tools`` list: ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema()},
        }
        for t in tools
    ]


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


class ChatClient:
    """One server and model; ``stream_chat`` streams one completion as events.

    ``base_url`` is the API root, ``/v1`` included (``http://127.0.0.1:8080/v1``). ``api_key``
    goes in ``Authorization: Bearer``. ``temperature`` is sent only when set. ``transport``:
    see ``aerix.transports`` (default: fetch in Pyodide, httpx on CPython).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float | None = None,
        headers: dict[str, str] | None = None,
        transport: Transport | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise AerixError("options", f"base_url must be an http(s) URL, got {base_url!r}")
        if not isinstance(model, str) or not model:
            raise AerixError("options", f"model must be a non-empty string, got {model!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.temperature = temperature
        self.headers = dict(headers or {})
        self.transport = transport if transport is not None else default_transport()

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[Tool | dict[str, Any]] = (),
        system_prompt: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Request:
        """The HTTP request ``stream_chat`` sends (built here, so it can be checked without a server)."""
        clash = sorted(_OWN_KEYS & set(params or {}))
        if clash:
            raise AerixError("options", f"params cannot set {clash}: the client sets these")
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ([{"role": "system", "content": system_prompt}] if system_prompt else []) + list(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = [tools_for_llm([t])[0] if isinstance(t, Tool) else t for t in tools]
            body["tool_choice"] = "auto"
            body["parallel_tool_calls"] = True
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(params or {})
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return Request("POST", self.url, headers, json.dumps(body, ensure_ascii=False).encode("utf-8"))

    async def stream_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[Tool | dict[str, Any]] = (),
        system_prompt: str | None = None,
        signal: Any = None,
        *,
        params: dict[str, Any] | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Stream one completion. ``params`` are more body fields (``max_tokens``,
        ``response_format``, ``seed``, ...). Ends with exactly one ``done`` or ``error``."""
        request = self.request(messages, tools, system_prompt, params)
        if is_aborted(signal):
            yield Done("cancelled")
            return
        try:
            aborted, response = await _unless_aborted(self.transport.send(request), signal)
        except Exception as e:
            yield StreamError(f"could not reach {request.url}: {_describe(e)}")
            return
        if aborted:
            yield Done("cancelled")
            return
        try:
            async with aclosing(_read(response, signal)) as events:
                async for ev in events:
                    yield ev
        finally:
            try:
                await response.aclose()
            except Exception:
                pass  # the stream is over either way; closing a broken one may fail


# -- reading a response ------------------------------------------------------------------


async def _read(response: Response, signal: Any) -> AsyncIterator[StreamEvent]:
    if not 200 <= response.status < 300:
        try:
            aborted, body = await _unless_aborted(response.aread(_ERROR_BODY_LIMIT), signal)
        except Exception:
            aborted, body = False, b""
        yield Done("cancelled") if aborted else _http_error(response, body or b"")
        return

    stream = _Stream()
    if "json" in response.content_type:  # a server that answered without streaming
        try:
            aborted, body = await _unless_aborted(response.aread(1 << 26), signal)
        except Exception as e:
            yield StreamError(f"the response broke off: {_describe(e)}")
            return
        if aborted:
            yield Done("cancelled")
            return
        for ev in stream.whole(body or b""):
            yield ev
        return

    decoder = SSEDecoder()
    chunks = response.aiter_bytes()
    try:
        while True:
            try:
                aborted, chunk = await _unless_aborted(anext(chunks, None), signal)
            except Exception as e:
                yield StreamError(f"the stream broke off: {_describe(e)}")
                return
            if aborted:
                for ev in stream.end("cancelled"):
                    yield ev
                return
            if chunk is None:
                break
            for frame in decoder.feed(chunk):
                if is_aborted(signal):  # one network chunk may hold many frames
                    for ev in stream.end("cancelled"):
                        yield ev
                    return
                for ev in stream.frame(frame):
                    yield ev
                if stream.ended:
                    return
        decoder.close()
        for ev in stream.end(None):  # the body closed
            yield ev
    finally:
        await chunks.aclose()  # type: ignore[attr-defined]


class _Stream:
    """The state of one stream: open tool calls by index, the finish reason, the last usage."""

    def __init__(self) -> None:
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
            return self.fail(_error_from(_json_or_text(data)))
        if not data:
            return []  # an empty keep-alive frame
        try:
            chunk = json.loads(data)
        except ValueError:
            return self.fail(StreamError(f"the server sent a frame that is not JSON: {data[:200]!r}"))
        if not isinstance(chunk, dict):
            return self.fail(StreamError(f"the server sent a frame that is not a JSON object: {data[:200]!r}"))
        if chunk.get("error"):
            return self.fail(_error_from(chunk))
        return self.chunk(chunk)

    def chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if self.finish is None:
            choice = _first_choice(chunk.get("choices"))
            if choice is not None:
                delta = choice.get("delta") or choice.get("message") or {}
                content = delta.get("content")
                if isinstance(content, str) and content:
                    events.append(Delta(content))
                for position, call in enumerate(delta.get("tool_calls") or []):
                    if isinstance(call, dict):
                        events.extend(self._tool_call(position, call))
                finish = choice.get("finish_reason")
                if finish in _FINISHING:
                    self.finish = finish
                    events.extend(self._end_calls())
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        if self.finish is not None and self.usage is not None:
            events.extend(self.end(None))  # the usage that follows the finish reason has come
        return events

    def whole(self, body: bytes) -> list[StreamEvent]:
        """A non-streamed answer (``application/json``), told as the same events."""
        parsed = _json_or_text(body.decode("utf-8", "replace"))
        if not isinstance(parsed, dict):
            return self.fail(StreamError(f"the server answered with JSON that is not an object: {str(parsed)[:200]!r}"))
        if parsed.get("error"):
            return self.fail(_error_from(parsed))
        return self.chunk(parsed) + ([] if self.ended else self.end(None))

    def end(self, reason: str | None) -> list[StreamEvent]:
        """Every open call ends, then the one ``done``."""
        if self.ended:
            return []
        self.ended = True
        stop = reason or self.finish or "closed"
        return [*self._end_calls(), Done(stop, self.usage)]  # type: ignore[arg-type]

    def fail(self, error: StreamError) -> list[StreamEvent]:
        self.ended = True
        return [error]

    def _tool_call(self, position: int, call: dict[str, Any]) -> list[StreamEvent]:
        index = call.get("index")
        if not isinstance(index, int):
            index = position
        function = call.get("function") or {}
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


def _http_error(response: Response, body: bytes) -> StreamError:
    text = body.decode("utf-8", "replace").strip()
    parsed = _json_or_text(text)
    problem = None
    if response.content_type == "application/problem+json" and isinstance(parsed, dict):
        problem = parsed
        detail = _problem_text(parsed)
    elif isinstance(parsed, dict):
        detail = _error_from(parsed).message if parsed.get("error") else str(parsed.get("detail") or parsed.get("message") or text)
    else:
        detail = text
    head = f"the server answered {response.status} {response.reason}".rstrip()
    detail = " ".join(detail.split())[:500]
    return StreamError(f"{head}: {detail}" if detail else head, code=response.status, problem=problem)


def _error_from(parsed: Any) -> StreamError:
    """An error frame or body: ``{"error": {"message", "code"|"type"}}``, ``{"error": "text"}``,
    a problem document, or plain text."""
    if isinstance(parsed, dict) and _is_problem(parsed):
        return StreamError(_problem_text(parsed), code=parsed.get("status"), problem=parsed)
    error = parsed.get("error") if isinstance(parsed, dict) else parsed
    if isinstance(error, dict):
        message = error.get("message") or error.get("detail") or json.dumps(error, ensure_ascii=False)
        code = error.get("code") if error.get("code") is not None else error.get("type")
        return StreamError(f"the server reported an error: {message}", code=code if isinstance(code, (int, str)) else None)
    return StreamError(f"the server reported an error: {str(error)[:500] or 'no details'}")


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


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _describe(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# -- waiting on the network while watching the signal --------------------------------------


async def _unless_aborted(awaitable: Any, signal: Any) -> tuple[bool, Any]:
    """``(False, result)``; or ``(True, None)`` once the signal is aborted, the wait cancelled.

    Signals here are polled (anything with ``.aborted``: an ``aerix.Abort``, a JavaScript
    ``AbortSignal``), so a quiet network is watched every ``POLL_SECONDS``.
    """
    if signal is None:
        return False, await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        while not task.done():
            if is_aborted(signal):
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
                return True, None
            await asyncio.wait({task}, timeout=POLL_SECONDS)
    except BaseException:
        task.cancel()
        raise
    return False, task.result()
