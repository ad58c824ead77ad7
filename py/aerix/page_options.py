"""JavaScript options as Python: what ``create_agent`` of ``aerix.page`` builds an Agent from.

Tools, hooks, trust flags, channels and tool policies may be JavaScript functions: each becomes a
Python callable that calls it through ``aerix._js`` (JS tools and hooks get ``{signal, callId,
approve, emit, artifacts, invoker}``, see ``_with_js_ctx``). Names may be camelCase
(``maxTokens``, ``beforeCall``, ``keepTurns``); unknown ones are refused, naming what is known.

An agent of the page is named across the edge by a reference, ``{aerixAgent: id}`` (what
web/handle.mjs's ``refOf(handle)`` gives for a handle ``ai.agent()`` made, in either mode):
``create_agent`` keeps each Agent it builds under the id its handle chose (``register_agent``)
and :func:`agent_of` finds it again. A tool ``{name, description, agent: <reference>, trust}``
(JavaScript's ``agent.asTool(...)``) is that Agent's ``as_tool``; a tool ``{name, description,
mcp: {aerixMcp: id}}`` (``ai.mcpTools(...)``) the MCP tool ``aerix.page_mcp`` keeps. :func:`js_tool` makes a
JavaScript function a tool from Python (code run by ``pyodide.runPython``).
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any, Awaitable, Callable

from . import _js
from ._js import call_js, from_js, js_abort_signal, js_callable
from .agent import Agent
from .agent_state import models_from_field_maps
from .channels import Message
from .errors import AerixError
from .page_artifacts import js_artifacts
from .tools import Tool, ToolContext, WaitingForApproval, tool
from .trust import Invoker, require_tool_permission

__all__ = ["AGENT_OPTIONS", "JsChannel", "agent_from_js", "agent_of", "as_dict", "js_channel", "js_tool", "register_agent"]

# The agent options of JavaScript's ``ai.agent(options)``: aerix.mjs hands them on as they are, so
# this is the one place they are declared (tests/unit/test_api_parity.py reads it).
AGENT_OPTIONS = (
    "instructions", "tools", "limits", "hooks", "generation", "constrain", "durable", "store", "name", "onTainted",
    "toolPolicy", "output", "channels", "state", "stateTools", "compaction", "conversationId", "turnFormat",
    "handoffs", "description", "tracer",
)

_LIMIT_NAMES = {
    "maxTokens": "max_tokens",
    "resultChars": "result_chars",
    "timeoutS": "timeout_s",
    "maxTotalTokens": "max_total_tokens",
    "repeatCalls": "repeat_calls",
    "contextTokens": "context_tokens",
}
_COMPACTION_NAMES = {"keepTurns": "keep_turns", "summaryTokens": "summary_tokens"}
_HOOK_NAMES = {"beforeCall": "before_call", "afterCall": "after_call", "onFinal": "on_final"}
_TURN_FORMAT_NAMES = {"callKeys": "call_keys", "duplicateCalls": "duplicate_calls"}


def agent_from_js(model: Any, options: Any) -> Agent:
    """The Agent the JS options describe: ``{instructions, tools, limits, hooks, generation,
    constrain, durable, store, name, onTainted, toolPolicy, output, channels, compaction,
    conversationId, turnFormat}``; ``tools`` holds JS tools and ``agent.asTool(...)`` values
    (``_js_tool``); ``turnFormat`` is ``{thought, system, callKeys, example, instructions, results,
    duplicateCalls}`` (aerix.TurnFormat, its values as in Python); ``compaction`` is
    ``"model"``, ``"digest"``, ``null`` or ``{method, keepTurns, summaryTokens}``
    (aerix.compaction; ``limits.contextTokens`` turns it on); ``output`` is ``{schema}``
    (structured output); ``channels`` JS objects ``{name, out(message)}``;
    ``state`` collection name -> field map (with ``id: {type: "string", required: true}``) and
    ``stateTools`` (aerix.agent_state); ``toolPolicy`` is
    ``{withoutInvoker: "allow" | "deny"}`` (aerix.require_tool_permission) or a function
    ``(agent, tool, invoker) => boolean``; ``handoffs`` agents this one may hand the conversation
    to (their references, ``{aerixAgent: id}``: the facade turns handles into them) and
    ``description`` what a handoff to this one is for (aerix.handoffs); ``tracer`` is ``{url,
    headers, content, keep}``: each run's spans posted as OTLP/HTTP JSON to ``url`` and, with
    ``keep``, kept for ``agent.traces()`` (aerix.tracing)."""
    opts = as_dict(from_js(options), "agent options")
    unknown = sorted(set(opts) - set(AGENT_OPTIONS))
    if unknown:
        raise AerixError("options", f"unknown agent option(s) {unknown}; known: {sorted(AGENT_OPTIONS)}")
    tools = [_js_tool(t) for t in (opts.get("tools") or [])]
    limits = {_LIMIT_NAMES.get(k, k): v for k, v in as_dict(opts.get("limits"), "limits").items()}
    hooks = {_HOOK_NAMES.get(k, k): _js_hook(k, fn) for k, fn in as_dict(opts.get("hooks"), "hooks").items()}
    store = None
    if opts.get("store") is not None or opts.get("durable"):
        from .stores.indexeddb import IndexedDBStore

        js_store = opts.get("store")
        if isinstance(js_store, dict):  # a store object made in JS arrives as a dict of its methods
            js_store = SimpleNamespace(**js_store)
        store = IndexedDBStore(js_store)
    agent = Agent(
        model=model,
        instructions=opts.get("instructions") or "",
        tools=tools,
        limits=limits,
        generation=as_dict(opts.get("generation"), "generation") or None,
        constrain=opts.get("constrain", True),
        hooks=hooks,
        store=store,
        name=opts.get("name"),  # None: "agent", which a handoff target may not go by
        on_tainted=opts.get("onTainted", "approve"),
        tool_policy=_js_policy(opts.get("toolPolicy")),
        output=_js_output(opts.get("output")),
        state=models_from_field_maps(opts.get("state")),  # {todos: <a field map with id>}
        state_tools=opts.get("stateTools", False),
        channels=[js_channel(c) for c in _list(opts.get("channels"), "channels")],
        compaction=_js_compaction(opts.get("compaction", "model")),
        conversation_id=opts.get("conversationId"),
        turn_format=_js_turn_format(opts.get("turnFormat")),
        handoffs=[agent_of(ref) for ref in _list(opts.get("handoffs"), "handoffs")],  # handle.mjs's refOf of each
        description=opts.get("description"),
        tracer=_js_tracer(opts.get("tracer")),
    )
    return agent


class JsChannel:
    """A channel made in JavaScript: ``out`` gets the message as a plain object ``{channel, body,
    title, key}``; a Promise it returns is awaited, and what it throws is what ``emit`` raises."""

    def __init__(self, name: Any, out: Any, call: Callable[..., Awaitable[Any]]) -> None:
        self.name = name
        self._out = out
        self._call = call

    def __repr__(self) -> str:
        return f"JsChannel({self.name!r})"

    async def out(self, message: Message) -> None:
        await self._call(self._out, message.to_dict())


def js_channel(spec: Any, call: Callable[..., Awaitable[Any]] = call_js) -> JsChannel:
    """A JS channel option: a plain object ``{name, out}`` (a dict here; ``out`` is called without
    its ``this``) or an instance of a class (its method ``out`` keeps it). ``call`` calls ``out``
    (``call_js``; a test gives another)."""
    if isinstance(spec, dict):
        name, out = spec.get("name"), spec.get("out")
    else:
        name, out = getattr(spec, "name", None), getattr(spec, "out", None)
    if out is None or not callable(out):
        raise AerixError("options", f"channel {name!r} needs an out(message) function")
    return JsChannel(name, out, call)


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AerixError("options", f"{what} must be an array, got {type(value).__name__}")
    return value


def _js_tracer(value: Any) -> Any:
    """``tracer: {url, headers, content, keep}``: a tracer that posts each run's trace to ``url``
    (OTLP/HTTP JSON) and, with ``keep: true``, keeps it in memory for ``agent.traces()``."""
    if value is None:
        return None
    from .trace_export import OtlpExporter
    from .tracing import SpanCollector, Tracer

    spec = as_dict(value, "tracer")
    unknown = sorted(set(spec) - {"url", "headers", "content", "keep"})
    if unknown:
        raise AerixError("options", f"unknown tracer option(s) {unknown}; known: ['content', 'headers', 'keep', 'url']")
    keep = spec.get("keep", False)
    if not isinstance(keep, bool):
        raise AerixError("options", f"tracer.keep must be true or false, got {keep!r}")
    if spec.get("url") is None and not keep:
        raise AerixError("options", "tracer needs a url to post each run's trace to, or keep: true to keep it for agent.traces()")
    exporters: list[Any] = [] if spec.get("url") is None else [OtlpExporter(spec["url"], headers=as_dict(spec.get("headers"), "tracer headers"))]
    if keep:
        exporters.append(SpanCollector())
    return Tracer(exporters=exporters, content=spec.get("content", False))


def _js_output(output: Any) -> Any:
    """``output: {schema}``: the JSON Schema the final answer follows (aerix.output)."""
    if output is None:
        return None
    spec = as_dict(output, "output")
    if set(spec) != {"schema"}:
        raise AerixError("options", f"output must be {{schema: <a JSON Schema>}}, got keys {sorted(spec)}")
    return spec["schema"]


def _js_turn_format(value: Any) -> dict[str, Any]:
    """``turnFormat: {thought, system, callKeys, example, duplicateCalls, instructions, results}`` as TurnFormat's fields."""
    spec = as_dict(value, "turnFormat")
    known = ["thought", "system", "callKeys", "example", "duplicateCalls", "instructions", "results"]
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise AerixError("options", f"unknown turnFormat option(s) {unknown}; known: {known}")
    return {_TURN_FORMAT_NAMES.get(k, k): v for k, v in spec.items()}


