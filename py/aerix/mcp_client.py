"""The client half of MCP's Streamable HTTP transport: JSON-RPC 2.0 over POSTs to one URL.

    session = McpSession("http://127.0.0.1:8000/mcp", headers={"Authorization": "Bearer ..."})
    listed = await session.request("tools/list", {})          # initializes first, once
    result = await session.request("tools/call", {"name": "add", "arguments": {"a": 1}})

What it speaks (the handshake revisions, 2024-11-05 to 2025-11-25):

- ``initialize`` (offering :data:`PROTOCOL_VERSION`; the server's answer must be one of
  :data:`VERSIONS`), then the ``notifications/initialized`` notification; the session id the
  server gives (``Mcp-Session-Id``) and the version agreed (``MCP-Protocol-Version``) go with
  every later request;
- each request is a POST accepting ``application/json`` and ``text/event-stream``: a JSON body
  is the answer; an event stream is read until the answer with the request's id comes (the
  server's notifications on the way are skipped; its requests are answered: ``ping`` with an
  empty result, anything else "method not found", since this client offers no capabilities);
- a stream that breaks or ends before the answer, after the server gave event ids, is resumed:
  a GET with ``Last-Event-ID`` (after the server's ``retry:``, else :data:`RESUME_DELAY_S`),
  read on until the answer; given up after :data:`RESUME_ATTEMPTS` reconnections in a row that
  bring no message, or at once when the GET is refused (405: the server does not resume);
- a 404 to a request carrying a session id means the server forgot the session: the session
  starts again, and the request is sent once more;
- a request cancelled (a tool's timeout, the run's abort) sends ``notifications/cancelled``
  for it, waiting at most :data:`CANCEL_WAIT_S`;
- :meth:`McpSession.aclose` ends the session: a DELETE with its ``Mcp-Session-Id``, once.

Every failure (a refused connection, an HTTP error status, a JSON-RPC error, a body that is
not JSON-RPC, a stream that ends or breaks before the answer and cannot be resumed, a request
past ``timeout_s``, a request after ``aclose``) raises :class:`McpFailure`, whose message
names the server (its URL, secrets redacted), the method and what went wrong; :mod:`aerix.mcp` decides what each becomes. HTTP itself goes
through the transport seam of the OpenAI-compatible client (httpx on CPython, the page's
``fetch`` in Pyodide).
"""

from __future__ import annotations

import asyncio
import json
import weakref
from typing import Any

from .engines.openai.redact import shown_url
from .engines.openai.sse import FrameTooLong, SSEDecoder
from .engines.openai.transports import Request, Response, Transport, default_transport
from .errors import describe

__all__ = ["CANCEL_WAIT_S", "CLOSE_WAIT_S", "PROTOCOL_VERSION", "RESUME_ATTEMPTS", "RESUME_DELAY_S", "VERSIONS", "McpFailure", "McpSession"]

PROTOCOL_VERSION = "2025-11-25"
VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CANCEL_WAIT_S = 1.0
CLOSE_WAIT_S = 5.0  # for the DELETE that ends a session
RESUME_ATTEMPTS = 3  # reconnections in a row that bring no message before a broken stream is given up
RESUME_DELAY_S = 1.0  # before a reconnection, when the server gave no retry: (the MCP SDK's wait)
MAX_BODY = 16 * 1024 * 1024  # bytes of one JSON answer
CLIENT_INFO = {"name": "aerix", "version": "0.1.0"}


class McpFailure(Exception):
    """A request to an MCP server failed; the message says which server, method and why."""


