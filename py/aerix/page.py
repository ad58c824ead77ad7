"""The agent as JavaScript in the page sees it (``agent()`` of ``web/aerix.mjs`` calls this).

Options arrive as JavaScript objects: tools and hooks may be JavaScript functions, names may be
camelCase (``maxTokens``, ``beforeCall``). Events leave as plain JavaScript objects with
camelCase keys (``promptTokens``), the shape of aerix.js events.
"""

from __future__ import annotations

from typing import Any, AsyncIterator

from ._js import call_js, to_js, to_py
from .agent import Agent
from .errors import AerixError
from .events import Event
from .tools import tool

__all__ = ["PageAgent", "create_agent", "event_to_js_dict"]

_LIMIT_NAMES = {"maxTokens": "max_tokens", "resultChars": "result_chars"}
_HOOK_NAMES = {"beforeCall": "before_call", "afterCall": "after_call", "onFinal": "on_final"}
_EVENT_KEYS = {"prompt_tokens": "promptTokens", "completion_tokens": "completionTokens", "cached_tokens": "cachedTokens"}


def event_to_js_dict(event: Event) -> dict[str, Any]:
    """An event as a dict with camelCase keys; tool inputs are the user's data and keep theirs."""
    return {_EVENT_KEYS.get(k, k): v for k, v in event.to_dict().items()}


class PageAgent:
    """An Agent driven from JavaScript: ``run`` yields JS event objects."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def run(self, prompt: str, signal: Any = None) -> AsyncIterator[Any]:
        stream = self.agent.run(str(prompt), signal)  # a JS AbortSignal is read through .aborted as it is
        return self._convert(stream)

    async def _convert(self, stream: AsyncIterator[Event]) -> AsyncIterator[Any]:
        try:
            async for ev in stream:
                yield to_js(event_to_js_dict(ev))
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    def reset(self) -> None:
        self.agent.reset()

    def messages(self) -> Any:
        return to_js(self.agent.messages)

    def system(self) -> str:
        return self.agent.system

    def schema(self) -> Any:
        return to_js(self.agent.schema)


def create_agent(model: Any, options: Any) -> PageAgent:
    """Build an Agent from the JS options ``{instructions, tools, limits, hooks, generation, constrain}``."""
    opts = _dict(options, "agent options")
    known = {"instructions", "tools", "limits", "hooks", "generation", "constrain"}
    unknown = sorted(set(opts) - known)
    if unknown:
        raise AerixError("options", f"unknown agent option(s) {unknown}; known: {sorted(known)}")
    tools = [_js_tool(t) for t in (opts.get("tools") or [])]
    limits = {_LIMIT_NAMES.get(k, k): v for k, v in _dict(opts.get("limits"), "limits").items()}
    hooks = {_HOOK_NAMES.get(k, k): _js_hook(k, fn) for k, fn in _dict(opts.get("hooks"), "hooks").items()}
    agent = Agent(
        model=model,
        instructions=opts.get("instructions") or "",
        tools=tools,
        limits=limits,
        generation=_dict(opts.get("generation"), "generation") or None,
        constrain=opts.get("constrain", True),
        hooks=hooks,
    )
    return PageAgent(agent)


def _dict(value: Any, what: str) -> dict[str, Any]:
    value = to_py(value)
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

    async def run_js(input: dict[str, Any], ctx: Any) -> Any:
        return await call_js(run, input, {"signal": ctx.signal, "callId": ctx.call_id})

    return tool(name=spec.get("name"), description=spec.get("description"), input=spec.get("input") or {}, run=run_js)


def _js_hook(name: str, fn: Any) -> Any:
    if fn is None:
        return None
    if not callable(fn):
        raise AerixError("options", f"hook {name} must be a function")

    async def hook(*args: Any) -> Any:
        return await call_js(fn, *(a.to_dict() if hasattr(a, "to_dict") else a for a in args))

    hook.__name__ = name
    return hook
