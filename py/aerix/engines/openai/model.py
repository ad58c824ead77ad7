"""A model on an OpenAI-compatible server: the aerix model protocol over the streaming client.

    from aerix import Agent, OpenAIModel
    model = OpenAIModel("http://127.0.0.1:8080/v1", "qwen2.5-7b-instruct")
    agent = Agent(model=model, tools=[weather])      # the same agent code as in the page

Each generation is one streamed ``/chat/completions`` request (``ChatClient``). The turn
schema goes as ``response_format: {"type": "json_schema", "json_schema": {"name": "turn",
"schema": ..., "strict": true}}``; ``max_tokens`` and the agent's ``generation`` settings go
as they are (``temperature`` only when set). ``options["top_logprobs"] = k`` (``Agent.choose``)
sends ``logprobs: true, top_logprobs: k``, and each ``Logprobs`` event of the stream is yielded
as a ``logprobs`` delta; without that key none is yielded, whatever the server sends. The ending
maps to the protocol:

    done stop                 -> done finish_reason "stop"
    done length               -> done finish_reason "length" (the loop retries a cut turn)
    done cancelled            -> AerixError("abort")          (the signal fired; the server was stopped)
    done closed / tool_calls  -> AerixError("output")         (no usable turn; the loop retries)
    error                     -> AerixError("engine")         (the run ends with reason "error")

A server that pushes back (429, 503, before any text) is asked again after a wait: ``retries``
times at most, honouring its ``Retry-After``, never past ``options["time_left_s"]``, and the
signal ends the wait (``aerix.engines.openai.backoff`` has the rules). When it gives up, the
server's error is the ``engine`` error, its message ending ``(gave up after N retries)`` or
saying why it did not wait.

An ``engine`` error carries the server's RFC 9457 problem document, when it sent one, as
``problem`` (the run's ``end`` event takes it from there). Usage: ``prompt_tokens``,
``completion_tokens`` and ``prompt_tokens_details.cached_tokens`` (0 when the server does not say).
"""

from __future__ import annotations

import asyncio
import random
import time
from contextlib import aclosing
from typing import Any, AsyncIterator, Awaitable, Callable

from ...errors import AerixError
from .backoff import Backoff
from .client import ChatClient
from .redact import shown_url
from .stream import DELTA, DONE, ERROR, LOGPROBS, TOOL_CALL_START
from .transports.base import Transport

__all__ = ["OpenAIModel", "usage_counts"]


class OpenAIModel:
    """The model protocol over an OpenAI-compatible ``/chat/completions`` server.

    ``base_url`` includes ``/v1``. ``params``: more body fields for every request (e.g.
    ``{"cache_prompt": True}`` for llama-server, ``{"top_k": 20}`` for vLLM). ``transport``:
    the page's fetch in Pyodide, httpx on CPython (``pip install 'aerix[openai]'``), or a
    ``MockTransport`` in tests.

    A 429 or 503 is sent again up to ``retries`` times (0: never) after a wait: the server's
    ``Retry-After``, else a random draw up to ``backoff_s`` doubled each time, never over
    ``max_backoff_s``. ``rng`` (a seeded ``random.Random``), ``sleep`` and ``clock`` are for tests.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        transport: Transport | None = None,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        backoff = Backoff(
            retries=retries, backoff_s=backoff_s, max_backoff_s=max_backoff_s, rng=rng if rng is not None else random.Random(),
            sleep=sleep if sleep is not None else asyncio.sleep, clock=clock if clock is not None else time.monotonic,
        )
        self.client = ChatClient(base_url, model, api_key=api_key, headers=headers, transport=transport, backoff=backoff)
        self.params = dict(params or {})

    def __repr__(self) -> str:  # the key and the URL's secrets stay out
        return f"OpenAIModel(base_url={shown_url(self.client.base_url)!r}, model={self.client.model!r})"

    @property
    def base_url(self) -> str:
        return self.client.base_url

    @property
    def model(self) -> str:
        return self.client.model

    @property
    def backoff(self) -> Backoff:
        """How a server that pushes back is answered (``retries``, ``backoff_s``, ``max_backoff_s``)."""
        return self.client.backoff

    def body(self, options: dict[str, Any]) -> dict[str, Any]:
        """The body fields one generation sends besides the client's own."""
        body: dict[str, Any] = {**self.params, **(options.get("generation") or {})}
        body["max_tokens"] = options["max_tokens"]
        if options.get("top_logprobs"):
            body["logprobs"], body["top_logprobs"] = True, options["top_logprobs"]
        constraint = options.get("constraint")
        if constraint is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "turn", "schema": constraint, "strict": True},
            }
        return body

    async def chat(self, messages: list[dict[str, str]], options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        stream = self.client.stream_chat(
            messages, signal=options.get("signal"), params=self.body(options), time_left_s=options.get("time_left_s"),
        )
        native_call = False
        logprobs = bool(options.get("top_logprobs"))
        async with aclosing(stream) as events:
            async for ev in events:
                if ev.type == DELTA:
                    yield {"type": "text", "text": ev.content}
                elif ev.type == LOGPROBS and logprobs:
                    yield {"type": "logprobs", "content": ev.content}
                elif ev.type == TOOL_CALL_START:
                    native_call = True
                elif ev.type == ERROR:
                    raise AerixError("engine", ev.message, problem=ev.problem)
                elif ev.type == DONE:
                    reason = ev.stop_reason
                    if reason == "cancelled":
                        raise AerixError("abort", "the generation was aborted")
                    if reason == "closed":
                        raise AerixError("output", "the server's stream ended without a finish reason")
                    if reason == "tool_calls" or native_call:
                        raise AerixError("output", "the server answered with a native tool call, not a turn")
                    yield {"type": "done", "finish_reason": reason, "usage": usage_counts(ev.usage)}


def usage_counts(usage: dict[str, Any] | None) -> dict[str, int]:
    """A server's usage object as the protocol's counts; missing numbers are 0."""
    usage = usage or {}
    details = usage.get("prompt_tokens_details") or {}
    return {
        "prompt_tokens": _int(usage.get("prompt_tokens")),
        "completion_tokens": _int(usage.get("completion_tokens")),
        "cached_tokens": _int(details.get("cached_tokens") if isinstance(details, dict) else None),
    }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