class McpSession:
    """One MCP session with the server at ``url``; initialized on the first request, started
    again when the server forgets it. Safe to share among concurrent calls."""

    def __init__(self, url: str, *, headers: dict[str, str] | None = None, timeout_s: float | None = None, transport: Transport | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self.transport = transport if transport is not None else default_transport()
        self.session_id: str | None = None
        self.version: str | None = None  # agreed by initialize
        self.server_info: dict[str, Any] = {}
        self._next_id = 0
        self.closed = False  # by aclose(): the session ended, no more requests
        self._locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()  # one per event loop: a Lock is bound to the loop that waits on it

    def __repr__(self) -> str:
        return f"McpSession({shown_url(self.url)!r}, version={self.version!r})"

    @property
    def where(self) -> str:
        return f"MCP server {shown_url(self.url)}"

    async def request(self, method: str, params: dict[str, Any], *, timeout_s: float | None = None) -> dict[str, Any]:
        """The result of one JSON-RPC request (``timeout_s``: at most this long, initializing
        included; ``None`` waits as long as it takes). Raises :class:`McpFailure`."""
        if timeout_s is None:
            return await self._request(method, params)
        try:
            return await asyncio.wait_for(self._request(method, params), timeout_s)
        except asyncio.TimeoutError:
            raise McpFailure(f"{self.where}: {method} got no answer within {timeout_s:g} s") from None

    async def aclose(self) -> None:
        """End the session: a DELETE with its ``Mcp-Session-Id``, once, waiting at most
        :data:`CLOSE_WAIT_S`, or ``timeout_s`` if shorter (best effort: a 405, a server that
        keeps sessions until they expire, or one gone already, is the end all the same).
        Later requests fail."""
        if self.closed:
            return
        self.closed = True
        headers = self._headers()
        self.session_id, self.version = None, None
        if "mcp-session-id" not in headers:  # never initialized, or the server gives no sessions
            return
        try:
            wait = min(CLOSE_WAIT_S, self.timeout_s or CLOSE_WAIT_S)
            response = await asyncio.wait_for(self.transport.send(Request("DELETE", self.url, headers)), wait)
            await response.aclose()
        except Exception:  # the server may be gone: the session ends here all the same
            pass

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if self.closed:
            raise McpFailure(f"{self.where}: {method}: the session was ended (aclose)")
        await self._initialized()
        sent_with = self.session_id
        try:
            return await self._call(method, params)
        except _SessionGone:
            if sent_with is None:
                raise McpFailure(f"{self.where}: {method}: 404 Not Found (is the URL the server's MCP endpoint?)") from None
        self._forget(sent_with)
        await self._initialized()
        try:
            return await self._call(method, params)
        except _SessionGone:
            raise McpFailure(f"{self.where}: {method}: the server forgot the session again just after starting it") from None

    def _ready(self) -> bool:
        return self.version is not None

    async def _initialized(self) -> None:
        if self._ready():
            return
        loop = asyncio.get_running_loop()
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            if self._ready():  # another call initialized it while this one waited
                return
            params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
            result = await self._call("initialize", params)
            version = result.get("protocolVersion")
            if version not in VERSIONS:
                self.session_id = None
                raise McpFailure(f"{self.where} speaks MCP protocol version {version!r}; aerix speaks {', '.join(VERSIONS)}")
            self.version = version
            info = result.get("serverInfo")
            self.server_info = info if isinstance(info, dict) else {}
            try:
                await self.notify("notifications/initialized", None)
            except BaseException:
                self.session_id, self.version = None, None
                raise

    def _forget(self, session_id: str | None) -> None:
        if self.session_id == session_id:  # a concurrent call may have started a new one already
            self.session_id, self.version = None, None

    async def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a JSON-RPC notification (no answer but the HTTP status is waited for)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        response = await self._post(message, method)
        try:
            if response.status >= 400:
                raise McpFailure(f"{self.where}: {method}: {await _status_text(response)}")
        finally:
            await response.aclose()

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        id = self._next_id
        try:
            response = await self._post({"jsonrpc": "2.0", "id": id, "method": method, "params": params}, method)
            try:
                return await self._answer(response, id, method)
            finally:
                await response.aclose()
        except asyncio.CancelledError:
            if method != "initialize":
                await self._cancelled(id)
            raise

    async def _cancelled(self, id: int) -> None:
        """Tell the server a request was given up; best effort, briefly."""
        try:
            await asyncio.wait_for(self.notify("notifications/cancelled", {"requestId": id, "reason": "the caller stopped waiting"}), CANCEL_WAIT_S)
        except Exception:  # the server may be the reason for giving up: nothing more to do
            pass

    def _headers(self) -> dict[str, str]:
        """The caller's headers, and the session's id and version once there are."""
        headers = dict(self.headers)
        if self.session_id is not None:
            headers["mcp-session-id"] = self.session_id
        if self.version is not None:
            headers["mcp-protocol-version"] = self.version
        return headers

    async def _post(self, message: dict[str, Any], method: str) -> Response:
        headers = {**self._headers(), "content-type": "application/json", "accept": "application/json, text/event-stream"}
        body = json.dumps(message, ensure_ascii=False).encode()
        try:
            response = await self.transport.send(Request("POST", self.url, headers, body))
        except Exception as e:
            raise McpFailure(f"{self.where}: {method}: cannot reach it: {describe(e)}") from None
        if method == "initialize" and response.status < 400:
            self.session_id = response.headers.get("mcp-session-id") or None
        return response

    async def _answer(self, response: Response, id: int, method: str) -> dict[str, Any]:
        if response.status == 404 and self.session_id is not None and method != "initialize":
            raise _SessionGone
        if response.status >= 400:
            raise McpFailure(f"{self.where}: {method}: {await _status_text(response)}")
        message: dict[str, Any] | None
        try:
            if response.content_type == "text/event-stream":
                message = await self._from_stream(response, id, method)
            else:
                message = _find(_json(await response.aread(MAX_BODY)), id)
        except McpFailure:
            raise
        except Exception as e:  # the connection broke, or the body is not JSON
            raise McpFailure(f"{self.where}: {method}: the answer broke off: {describe(e)}") from None
        if message is None:
            raise McpFailure(f"{self.where}: {method}: the server answered without a JSON-RPC response to it")
        return _result(message, f"{self.where}: {method}")

    async def _from_stream(self, response: Response, id: int, method: str) -> dict[str, Any]:
        """The answer to request ``id`` from its event stream; when the stream ends or breaks
        before it and the server gave event ids, from GETs with ``Last-Event-ID``."""
        cursor = _Cursor()
        found, why = await self._read_events(response, id, cursor)
        first, failed = why, 0
        while found is None:
            if cursor.last_id is None:
                raise McpFailure(f"{self.where}: {method}: {why}")
            if failed == RESUME_ATTEMPTS:
                last = f" (the last: {why})" if why != first else ""
                raise McpFailure(f"{self.where}: {method}: {first}; {failed} reconnections with Last-Event-ID brought nothing more{last}")
            await asyncio.sleep(cursor.retry_s)
            messages = cursor.messages
            found, why = await self._resume(id, method, cursor)
            failed = 0 if cursor.messages > messages else failed + 1
        return found

    async def _resume(self, id: int, method: str, cursor: _Cursor) -> tuple[dict[str, Any] | None, str]:
        """One reconnection: GET with ``Last-Event-ID``, read on until the answer."""
        headers = {**self._headers(), "accept": "text/event-stream", "last-event-id": cursor.last_id or ""}
        try:
            response = await self.transport.send(Request("GET", self.url, headers))
        except Exception as e:
            return None, f"reconnecting after the stream broke, cannot reach it: {describe(e)}"
        try:
            if response.status >= 400:
                said = f"reconnecting with Last-Event-ID {cursor.last_id!r}: {await _status_text(response)}"
                if response.status < 500 and response.status != 429:  # 405: no resumption there; 404: the session is gone
                    raise McpFailure(f"{self.where}: {method}: the stream broke before the answer; {said}")
                return None, said
            if response.content_type != "text/event-stream":
                raise McpFailure(f"{self.where}: {method}: reconnecting, the server answered the GET with {response.content_type or 'no content type'}, not an event stream")
            return await self._read_events(response, id, cursor)
        finally:
            await response.aclose()

    async def _read_events(self, response: Response, id: int, cursor: _Cursor) -> tuple[dict[str, Any] | None, str]:
        """The answer to ``id`` from one event stream, or ``None`` and why the stream gave none;
        ``cursor`` keeps the last event id and retry the server gave."""
        decoder = SSEDecoder()
        try:
            async for chunk in response.aiter_bytes():
                events = decoder.feed(chunk)
                cursor.seen(decoder)  # the events' ids, and one without data (a priming event) too
                for event in events:
                    if event.event != "message" or not event.data.strip():
                        continue
                    message = _json(event.data.encode())
                    cursor.messages += 1
                    found = _find(message, id)
                    if found is not None:
                        return found, ""
                    for other in message if isinstance(message, list) else [message]:
                        await self._server_request(other)
        except (McpFailure, FrameTooLong):
            raise
        except Exception as e:  # the connection broke
            return None, f"the answer broke off: {describe(e)}"
        return None, "the server ended its event stream before answering"

    async def _server_request(self, message: Any) -> None:
        """Answer a request the server sent on the stream; notifications are skipped."""
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return
        if message["method"] == "ping":
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "Method not found"}}
        response = await self._post(reply, f"the answer to the server's {message['method']}")
        await response.aclose()


