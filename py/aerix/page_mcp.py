"""MCP tools for JavaScript: what ``ai.mcpTools(url, options)`` of web/aerix.mjs calls.

    const docs = await ai.mcpTools("/mcp/docs", { prefix: "docs_" });  // the proxy's path
    const agent = ai.agent({ tools: [...docs, weather] });
    ...
    await docs.close();  // ends the MCP session: mcp_close_js

:func:`mcp_tools_js` lists the server's tools with :func:`aerix.mcp_tools` (the protocol spoken
here, in Pyodide, over the page's ``fetch``), keeps each Tool under an id, and gives JavaScript
plain data, one object a tool: ``{name, description, mcp: {aerixMcp: id}}``. That
object crosses like any option (to the worker and back) and goes into an agent's ``tools``,
where :func:`mcp_tool_of` (``page_options``) finds the Tool again, as ``{aerixAgent: id}``
finds an agent. ``name`` and ``description`` may be changed before (the Tool is then copied
under them); the input is the server's.

The session the listing started lives here too, in the :class:`~aerix.mcp.McpTools` kept under
the listing's own id (``session`` beside ``tools`` in what :func:`mcp_tools_js` gives;
web/handle.mjs makes it the array's ``close()``). :func:`mcp_close_js` ends it (one DELETE);
the Tools stay where they are, so an agent holding them, or built with them later, runs as
before, and each call of one is the error result naming the ended session, as on CPython.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from ._js import js_facing
from .errors import AerixError
from .mcp import McpTools, mcp_tools
from .page_options import _js_trust, as_dict
from .tools import NAME, Tool

__all__ = ["MCP_NAMES", "mcp_close_js", "mcp_tool_of", "mcp_tools_js"]

# JavaScript's option names -> mcp_tools' keywords (web/handle.mjs's MCP_OPTIONS lists the same;
# tests/unit/test_api_parity.py holds both to mcp_tools' signature). `transport`: the page's fetch.
MCP_NAMES = {"headers": "headers", "timeoutS": "timeout_s", "prefix": "prefix", "tools": "tools", "trust": "trust"}

# The tools ai.mcpTools() listed in this runtime, for its life: their descriptions are plain data
# that may go into any number of agents, in either mode.
_TOOLS: dict[str, Tool] = {}
# The listings' sessions, under the id JavaScript's close() gives back (kept once ended: their
# tools hold them anyway, and a second close() is then a no-op, as aclose()'s is).
_SESSIONS: dict[str, McpTools] = {}


@js_facing
async def mcp_tools_js(url: Any, options: Any = None) -> dict[str, Any]:
    """``ai.mcpTools(url, {headers, timeoutS, prefix, tools, trust})``: ``{tools, session}``, the
    tools of the MCP server at ``url`` as plain data for an agent's ``tools``, and the id of the
    session they share for :func:`mcp_close_js`. ``tools`` is a list of MCP names (to keep by
    a rule, filter the array this gives); ``trust`` is ``{taint, guardWhenTainted}`` as a JS
    tool's, default ``{taint: true}``. Failures are ``mcp_tools``'."""
    opts = as_dict(options, "mcpTools options")
    unknown = sorted(set(opts) - set(MCP_NAMES))
    if unknown:
        raise AerixError("options", f"unknown mcpTools option(s) {unknown}; known: {sorted(MCP_NAMES)}")
    kwargs = {MCP_NAMES[k]: v for k, v in opts.items() if v is not None or k == "timeoutS"}  # timeoutS: null, no limit
    if callable(kwargs.get("tools")):
        raise AerixError("options", "mcpTools: tools must be a list of the MCP tool names to keep (to keep by a rule, filter the array mcpTools gives)")
    if "trust" in kwargs:
        kwargs["trust"] = _js_trust({"name": f"mcpTools({url!r})", "trust": kwargs["trust"]})
    listed = await mcp_tools(url, **kwargs)
    session = uuid.uuid4().hex
    _SESSIONS[session] = listed
    out = []
    for made in listed:
        id = uuid.uuid4().hex
        _TOOLS[id] = made
        out.append({"name": made.name, "description": made.description, "mcp": {"aerixMcp": id}})
    return {"tools": out, "session": session}


@js_facing
async def mcp_close_js(session: Any) -> None:
    """``close()`` of what ``ai.mcpTools`` gave: end the MCP session of the listing ``session``
    names (:meth:`aerix.mcp.McpTools.aclose`: one DELETE with its ``Mcp-Session-Id``); safe to
    call twice. An id no ``mcp_tools_js`` of this runtime gave is ``AerixError(kind="options")``."""
    listed = _SESSIONS.get(session) if isinstance(session, str) else None
    if listed is None:
        raise AerixError("options", f"mcpTools close(): no MCP session {session!r} here: close what ai.mcpTools() of the same boot() gave")
    await listed.aclose()


def mcp_tool_of(spec: dict[str, Any]) -> Tool:
    """The Tool an ``mcpTools`` description names (``{name, description, mcp}``), under
    the name and description it gives now; anything else is ``AerixError(kind="options")``."""
    known = ["description", "mcp", "name"]
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise AerixError("options", f"tool {spec.get('name')!r} is an MCP tool (mcpTools): unknown key(s) {unknown}; known: {known}")
    ref = spec.get("mcp")
    id = ref.get("aerixMcp") if isinstance(ref, dict) else None
    kept = _TOOLS.get(id) if isinstance(id, str) else None
    if kept is None:
        raise AerixError("options", f"tool {spec.get('name')!r}: no MCP tool {ref!r} here: give an agent what ai.mcpTools() of the same boot() gave")
    name, description = spec.get("name", kept.name), spec.get("description", kept.description)
    if name == kept.name and description == kept.description:
        return kept
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise AerixError("options", f"MCP tool {kept.name!r}: a name must match {NAME.pattern}, got {name!r}")
    if not isinstance(description, str) or not description.strip():
        raise AerixError("options", f"MCP tool {kept.name!r}: a description must be a non-empty string, got {description!r}")
    renamed = copy.copy(kept)
    renamed.name, renamed.description = name, description
    return renamed
