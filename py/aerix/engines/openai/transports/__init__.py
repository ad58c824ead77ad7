"""How the streaming client reaches a server: one seam, one method.

    class Transport(Protocol):
        async def send(self, request: Request) -> Response: ...

``send`` returns once the status and headers are in; the body then streams from
``response.aiter_bytes()``, and ``response.aclose()`` stops it (a closed stream stops the
server's generation). Implementations:

- :class:`HttpxTransport`: CPython, over httpx (the optional extra ``aerix[openai]``), imported
  when one is made;
- :class:`FetchTransport`: Pyodide, over the page's ``fetch`` with a streaming body reader
  (there are no sockets in the browser);
- :class:`MockTransport`: answers from a function of the request; with :func:`replay`, recorded
  byte streams cut into whatever network chunks a test wants.

:func:`default_transport` picks the first two by where it runs.
"""

from __future__ import annotations

from .base import Request, Response, Transport, default_transport
from .fetch import FetchTransport
from .httpx import HttpxTransport
from .mock import MockTransport, replay

__all__ = [
    "FetchTransport",
    "HttpxTransport",
    "MockTransport",
    "Request",
    "Response",
    "Transport",
    "default_transport",
    "replay",
]
