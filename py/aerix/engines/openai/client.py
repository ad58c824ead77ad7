"""The streaming client for OpenAI-compatible ``/chat/completions`` servers, normalised to seven events.

    client = ChatClient("http://127.0.0.1:8080/v1", "my-model")
    async for ev in client.stream_chat(messages, tools=[weather], system_prompt="Be brief.", signal=signal):
        if ev.type == DELTA:
            print(ev.content, end="")

Any server that speaks the protocol works the same: llama.cpp's llama-server, vLLM, Ollama,
OpenAI. The events (``ContentDelta``, ``ToolCallStart``, ``ToolCallDelta``, ``ToolCallEnd``,
``Logprobs``, ``StreamDone``, ``StreamError``: one union ``StreamEvent``) and the rules that make them from
what the server sends are in ``aerix.engines.openai.stream``; the framing is ours
(``aerix.engines.openai.sse``); the network is a transport (``aerix.engines.openai.transports``).

The rules of this side, each with a test in ``tests/unit/test_client.py``:

- The request: ``POST {base_url}/chat/completions`` with ``stream: true``,
  ``stream_options: {include_usage: true}`` and the system prompt prepended; a non-empty
  ``tools`` list also sends ``tool_choice: "auto"`` and ``parallel_tool_calls: true``, an empty
  one no ``tools`` key; ``temperature`` only when set.
- Exactly one ending, always last: ``done`` or ``error``.
- A server that pushes back (429, 503) is asked again after a wait, as ``backoff`` allows (off
  unless given; ``OpenAIModel`` gives one): ``aerix.engines.openai.backoff`` has the rules.
- Cancellation (the ``signal``'s ``.aborted``, polled while waiting on the network) closes the
  response, which stops the server, and ends ``done {stop_reason: "cancelled"}``: never an error.
  A cancelled consumer (``asyncio.timeout`` around the run) closes the response too, and its
  ``CancelledError`` goes on as it came.
- A network failure, or a connection that breaks after the 200 has begun, is one ``error``; so
  is a non-2xx answer, with the server's words (and its RFC 9457 ``problem`` document, if any);
  so is a 200 with an HTML page, and a line longer than the SSE cap (16 MiB, ``sse.MAX_CHARS``).
- No secret is shown: the key is stripped (refused if a space or control character is inside),
  and every ``error`` and repr has the key and the URL's secrets ``[redacted]`` (``redact``),
  in any form a server may echo them in, before any text is cut to a length; the model's text
  and tool-call arguments have the key ``[redacted]`` too, even split across chunks, so a server
  that echoes it into the content puts it in no event, conversation or record.
- A ``base_url`` with a user name or password (``http://user:pass@host/v1``) is refused
  (``options``): the transport would send it base64-encoded as ``Authorization: Basic``, where
  neither a server's echo nor a reader's eye is easy to catch; the key goes as ``api_key``, or
  in ``headers``.
- The body is always valid UTF-8: a lone surrogate in the conversation is sent as U+FFFD.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import aclosing, suppress
from dataclasses import replace
from typing import Any, AsyncGenerator, Awaitable, Callable, Sequence

from ...abort import is_aborted
from ...errors import AerixError, describe
from ...tools import Tool
from .backoff import PUSHBACK, Attempts, Backoff
from .redact import Secrets, ShownStream, clean_api_key, has_userinfo, shown_url
from .sse import FrameTooLong, SSEDecoder
from .stream import StreamDone, StreamError, StreamEvent, StreamState, http_error
from .transports.base import Request, Response, Transport, default_transport

__all__ = ["ChatClient", "tools_for_llm"]

# Body keys the client owns; `params` may not set them.
_OWN_KEYS = frozenset({"model", "messages", "stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls"})
_ERROR_BODY_LIMIT = 1 << 16
POLL_SECONDS = 0.05  # how often the signal is looked at while the network is quiet


def tools_for_llm(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """aerix tools as the OpenAI ``tools`` list: ``{"type": "function", "function": {name, description, parameters}}``."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema()},
        }
        for t in tools
    ]


