"""A model whose ``chat`` runs in the page's JavaScript.

    from aerix.engines.js import page_model
    agent = Agent(model=page_model(), tools=[...])    # the engine aerix.mjs booted

The JS side (``web/engine.mjs``) yields ``{type: "text"}`` deltas and one ``done``, and
``{type: "logprobs"}`` deltas when ``options["top_logprobs"]`` asks (it crosses with the other
options; see :mod:`aerix.model`). A stop on the signal throws ``AbortError`` and an unusable
generation ``EngineBadOutput``, which arrive here as ``AerixError`` kinds ``abort`` and ``output``.

Values cross through ``aerix._js`` only: messages and options are converted once on the way in
(the turn schema once per schema, not per generation), each delta once on the way out. The
run's ``Abort`` goes in as a real ``AbortSignal``, one per generation, released when it ends.
"""

from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator

from .._js import iterate_js, js_abort_signal, js_module, to_js

__all__ = ["JsModel", "page_model"]


class JsModel:
    """The model protocol over a JavaScript object with ``chat(messages, options)``.

    ``batch_ms``: the engine joins the text of deltas that come closer together than this. Each
    delta crosses into Python and back out to the page (about 0.5 ms of the page's thread each,
    measured by ``make bench``), so at 100 tokens/s one delta per token would cost 5 % of a core;
    25 ms is below what a reader of the stream can see.
    """

    def __init__(self, engine: Any, batch_ms: float = 25) -> None:
        self.engine = engine
        self.batch_ms = batch_ms
        self._schema: tuple[Any, Any] = (None, None)  # (Python schema, its JS copy): built once

    def __repr__(self) -> str:
        return "JsModel(engine=<JavaScript>)"

    async def chat(self, messages: list[dict[str, str]], options: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        signal, release = js_abort_signal(options.get("signal"))
        try:
            js_options = {k: v for k, v in options.items() if k not in ("signal", "constraint")}
            js_options.update(signal=signal, constraint=self._js_schema(options.get("constraint")), batchMs=self.batch_ms)
            async with aclosing(iterate_js(self.engine.chat, messages, js_options)) as deltas:
                async for delta in deltas:
                    yield delta
        finally:
            release()

    def _js_schema(self, constraint: Any) -> Any:
        if constraint is None:
            return None
        if self._schema[0] is not constraint:
            self._schema = (constraint, to_js(constraint))
        return self._schema[1]


def page_model(module: str = "aerix_page") -> Any:
    """The model the page booted (``boot()`` in aerix.mjs registers it as a JS module): the
    in-page engine, or the ``OpenAIModel`` of ``boot({engine: {baseUrl, model}})``."""
    page = js_module(module)
    server = getattr(page, "server", None)
    return server if server is not None else JsModel(page.engine)
