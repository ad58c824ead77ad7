"""The agent as JavaScript in the page sees it (``agent()`` of ``web/aerix.mjs`` calls this).

Options arrive as JavaScript objects: tools and hooks may be JavaScript functions, names may be
camelCase (``maxTokens``, ``beforeCall``). Events leave as plain JavaScript objects with
camelCase keys (``promptTokens``), the shape of aerix.js events. ``durable: true`` keeps runs in
IndexedDB (``store:`` takes a store object of your own); ``conversationId`` keeps the
conversation there too (``reopen()`` after a reload, ``load(messages)`` for an export). JS tools and hooks get
``{signal, callId, approve, emit, invoker}``: ``signal`` a real ``AbortSignal`` that follows the
run's, in a durable run ``approve(title, body, timeoutS)``, and ``emit(channel, body, {title,
key})`` (``channels: [{name, out(message)}]``, see ``aerix.channels``).

This module speaks Python only: what JavaScript calls is marked ``js_facing``, and ``aerix._js``
converts its arguments and results there, once; options are converted once in ``create_agent``.
"""

from __future__ import annotations

from contextlib import aclosing
from types import SimpleNamespace
from typing import Any, AsyncIterator, Awaitable, Callable

from ._js import call_js, call_js_now, from_js, js_abort_signal, js_callable, js_facing
from .abort import Abort
from .agent import Agent
from .agent_state import models_from_field_maps
from .channels import Message
from .durable import RunRecord
from .errors import AerixError
from .page_artifacts import artifact_view, attachments_from_js, js_artifacts
from .events import Event
from .tools import ToolContext, WaitingForApproval, tool
from .trust import Invoker, require_tool_permission

__all__ = ["JsChannel", "PageAgent", "create_agent", "event_view", "js_channel", "run_view", "server_model"]

_LIMIT_NAMES = {"maxTokens": "max_tokens", "resultChars": "result_chars", "timeoutS": "timeout_s", "maxTotalTokens": "max_total_tokens", "contextTokens": "context_tokens"}
_COMPACTION_NAMES = {"keepTurns": "keep_turns", "summaryTokens": "summary_tokens"}
_HOOK_NAMES = {"beforeCall": "before_call", "afterCall": "after_call", "onFinal": "on_final"}
_EVENT_KEYS = {
    "prompt_tokens": "promptTokens",
    "completion_tokens": "completionTokens",
    "cached_tokens": "cachedTokens",
    "run_id": "runId",
    "approval_id": "approvalId",
    "media_type": "mediaType",
    "dropped_turns": "droppedTurns",
    "tokens_before": "tokensBefore",
    "tokens_after": "tokensAfter",
}


def event_view(event: Event) -> dict[str, Any]:
    """What the page sees of an event: its dict with camelCase keys; tool inputs are the user's
    data and keep theirs."""
    return {_EVENT_KEYS.get(k, k): v for k, v in event.to_dict().items()}


