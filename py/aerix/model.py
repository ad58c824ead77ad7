"""The model seam: one method.

A model is anything with ``chat(messages, options) -> AsyncIterator[dict]``::

    class EchoModel:
        async def chat(self, messages, options):
            text = '{"thought": "", "final": "hi"}'
            yield {"type": "text", "text": text}
            yield {"type": "done", "finish_reason": "stop",
                   "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0}}

``messages`` is a list of ``{"role", "content"}`` dicts; ``options`` holds ``max_tokens``,
``constraint`` (the turn's JSON Schema, or ``None``), ``signal``, ``generation`` (the Agent's
sampling settings, passed on as they are) and ``time_left_s`` (the seconds left before the run's
``timeout_s`` when the generation starts, or ``None`` without a timeout: a model that waits, e.g.
for a busy server, waits no longer). The iterator yields ``text`` deltas and ends with one
``done``.

Log-probabilities are optional. ``options["top_logprobs"] = k`` (a key only ``Agent.choose``
sets; absent otherwise) asks for them: a model that can yields, before its ``done``, ``logprobs``
deltas ``{"type": "logprobs", "content": [{"token", "logprob", "top_logprobs": [{"token",
"logprob"}, ...]}, ...]}``, one entry per generated token in order (the OpenAI shape), each with
the ``k`` likeliest tokens at that position, likeliest first. A model that cannot ignores the key
and yields none (``Agent.choose`` then says so); without the key a model yields none.

An engine failure raises (``AerixError(kind="engine")`` if the model can say so, any
exception otherwise); a generation that was unusable while the engine is fine raises
``AerixError(kind="output")``; a stop on the signal raises ``AerixError(kind="abort")``.
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Literal, NotRequired, Protocol, TypedDict, Union, runtime_checkable

__all__ = ["ChatOptions", "Delta", "Done", "LogprobsDelta", "Model", "TextDelta", "TokenLogprobs", "TopLogprob", "UsageCounts"]


class UsageCounts(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int


class TextDelta(TypedDict):
    type: Literal["text"]
    text: str


class Done(TypedDict):
    type: Literal["done"]
    finish_reason: Literal["stop", "length"]
    usage: UsageCounts


class TopLogprob(TypedDict):
    token: str
    logprob: float


class TokenLogprobs(TypedDict):
    """One generated token: its text, its log-probability, and the likeliest tokens there."""

    token: str
    logprob: float
    top_logprobs: list[TopLogprob]


class LogprobsDelta(TypedDict):
    type: Literal["logprobs"]
    content: list[TokenLogprobs]


Delta = Union[TextDelta, LogprobsDelta, Done]


class ChatOptions(TypedDict):
    max_tokens: int
    constraint: dict[str, Any] | None
    signal: Any
    generation: dict[str, Any]
    time_left_s: float | None
    top_logprobs: NotRequired[int]


@runtime_checkable
class Model(Protocol):
    def chat(self, messages: list[dict[str, str]], options: ChatOptions) -> AsyncIterator[Delta]: ...
