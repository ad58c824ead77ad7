"""Serve the offline site on 127.0.0.1 with the headers the page needs.

    python -m build.serve [--port 8642] [--root build/site] [--verbose]

The server is the package's (`aerix.serve`: the headers, the CSP, the path checks, range
requests); this script serves the site `make build` writes. In a test, start it in-process on
a free port:

    server, thread = serve("build/site", 0)
    port = server.server_address[1]
    ...
    server.shutdown()
"""

from __future__ import annotations

import argparse
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

from aerix import serve as _site
from aerix.serve import CSP, HEADERS, MIME_TYPES, SiteHandler, _Server, policy

__all__ = ["CSP", "HEADERS", "MIME_TYPES", "ROOT", "SiteHandler", "_Server", "main", "policy", "serve"]

ROOT = Path(__file__).resolve().parent.parent


def serve(root: str | Path = ROOT / "build" / "site", port: int = 8642, *, verbose: bool = False) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Start serving `root` (the built site) in a background thread; port 0 picks a free one."""
    if not Path(root).is_dir():
        raise FileNotFoundError(f"{root} is not a folder: run `python -m build.site` first")
    return _site.serve(root, port, verbose=verbose)


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
