"""The OpenAI path: a model on any OpenAI-compatible ``/chat/completions`` server.

    from aerix import Agent, OpenAIModel                 # also aerix.engines.openai.OpenAIModel
    agent = Agent(model=OpenAIModel("http://127.0.0.1:8080/v1", "my-model"), tools=[weather])

One module per concept, from the top down:

- ``model``: :class:`OpenAIModel`, the aerix model protocol (``aerix.model``) over the client;
- ``client``: :class:`ChatClient`, one streamed request, usable alone;
- ``backoff``: :class:`Backoff`, how a server that pushes back (429, 503) is waited out;
- ``stream``: the client's seven events (``ContentDelta``, ``ToolCallStart``, ``ToolCallDelta``,
  ``ToolCallEnd``, ``Logprobs``, ``StreamDone``, ``StreamError``) and the rules that make them;
- ``sse``: the ``text/event-stream`` framing;
- ``redact``: the key and the URL's secrets, kept out of every error and repr;
- ``transports``: how a request reaches the server (httpx, the page's fetch, a mock for tests).

This package hands on what the README documents; the helpers tests reach for
(``usage_counts``, ``SSEDecoder``, ``default_transport``) stay in their modules.
"""

from __future__ import annotations

from .backoff import Backoff
from .client import ChatClient, tools_for_llm
from .model import OpenAIModel
from .stream import DELTA, DONE, ERROR, EVENT_TYPES, LOGPROBS, TOOL_CALL_DELTA, TOOL_CALL_END, TOOL_CALL_START
from .stream import ContentDelta, Logprobs, StreamDone, StreamError, StreamEvent, ToolCallDelta, ToolCallEnd, ToolCallStart
from .stream import collect_tool_calls
from .transports import FetchTransport, HttpxTransport, MockTransport, Request, Response, Transport, replay

__all__ = [
    "OpenAIModel",
    "ChatClient", "Backoff", "tools_for_llm", "collect_tool_calls",
    "StreamEvent", "ContentDelta", "ToolCallStart", "ToolCallDelta", "ToolCallEnd", "Logprobs", "StreamDone", "StreamError",
    "DELTA", "TOOL_CALL_START", "TOOL_CALL_DELTA", "TOOL_CALL_END", "LOGPROBS", "DONE", "ERROR", "EVENT_TYPES",
    "Transport", "Request", "Response", "HttpxTransport", "FetchTransport", "MockTransport", "replay",
]
