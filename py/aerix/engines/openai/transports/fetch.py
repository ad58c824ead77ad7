"""The Pyodide transport: the page's ``fetch``, its body read with a streaming reader.

There are no sockets in the browser; ``fetch`` is the way out, and a ``ReadableStream`` reader
gives the body chunk by chunk as it arrives. Everything JavaScript happens in ``aerix._js``.
A server on another origin must allow it with CORS (llama-server, vLLM and Ollama do).
"""

from __future__ import annotations

from typing import Any

from ...._js import fetch_stream
from .base import Request, Response

__all__ = ["FetchTransport"]


class FetchTransport:
    """Sends with ``fetch`` (the page's, or the JavaScript function given as ``fetch``)."""

    def __init__(self, fetch: Any = None) -> None:
        self.fetch = fetch

    def __repr__(self) -> str:
        return "FetchTransport()"

    async def send(self, request: Request) -> Response:
        opened = await fetch_stream(request.method, request.url, request.headers, request.body, fetch=self.fetch)
        return Response(opened.status, opened.headers, opened.chunks(), reason=opened.reason, close=opened.close)
