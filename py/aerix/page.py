"""The agent as JavaScript in the page sees it (``agent()`` of ``web/aerix.mjs`` calls this).

Options arrive as JavaScript objects: tools and hooks may be JavaScript functions, names may be
camelCase (``maxTokens``, ``beforeCall``). Events leave as plain JavaScript objects with
camelCase keys (``promptTokens``), the shape of aerix.js events. ``durable: true`` keeps runs in
IndexedDB (``store:`` takes a store object of your own); ``conversationId`` keeps the
conversation there too (``reopen()`` after a reload, ``load(messages)`` for an export). JS tools and hooks get
``{signal, callId, approve, emit, invoker}``: ``signal`` a real ``AbortSignal`` that follows the
run's, in a durable run ``approve(title, body, timeoutS)``, and ``emit(channel, body, {title,
key})`` (``channels: [{name, out(message)}]``, see ``aerix.channels``).

``agent.state`` of JavaScript is ``PageAgent.state`` (one call per method, ``state_call``);
``agent.asTool`` is a tool ``{name, description, agent: {aerixAgent: id}}`` that
``page_options.agent_of`` resolves: every agent ``create_agent`` makes is kept under the id its
JS handle chose (``PageAgent.ref``).

This module speaks Python only: what JavaScript calls is marked ``js_facing``, and ``aerix._js``
converts its arguments and results there, once; options are converted once, by
``aerix.page_options`` (``create_agent``).
"""

from __future__ import annotations

import inspect
from contextlib import aclosing
from typing import Any, AsyncIterator, Callable

from ._js import from_js, js_facing, marked
from .abort import Abort
from .agent import Agent
from .agent_state import AgentState
from .durable import RunRecord
from .errors import AerixError
from .events import Event, SubagentEvent
from .page_artifacts import artifact_view, attachments_from_js
from .conversations import transcript
from .page_options import JsChannel, agent_from_js, as_dict, js_channel, register_agent
from .tracing import Span, SpanCollector

__all__ = ["SERVER_OPTIONS", "JsChannel", "PageAgent", "create_agent", "event_view", "js_channel", "run_view", "server_model", "span_view", "state_call"]

_EVENT_KEYS = {
    "prompt_tokens": "promptTokens",
    "completion_tokens": "completionTokens",
    "cached_tokens": "cachedTokens",
    "run_id": "runId",
    "approval_id": "approvalId",
    "media_type": "mediaType",
    "repeat_of": "repeatOf",
    "dropped_turns": "droppedTurns",
    "tokens_before": "tokensBefore",
    "tokens_after": "tokensAfter",
    "call_id": "callId",
}


def event_view(event: Event) -> dict[str, Any]:
    """What the page sees of an event: its dict with camelCase keys; tool inputs are the user's
    data and keep theirs; a ``subagent`` event's inner event is viewed so too."""
    view = {_EVENT_KEYS.get(k, k): v for k, v in event.to_dict().items()}
    if isinstance(event, SubagentEvent):
        view["event"] = event_view(event.event)
    return view


class PageAgent:
    """An Agent driven from JavaScript (``wrapAgent`` of aerix.mjs): ``run`` yields event views.

    The caller's ``signal`` (an ``AbortSignal``, or nothing) is composed here, once, into the
    ``Abort`` the run uses as it is (``aerix.abort``); it is closed when the run's events end, so
    the caller's ``AbortSignal`` keeps no listener of a finished run."""

    def __init__(self, agent: Agent, ref: str | None = None) -> None:
        self.agent = agent
        self.ref = register_agent(agent, ref)  # what page_options.agent_of finds it by

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
        concurrency_key: str | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        rid, key = (None if v is None else str(v) for v in (run_id, idempotency_key))

        def start(abort: Abort, files: list[Any] | None = None) -> AsyncIterator[Event]:
            return self.agent.run(
                str(prompt), abort, run_id=rid, idempotency_key=key, invoker=invoker, attachments=files, source=source, concurrency_key=concurrency_key
            )

        if attachments is None:
            return _views(signal, start)
        # Blobs are read first (page_artifacts.py), then the run starts
        return _views(signal, lambda abort: _attached(attachments, lambda files: start(abort, files)))

    @js_facing
    async def choose(self, question: str, options: list[str], signal: Any = None, top_logprobs: int | None = None) -> dict[str, float]:
        """``{option: score}``, the scores summing to 1 (``Agent.choose``); ``signal`` an
        ``AbortSignal`` or nothing."""
        return await self.agent.choose(question, options, signal, top_logprobs=20 if top_logprobs is None else top_logprobs)

    @js_facing
    async def prefill(self, signal: Any = None) -> dict[str, int] | None:
        """``Agent.prefill``: ``{promptTokens, cachedTokens, completionTokens}`` (as a ``usage``
        event names them) or null; ``signal`` an ``AbortSignal`` or nothing."""
        usage = await self.agent.prefill(signal)
        if usage is None:
            return None
        return {_EVENT_KEYS[k]: usage.get(k, 0) for k in ("prompt_tokens", "cached_tokens", "completion_tokens")}

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
    async def start(
        self, prompt: str, run_id: str | None = None, idempotency_key: str | None = None, invoker: Any = None, concurrency_key: str | None = None
    ) -> dict[str, Any]:
        return run_view(await self.agent.start(str(prompt), run_id, idempotency_key, invoker=invoker, concurrency_key=concurrency_key))

    @js_facing
    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        record = await self.agent.get_run(str(run_id))
        return None if record is None else run_view(record)

    @js_facing
    async def state(self, method: str, collection: str | None, args: list[Any]) -> Any:
        """``agent.state.<method>(...args)``, or of ``collection(name)`` when one is named."""
        return await state_call(self.agent.state, method, collection, args)

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
    def transcript(self) -> list[dict[str, Any]]:
        """The conversation as a person reads it: prompts and answers (``conversations.transcript``)."""
        return transcript(self.agent.messages)

    @js_facing
    def traces(self) -> list[list[dict[str, Any]]]:
        """The traces ``tracer: {keep: true}`` kept, oldest first, each its spans as
        :func:`span_view` shows them (the run's span first)."""
        tracer = self.agent.tracer
        kept = [e for e in (tracer.exporters if tracer is not None else ()) if isinstance(e, SpanCollector)]
        if not kept:
            raise AerixError("options", "agent.traces() needs the agent option tracer: {keep: true}")
        return [[span_view(s) for s in trace] for trace in kept[0].traces()]

    @js_facing
    def system(self) -> str:
        return self.agent.active.system  # after a handoff, the target's (aerix.handoffs)

    @js_facing
    def schema(self) -> dict[str, Any] | None:
        return self.agent.active.schema


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


