"""MCP tools: an MCP server's tools, as aerix tools, called over Streamable HTTP.

    tools = await aerix.mcp_tools("http://127.0.0.1:8000/mcp", prefix="docs_")
    agent = Agent(model=model, tools=[*tools, send_mail])
    ...
    await tools.aclose()   # or: async with await aerix.mcp_tools(url) as tools: ...

:func:`mcp_tools` lists the server's tools (``tools/list``, page after page) and makes each an
aerix tool (:func:`aerix.tool`): the same description, and its ``inputSchema`` as the input, a
rich JSON Schema input (:mod:`aerix.inputs`), so the model's input is checked before it is sent.
Only keywords that are annotations and nothing else (``$schema``, ``$id``, ``$comment``,
``format``, ``readOnly``, ``writeOnly``, ``deprecated``, ``content*``) are dropped first, and
draft-07's ``definitions`` read as ``$defs``; a schema aerix cannot take (``allOf``, ``oneOf``,
...) is an ``options`` error naming the tool: leave it out with ``tools=``.

A call is ``tools/call`` with the checked input. Its result is the text of its content (text
blocks joined by new lines; an image, audio, a resource or a link as a one-line note; an
embedded text resource's text), or the ``structuredContent`` when there is no text. A result
with ``isError`` is the tool's error result (``error: <its text>``), as is any failure of the
call (the server gone, a JSON-RPC error, an HTTP error): the model sees it and the run goes on.
A call past ``timeout_s`` is cancelled (the server told with ``notifications/cancelled``) and its
result is ``error: timed out after N s``. Results are **tainted** by default
(``trust={"taint": True}``): they come from outside, so a guarded tool waits for a person after
one (:mod:`aerix.trust`); ``trust=`` replaces that for all the server's tools.

The tools share one MCP session, held by the list :func:`mcp_tools` gives (:class:`McpTools`);
``await tools.aclose()`` (or leaving ``async with``) ends it with a DELETE, once, and the tools'
calls after it are error results.

Listing is when failures raise: ``AerixError("options")`` for the developer's mistakes (a bad
argument, a tool name or schema aerix cannot take, a name in ``tools=`` the server does not
offer), ``AerixError("engine")`` when the server cannot be listed (down, an HTTP or JSON-RPC
error, a protocol version aerix does not speak, no answer within ``timeout_s``).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

from ._js import IN_PYODIDE
from .errors import AerixError
from .mcp_client import McpFailure, McpSession
from .tools import NAME, Tool, ToolContext, tool

__all__ = ["MAX_PAGES", "McpToolError", "McpTools", "mcp_tools", "result_value", "tool_name"]

MAX_PAGES = 100  # of tools/list: a server whose cursor never ends is refused, not followed forever
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "format", "readOnly", "writeOnly", "deprecated", "contentMediaType", "contentEncoding", "contentSchema"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else", "additionalItems", "unevaluatedItems", "unevaluatedProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})


async def mcp_tools(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout_s: float | None = 60.0,
    prefix: str = "",
    tools: Iterable[str] | Callable[[dict[str, Any]], bool] | None = None,
    trust: dict[str, Any] | None = None,
    transport: Any = None,
) -> McpTools:
    """The tools of the MCP server at ``url`` (its Streamable HTTP endpoint, e.g. ``.../mcp``).

    ``headers``: sent with every request (``{"Authorization": "Bearer ..."}``); in the page, send
    none and reach the server through the proxy (``python -m aerix serve --proxy-mcp NAME=URL``,
    then ``url="/mcp/NAME"``), which holds the key. ``timeout_s``: the most each listing request
    and each call may take (``None``: no limit). ``prefix``: put before each tool's name (names
    are made aerix names: ``getWeather`` is ``get_weather``, ``a.b-c`` is ``a_b_c``).
    ``tools``: the MCP names to keep, or a function of a listed tool (its MCP dict) that says
    whether to keep it. ``trust``: the tools' trust flags (default ``{"taint": True}``).
    ``transport``: how HTTP is sent (``aerix.engines.openai.transports``; default httpx on
    CPython, ``fetch`` in the page). The list given holds the session: ``aclose()`` ends it.
    """
    _check(url, headers, timeout_s, prefix, tools, transport)
    trust = {"taint": True} if trust is None else trust
    session = McpSession(url, headers=headers, timeout_s=timeout_s, transport=transport)
    try:
        return _made(session, await _list(session, timeout_s), tools, prefix, trust, timeout_s)
    except Exception as e:
        await session.aclose()  # nothing holds the session now: end it on the server too
        if isinstance(e, McpFailure):
            raise AerixError("engine", str(e)) from None
        raise


def _made(session: McpSession, listed: list[dict[str, Any]], tools: Any, prefix: str, trust: dict[str, Any], timeout_s: float | None) -> McpTools:
    made: dict[str, str] = {}
    out = McpTools(session)
    for entry in _kept(session, listed, tools):
        name = tool_name(prefix, entry["name"], session.where)
        if name in made:
            raise AerixError("options", f"{session.where}: tools {made[name]!r} and {entry['name']!r} are both named {name!r} in aerix; keep one with tools=")
        made[name] = entry["name"]
        out.append(_tool(session, entry, name, trust, timeout_s))
    return out


class McpTools(list[Tool]):
    """The tools :func:`mcp_tools` listed (a list like any other), and the MCP session they
    share: ``await tools.aclose()``, or ``async with``, ends it (a DELETE with its
    ``Mcp-Session-Id``, once); a call after that is an error result."""

    def __init__(self, session: McpSession, tools: Iterable[Tool] = ()) -> None:
        super().__init__(tools)
        self.session = session

    def __repr__(self) -> str:
        return f"McpTools({self.session.where}, {[t.name for t in self]})"

    async def aclose(self) -> None:
        """End the session (see :meth:`aerix.mcp_client.McpSession.aclose`); safe to call twice."""
        await self.session.aclose()

    async def __aenter__(self) -> McpTools:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _check(url: Any, headers: Any, timeout_s: Any, prefix: Any, tools: Any, transport: Any) -> None:
    relative = IN_PYODIDE and isinstance(url, str) and url.startswith("/")  # the page's own origin: the proxy
    if not isinstance(url, str) or not (relative or re.match(r"^https?://[^/]", url)):
        where = "an http(s) URL or, in the page, a path such as /mcp/NAME" if IN_PYODIDE else "an http:// or https:// URL"
        raise AerixError("options", f"mcp_tools: url must be {where}, got {url!r}")
    if headers is not None and not (isinstance(headers, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
        raise AerixError("options", "mcp_tools: headers must be a dict of strings")
    if timeout_s is not None and (isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not timeout_s > 0):
        raise AerixError("options", f"mcp_tools: timeout_s must be a number of seconds > 0 or None, got {timeout_s!r}")
    if not isinstance(prefix, str) or not re.fullmatch(r"([a-z][a-z0-9_]*)?", prefix):
        raise AerixError("options", f"mcp_tools: prefix must be lower-case letters, digits and '_', starting with a letter, got {prefix!r}")
    if tools is not None and not callable(tools) and (isinstance(tools, (str, dict)) or not all(isinstance(n, str) for n in tools)):
        raise AerixError("options", "mcp_tools: tools must be a list of the MCP tool names to keep, or a function (tool) -> bool")
    if transport is not None and not callable(getattr(transport, "send", None)):
        raise AerixError("options", f"mcp_tools: transport must have an async send(request), got {type(transport).__name__}")


async def _list(session: McpSession, timeout_s: float | None) -> list[dict[str, Any]]:
    """Every tool the server lists, following ``nextCursor``."""
    listed: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    for _ in range(MAX_PAGES):
        page = await session.request("tools/list", params, timeout_s=timeout_s)
        entries = page.get("tools")
        if not isinstance(entries, list):
            raise McpFailure(f"{session.where}: tools/list: the result has no list of tools")
        for entry in entries:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not isinstance(entry.get("inputSchema", {}), dict):
                raise McpFailure(f"{session.where}: tools/list: a tool without a name or with an inputSchema that is no object: {str(entry)[:200]}")
            listed.append(entry)
        cursor = page.get("nextCursor")
        if not cursor:
            return listed
        params = {"cursor": cursor}
    raise McpFailure(f"{session.where}: tools/list: still more pages after {MAX_PAGES}")


def _kept(session: McpSession, listed: list[dict[str, Any]], tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return listed
    if callable(tools):
        return [entry for entry in listed if tools(entry)]
    wanted = list(tools)
    offered = [entry["name"] for entry in listed]
    missing = [name for name in wanted if name not in offered]
    if missing:
        raise AerixError("options", f"{session.where} offers no tool named {', '.join(map(repr, missing))} (it offers: {', '.join(offered) or 'none'})")
    return [entry for entry in listed if entry["name"] in wanted]


def tool_name(prefix: str, mcp_name: str, where: str = "MCP server") -> str:
    """An MCP tool's name as an aerix tool name: ``prefix`` + snake case, other characters ``_``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", mcp_name).lower()
    name = prefix + re.sub(r"[^a-z0-9_]+", "_", snake).strip("_")
    if not NAME.fullmatch(name):
        raise AerixError("options", f"{where}: tool {mcp_name!r} cannot be named {name!r} in aerix (names match {NAME.pattern}); give a prefix= or leave it out with tools=")
    return name


