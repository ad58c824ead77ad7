"""``MockTransport``: a transport that answers from a function, for tests (like httpx's).

    transport = MockTransport(lambda request: replay(recorded_bytes, chunk=3))
    client = ChatClient("http://server/v1", "m", transport=transport)
    ...
    transport.requests[0].json()      # what the server would have read
    transport.responses[0].closed     # whether the client closed the stream
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any, AsyncIterator

from .base import Request, Response

__all__ = ["MockTransport", "replay"]


class MockTransport:
    """Calls ``handler(request)`` (sync or async) for each request; it returns a ``Response``
    or raises (a network failure). Every request and response is kept, in order."""

    def __init__(self, handler: Callable[[Request], Any]) -> None:
        self.handler = handler
        self.requests: list[Request] = []
        self.responses: list[Response] = []

    def __repr__(self) -> str:
        return f"MockTransport(requests={len(self.requests)})"

    async def send(self, request: Request) -> Response:
        self.requests.append(request)
        response = self.handler(request)
        if inspect.isawaitable(response):
            response = await response
        if not isinstance(response, Response):
            raise TypeError(f"MockTransport: the handler must return a Response, got {type(response).__name__}")
        self.responses.append(response)
        return response


def replay(
    body: bytes | str | Sequence[bytes],
    *,
    status: int = 200,
    content_type: str = "text/event-stream",
    headers: dict[str, str] | None = None,
    chunk: int | None = None,
    delay: float = 0.0,
    hang: bool = False,
    fail: BaseException | None = None,
) -> Response:
    """A recorded response: ``body`` as the server sent it, in network chunks of ``chunk`` bytes
    (or as the given list of chunks), ``delay`` seconds apart. Then the body ends; or, with
    ``hang``, it never ends (a server that stalls); or ``fail`` is raised (a connection that breaks)."""
    if isinstance(body, str):
        body = body.encode()
    if isinstance(body, (bytes, bytearray)):
        step = chunk or max(len(body), 1)
        pieces = [bytes(body[i : i + step]) for i in range(0, len(body), step)]
    else:
        pieces = [bytes(p) for p in body]

    async def chunks() -> AsyncIterator[bytes]:
        for piece in pieces:
            if delay:
                await asyncio.sleep(delay)
            else:
                await asyncio.sleep(0)
            yield piece
        if fail is not None:
            raise fail
        if hang:
            await asyncio.get_running_loop().create_future()  # never resolves

    return Response(status, {"content-type": content_type, **(headers or {})}, chunks())
