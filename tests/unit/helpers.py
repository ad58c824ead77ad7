"""Small builders for loop tests: turn texts and event summaries."""

from __future__ import annotations

import asyncio
import json
import sys


def final(text: str, thought: str = "done") -> str:
    return json.dumps({"thought": thought, "final": text})


def calls(*pairs: tuple[str, dict], thought: str = "use tools") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "input": i} for t, i in pairs]})


async def collect(stream) -> list:
    return [ev async for ev in stream]


def kinds(events) -> list[str]:
    """Event types, with text deltas and usage dropped: the shape of a run."""
    return [e.type for e in events if e.type not in ("text", "usage")]


def endings(events) -> list:
    return [e for e in events if e.type in ("final", "end")]


IN_PYODIDE = sys.platform == "emscripten"


def run_coroutine(coro):
    if not IN_PYODIDE:
        return asyncio.run(coro)
    # Pyodide's default loop (WebLoop) cannot block; the tests await nothing from JavaScript,
    # so a plain selector loop with no I/O runs them to completion.
    import selectors

    loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