def _tool(session: McpSession, entry: dict[str, Any], name: str, trust: dict[str, Any], timeout_s: float | None) -> Tool:
    mcp_name: str = entry["name"]
    schema = _schema(entry.get("inputSchema") or {})
    text = entry.get("description") or entry.get("title") or (entry.get("annotations") or {}).get("title")
    description = text.strip() if isinstance(text, str) and text.strip() else f"The MCP tool {mcp_name}."

    async def run(input: dict[str, Any], ctx: ToolContext) -> Any:
        result = await session.request("tools/call", {"name": mcp_name, "arguments": input})
        return result_value(result)

    try:
        made: Tool = tool(name=name, description=description, input=schema, run=run, trust=trust, timeout_s=timeout_s)
    except AerixError as e:
        raise AerixError("options", f"{session.where}: tool {mcp_name!r}: {e.message}; leave it out with tools=") from None
    return made


def _schema(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema with annotation-only keywords dropped, ``definitions`` as ``$defs``."""
    out: dict[str, Any] = _clean(schema)
    if "definitions" in out and "$defs" not in out:
        out["$defs"] = out.pop("definitions")
    if "type" not in out:  # {} or {"properties": ...}: an object all the same (MCP inputs are objects)
        out["type"] = "object"
    return out


def _clean(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _clean(v) for k, v in value.items()}
        elif key in _SCHEMA_ONE:
            out[key] = _clean(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_clean(v) for v in value]
        elif key == "$ref" and isinstance(value, str) and value.startswith("#/definitions/"):
            out[key] = "#/$defs/" + value[len("#/definitions/") :]
        else:
            out[key] = value
    return out


class McpToolError(Exception):
    """A result with ``isError``: its text is the tool's error result."""


def result_value(result: dict[str, Any]) -> Any:
    """A ``tools/call`` result as the tool's value: its content's text, else its structured
    content; raises :class:`McpToolError` with the text when it is an error."""
    parts = [_block_text(block) for block in result.get("content") or [] if isinstance(block, dict)]
    text = "\n".join(part for part in parts if part)
    if result.get("isError"):
        raise McpToolError(text or "the MCP tool failed and said nothing more")
    structured = result.get("structuredContent")
    if not text and structured is not None:
        return structured
    return text


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        data = block.get("data")
        size = f", {len(data) * 3 // 4} bytes" if isinstance(data, str) else ""
        return f"[{kind} {block.get('mimeType', '')}{size}]"
    if kind == "resource":
        resource = block.get("resource") or {}
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[resource {resource.get('uri', '')} {resource.get('mimeType', '')}]".replace("  ", " ")
    if kind == "resource_link":
        return f"[link {block.get('name', '')}: {block.get('uri', '')}]"
    return f"[{kind} content]"
