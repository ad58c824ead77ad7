"""The page's traces forwarded to an OpenTelemetry collector: ``POST /v1/traces`` of the site goes
to the collector's OTLP/HTTP traces endpoint, with the collector's headers added on the way.

    serve("build/site", 8642, otlp=Collector("http://127.0.0.1:4318", headers={"x-api-key": key}))
    # python -m aerix serve --proxy-otlp http://127.0.0.1:4318   (headers from OTEL_EXPORTER_OTLP_HEADERS)
    # the page: ai.agent({tracer: {url: "/v1/traces"}}), same origin: no CORS, no key in the page

The rules, each with a test in ``tests/unit/test_proxy_otlp.py``:

- Forwarded: ``POST /v1/traces`` (``TRACES_PATH``), to the collector's URL as given, or to its
  ``/v1/traces`` when the URL has no path (``http://127.0.0.1:4318``, as
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` is read). Another method is a 405.
- The page's request is checked as the model proxy checks its own (``proxy.request_refusal``):
  only this site's pages (Origin, Sec-Fetch-Site, Referer), a loopback Host on loopback, one
  ``Content-Length`` of at most ``max_body`` bytes, no folded header; refused with a problem
  document.
- Upstream go the body, its ``Content-Type`` (``application/json`` or ``application/x-protobuf``;
  none: ``application/json``) and the collector's ``headers``; every other header of the page is
  dropped.
- Back to the page go the collector's status, ``Content-Type`` and body (an OTLP answer is small:
  read whole, at most 1 MiB), the header values blanked out wherever they appear.
- A collector that cannot be reached is a 502, one that does not answer in ``timeout_s`` a 504.
"""

from __future__ import annotations

import http.client
from dataclasses import KW_ONLY, dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from .engines.openai.redact import SecretForms, shown_url
from .errors import AerixError, message_of
from .proxy import MAX_BODY, problem, read_body, request_refusal

__all__ = ["HEADERS_ENV", "TRACES_PATH", "Collector", "forward_traces", "otlp_headers"]

TRACES_PATH = "/v1/traces"
# where `python -m aerix serve --proxy-otlp` reads the collector's headers: OpenTelemetry's own
# variables, the traces one first ("k1=v1,k2=v2", values percent-encoded)
HEADERS_ENV = ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
_TYPES = ("application/json", "application/x-protobuf")
_MAX_ANSWER = 1 << 20


@dataclass(frozen=True)
class Collector:
    """Where the page's traces go: ``url`` an OTLP/HTTP endpoint (``http://127.0.0.1:4318``, to
    which ``/v1/traces`` is added, or the full ``.../v1/traces``); ``headers`` added to each
    request (a hosted collector's key); ``timeout_s`` to connect and to answer; ``max_body`` the
    largest trace, in bytes."""

    url: str
    _: KW_ONLY
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    timeout_s: float = 30.0
    max_body: int = MAX_BODY

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise AerixError("options", f"the OTLP collector must be an http(s) URL, got {shown_url(self.url)!r}")
        if parts.username is not None or parts.fragment:
            raise AerixError("options", f"the OTLP collector's URL {shown_url(self.url)!r} must carry no user or fragment: its headers come from the environment")
        if parts.path in ("", "/"):
            object.__setattr__(self, "url", self.url.rstrip("/") + TRACES_PATH)
        for name, value in self.headers.items():
            if not name or any(c in name + value for c in "\r\n\0"):
                raise AerixError("options", f"the OTLP collector's header {name!r} is not one an HTTP request can carry")

    def __repr__(self) -> str:
        return f"Collector({self.url!r}, headers={sorted(self.headers)})"

    def connect(self) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        return kind(parts.hostname or "", parts.port, timeout=self.timeout_s)


def otlp_headers(text: str | None) -> dict[str, str]:
    """OpenTelemetry's headers variable (``"k1=v1,k2=v2"``, values percent-encoded) as a dict."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise AerixError("options", f"an OTLP headers entry must be name=value, got {name.strip()!r} without one")
        out[name.strip()] = unquote(value.strip())
    return out


def forward_traces(page: BaseHTTPRequestHandler, collector: Collector) -> None:
    """Answer ``page``'s request for ``TRACES_PATH``: forward it to the collector, or refuse it."""
    if page.command != "POST":
        problem(page, HTTPStatus.METHOD_NOT_ALLOWED, f"{TRACES_PATH} takes POST only", allow="POST")
        return
    refusal = request_refusal(page, collector.max_body)
    if refusal is not None:
        problem(page, *refusal)
        return
    body = read_body(page)
    if body is None:
        return
    kind = (page.headers.get("Content-Type") or _TYPES[0]).split(";")[0].strip().lower()
    if kind not in _TYPES:
        problem(page, HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"OTLP/HTTP takes {' or '.join(_TYPES)}, not {kind}")
        return
    secrets = SecretForms(collector.headers.values())
    parts = urlsplit(collector.url)
    connection = collector.connect()
    try:
        try:
            connection.request("POST", parts.path + (f"?{parts.query}" if parts.query else ""), body=body, headers={"Content-Type": kind, **collector.headers})
            answer = connection.getresponse()
            data = answer.read(_MAX_ANSWER)
        except TimeoutError:
            problem(page, HTTPStatus.GATEWAY_TIMEOUT, f"the collector at {shown_url(collector.url)} did not answer in {collector.timeout_s:g} s")
            return
        except (OSError, http.client.HTTPException) as e:
            problem(page, HTTPStatus.BAD_GATEWAY, secrets.sub(f"could not reach the collector at {shown_url(collector.url)}: {message_of(e) or type(e).__name__}"))
            return
    finally:
        connection.close()
    data = secrets.sub(data.decode("latin-1")).encode("latin-1")
    page.send_response(answer.status, secrets.sub(" ".join((answer.reason or "").split())))
    page.send_header("Content-Type", secrets.sub(answer.getheader("Content-Type") or "application/json"))
    page.send_header("Content-Length", str(len(data)))
    page.send_header("Connection", "close")
    page.close_connection = True
    page.end_headers()
    try:
        page.wfile.write(data)
    except OSError:  # the page left
        pass

