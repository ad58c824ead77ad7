"""``python -m aerix worker``: a worker process (:class:`aerix.worker.Worker`) on a store named by URL.

    python -m aerix worker --store postgresql://aerix@db/aerix --agent myapp.agents:make_agent
    python -m aerix worker --store sqlite:///runs.sqlite3 --agent myapp.agents:make_agent --concurrency 4

``--store``: ``postgresql://...`` or ``postgres://...`` is ``aerix.stores.PostgresStore(url)``
(imported only then: ``pip install 'aerix[postgres]'``); ``sqlite:///relative/path`` and
``sqlite:////absolute/path`` (SQLAlchemy's spelling) are a ``SQLiteStore`` on that file.
``--agent module:factory``: ``factory(store)`` returns the Agent, built with that store; it is
imported from the current folder and ``sys.path`` as ``python -m`` sets them.

SIGTERM or SIGINT drains (no new run; the run going stops at its next checkpoint and its lease
is given back) and exits 0; a second one stops at once (the runs going are left ``interrupted``
at their last checkpoint). Exit status 2 on bad options (said on stderr), 1 when the store fails
to open.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import signal as signals
import sys
from typing import Any, Callable

from .errors import AerixError
from .worker import Worker

__all__ = ["arguments", "command", "load_factory", "open_store"]

_POSTGRES = ("postgresql", "postgres")


def arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--store", required=True, metavar="URL", help="postgresql://user@host/db, or sqlite:///path (relative) / sqlite:////path (absolute)")
    parser.add_argument("--agent", required=True, metavar="MODULE:FACTORY", help="factory(store) returns the aerix Agent, built with Agent(..., store=store)")
    parser.add_argument("--name", default=None, help="this worker in the log and in lease holders (default: host-pid)")
    parser.add_argument("--lease-s", type=float, default=30.0, help="how long a run's lease lives unrenewed, so how soon another worker takes over the run of a dead one (default 30)")
    parser.add_argument("--poll-s", type=float, default=1.0, help="seconds between looks for work (default 1)")
    parser.add_argument("--concurrency", type=int, default=1, help="runs executed at once (default 1): one Agent each")
    return parser


def open_store(url: str) -> Any:
    """The store ``url`` names; ``AerixError(kind="options")`` naming what is wrong."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise AerixError("options", f"--store must be a URL (postgresql://user@host/db or sqlite:///path), got {url!r}")
    scheme = scheme.lower()
    if scheme in _POSTGRES:
        try:
            stores = importlib.import_module("aerix.stores")
            make = getattr(stores, "PostgresStore")
        except (ImportError, AttributeError) as e:
            raise AerixError("options", f"--store {scheme}://...: aerix.stores.PostgresStore is not available here ({e}); pip install 'aerix[postgres]'") from None
        return make(url)
    if scheme == "sqlite":
        if not rest.startswith("/") or rest == "/":
            raise AerixError("options", f"--store sqlite:///PATH names a file (sqlite:////abs/path for an absolute one), got {url!r}")
        from .stores.sqlite import SQLiteStore

        return SQLiteStore(rest[1:])
    raise AerixError("options", f"--store {url!r}: unknown scheme {scheme!r} (postgresql://, postgres:// or sqlite:///)")


def load_factory(spec: str) -> Callable[[Any], Any]:
    """``module:attribute`` as a function; ``AerixError(kind="options")`` naming what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AerixError("options", f"--agent must be module:factory (myapp.agents:make_agent), got {spec!r}")
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as e:
        raise AerixError("options", f"--agent {spec}: cannot import {module_name!r} ({type(e).__name__}: {e})") from None
    for part in attr.split("."):
        if not hasattr(found, part):
            raise AerixError("options", f"--agent {spec}: {module_name!r} has no {attr!r}")
        found = getattr(found, part)
    if not callable(found):
        raise AerixError("options", f"--agent {spec}: {attr!r} is a {type(found).__name__}, not a function")
    factory: Callable[[Any], Any] = found
    return factory


def command(args: argparse.Namespace) -> int:
    """Run the worker ``args`` describe until a signal drains it; the exit status."""
    try:
        factory = load_factory(args.agent)
        return asyncio.run(_work(args, factory))
    except AerixError as e:
        print(f"aerix worker: {e.message}", file=sys.stderr)
        return 2 if e.kind == "options" else 1


async def _work(args: argparse.Namespace, factory: Callable[[Any], Any]) -> int:
    store = open_store(args.store)  # in the loop: an async store may bind to it
    try:
        try:
            worker = Worker(store, factory, name=args.name, lease_s=args.lease_s, poll_s=args.poll_s, concurrency=args.concurrency)
        except AerixError:
            raise
        except Exception as e:  # the factory's own failure: the developer's to fix
            raise AerixError("options", f"--agent {args.agent}: the factory failed ({type(e).__name__}: {e})") from None
        loop = asyncio.get_running_loop()

        def on_signal() -> None:  # the first drains, the second stops at once
            worker.stop() if worker.draining else worker.drain()

        for sig in (signals.SIGTERM, signals.SIGINT):
            try:
                loop.add_signal_handler(sig, on_signal)
            except (NotImplementedError, RuntimeError, ValueError):  # no signal handling here (Windows, a thread)
                pass
        await worker.run()
        return 0
    finally:
        await _close(store)


async def _close(store: Any) -> None:
    close = getattr(store, "aclose", None) or getattr(store, "close", None)
    if callable(close):
        try:
            done = close()
            if inspect.isawaitable(done):
                await done
        except Exception:
            pass  # the process ends anyway