class ChatClient:
    """One server and model; ``stream_chat`` streams one completion as events.

    ``base_url`` is the API root, ``/v1`` included (``http://127.0.0.1:8080/v1``). ``api_key``
    goes in ``Authorization: Bearer``. ``temperature`` is sent only when set. ``transport``:
    see ``aerix.engines.openai.transports`` (default: fetch in Pyodide, httpx on CPython).
    ``backoff``: how a 429 or 503 is waited out and sent again (default: not at all).
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
        backoff: Backoff | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            shown = shown_url(base_url) if isinstance(base_url, str) else type(base_url).__name__
            raise AerixError("options", f"base_url must be an http(s) URL, got {shown!r}")
        if has_userinfo(base_url):
            raise AerixError(
                "options",
                f"base_url {shown_url(base_url)!r} carries a user name or password (user:pass@), which would be sent "
                "base64-encoded in an Authorization header: give the key as api_key=..., or a header in headers={...}",
            )
        if not isinstance(model, str) or not model:
            raise AerixError("options", f"model must be a non-empty string, got {model!r}")
        root, question, query = base_url.partition("#")[0].partition("?")
        self.base_url = root.rstrip("/") + question + query
        self.model = model
        self.api_key = clean_api_key(api_key)
        self.temperature = temperature
        self.headers = dict(headers or {})
        self.transport = transport if transport is not None else default_transport()
        self.backoff = backoff if backoff is not None else Backoff(retries=0)
        self.secrets = Secrets(self.api_key, base_url, self.headers)
        self._url = f"{root.rstrip('/')}/chat/completions{question}{query}"  # a query stays at the end

    def __repr__(self) -> str:  # the key and the URL's secrets stay out
        return f"ChatClient(base_url={shown_url(self.base_url)!r}, model={self.model!r})"

    @property
    def url(self) -> str:
        return self._url

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
        return Request("POST", self.url, headers, _utf8(json.dumps(body, ensure_ascii=False)))

    async def stream_chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[Tool | dict[str, Any]] = (),
        system_prompt: str | None = None,
        signal: Any = None,
        *,
        params: dict[str, Any] | None = None,
        time_left_s: float | None = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """Stream one completion. ``params`` are more body fields (``max_tokens``,
        ``response_format``, ``seed``, ...). ``time_left_s``: no wait for a server that pushes
        back outlasts it. Ends with exactly one ``done`` or ``error``."""
        request = self.request(messages, tools, system_prompt, params)
        if is_aborted(signal):
            yield StreamDone("cancelled")
            return
        response = await self._send(request, signal, time_left_s)
        if not isinstance(response, Response):  # the request ended before a body to read
            yield self.secrets.error(response) if isinstance(response, StreamError) else response
            return
        shown = ShownStream(self.secrets)  # a server may echo the key, in an error or in the text
        try:
            async with aclosing(_read(response, signal, self.secrets)) as events:
                async for ev in events:
                    for out in shown(ev):
                        yield out
        finally:
            try:
                await response.aclose()
            except Exception:
                pass  # the stream is over either way; closing a broken one may fail

    async def _send(self, request: Request, signal: Any, time_left_s: float | None) -> Response | StreamEvent:
        """The response to read; or the ending when there is none: the network failed, the signal
        fired, or the server pushed back (429, 503) more than ``self.backoff`` waits out."""
        attempts = Attempts(self.backoff, time_left_s)
        response: Response
        while True:
            try:
                aborted, response = await _unless_aborted(self.transport.send(request), signal)
            except Exception as e:  # its text may quote the request: the caller takes the secrets out
                return StreamError(f"could not reach {shown_url(request.url)}: {describe(e)}")
            if aborted:
                return StreamDone("cancelled")
            if response.status not in PUSHBACK:
                return response
            async with aclosing(_read(response, signal, self.secrets)) as events:
                ending: StreamEvent = [ev async for ev in events][-1]  # a non-2xx answer is one event
            with suppress(Exception):
                await response.aclose()
            if not isinstance(ending, StreamError):
                return ending  # cancelled while its body was read
            wait, why = attempts.next_wait(response.headers.get("retry-after"))
            if wait is None:
                return replace(ending, message=f"{ending.message} ({why})") if why else ending
            if await _pause(wait, signal, self.backoff.sleep):
                return StreamDone("cancelled")


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8. A lone surrogate (the model wrote the JSON escape ``"\\ud800"`` and a
    tool echoed it) has no UTF-8 form: it becomes U+FFFD, and a split pair is joined, so the
    conversation stays sendable."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


# -- reading a response ------------------------------------------------------------------


async def _read(response: Response, signal: Any, secrets: Secrets) -> AsyncGenerator[StreamEvent, None]:
    if not 200 <= response.status < 300:
        try:
            aborted, body = await _unless_aborted(response.aread(_ERROR_BODY_LIMIT), signal)
        except Exception:
            aborted, body = False, b""
        if aborted:
            yield StreamDone("cancelled")
            return
        body = body or b""
        if len(body) >= _ERROR_BODY_LIMIT:  # cut at the limit: maybe inside a key the server echoed
            body = secrets.redact(body.decode("utf-8", "replace"), cut=True).encode("utf-8")
        yield http_error(response.status, response.reason, response.content_type, body, secrets.shorten)
        return

    if "html" in response.content_type:  # a web page (a proxy's, a wrong path): no retry will help
        yield StreamError(
            f"the server answered {response.status} with an HTML page ({response.content_type}), not an event stream: "
            "is base_url the API root, /v1 included?", code=response.status)
        return

    stream = StreamState(secrets.shorten)
    if "json" in response.content_type:  # a server that answered without streaming
        try:
            aborted, body = await _unless_aborted(response.aread(1 << 26), signal)
        except Exception as e:
            yield StreamError(f"the response broke off: {describe(e)}")
            return
        if aborted:
            yield StreamDone("cancelled")
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
                yield StreamError(f"the stream broke off: {describe(e)}")
                return
            if aborted:
                for ev in stream.end("cancelled"):
                    yield ev
                return
            if chunk is None:
                break
            try:
                frames = decoder.feed(chunk)
            except FrameTooLong as e:
                yield StreamError(str(e))
                return
            for frame in frames:
                if is_aborted(signal):  # one network chunk may hold many frames
                    for ev in stream.end("cancelled"):
                        yield ev
                    return
                events = stream.frame(frame)
                if stream.ended:  # read the body's end before the ending goes out: see _drain
                    await _drain(chunks)
                for ev in events:
                    yield ev
                if stream.ended:
                    return
        decoder.close()
        for ev in stream.end(None):  # the body closed
            yield ev
    finally:
        with suppress(Exception):  # a body that fails to close must not hide why we stopped
            await chunks.aclose()  # type: ignore[attr-defined]


# -- waiting on the network while watching the signal --------------------------------------


async def _pause(seconds: float, signal: Any, sleep: Callable[[float], Awaitable[Any]]) -> bool:
    """``sleep(seconds)``; ``True`` as soon as the signal aborts instead. An ``aerix.Abort`` calls
    back (``on_abort``) at once; any other signal is polled like the network."""
    nap = asyncio.ensure_future(sleep(seconds))
    woken = asyncio.get_running_loop().create_future()

    def wake(_reason: Any) -> None:
        if not woken.done():
            woken.set_result(None)

    on_abort = getattr(signal, "on_abort", None) if signal is not None else None
    unsubscribe = on_abort(wake) if callable(on_abort) else None
    try:
        while not (nap.done() or woken.done() or is_aborted(signal)):
            await asyncio.wait({nap, woken}, timeout=POLL_SECONDS)
    finally:
        if unsubscribe is not None:
            unsubscribe()
        woken.cancel()
        if not nap.done():
            nap.cancel()
            await asyncio.wait({nap})
    if not nap.cancelled():
        nap.result()  # a sleep that failed says so
    return is_aborted(signal)


DRAIN_SECONDS = 0.25
DRAIN_BYTES = 1 << 16


async def _drain(chunks: Any) -> None:
    """What is left of a body after the stream's last frame (``[DONE]``): the end of the body,
    usually nothing but the transfer's last chunk, read for at most ``DRAIN_SECONDS`` and
    ``DRAIN_BYTES``. A body read to its end finishes as a request that succeeded; one closed a
    moment before its end is a cancelled request (``net::ERR_ABORTED`` in the page, a dropped
    connection on CPython). A server that keeps the body open after ``[DONE]`` only waits here
    that long; what it sends is not read as frames."""
    seen = 0
    with suppress(Exception):  # the stream is complete: its tail can only be waited for, not fail it
        async with asyncio.timeout(DRAIN_SECONDS):
            async for chunk in chunks:
                seen += len(chunk)
                if seen > DRAIN_BYTES:
                    return


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
    except BaseException:  # cancelled from outside (a timeout): the wait is over before we go on
        task.cancel()
        await asyncio.wait({task})
        raise
    return False, task.result()
