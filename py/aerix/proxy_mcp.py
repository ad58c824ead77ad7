"""The proxy's MCP paths: the page's ``/mcp/NAME`` forwarded to an MCP server's Streamable HTTP
endpoint, its key added on the way, so the page never holds it.

    AERIX_MCP_DOCS_KEY=... python -m aerix serve --proxy-mcp docs=https://mcp.example/mcp
    # the page (or any same-origin client): await aerix.mcp_tools("/mcp/docs")

Each ``--proxy-mcp NAME=URL`` (``serve(mcp={"docs": url})``) adds one path, ``/mcp/NAME``
exactly, forwarded to ``URL`` exactly (its path; no user, query or fragment in it). The key, if
any, comes from the environment variable :func:`key_env` names (``AERIX_MCP_DOCS_KEY`` for
``docs``) and goes as ``Authorization: Bearer <key>``. Everything else is the ``/v1`` proxy's
rules (:mod:`aerix.proxy`): the same refusals of another site's page and of a loopback request
naming another host, the same limits on the body, the key redacted from whatever comes back,
the body relayed chunk by chunk (an event stream as it is made). What differs is the methods,
``POST`` (a JSON-RPC message), ``GET`` (the server's own event stream) and ``DELETE`` (the
session's end), and the headers passed on: upstream ``Content-Type``, ``Accept``,
``Mcp-Session-Id``, ``MCP-Protocol-Version`` and ``Last-Event-ID``; back ``Content-Type``,
``Mcp-Session-Id`` and ``Retry-After``. Another ``/mcp/...`` path is a 404 naming those there are.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Mapping
from urllib.parse import urlsplit

from .errors import AerixError
from .proxy import Route, Upstream, _is_loopback, forward, problem

__all__ = ["METHODS", "PREFIX", "REQUEST_HEADERS", "RESPONSE_HEADERS", "forward_mcp", "key_env", "parse", "shown", "upstreams"]

PREFIX = "/mcp/"
METHODS = ("POST", "GET", "DELETE")
REQUEST_HEADERS = ("Content-Type", "Accept", "Mcp-Session-Id", "MCP-Protocol-Version", "Last-Event-ID")
RESPONSE_HEADERS = ("Content-Type", "Mcp-Session-Id", "Retry-After")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def key_env(name: str) -> str:
    """The environment variable that holds the key of the MCP server called ``name``."""
    return f"AERIX_MCP_{name.upper().replace('-', '_')}_KEY"


def parse(specs: list[str] | None, environ: Mapping[str, str]) -> dict[str, Upstream]:
    """``--proxy-mcp NAME=URL`` values as upstreams, each with its key from the environment."""
    out: dict[str, Any] = {}
    for spec in specs or []:
        name, eq, url = spec.partition("=")
        if not eq:
            raise AerixError("options", f"--proxy-mcp takes NAME=URL (docs=http://127.0.0.1:8000/mcp), got {spec!r}")
        if name in out:
            raise AerixError("options", f"--proxy-mcp names {name!r} twice")
        out[name] = Upstream(url, key=environ.get(key_env(name)) or None) if _NAME.fullmatch(name) else url
    return upstreams(out)


def upstreams(mcp: Mapping[str, str | Upstream] | None) -> dict[str, Upstream]:
    """``serve(mcp=...)``, checked: names of lower-case letters, digits, ``_`` and ``-``."""
    if mcp is None:
        return {}
    if not isinstance(mcp, Mapping):
        raise AerixError("options", f"mcp must be a dict of NAME to URL, got {type(mcp).__name__}")
    out = {}
    for name, upstream in mcp.items():
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise AerixError("options", f"an MCP server's name must be lower-case letters, digits, '_' or '-' (it is a path, /mcp/NAME), got {name!r}")
        out[name] = upstream if isinstance(upstream, Upstream) else Upstream(upstream)
    return out


def shown(mcp: Mapping[str, Upstream], host: str) -> list[str]:
    """What ``python -m aerix serve`` says of its MCP paths."""
    lines = [f"  /mcp/{name} goes to {upstream.url}, " + (f"with the key in ${key_env(name)}" if upstream.key else f"without a key (${key_env(name)} is not set)") for name, upstream in mcp.items()]
    if mcp and not _is_loopback(host):
        lines.append(f"  note: on {host}, anyone who can reach this port can use those MCP servers and their keys")
    return lines


def forward_mcp(page: BaseHTTPRequestHandler, mcp: Mapping[str, Upstream]) -> bool:
    """Whether ``page``'s request is for an MCP path (``/mcp/...``), now answered."""
    path = urlsplit(page.path).path
    if not path.startswith(PREFIX) or not mcp:
        return False
    upstream = mcp.get(path.removeprefix(PREFIX))
    if upstream is None:
        named = ", ".join(PREFIX + name for name in mcp)
        problem(page, HTTPStatus.NOT_FOUND, f"{path} is not forwarded: the MCP servers here are {named}")
        return True
    forward(page, upstream, Route(urlsplit(upstream.url).path or "/", METHODS, REQUEST_HEADERS, RESPONSE_HEADERS))
    return True