def _js_compaction(value: Any) -> Any:
    """``compaction``: a string or null as it is, ``{method, keepTurns, summaryTokens}`` as a dict."""
    return {_COMPACTION_NAMES.get(k, k): v for k, v in value.items()} if isinstance(value, dict) else value


def _js_policy(policy: Any) -> Any:
    if policy is None:
        return None
    if isinstance(policy, dict):
        unknown = sorted(set(policy) - {"withoutInvoker"})
        if unknown:
            raise AerixError("options", f"unknown toolPolicy option(s) {unknown}; known: ['withoutInvoker']")
        return require_tool_permission(without_invoker=policy.get("withoutInvoker", "deny"))
    if not callable(policy):
        raise AerixError("options", "toolPolicy must be {withoutInvoker} or a function (agent, tool, invoker) => boolean")

    async def js_policy(agent: str, tool_name: str, invoker: Invoker | None) -> Any:
        return await call_js(policy, agent, tool_name, None if invoker is None else invoker.to_dict())  # a Promise is awaited

    return js_policy


def as_dict(value: Any, what: str) -> dict[str, Any]:
    """An option that must be an object (already converted by ``from_js``), or ``{}``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AerixError("options", f"{what} must be an object, got {type(value).__name__}")
    return value


def _js_tool(spec: Any) -> Tool:
    """A tool of the JS options: ``{name, description, input, run, effect, alreadyApplied, trust,
    timeoutS, parallel}`` with ``run(input, ctx)`` a JavaScript function, ``{name,
    description, agent, trust, parallel}`` (``agent.asTool(...)``): that agent's ``as_tool``, or
    ``{name, description, mcp}`` (``ai.mcpTools(...)``): the MCP tool it names."""
    spec = as_dict(spec, "a tool")
    if spec.get("agent") is not None:
        return _agent_tool(spec)
    if spec.get("mcp") is not None:  # what ai.mcpTools() gave (aerix.page_mcp)
        from .page_mcp import mcp_tool_of

        return mcp_tool_of(spec)
    run = spec.get("run")
    if run is None or not callable(run):
        raise AerixError("options", f"tool {spec.get('name')!r} needs a run function")
    effect = bool(spec.get("effect", False))
    applied = spec.get("alreadyApplied")

    async def run_js(input: dict[str, Any], ctx: ToolContext) -> Any:
        return await _with_js_ctx(ctx, lambda js_ctx: call_js(run, input, js_ctx))

    async def already_applied(key: str, input: dict[str, Any]) -> Any:
        return await call_js(applied, key, input)

    made: Tool = tool(
        name=spec.get("name"),
        description=spec.get("description"),
        input=spec.get("input") or {},
        run=run_js,
        effect=effect,
        already_applied=already_applied if applied is not None else None,
        trust=_js_trust(spec),
        timeout_s=spec.get("timeoutS"),
        parallel=spec.get("parallel", False),
    )
    return made


def _js_trust(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool's ``trust: {taint, guardWhenTainted}`` as ``tool(trust=...)`` takes it."""
    trust = as_dict(spec.get("trust"), "a tool's trust")
    unknown = sorted(set(trust) - {"taint", "guardWhenTainted"})
    if unknown:
        raise AerixError("options", f"tool {spec.get('name')!r}: unknown trust key(s) {unknown}; known: ['taint', 'guardWhenTainted']")
    return {k: _js_flag(trust[j]) for k, j in (("taint", "taint"), ("guard_when_tainted", "guardWhenTainted")) if j in trust}


