"""``ScriptedModel``: the fake model users test their agents with (like httpx's ``MockTransport``).

    model = ScriptedModel([
        '{"thought": "look it up", "calls": [{"tool": "weather", "input": {"city": "Lisbon"}}]}',
        Reply('{"thought": "ok", "final": "Take an umbrella."}', chunk=4),
    ])
    agent = Agent(model=model, tools=[weather])
    await agent.ask("Umbrella?")
    model.calls[0].options["constraint"]   # what the engine was sent

Usage is counted in characters as if each were a token: ``prompt_tokens`` is the length of the
rendered conversation and ``cached_tokens`` the length it shares with the previous call's
conversation plus reply — a stand-in for an engine's prefix cache, so tests can see when a
conversation stops being byte-stable.

Log-probabilities, for ``Agent.choose``: ``Reply("A", logprobs=[{"A": -0.1, "B": -2.4}])`` gives
each generated token's likeliest tokens and their log-probabilities (the token generated is the
likeliest). They are yielded only when the call asks (``options["top_logprobs"]``), the ``k``
likeliest of each, likeliest first; a reply without them yields none, like an engine without them.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Literal, Mapping, Sequence, Union

from .abort import is_aborted
from .errors import AerixError

__all__ = ["ModelCall", "Reply", "ScriptedModel"]


@dataclass(frozen=True)
class Reply:
    """One scripted generation: its text, streamed ``chunk`` characters at a time, and how it ends;
    ``logprobs``: per generated token, its likeliest tokens and their log-probabilities."""

    text: str
    finish_reason: Literal["stop", "length"] = "stop"
    chunk: int | None = None
    logprobs: Sequence[Mapping[str, float]] | None = None


@dataclass
class ModelCall:
    """What one ``chat`` call was sent (copies, so later changes do not rewrite history)."""

    messages: list[dict[str, str]]
    options: dict[str, Any]


Script = Union[str, Reply, BaseException]
ReplyFn = Callable[[list[dict[str, str]], dict[str, Any]], Any]


@dataclass
class ScriptedModel:
    """A model that answers from a script: a list of replies, or a function of ``(messages, options)``.

    Each item is a text (streamed whole, ends ``stop``), a :class:`Reply`, or an exception to raise.
    A function may return any of those, or an awaitable of one. Runs out → raises an engine error.
    """

    script: Sequence[Script] | ReplyFn
    chunk: int | None = None
    calls: list[ModelCall] = field(default_factory=list)
    prefills: list[list[dict[str, str]]] = field(default_factory=list)
    _last: str = ""

    async def chat(self, messages: list[dict[str, str]], options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        sent = dict(options)
        sent["generation"] = copy.deepcopy(options.get("generation"))
        self.calls.append(ModelCall(copy.deepcopy(list(messages)), sent))
        item = await self._next(messages, options)
        if isinstance(item, BaseException):
            raise item
        reply = Reply(item) if isinstance(item, str) else item
        if not isinstance(reply, Reply):
            raise AerixError("engine", f"ScriptedModel: a script item must be str, Reply or an exception, got {item!r}")
        step = reply.chunk or self.chunk or max(len(reply.text), 1)
        signal = options.get("signal")
        for start in range(0, len(reply.text), step):
            if is_aborted(signal):
                raise AerixError("abort", "the generation was aborted")
            yield {"type": "text", "text": reply.text[start : start + step]}
            await asyncio.sleep(0)  # let other tasks run between deltas, as a real engine does
        if is_aborted(signal):
            raise AerixError("abort", "the generation was aborted")
        k = options.get("top_logprobs")
        if k and reply.logprobs is not None:
            yield {"type": "logprobs", "content": [_token(top, k) for top in reply.logprobs]}
        rendered = _render(messages)
        cached = _common_prefix(rendered, self._last)
        self._last = rendered + reply.text
        yield {
            "type": "done",
            "finish_reason": reply.finish_reason,
            "usage": {"prompt_tokens": len(rendered), "completion_tokens": len(reply.text), "cached_tokens": cached},
        }

    async def prefill(self, messages: list[dict[str, str]], options: dict[str, Any]) -> dict[str, int]:
        """``Agent.prefill``: the simulated cache now holds ``messages`` (the next ``chat`` reuses
        their prefix, as a real engine's would); no reply is used and no call recorded (``prefills``
        lists what was read)."""
        self.prefills.append(copy.deepcopy(list(messages)))
        rendered = _render(messages)
        cached = _common_prefix(rendered, self._last)
        self._last = rendered
        return {"prompt_tokens": len(rendered), "completion_tokens": 0, "cached_tokens": cached}

    async def _next(self, messages: list[dict[str, str]], options: dict[str, Any]) -> Any:
        n = len(self.calls)
        if callable(self.script):
            item = self.script(messages, options)
            return await item if inspect.isawaitable(item) else item
        if n > len(self.script):
            raise AerixError("engine", f"ScriptedModel: asked for generation {n}, but the script has {len(self.script)}")
        return self.script[n - 1]


def _token(top: Mapping[str, float], k: int) -> dict[str, Any]:
    """One token's entry in the OpenAI shape: the likeliest token, and the ``k`` likeliest."""
    ranked = sorted(top.items(), key=lambda item: -item[1])
    token, logprob = ranked[0] if ranked else ("", 0.0)
    return {"token": token, "logprob": logprob, "top_logprobs": [{"token": t, "logprob": p} for t, p in ranked[:k]]}


def _render(messages: list[dict[str, str]]) -> str:
    return "".join(f"<|{m['role']}|>{m['content']}<|end|>" for m in messages) + "<|assistant|>"


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i