class PageAgent:
    """An Agent driven from JavaScript (``wrapAgent`` of aerix.mjs): ``run`` yields event views.

    The caller's ``signal`` (an ``AbortSignal``, or nothing) is composed here, once, into the
    ``Abort`` the run uses as it is (``aerix.abort``); it is closed when the run's events end, so
    the caller's ``AbortSignal`` keeps no listener of a finished run."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    @js_facing
    def run(
        self,
        prompt: str,
        signal: Any = None,
        run_id: str | None = None,
        idempotency_key: str | None = None,
        invoker: Any = None,
        attachments: Any = None,
        source: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        rid, key = (None if v is None else str(v) for v in (run_id, idempotency_key))

        def start(abort: Abort, files: list[Any] | None = None) -> AsyncIterator[Event]:
            return self.agent.run(str(prompt), abort, run_id=rid, idempotency_key=key, invoker=invoker, attachments=files, source=source)

        if attachments is None:
            return _views(signal, start)
        # Blobs are read first (page_artifacts.py), then the run starts
        return _views(signal, lambda abort: _attached(attachments, lambda files: start(abort, files)))

    @js_facing
    async def artifact(self, artifact_id: str) -> dict[str, Any] | None:
        """``{meta, data}`` (``data`` a ``Uint8Array``), or null when there is no such artifact
        (aerix.mjs throws ``artifact_not_found`` then)."""
        try:
            art, data = await self.agent.artifact(str(artifact_id))
        except AerixError as e:
            if e.reason == "artifact_not_found":
                return None
            raise
        return {"meta": artifact_view(art), "data": data}

    @js_facing
    async def artifacts(self, run_id: str) -> list[dict[str, Any]]:
        return [artifact_view(a) for a in await self.agent.artifacts(str(run_id))]

    @js_facing
    def resume(self, run_id: str, signal: Any = None) -> AsyncIterator[dict[str, Any]]:
        return _views(signal, lambda abort: self.agent.resume(str(run_id), abort))

    @js_facing
    def approve(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None = None, signal: Any = None, approver: Any = None
    ) -> AsyncIterator[dict[str, Any]]:
        reason = None if reason is None else str(reason)
        return _views(signal, lambda abort: self.agent.approve(str(run_id), str(approval_id), bool(approved), reason, abort, approver=approver))

    @js_facing
    async def start(self, prompt: str, run_id: str | None = None, idempotency_key: str | None = None, invoker: Any = None) -> dict[str, Any]:
        return run_view(await self.agent.start(str(prompt), run_id, idempotency_key, invoker=invoker))

    @js_facing
    async def drain(self) -> None:
        await self.agent.drain()

    @js_facing
    async def runs(self) -> list[dict[str, Any]]:
        return [run_view(r) for r in await self.agent.runs()]

    @js_facing
    async def recover(self) -> list[dict[str, Any]]:
        return [run_view(r) for r in await self.agent.recover()]

    @js_facing
    async def interrupt(self) -> None:
        await self.agent.interrupt()

    @js_facing
    def reset(self) -> None:
        self.agent.reset()

    @js_facing
    def messages(self) -> list[dict[str, str]]:
        return list(self.agent.messages)

    @js_facing
    async def load(self, messages: Any) -> None:
        await self.agent.load(messages)

    @js_facing
    async def reopen(self) -> list[dict[str, str]]:
        return await self.agent.reopen()

    @js_facing
    def system(self) -> str:
        return self.agent.system

    @js_facing
    def schema(self) -> dict[str, Any] | None:
        return self.agent.schema


async def _attached(attachments: Any, run: Callable[[list[Any]], AsyncIterator[Event]]) -> AsyncIterator[Event]:
    async with aclosing(run(await attachments_from_js(attachments))) as events:  # type: ignore[type-var]
        async for ev in events:
            yield ev


def _views(signal: Any, start: Callable[[Abort], AsyncIterator[Event]]) -> AsyncIterator[dict[str, Any]]:
    """Start a run under an ``Abort`` following ``signal``; its events as the page sees them."""
    abort = Abort.following(signal)
    try:
        events = start(abort)  # the agent refuses a bad call here, when JavaScript calls
    except BaseException:
        abort.close()
        raise
    return _event_views(events, abort)


async def _event_views(events: AsyncIterator[Event], abort: Abort) -> AsyncIterator[dict[str, Any]]:
    try:
        async with aclosing(events) as stream:  # type: ignore[type-var]
            async for ev in stream:
                yield event_view(ev)
    finally:
        abort.close()


def run_view(record: RunRecord) -> dict[str, Any]:
    """What the page shows of a run: no conversation, the pending approval spelled out."""
    pending = record.pending_approval()
    return {
        "id": record.id,
        "prompt": record.prompt,
        "status": record.status,
        "idempotencyKey": record.idempotency_key,
        "createdAt": record.created_at,
        "updatedAt": record.updated_at,
        "ending": record.ending,
        "invoker": record.invoker,
        "conversationId": record.conversation_id,
        "error": record.error,
        "approval": None
        if pending is None
        else {
            "id": pending["id"],
            "callId": pending["call_id"],
            "title": pending["title"],
            "body": pending["body"],
            "createdAt": pending["created_at"],
            "timeoutS": pending["timeout_s"],
        },
    }


def create_agent(model: Any, options: Any) -> PageAgent:
    """Build an Agent from the JS options ``{instructions, tools, limits, hooks, generation,
    constrain, durable, store, name, onTainted, toolPolicy, output, channels, compaction,
    conversationId}``; ``compaction`` is ``"model"``, ``"digest"``, ``null`` or ``{method,
    keepTurns, summaryTokens}`` (aerix.compaction; ``limits.contextTokens`` turns it on); ``output`` is
    ``{schema}`` (structured output); ``channels`` JS objects ``{name, out(message)}``;
    ``state`` collection name -> field map (with ``id: {type: "string", required: true}``) and
    ``stateTools`` (aerix.agent_state); ``toolPolicy`` is
    ``{withoutInvoker: "allow" | "deny"}`` (aerix.require_tool_permission) or a function
    ``(agent, tool, invoker) => boolean``."""
    opts = _dict(from_js(options), "agent options")
    known = {"instructions", "tools", "limits", "hooks", "generation", "constrain", "durable", "store", "name", "onTainted", "toolPolicy", "output", "channels", "state", "stateTools", "compaction", "conversationId"}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise AerixError("options", f"unknown agent option(s) {unknown}; known: {sorted(known)}")
    tools = [_js_tool(t) for t in (opts.get("tools") or [])]
    limits = {_LIMIT_NAMES.get(k, k): v for k, v in _dict(opts.get("limits"), "limits").items()}
    hooks = {_HOOK_NAMES.get(k, k): _js_hook(k, fn) for k, fn in _dict(opts.get("hooks"), "hooks").items()}
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
        generation=_dict(opts.get("generation"), "generation") or None,
        constrain=opts.get("constrain", True),
        hooks=hooks,
        store=store,
        name=opts.get("name", "agent"),
        on_tainted=opts.get("onTainted", "approve"),
        tool_policy=_js_policy(opts.get("toolPolicy")),
        output=_js_output(opts.get("output")),
        state=models_from_field_maps(opts.get("state")),  # {todos: <a field map with id>}
        state_tools=opts.get("stateTools", False),
        channels=[js_channel(c) for c in _list(opts.get("channels"), "channels")],
        compaction=_js_compaction(opts.get("compaction", "model")),
        conversation_id=opts.get("conversationId"),
    )
    return PageAgent(agent)


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


def _js_output(output: Any) -> Any:
    """``output: {schema}``: the JSON Schema the final answer follows (aerix.output)."""
    if output is None:
        return None
    spec = _dict(output, "output")
    if set(spec) != {"schema"}:
        raise AerixError("options", f"output must be {{schema: <a JSON Schema>}}, got keys {sorted(spec)}")
    return spec["schema"]


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

    def js_policy(agent: str, tool_name: str, invoker: Invoker | None) -> bool:
        return call_js_now(policy, agent, tool_name, None if invoker is None else invoker.to_dict()) is True

    return js_policy


def server_model(server: Any) -> Any:
    """``OpenAIModel`` for ``boot({engine: {baseUrl, model, apiKey, params}})`` (``baseUrl`` as
    boot resolved it): each generation is a streamed ``fetch`` from Python."""
    from .engines.openai import OpenAIModel

    opts = _dict(from_js(server), "engine options")
    return OpenAIModel(str(opts["baseUrl"]), str(opts["model"]), opts.get("apiKey"), params=opts.get("params"))


def _dict(value: Any, what: str) -> dict[str, Any]:
    """An option that must be an object (already converted by ``from_js``), or ``{}``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise AerixError("options", f"{what} must be an object, got {type(value).__name__}")
    return value


