"""The CPython transport: httpx, an optional extra (``pip install 'aerix[openai]'``).

httpx is imported when a transport is made, never when aerix is imported: the core package
depends on pydantic and jinja2 only, and Pyodide (no sockets) uses ``FetchTransport``.
"""

from __future__ import annotations

from typing import Any

from ....errors import AerixError
from .base import Request, Response

__all__ = ["HttpxTransport"]


class HttpxTransport:
    """Sends with ``httpx.AsyncClient`` and streams the body.

    ``client``: an ``httpx.AsyncClient`` of yours (its pool, proxies and TLS settings; you close
    it). Without one, each request gets its own client, closed with the response — no pooled
    connection outlives the event loop that made it. ``timeout``: an ``httpx.Timeout``; the
    default waits 10 s to connect and up to 10 minutes between chunks (a server may think a
    long time before its first token; the run's signal stops it sooner).
    """

    def __init__(self, client: Any = None, *, timeout: Any = None) -> None:
        try:
            import httpx
        except ImportError:
            raise AerixError(
                "options", "talking to a server from CPython needs httpx: pip install 'aerix[openai]'"
            ) from None
        self._httpx = httpx
        self.client = client
        self.timeout = timeout if timeout is not None else httpx.Timeout(10.0, read=600.0)

    def __repr__(self) -> str:
        return f"HttpxTransport(client={'yours' if self.client is not None else 'per request'})"

    async def send(self, request: Request) -> Response:
        owned = self.client is None
        client = self._httpx.AsyncClient(timeout=self.timeout) if owned else self.client
        try:
            built = client.build_request(request.method, request.url, headers=request.headers, content=request.body)
            response = await client.send(built, stream=True)
        except BaseException:
            if owned:
                await client.aclose()
            raise

        async def close() -> None:
            try:
                await response.aclose()
            finally:
                if owned:
                    await client.aclose()

        return Response(
            response.status_code,
            dict(response.headers),
            response.aiter_bytes(),
            reason=response.reason_phrase,
            close=close,
        )
