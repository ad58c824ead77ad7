"""The key-holding proxy: the page's ``/v1`` requests forwarded to an OpenAI-compatible server,
the API key added on the way, so the page never holds it.

    upstream = Upstream("http://127.0.0.1:8080/v1", key=os.environ["AERIX_PROXY_KEY"])
    server, thread = serve("build/site", 8642, proxy=upstream)      # aerix.serve
    # the page: boot({engine: {baseUrl: "/v1", model: "qwen"}}), no key in it

The rules, each with a test in ``tests/unit/test_proxy.py``:

- Forwarded: ``GET /v1/models`` (the page lists the models first) and ``POST /v1/chat/completions``,
  to the same paths under the upstream's URL, the query dropped. Any other ``/v1`` path is a 404,
  another method a 405.
- Upstream goes the body, its ``Content-Type`` and ``Accept``, and ``Authorization: Bearer <key>``;
  every other header of the page (its own ``Authorization``, ``Cookie``, ...) is dropped.
- Refused with a 403, so that the key is never attached to a request another web page could
  cause: one whose ``Origin`` is not the site's own; one whose ``Sec-Fetch-Site`` is anything but
  ``same-origin`` or ``none`` (typed in the address bar); one without either whose ``Referer`` is
  another site's; a ``GET`` with none of the three (a browser on a plain-http address sends no
  ``Sec-Fetch-Site``, and an ``<img>`` can drop its ``Referer``; every browser sends ``Origin``
  with a POST, so a POST without one is no web page's); and, when it came in on a loopback
  address, one whose ``Host`` is not a loopback name (another web page that made its own name
  point at 127.0.0.1: DNS rebinding).
- A header folded onto a second line (obs-fold, a line that starts with a space or tab), or any
  header line that is not ``Name: value``, is a 400, never forwarded. ``Content-Length`` must be ASCII digits, given once (``"²"``, ``"+5"``,
  ``"5_0"``, ``"5 "``: 400); a body over ``max_body`` bytes is a 413 (not read), a POST without
  ``Content-Length`` a 411, a body that ends short of it a 400, and one that has not all come
  ``request_timeout_s`` after the connection opened (``aerix.serve``) a 408.
- Back to the page go the upstream's status, ``Content-Type`` and ``Retry-After`` (a folded one
  unfolded), and its body chunk by chunk as it arrives, never buffered (``Connection: close``
  ends it).
- The key never reaches the page: wherever it appears in the body or a header, as an upstream
  that echoes it in a 401 does, in any form (as it is, JSON-escaped with ``\\uXXXX`` or ``\\/``
  for any of its characters, percent-encoded), it becomes ``[redacted]``, even split across
  chunks. Bytes that could begin the key wait for the next chunk; an event stream's chunks end in
  a blank line, which no key begins, so nothing waits there; where the body ends inside what
  could be the key, 4 bytes or more of it are ``[redacted]``.
- An upstream that cannot be reached is a 502, one that does not answer in ``timeout_s`` a 504.
- A page that leaves mid-stream closes the upstream connection, so the server stops generating.

Every refusal is an RFC 9457 problem document (``application/problem+json``), the key never in it.
Nothing is logged but the request line, which holds no key.
"""

from __future__ import annotations

import http.client
import json
import re
from dataclasses import KW_ONLY, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from ipaddress import ip_address
from urllib.parse import urlsplit

from .engines.openai.redact import REDACTED, SecretForms, TextRedactor, clean_api_key, shown_url
from .errors import AerixError, message_of

__all__ = ["MAX_BODY", "PREFIX", "ROUTES", "Route", "Upstream", "forward", "problem", "read_body", "request_refusal"]

PREFIX = "/v1"
ROUTES = {"/v1/models": "GET", "/v1/chat/completions": "POST"}
MAX_BODY = 8 << 20  # 8 MiB: a long conversation, with room to spare
_REQUEST_HEADERS = ("Content-Type", "Accept")
_RESPONSE_HEADERS = ("Content-Type", "Retry-After")  # Retry-After: the client's backoff reads it
_LOOPBACK_NAMES = ("localhost",)
_OWN_SITE = ("same-origin", "none")  # Sec-Fetch-Site: this site's page, or the user's own address bar
_FOLD = re.compile(r"\r?\n[ \t]*")


@dataclass(frozen=True)
class Route:
    """What a proxied path forwards (``/v1``'s by default; ``aerix.proxy_mcp`` makes MCP's): the
    upstream's path (``None``: a 404 whose detail is ``missing``), the methods taken, and the
    headers passed on each way."""

    target: str | None
    methods: tuple[str, ...]
    request_headers: tuple[str, ...] = _REQUEST_HEADERS
    response_headers: tuple[str, ...] = _RESPONSE_HEADERS
    missing: str = ""


