"""Engines a model can run on. Each adapter implements the model protocol of ``aerix.model``.

- :mod:`aerix.engines.js`: a model that runs in the page's JavaScript (the in-browser wllama
  engine of ``web/engine.mjs``, or any JS object with the same ``chat``).
- :mod:`aerix.engines.openai`: ``OpenAIModel``, a model on an OpenAI-compatible server
  (llama-server, vLLM, Ollama, OpenAI), with its streaming client, SSE framing and transports.
"""

from __future__ import annotations

__all__: list[str] = []