def _agent_tool(spec: dict[str, Any]) -> Tool:
    """``agent.asTool(name, description, {trust, parallel})`` of JavaScript: ``Agent.as_tool`` of
    the agent its reference names (aerix.subagents)."""
    known = ["agent", "description", "name", "parallel", "trust"]
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise AerixError("options", f"tool {spec.get('name')!r} is an agent (asTool): unknown key(s) {unknown}; known: {known}")
    made: Tool = agent_of(spec["agent"]).as_tool(spec.get("name"), spec.get("description"), _js_trust(spec) or None, spec.get("parallel", False))  # type: ignore[arg-type]
    return made


def js_tool(name: str, description: str, input: Any, fn: Any) -> Tool:
    """A JavaScript function as a tool, for Python that runs in the page (``pyodide.runPython`` /
    ``runPythonAsync``, or ``ai.runPython``)::

        import aerix
        from js import lookUp                     # a JS function: sync, or async (a Promise)
        look_up = aerix.js_tool("look_up", "Look a word up.", {"word": {"type": "string", "required": True}}, lookUp)

    ``fn`` is called as JavaScript tools are, ``fn(input, ctx)``, with ``ctx`` ``{signal, callId,
    approve, emit, artifacts, invoker}``; ``input`` a field map or a JSON Schema, as for any tool
    (``aerix.tool``). The tool is what the page's ``tools: [{name, description, input, run}]``
    makes. On CPython there is no JavaScript: calling this raises ``AerixError(kind="options")``
    (use ``aerix.tool``)."""
    if not _js.IN_PYODIDE:
        raise AerixError("options", "js_tool makes a JavaScript function a tool: it needs Pyodide (the page); on CPython use aerix.tool")
    if not callable(fn):
        raise AerixError("options", f"js_tool({name!r}) needs a JavaScript function (input, ctx) => result, got {type(fn).__name__}")
    return _js_tool({"name": name, "description": description, "input": from_js(input), "run": fn})