def _v1_route(path: str, upstream: Upstream) -> Route:
    if path not in ROUTES:
        return Route(None, (), missing=f"{path} is not forwarded: this proxy forwards only " + " and ".join(f"{m} {p}" for p, m in ROUTES.items()))
    return Route(urlsplit(upstream.url).path + path.removeprefix(PREFIX), (ROUTES[path],))


@dataclass(frozen=True)
class Upstream:
    """Where the page's ``/v1`` requests go: ``url`` the API root, ``/v1`` included
    (``http://127.0.0.1:8080/v1``); ``key`` sent as a Bearer token (``None``: no Authorization);
    ``timeout_s`` to connect and between two chunks; ``max_body`` the largest request, in bytes."""

    url: str
    _: KW_ONLY
    key: str | None = field(default=None, repr=False)
    timeout_s: float = 300.0
    max_body: int = MAX_BODY

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AerixError("options", f"the proxy's upstream must be an http(s) URL, got {shown_url(self.url)!r}")
        if parts.username is not None or parts.query or parts.fragment:
            raise AerixError("options", f"the proxy's upstream URL {shown_url(self.url)!r} must carry no user, query or fragment: the key comes from the environment")
        object.__setattr__(self, "url", self.url.rstrip("/"))
        object.__setattr__(self, "key", clean_api_key(self.key))

    def __repr__(self) -> str:
        return f"Upstream({self.url!r}, key={REDACTED if self.key else None!r})"

    def connect(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return kind(parts.hostname or "", parts.port, timeout=self.timeout_s)


def forward(page: BaseHTTPRequestHandler, upstream: Upstream, route: Route | None = None) -> None:
    """Answer ``page``'s request for a ``/v1`` path (or the ``route`` given): forward it upstream, or refuse it."""
    redact = _Redactor(upstream.key)
    path = urlsplit(page.path).path
    route = route if route is not None else _v1_route(path, upstream)
    refusal = _refusal(page, path, upstream, route)
    if refusal is not None:
        problem(page, *refusal, allow=", ".join(route.methods))
        return
    body = None
    if page.command == "POST":
        body = read_body(page)
        if body is None:
            return
    headers = {name: value for name in route.request_headers if (value := page.headers.get(name)) is not None}
    if upstream.key:
        headers["Authorization"] = f"Bearer {upstream.key}"
    connection = upstream.connect()
    try:
        try:
            connection.request(page.command, route.target or "/", body=body, headers=headers)
            answer = connection.getresponse()
        except TimeoutError:
            problem(page, HTTPStatus.GATEWAY_TIMEOUT, f"the server at {upstream.url} did not answer in {upstream.timeout_s:g} s")
            return
        except (OSError, http.client.HTTPException) as e:
            problem(page, HTTPStatus.BAD_GATEWAY, redact.text(f"could not reach the server at {upstream.url}: {message_of(e) or type(e).__name__}"))
            return
        try:
            _relay(page, answer, redact, route.response_headers)
        finally:
            answer.close()  # it may own the socket (a response that ends the connection)
    finally:
        connection.close()  # also when the page left mid-stream: the server sees it and stops


def _refusal(page: BaseHTTPRequestHandler, path: str, upstream: Upstream, route: Route) -> tuple[HTTPStatus, str] | None:
    """Why the request is not forwarded (its status and the problem's detail), or ``None``."""
    if route.target is None:
        return HTTPStatus.NOT_FOUND, route.missing
    if page.command not in route.methods:
        return HTTPStatus.METHOD_NOT_ALLOWED, f"{path} takes {' or '.join(route.methods)} only"
    return request_refusal(page, upstream.max_body)


def read_body(page: BaseHTTPRequestHandler) -> bytes | None:
    """The body of a request ``request_refusal`` let through (its Content-Length checked), or
    ``None`` when it did not all come: the page has its problem then."""
    length = int(page.headers["Content-Length"])
    try:
        body = page.rfile.read(length)
    except TimeoutError:  # aerix.serve reads a request by a deadline
        problem(page, HTTPStatus.REQUEST_TIMEOUT, "the request's body did not arrive in time")
        return None
    if len(body) < length:
        problem(page, HTTPStatus.BAD_REQUEST, f"the request's body ended after {len(body)} of its {length} bytes")
        return None
    return body


def request_refusal(page: BaseHTTPRequestHandler, max_body: int) -> tuple[HTTPStatus, str] | None:
    """Why a request on a forwarded path is not forwarded: its headers, its origin, its size
    (the rules above, but for the path and method); ``None`` when it may go."""
    folded = sorted({name for name, value in page.headers.items() if "\n" in value or "\r" in value})
    if folded or page.headers.defects:  # obs-fold: another server may read a folded line as a header of its own
        what = f"{', '.join(folded)} header goes on" if folded else "headers go on"
        return HTTPStatus.BAD_REQUEST, f"the request's {what} over a line that is not 'Name: value' (obs-fold): send each header on one line"
    host = page.headers.get("Host", "")
    foreign = _foreign(page, host)
    if foreign is not None:
        return HTTPStatus.FORBIDDEN, foreign
    # the address the request came in on: a page that reached this machine's loopback by a name
    # of its own (DNS rebinding) names a host that is not this machine's
    if _is_loopback(page.connection.getsockname()[0]) and not _is_loopback(urlsplit(f"//{host}").hostname or ""):
        return HTTPStatus.FORBIDDEN, "the request names a host that is not this machine: use http://127.0.0.1 or http://localhost"
    if page.command != "POST":
        return None
    lengths = page.headers.get_all("Content-Length") or []
    if "Transfer-Encoding" in page.headers or not lengths:
        return HTTPStatus.LENGTH_REQUIRED, "the request needs a Content-Length"
    if len(lengths) > 1 or not re.fullmatch(r"[0-9]+", lengths[0]):  # not str.isdigit(): it takes "²"
        return HTTPStatus.BAD_REQUEST, "the request's Content-Length is not one number in ASCII digits"
    size = lengths[0].lstrip("0") or "0"
    if len(size) > 18 or int(size) > max_body:  # 18 digits: int() takes no more than 4300
        return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the request has {size if len(size) <= 18 else 'more than 10**18'} bytes; the proxy takes at most {max_body}"
    return None


def _foreign(page: BaseHTTPRequestHandler, host: str) -> str | None:
    """Why the request may come from another site's page (the problem's detail), or ``None``."""
    origin = page.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
        return "the request comes from another origin: only this site's pages may use the proxy"
    site = page.headers.get("Sec-Fetch-Site")
    if site is not None and site.strip().lower() not in _OWN_SITE:
        return f"the request comes from another site's page (Sec-Fetch-Site: {site}): only this site's pages may use the proxy"
    referer = page.headers.get("Referer")
    if site is None and referer is not None and urlsplit(referer).netloc.lower() != host.lower():
        return "the request comes from another site's page (its Referer): only this site's pages may use the proxy"
    if origin is None and site is None and referer is None and page.command != "POST":
        return ("a GET with no Origin, Sec-Fetch-Site or Referer may come from another site's page (an <img>): "
                "this site's pages send them; a script may send Sec-Fetch-Site: same-origin")
    return None


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _relay(page: BaseHTTPRequestHandler, answer: http.client.HTTPResponse, redact: _Redactor, names: tuple[str, ...]) -> None:
    """The upstream's answer to the page as it comes: status, the headers named, the body chunk by chunk."""
    page.send_response(answer.status, redact.text(_FOLD.sub(" ", answer.reason or "")))
    for name in names:
        if (value := answer.getheader(name)) is not None:
            page.send_header(name, redact.text(_FOLD.sub(" ", value)))  # obs-fold unfolded, as RFC 9112 asks
    page.send_header("Connection", "close")
    page.close_connection = True
    page.end_headers()
    while True:
        try:
            chunk = answer.read1(1 << 16)
        except (OSError, http.client.HTTPException) as e:  # the server broke off: so does the page's stream
            page.log_error("%s", redact.text(f"the upstream stream broke off: {message_of(e) or type(e).__name__}"))
            return
        try:
            page.wfile.write(redact.feed(chunk) if chunk else redact.close())
            page.wfile.flush()
        except OSError:  # the page left
            return
        if not chunk:
            return


def problem(page: BaseHTTPRequestHandler, status: HTTPStatus, detail: str, *, allow: str | None = None) -> None:
    """An RFC 9457 problem document, and the connection closed (an unread body is not read);
    ``allow``: a 405's ``Allow`` header (by default the methods of the path among ``ROUTES``)."""
    body = json.dumps({"type": "about:blank", "title": status.phrase, "status": int(status), "detail": detail}).encode()
    page.send_response(status)
    if status == HTTPStatus.METHOD_NOT_ALLOWED:
        page.send_header("Allow", allow if allow is not None else ROUTES.get(urlsplit(page.path).path, ""))
    page.send_header("Content-Type", "application/problem+json")
    page.send_header("Content-Length", str(len(body)))
    page.send_header("Connection", "close")
    page.close_connection = True
    page.end_headers()
    try:
        page.wfile.write(body)
    except OSError:
        pass


class _Redactor:
    """The key blanked out of a stream of bytes in any of its forms, even where a chunk ends inside it.
    The key is ASCII, so bytes are read as Latin-1, one character each, and written back the same."""

    def __init__(self, key: str | None) -> None:
        self._forms = SecretForms([key] if key else [])
        self._text = TextRedactor(self._forms)

    @property
    def held(self) -> bytes:
        """The end of the last chunk, which may begin the key."""
        return self._text.held.encode("latin-1")

    def feed(self, chunk: bytes) -> bytes:
        return self._text.feed(chunk.decode("latin-1")).encode("latin-1")

    def close(self) -> bytes:
        return self._text.close().encode("latin-1")

    def text(self, text: str) -> str:
        return self._forms.sub(text)
