"""The transport seam's two values, ``Request`` and ``Response``, and the ``Transport`` protocol."""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, AsyncIterator, Protocol, Union, runtime_checkable

from ...._js import IN_PYODIDE
from ..redact import shown_url

__all__ = ["Request", "Response", "Transport", "default_transport"]


@dataclass(frozen=True)
class Request:
    """One HTTP request: ``body`` is the encoded JSON the client built."""

    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        """The body, decoded: what the server will read."""
        return json.loads(self.body)

    def __repr__(self) -> str:  # never show the Authorization header, nor the URL's secrets
        return f"Request({self.method!r}, {shown_url(self.url)!r}, {len(self.body)} bytes)"


Chunks = Union[AsyncIterable[bytes], Iterable[bytes]]


class Response:
    """Status and headers (names in lower case), and a body that streams in byte chunks.

    ``close`` (optional, awaited once by :meth:`aclose`) is how the transport stops the
    download; after it the server sees the connection go.
    """

    def __init__(
        self,
        status: int,
        headers: dict[str, str] | None = None,
        chunks: Chunks = (),
        *,
        reason: str = "",
        close: Callable[[], Awaitable[None] | None] | None = None,
    ) -> None:
        self.status = status
        self.reason = reason or _phrase(status)
        self.headers = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
        self._chunks = chunks
        self._close = close
        self.closed = False

    def __repr__(self) -> str:
        return f"Response({self.status}, {self.headers.get('content-type', '')!r})"

    @property
    def content_type(self) -> str:
        """The media type alone, lower case (``text/event-stream``)."""
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        """The body, chunk by chunk as it arrives."""
        chunks = self._chunks
        if isinstance(chunks, (bytes, bytearray)):
            yield bytes(chunks)
        elif isinstance(chunks, AsyncIterable):
            async for chunk in chunks:
                yield bytes(chunk)
        else:
            for chunk in chunks:
                yield bytes(chunk)

    async def aread(self, limit: int = 1 << 16) -> bytes:
        """The body, or its first ``limit`` bytes (an error page must not fill memory)."""
        out = bytearray()
        async for chunk in self.aiter_bytes():
            out += chunk
            if len(out) >= limit:
                break
        return bytes(out[:limit])

    async def aclose(self) -> None:
        """Stop the body; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        if self._close is not None:
            result = self._close()
            if inspect.isawaitable(result):
                await result


@runtime_checkable
class Transport(Protocol):
    """Sends a request; returns when the response's status and headers are in.

    >>> response = await transport.send(Request("POST", url, headers, body))
    >>> async for chunk in response.aiter_bytes(): ...
    >>> await response.aclose()

    A network failure raises (any exception); an HTTP error status is a response like any other.
    """

    async def send(self, request: Request) -> Response: ...


def default_transport() -> Transport:
    """The page's ``fetch`` inside Pyodide; httpx on CPython (``pip install 'aerix[openai]'``)."""
    if IN_PYODIDE:  # pragma: no cover - the page tests run it
        from .fetch import FetchTransport

        return FetchTransport()
    from .httpx import HttpxTransport

    return HttpxTransport()


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