# -- agents by reference -------------------------------------------------------------------

# The agents ai.agent() made in this runtime, for its life: an asTool value is plain data that may
# outlive its handle, and worker mode keeps every agent it built too (worker.mjs), so both modes agree.
_AGENTS: dict[str, Agent] = {}


def register_agent(agent: Agent, ref: Any = None) -> str:
    """Keep ``agent`` under ``ref`` (the id its JS handle chose; a new one when ``None``) for
    :func:`agent_of`; returns the id."""
    ref = uuid.uuid4().hex if ref is None else ref
    if not isinstance(ref, str) or not ref:
        raise AerixError("options", f"an agent's id is a non-empty string, got {ref!r}")
    if ref in _AGENTS:
        raise AerixError("options", f"an agent with id {ref!r} was made already")
    _AGENTS[ref] = agent
    return ref


def agent_of(ref: Any) -> Agent:
    """The Agent a JavaScript agent reference ``{aerixAgent: id}`` names: one that ``ai.agent()``
    of this runtime (this ``boot()``) made. Anything else is ``AerixError(kind="options")``."""
    ref = from_js(ref)
    id = ref.get("aerixAgent") if isinstance(ref, dict) else None
    if not isinstance(id, str):
        raise AerixError("options", f"expected an agent made by ai.agent() (its reference {{aerixAgent: id}}), got {type(ref).__name__}")
    agent = _AGENTS.get(id)
    if agent is None:
        raise AerixError("options", f"no agent {id!r} here: an agent given to another must be made by the same boot() (ai.agent()), and built without error")
    return agent