def _js_tool(spec: Any) -> Any:
    spec = _dict(spec, "a tool")
    run = spec.get("run")
    if run is None or not callable(run):
        raise AerixError("options", f"tool {spec.get('name')!r} needs a run function")
    effect = bool(spec.get("effect", False))
    applied = spec.get("alreadyApplied")
    trust = _dict(spec.get("trust"), "a tool's trust")
    unknown = sorted(set(trust) - {"taint", "guardWhenTainted"})
    if unknown:
        raise AerixError("options", f"tool {spec.get('name')!r}: unknown trust key(s) {unknown}; known: ['taint', 'guardWhenTainted']")

    async def run_js(input: dict[str, Any], ctx: ToolContext) -> Any:
        return await _with_js_ctx(ctx, lambda js_ctx: call_js(run, input, js_ctx))

    async def already_applied(key: str, input: dict[str, Any]) -> Any:
        return await call_js(applied, key, input)

    return tool(
        name=spec.get("name"),
        description=spec.get("description"),
        input=spec.get("input") or {},
        run=run_js,
        effect=effect,
        already_applied=already_applied if applied is not None else None,
        trust={k: _js_flag(trust[j]) for k, j in (("taint", "taint"), ("guard_when_tainted", "guardWhenTainted")) if j in trust},
        timeout_s=spec.get("timeoutS"),
    )


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
        opts = _dict(options, "emit options")
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
