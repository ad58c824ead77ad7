"""Serve the offline site on 127.0.0.1 with the headers the page needs.

    python -m build.serve [--port 8642] [--root build/site] [--proxy URL [--key-env NAME]] [--verbose]

The server is the package's (`aerix.serve`: the headers, the CSP, the path checks, range
requests, and with --proxy the key-holding proxy of `aerix.proxy`); this script serves the site
`make build` writes, as `python -m aerix serve` does from the repository. In a test, start it
in-process on a free port:

    server, thread = serve("build/site", 0)        # proxy="http://127.0.0.1:8080/v1", key=... for /v1
    port = server.server_address[1]
    ...
    server.shutdown()
"""

from __future__ import annotations

import argparse
import sys
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from aerix import serve as _site
from aerix.serve import CSP, HEADERS, MIME_TYPES, SiteHandler, _Server, policy

__all__ = ["CSP", "HEADERS", "MIME_TYPES", "ROOT", "SiteHandler", "_Server", "main", "policy", "serve"]

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"


def serve(root: str | Path = SITE, port: int = 8642, **options: Any) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving `root` (the built site) in a background thread; port 0 picks a free one.
    `options`: those of `aerix.serve.serve` (host, proxy, key, verbose)."""
    if not Path(root).is_dir():
        raise FileNotFoundError(f"{root} is not a folder: run `python -m build.site` first")
    return _site.serve(root, port, **options)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port_positional", metavar="port", nargs="?", type=int, help="same as --port")
    _site.arguments(parser, root=str(SITE))
    args = parser.parse_args()
    if args.port_positional is not None:
        args.port = args.port_positional
    if not Path(args.root).is_dir():
        print(f"build.serve: {args.root} is not a folder: run `make build` first", file=sys.stderr)
        return 2
    return _site.command(args)


if __name__ == "__main__":
    sys.exit(main())
