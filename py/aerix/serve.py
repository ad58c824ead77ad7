"""A site server with the headers the page needs, on CPython: ``python -m aerix serve``.

    server, thread = serve("build/site", 0)     # port 0: a free one
    port = server.server_address[1]
    ...
    server.shutdown()

Cross-origin isolation (COOP same-origin + COEP require-corp) is what gives wllama
its threads; without it llama.cpp silently runs on one. Range requests let a model
download resume. Every response carries the Content-Security-Policy (CSP below) and
``X-Content-Type-Options: nosniff`` (a browser takes each file as its declared type, never
guesses a script into it); only files under the root are served (symlinks resolved), a
folder only through its index.html, and a malformed path gets a 400, never a traceback.

A request must have come whole (its line, headers and, for the proxy, body) within
``request_timeout_s`` (``REQUEST_TIMEOUT_S``, 30 s) of its connection opening, one request
per connection: a client that stalls half-way (slowloris) gets a 408 problem document and the
connection is closed, so it holds no thread for long; a connection that sends nothing is closed
quietly (a browser's preconnect). The site itself is not
in the package: ``make build`` writes it to build/site in the repository
(``python -m build.serve`` serves that one).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import posixpath
import re
import socket
import sys
import threading
import time
from functools import partial
from html.parser import HTMLParser
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO, ClassVar, Mapping
from urllib.parse import unquote

from .errors import AerixError
from .proxy import PREFIX, Upstream, _is_loopback, forward, problem
from .proxy_mcp import forward_mcp, parse, shown, upstreams
from .proxy_otlp import HEADERS_ENV, TRACES_PATH, Collector, forward_traces, otlp_headers

__all__ = ["CSP", "HEADERS", "KEY_ENV", "MIME_TYPES", "REQUEST_TIMEOUT_S", "SiteHandler", "Upstream", "arguments", "command", "policy", "serve"]

KEY_ENV = "AERIX_PROXY_KEY"  # where `python -m aerix serve --proxy` reads the key, unless --key-env names another
SITE = os.path.join("build", "site")  # what `make build` writes, relative to the repository
REQUEST_TIMEOUT_S = 30.0  # a request's line, headers and body must all have come by then

HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",  # revalidate: a rebuilt site must never mix with a cached one
    "X-Content-Type-Options": "nosniff",  # the declared type only: no text file run as a script
}

MIME_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".wasm": "application/wasm",  # required by WebAssembly.instantiateStreaming
    ".zip": "application/zip",
    ".whl": "application/zip",
    ".gguf": "application/octet-stream",
    ".map": "application/json",
    ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}

# What the page may load and where it may connect: its own origin, plus what Pyodide and wllama
# need, plus OpenAI-compatible servers on this machine (the demo's `?baseUrl=`, which demo.mjs
# limits to the same loopback origins). No 'unsafe-eval' (neither needs it) and no 'unsafe-inline'
# (an inline script is allowed by its hash, see policy()). The HTML pages carry the same policy in a
# <meta http-equiv>, so a copy of the site served elsewhere keeps it; tests/unit/test_serve.py
# checks that they agree.
CSP = {
    "default-src": "'self'",
    # Pyodide and wllama compile WebAssembly; that is all 'wasm-unsafe-eval' allows (no JS eval)
    "script-src": "'self' 'wasm-unsafe-eval'",
    # the worker runtime (worker.mjs) from the origin; wllama starts its worker, and llama.cpp its
    # threads, from blob: URLs
    "worker-src": "'self' blob:",
    # not http://[::1]:*: Chromium takes no IPv6 address in a CSP (it drops it as invalid, with a
    # console error), so the demo takes 127.0.0.1 and localhost only
    "connect-src": "'self' http://127.0.0.1:* http://localhost:*",
    "img-src": "'self' data:",  # the pages' empty favicon, <link rel="icon" href="data:,">
    "object-src": "'none'",
    "base-uri": "'none'",
    "form-action": "'self'",
    "frame-ancestors": "'self'",  # a header only: a <meta> CSP cannot carry it
}


def policy(page: bytes | None = None, *, meta: bool = False) -> str:
    """The CSP for a response; for an HTML `page`, each of its inline scripts is allowed by its sha256.

    `meta=True`: the policy as the page's own `<meta http-equiv="Content-Security-Policy">` writes
    it, without frame-ancestors (a browser ignores that one in a meta, with a console error).
    """
    directives = dict(CSP)
    if page is not None and (scripts := _InlineScripts(page).texts):
        directives["script-src"] += "".join(f" 'sha256-{_sha256(text)}'" for text in scripts)
    if meta:
        del directives["frame-ancestors"]
    return "; ".join(f"{name} {sources}" for name, sources in directives.items())


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


class _InlineScripts(HTMLParser):
    """The text of each inline `<script>` of an HTML page, as the browser hashes it."""

    def __init__(self, page: bytes) -> None:
        super().__init__()
        self.texts: list[str] = []
        self._open: list[str] | None = None  # the parts of the script being read
        # the browser sees the text after HTML's newline normalisation
        self.feed(page.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n"))
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script" and "src" not in dict(attrs):
            self._open = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.texts.append("".join(self._open))
            self._open = None


class _Deadline(io.RawIOBase):
    """A connection's bytes, read by a deadline: past it a read raises ``TimeoutError``, or is
    the end when nothing came at all. Writes keep no timeout (a download may be read slowly)."""

    def __init__(self, connection: socket.socket, seconds: float) -> None:
        self._connection = connection
        self._deadline = time.monotonic() + seconds
        self._started = False
        self.late = False  # a read raised TimeoutError

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError("the request did not come in time")
            self._connection.settimeout(left)
            count = self._connection.recv_into(buffer)
        except TimeoutError:
            if not self._started:
                return 0  # a connection that said nothing: closed as if it had hung up
            self.late = True
            raise
        finally:
            self._connection.settimeout(None)
        self._started = self._started or count > 0
        return count


class _Refused(Exception):
    """A request path that names no file the server may send: answered with `status`, nothing more."""

    def __init__(self, status: HTTPStatus) -> None:
        super().__init__(status)
        self.status = status


class SiteHandler(SimpleHTTPRequestHandler):
    extensions_map = {"": "application/octet-stream", **MIME_TYPES}  # noqa: RUF012 - the base class' hook
    verbose: ClassVar[bool] = False
    upstream: ClassVar[Upstream | None] = None  # where /v1 goes (aerix.proxy); None: /v1 is a path like any other
    mcp: ClassVar[dict[str, Upstream]] = {}  # where /mcp/NAME goes (aerix.proxy_mcp)
    collector: ClassVar[Collector | None] = None  # where /v1/traces goes (aerix.proxy_otlp)
    request_timeout_s: ClassVar[float] = REQUEST_TIMEOUT_S

    _policy: str = policy()  # per request, set by send_head; this one for errors answered before it

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the base class' reader: ours reads the same socket, by a deadline
        self._deadline = _Deadline(self.connection, self.request_timeout_s)
        self.rfile = io.BufferedReader(self._deadline)

    def handle_one_request(self) -> None:
        super().handle_one_request()
        if self._deadline.late and not hasattr(self, "request_version"):  # set as parse_request begins
            # the request line itself did not come whole: the base class only logs that and closes
            self.command, self.request_version, self.requestline = "", self.protocol_version, ""
            self._late()

    def parse_request(self) -> bool:
        try:
            return super().parse_request()
        except TimeoutError:  # the request line came, its headers did not
            self._late()
            return False

    def _late(self) -> None:
        problem(self, HTTPStatus.REQUEST_TIMEOUT, f"the request did not come whole in {self.request_timeout_s:g} s")

    def do_GET(self) -> None:
        if not self._proxied():
            super().do_GET()

    def do_HEAD(self) -> None:
        if not self._proxied():
            super().do_HEAD()

    def do_POST(self) -> None:
        if not self._proxied():
            self.send_error(HTTPStatus.NOT_IMPLEMENTED, f"Unsupported method ({self.command!r})")

    do_DELETE = do_POST  # the end of an MCP session (/mcp/NAME); the /v1 proxy's Route refuses it

    def _proxied(self) -> bool:
        """Whether the request is the proxy's (a /v1 path on a server with an upstream), now answered."""
        path = self.path.split("?", 1)[0]
        if forward_mcp(self, self.mcp):
            return True
        if self.collector is not None and path == TRACES_PATH:
            forward_traces(self, self.collector)
            return True
        if self.upstream is None or (path != PREFIX and not path.startswith(PREFIX + "/")):
            return False
        forward(self, self.upstream)
        return True

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Security-Policy", self._policy)  # a document enforces it; the rest ignore it
        super().end_headers()

    def translate_path(self, path: str) -> str:
        """The real path that `path` names under the root, symlinks resolved (a folder's ends in `/`).

        Raises _Refused: 400 for a path that is not one (no leading `/`, a NUL, bytes that are not
        UTF-8), 404 for one that resolves outside the root or to a folder without an index.html.
        """
        path = path.split("?", 1)[0].split("#", 1)[0]
        if not path.startswith("/"):
            raise _Refused(HTTPStatus.BAD_REQUEST)
        try:
            name = unquote(path, errors="strict")
        except UnicodeDecodeError:
            raise _Refused(HTTPStatus.BAD_REQUEST) from None
        if "\0" in name:
            raise _Refused(HTTPStatus.BAD_REQUEST)
        root = os.path.realpath(self.directory)
        target = os.path.realpath(os.path.join(root, posixpath.normpath(name).lstrip("/")))
        if os.path.commonpath([root, target]) != root:
            raise _Refused(HTTPStatus.NOT_FOUND)
        if os.path.isdir(target):
            if not os.path.isfile(os.path.join(target, "index.html")):
                raise _Refused(HTTPStatus.NOT_FOUND)  # never a listing
            return target + "/"  # the base class sends its index.html, or redirects to ".../"
        return target + "/" if name.endswith("/") else target  # "file/" stays a 404, as in the base class

    def list_directory(self, path: str | os.PathLike[str]) -> None:
        self.send_error(HTTPStatus.NOT_FOUND)  # never a listing, whatever a subclass' translate_path returns
        return None

    def send_head(self) -> BinaryIO | None:
        """GET/HEAD, with a single `bytes=a-b` range answered by 206; an HTML page gets its own CSP."""
        self._range_length: int | None = None  # per request: a connection serves several
        self._policy = policy()
        try:
            return self._send_file()
        except _Refused as refused:
            self.send_error(refused.status)
            return None

    def _send_file(self) -> BinaryIO | None:
        path = self.translate_path(self.path)
        page = os.path.join(path, "index.html") if path.endswith("/") else path
        if page.endswith(".html"):
            try:
                self._policy = policy(Path(page).read_bytes())
            except OSError:
                pass  # no such page: the base class answers 404
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        if not match or not os.path.isfile(path) or match.groups() == ("", ""):
            return super().send_head()
        size = os.path.getsize(path)
        first, last = match.groups()
        if first and last and int(last) < int(first):
            return super().send_head()  # an invalid range is ignored (RFC 9110, 14.2)
        if first:
            start, end = int(first), min(int(last), size - 1) if last else size - 1
        else:  # "bytes=-N": the last N bytes
            start, end = max(size - int(last), 0), size - 1
        if start >= size or end < start:
            self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        f = open(path, "rb")  # noqa: SIM115 - copyfile() reads it, then the caller closes it
        f.seek(start)
        self.send_response(HTTPStatus.PARTIAL_CONTENT)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self._range_length = end - start + 1
        return f

    def copyfile(self, source: BinaryIO, outputfile: BinaryIO) -> None:  # type: ignore[override]
        remaining = self._range_length
        if remaining is None:
            return super().copyfile(source, outputfile)
        while remaining > 0:
            chunk = source.read(min(remaining, 1 << 20))
            if not chunk:
                break
            outputfile.write(chunk)
            remaining -= len(chunk)

    def log_message(self, format: str, *args: object) -> None:
        if self.verbose:
            super().log_message(format, *args)

    def log_error(self, format: str, *args: object) -> None:
        super().log_message(format, *args)  # errors always show, even when quiet


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a page that keeps a connection open must not block shutdown

    def handle_error(self, request: object, client_address: object) -> None:
        # A page that cancels a download (a closed tab, an aborted model fetch) is no error of ours.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def serve(
    root: str | Path,
    port: int = 8642,
    *,
    host: str = "127.0.0.1",
    proxy: str | Upstream | None = None,
    key: str | None = None,
    otlp: str | Collector | None = None,
    verbose: bool = False,
    request_timeout_s: float = REQUEST_TIMEOUT_S,
    mcp: Mapping[str, str | Upstream] | None = None,
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving `root` in a background thread; port 0 picks a free one (read `server.server_address`).

    `proxy`: the upstream's API root, /v1 included (`http://127.0.0.1:8080/v1`), or an `Upstream`;
    the page's `/v1/models` and `/v1/chat/completions` go there with `key` as a Bearer token
    (aerix.proxy). `otlp`: an OpenTelemetry collector's OTLP/HTTP URL, or a `Collector`; the page's
    `POST /v1/traces` goes there (aerix.proxy_otlp). `host`: the address to listen on; the default is this machine only.
    `request_timeout_s`: how long a request (line, headers, body) may take to come, from its connection opening.
    `mcp`: MCP servers by name, each forwarded from `/mcp/NAME` (aerix.proxy_mcp).
    """
    if sys.platform == "emscripten":
        raise AerixError("options", "aerix serve runs on CPython: a web page cannot listen on a port")
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder")
    if isinstance(proxy, Upstream) and key is not None:
        raise AerixError("options", "serve(proxy=Upstream(...), key=...): give the key to the Upstream")
    if isinstance(request_timeout_s, bool) or not isinstance(request_timeout_s, (int, float)) or not 0 < request_timeout_s < float("inf"):
        raise AerixError("options", f"request_timeout_s must be a number of seconds > 0, got {request_timeout_s!r}")
    upstream = Upstream(proxy, key=key) if isinstance(proxy, str) else proxy
    collector = Collector(otlp) if isinstance(otlp, str) else otlp
    per_server = {"verbose": verbose, "upstream": upstream, "collector": collector, "request_timeout_s": float(request_timeout_s), "mcp": upstreams(mcp)}
    handler = partial(type("Handler", (SiteHandler,), per_server), directory=str(root))
    server = _Server((host, port), handler)
    thread = threading.Thread(target=server.serve_forever, name="aerix-site", daemon=True)
    thread.start()
    return server, thread


# -- python -m aerix serve (and python -m build.serve) ---------------------------------------


def arguments(parser: argparse.ArgumentParser, *, root: str | None = None) -> argparse.ArgumentParser:
    """The server's options on `parser`; `root` the folder served when --root is not given."""
    parser.add_argument("--port", type=int, default=8642, help="the port (default 8642; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)")
    parser.add_argument("--root", default=root, help="the site's folder (default: build/site, when run in the repository)")
    parser.add_argument("--proxy", metavar="URL", help="forward /v1/models and /v1/chat/completions to this OpenAI-compatible server, /v1 included (http://127.0.0.1:8080/v1), with the key")
    parser.add_argument("--proxy-mcp", metavar="NAME=URL", action="append", help="forward /mcp/NAME to this MCP server (Streamable HTTP), with the key in $AERIX_MCP_<NAME>_KEY; repeatable")
    parser.add_argument("--proxy-otlp", metavar="URL", help=f"forward the page's POST {TRACES_PATH} to this OpenTelemetry collector (http://127.0.0.1:4318), with the headers in ${HEADERS_ENV[0]} or ${HEADERS_ENV[1]}")
    parser.add_argument("--key-env", metavar="NAME", help=f"the environment variable that holds the server's API key (default {KEY_ENV})")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    return parser