def span_view(span: Span) -> dict[str, Any]:
    """What the page sees of a span: ``Span.to_dict()`` with camelCase keys, its times as unix
    milliseconds (``startMs``, ``endMs``, ``durationMs``: floats, since nanoseconds since 1970
    are past JavaScript's exact integers and would cross as BigInt)."""
    d = span.to_dict()
    return {
        "name": d["name"], "traceId": d["trace_id"], "spanId": d["span_id"], "parentId": d["parent_id"], "kind": d["kind"],
        "startMs": span.start_ns / 1e6, "endMs": None if span.end_ns is None else span.end_ns / 1e6,
        "durationMs": None if span.end_ns is None else (span.end_ns - span.start_ns) / 1e6,
        "attributes": d["attributes"], "status": d["status"], "statusMessage": d["status_message"],
    }


def run_view(record: RunRecord) -> dict[str, Any]:
    """What the page shows of a run: no conversation, the pending approval spelled out."""
    pending = record.pending_approval()
    return {
        "id": record.id,
        "prompt": record.prompt,
        "status": record.status,
        "idempotencyKey": record.idempotency_key,
        "concurrencyKey": record.concurrency_key,
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


_STATE_METHODS = frozenset({"load", "get", "tainted", "set", "delete"})  # AgentState's, JavaScript's agent.state
_COLLECTION_METHODS = frozenset({"list", "get", "tainted", "upsert", "remove"})  # Collection's, agent.state.collection(name)


async def state_call(state: AgentState, method: str, collection: str | None, args: list[Any]) -> Any:
    """What ``agent.state.<method>(...args)`` of JavaScript does (``collection`` ``None``), or
    ``agent.state.collection(collection).<method>(...args)``: the Python method of that name
    (``aerix.agent_state``), its value as plain data (documents as the model dumps them to JSON)."""
    methods = _STATE_METHODS if collection is None else _COLLECTION_METHODS
    if method not in methods:
        where = "agent.state" if collection is None else "a state collection"
        raise AerixError("options", f"{where} has no method {method!r} (known: {sorted(methods)})")
    target: Any = state if collection is None else state.collection(collection)
    value = getattr(target, method)(*(args or []))
    if inspect.isawaitable(value):
        value = await value
    return _plain(value)


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def create_agent(model: Any, options: Any, ref: str | None = None) -> PageAgent:
    """The agent JavaScript's ``agent(options)`` gets: options as ``page_options.agent_from_js``
    takes them (``{instructions, tools, limits, hooks, ...}``); ``ref`` the id its handle chose
    (web/handle.mjs), under which ``page_options.agent_of`` finds it. An ``AerixError`` is marked
    for JavaScript (``_js.marked``), which reads it back as an Error named "AerixError"."""
    try:
        return PageAgent(agent_from_js(model, options), ref)
    except AerixError as e:
        raise marked(e) from None


# ``boot({engine: {baseUrl, model, ...}})``: JavaScript's names for OpenAIModel's parameters, the
# one place they are declared (web/runtime.mjs hands the options on as given; server_model refuses
# any other; tests/unit/test_api_parity.py holds this and OpenAIModel together).
SERVER_OPTIONS = {
    "baseUrl": "base_url",
    "model": "model",
    "apiKey": "api_key",
    "params": "params",
    "headers": "headers",
    "retries": "retries",
    "backoffS": "backoff_s",
    "maxBackoffS": "max_backoff_s",
}


def server_model(server: Any) -> Any:
    """``OpenAIModel`` for ``boot({engine: {baseUrl, model, apiKey, params, headers, retries,
    backoffS, maxBackoffS}})`` (``baseUrl`` as boot resolved it): each generation is a streamed
    ``fetch`` from Python. Any other option is refused, naming the known ones."""
    try:
        return _server_model(as_dict(from_js(server), "engine options"))
    except AerixError as e:
        raise marked(e) from None


def _server_model(opts: dict[str, Any]) -> Any:
    from .engines.openai import OpenAIModel

    unknown = sorted(set(opts) - set(SERVER_OPTIONS))
    if unknown:
        raise AerixError("options", f"unknown engine option(s) {unknown} for an OpenAI-compatible server (baseUrl); known: {list(SERVER_OPTIONS)}")
    for needed in ("baseUrl", "model"):
        if not isinstance(opts.get(needed), str) or not opts[needed]:
            raise AerixError("options", f"an OpenAI-compatible server needs engine.{needed}, a non-empty string; got {opts.get(needed)!r}")
    kwargs = {SERVER_OPTIONS[k]: v for k, v in opts.items() if v is not None}
    return OpenAIModel(kwargs.pop("base_url"), kwargs.pop("model"), **kwargs)
