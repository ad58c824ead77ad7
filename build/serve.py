"""Serve the offline site on 127.0.0.1 with the headers the page needs.

    python -m build.serve [--port 8642] [--root build/site] [--verbose]

Cross-origin isolation (COOP same-origin + COEP require-corp) is what gives wllama
its threads; without it llama.cpp silently runs on one. Range requests let a model
download resume. In a test, start it in-process on a free port:

    server, thread = serve("build/site", 0)
    port = server.server_address[1]
    ...
    server.shutdown()
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO, ClassVar

ROOT = Path(__file__).resolve().parent.parent

HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",  # revalidate: a rebuilt site must never mix with a cached one
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


class SiteHandler(SimpleHTTPRequestHandler):
    extensions_map = {"": "application/octet-stream", **MIME_TYPES}  # noqa: RUF012 - the base class' hook
    verbose: ClassVar[bool] = False

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def send_head(self) -> BinaryIO | None:
        """GET/HEAD, with a single `bytes=a-b` range answered by 206."""
        self._range_length: int | None = None  # per request: a connection serves several
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "").strip())
        path = self.translate_path(self.path)
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
    root: str | Path = ROOT / "build" / "site", port: int = 8642, *, verbose: bool = False
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving `root` in a background thread; port 0 picks a free one (read `server.server_address`)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root} is not a folder: run `python -m build.site` first")
    handler = partial(type("Handler", (SiteHandler,), {"verbose": verbose}), directory=str(root))  # verbose per server
    server = _Server(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, name="aerix-site", daemon=True)
    thread.start()
    return server, thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", nargs="?", type=int, help="same as --port")
    parser.add_argument("--port", dest="port_option", type=int, default=8642)
    parser.add_argument("--root", default=str(ROOT / "build" / "site"))
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()
    server, thread = serve(args.root, args.port if args.port is not None else args.port_option, verbose=args.verbose)
    print(f"serving {args.root} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)", flush=True)
    try:
        thread.join()
    except KeyboardInterrupt:
        server.shutdown()


if __name__ == "__main__":
    main()