def command(args: argparse.Namespace, *, environ: Mapping[str, str] = os.environ) -> int:
    """Serve as `args` (from `arguments`) say until Ctrl-C; 2 when they cannot be served."""
    root = args.root or (SITE if os.path.isdir(SITE) else None)
    if root is None:
        return _fail(f"no site to serve: pass --root DIR (the folder `make build` writes, {SITE} in the repository)")
    name = args.key_env or KEY_ENV
    key = environ.get(name) or None
    if args.key_env and not args.proxy:
        return _fail("--key-env is for --proxy: the key is sent to the server it names")
    if args.proxy and key is None and args.key_env:
        return _fail(f"${name} is not set: it should hold the key for {args.proxy}")
    try:
        mcp = parse(getattr(args, "proxy_mcp", None), environ)
        otlp = None if not args.proxy_otlp else Collector(args.proxy_otlp, headers=otlp_headers(next((environ[n] for n in HEADERS_ENV if environ.get(n)), None)))
        server, thread = serve(root, args.port, host=args.host, proxy=args.proxy, key=key, otlp=otlp, verbose=args.verbose, mcp=mcp)
    except AerixError as e:
        return _fail(e.message)
    except OSError as e:
        return _fail(str(e))
    print(f"serving {root} at http://{args.host}:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    for line in shown(mcp, args.host):
        print(line, flush=True)
    if args.proxy:
        whose = f"with the key in ${name}" if key else f"without a key (${name} is not set)"
        print(f"  /v1/models and /v1/chat/completions go to {args.proxy.rstrip('/')}, {whose}", flush=True)
        if not _is_loopback(args.host):
            print(f"  note: on {args.host}, anyone who can reach this port can use the server and its key", flush=True)
    if otlp:
        print(f"  {TRACES_PATH} goes to the OpenTelemetry collector at {otlp.url}", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()
    return 0


def _fail(message: str) -> int:
    print(f"aerix serve: {message}", file=sys.stderr)
    return 2