def _js_flag(flag: Any) -> Any:
    """A trust flag from JavaScript: a boolean, or a function ``(input, ctx) => boolean``."""
    if not callable(flag):
        return flag

    async def js_flag(input: dict[str, Any], ctx: ToolContext) -> Any:
        return await _with_js_ctx(ctx, lambda js_ctx: call_js(flag, input, js_ctx))

    return js_flag


def _js_hook(name: str, fn: Any) -> Any:
    if fn is None:
        return None
    if not callable(fn):
        raise AerixError("options", f"hook {name} must be a function")

    async def hook(*args: Any) -> Any:
        plain = [a.to_dict() if hasattr(a, "to_dict") else a for a in args if not isinstance(a, ToolContext)]
        ctx = next((a for a in args if isinstance(a, ToolContext)), None)
        if ctx is None:
            return await call_js(fn, *plain)
        return await _with_js_ctx(ctx, lambda js_ctx: call_js(fn, *plain, js_ctx))

    hook.__name__ = name
    return hook


async def _with_js_ctx(ctx: ToolContext, call: Any) -> Any:
    """Call into JavaScript with ``{signal, callId, approve, emit, artifacts, invoker}``
    (``artifacts``: page_artifacts.py).

    ``approve`` pauses the run by raising through the JS code; JavaScript would turn that into
    an ordinary error, so the pause is kept here and raised again once the JS call returns."""
    waiting: list[WaitingForApproval] = []

    async def approve(title: Any, body: Any = None, timeout_s: Any = None) -> dict[str, Any]:
        try:
            decision = await ctx.approve(str(title), None if body is None else str(body), float(timeout_s or 86400))
        except WaitingForApproval as w:
            waiting.append(w)
            raise RuntimeError(f"the run waits for approval {w.approval['id']}") from None
        return {"approved": decision.approved, "reason": decision.reason}

    async def emit(channel: Any, body: Any, options: Any = None) -> dict[str, Any]:
        opts = as_dict(options, "emit options")
        message: Message = await ctx.channels.find_one(str(channel)).emit(body, title=opts.get("title"), key=opts.get("key"))
        return message.to_dict()

    approve_js, release_approve = js_callable(approve)
    emit_js, release_emit = js_callable(emit)
    artifacts_js, release_artifacts = js_artifacts(ctx.artifacts)
    signal, release_signal = js_abort_signal(ctx.signal)  # for this call only: released below
    try:
        invoker = None if ctx.invoker is None else ctx.invoker.to_dict()
        value = await call({"signal": signal, "callId": ctx.call_id, "approve": approve_js, "emit": emit_js, "artifacts": artifacts_js, "invoker": invoker})
    except BaseException:
        if waiting:
            raise waiting[0] from None
        raise
    finally:
        release_signal()
        release_approve()
        release_emit()
        release_artifacts()
    if waiting:  # the JS code caught the pause and went on: the run still waits
        raise waiting[0]
    return value