class _Cursor:
    """Where a request's event stream got to, across its connections: the last event id and
    the reconnection time the server gave, and how many messages came."""

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry_s = RESUME_DELAY_S
        self.messages = 0

    def seen(self, decoder: SSEDecoder) -> None:
        if decoder.last_id:  # an empty id resets the standard's last event ID: nothing to resume from
            self.last_id = decoder.last_id
        if decoder.retry is not None:
            self.retry_s = decoder.retry / 1000


class _SessionGone(Exception):
    """404 to a request that carried a session id: the server no longer knows the session."""


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise McpFailure(f"the server's answer is not JSON: {body[:200].decode(errors='replace')!r}") from None


def _find(message: Any, id: int) -> dict[str, Any] | None:
    """The response to request ``id`` in a JSON-RPC message or batch, if there is one."""
    for one in message if isinstance(message, list) else [message]:
        if isinstance(one, dict) and one.get("id") == id and ("result" in one or "error" in one):
            return one
    return None


def _result(message: dict[str, Any], where: str) -> dict[str, Any]:
    error = message.get("error")
    if error is not None:
        if not isinstance(error, dict):
            raise McpFailure(f"{where}: JSON-RPC error {error!r}")
        data = error.get("data")
        extra = f" ({json.dumps(data, ensure_ascii=False)[:300]})" if data is not None else ""
        raise McpFailure(f"{where}: JSON-RPC error {error.get('code')}: {error.get('message')}{extra}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpFailure(f"{where}: the result is not an object: {json.dumps(result)[:200]}")
    return result


async def _status_text(response: Response) -> str:
    """An HTTP error as one line: the status, and the start of the body (a JSON-RPC error's message)."""
    try:
        body = (await response.aread(4096)).decode(errors="replace").strip()
    except Exception:
        body = ""
    try:
        error = json.loads(body).get("error")
        body = str(error.get("message")) if isinstance(error, dict) else body
    except (ValueError, AttributeError):
        pass
    hint = " (check the headers given for authorization)" if response.status in (401, 403) else ""
    said = f": {body[:300]}" if body else ""
    return f"{response.status} {response.reason}{said}{hint}"
