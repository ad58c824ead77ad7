"""Python that `make bench` runs inside the page's Pyodide (bench/bench.mjs loads it as a module).

P6 — the loop's own cost per turn, engine excluded: an Agent on a model that answers every turn
at once (one delta, no waiting, no copies) with a call of a tool whose run is trivial, so what is
timed is aerix's work: building the request, reading the reply, checking the input against the
tool's pydantic model, running the tool, cutting and appending the result.
"""

from __future__ import annotations

import json
import time
from typing import Any

from aerix import Agent, Limits, tool, turn_schema

CITIES = ["Lisbon", "Porto", "Oslo", "Rome", "Paris", "Madrid", "Vienna", "Berlin"]


_TOOLS: dict[int, list[Any]] = {}


def bench_tools(n: int) -> list[Any]:
    """n tools shaped like real ones (a required string, an enum, an optional number), made once."""
    if n not in _TOOLS:
        _TOOLS[n] = new_tools(n)
    return _TOOLS[n]


def new_tools(n: int) -> list[Any]:
    return [
        tool(
            name=f"tool_{i}",
            description=f"Tool number {i}: looks something up for a city and returns a short text.",
            input={
                "city": {"type": "string", "description": "City name", "required": True},
                "unit": {"type": "string", "enum": ["c", "f"]},
                "days": {"type": "integer", "description": "How many days ahead"},
            },
            run=lambda input, ctx: f"Sunny in {input['city']}, 21 degrees",
        )
        for i in range(n)
    ]


def schema_json(n: int) -> str:
    """The turn schema for n bench tools, as JSON (P3 sends it to the engine from JavaScript)."""
    return json.dumps(turn_schema(bench_tools(n)))


def _reply(turn: int, n_tools: int) -> str:
    call = {"tool": f"tool_{turn % n_tools}", "input": {"city": CITIES[turn % len(CITIES)], "unit": "c", "days": 2}}
    return json.dumps({"thought": f"Turn {turn}: I look up the weather for the city the user asked about.", "calls": [call]})


class _InstantModel:
    """A model that costs next to nothing: each chat() yields its scripted reply whole, then done."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = replies
        self.n = 0

    async def chat(self, messages: Any, options: Any) -> Any:
        text = self.replies[self.n]
        self.n += 1
        yield {"type": "text", "text": text}
        yield {"type": "done", "finish_reason": "stop", "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}


async def per_turn_ms(n_tools: int, turns: int = 12) -> float:
    """Milliseconds of aerix work per turn for one run of `turns` tool-calling turns."""
    model = _InstantModel([_reply(i, n_tools) for i in range(turns)])
    # Every turn is a call, so the run ends on the turns limit.
    agent = Agent(model=model, tools=bench_tools(n_tools), limits=Limits(turns=turns, retries=0))
    started = time.perf_counter()
    events = [ev async for ev in agent.run("What is the weather in these cities?")]
    total = time.perf_counter() - started
    assert events[-1].type == "end" and events[-1].reason == "turns", events[-1]
    return total * 1000 / turns


def first_check_ms() -> tuple[float, float]:
    """A tool's first input check (it builds the tool's pydantic model) and its second, in ms."""
    (fresh,) = new_tools(1)
    times = []
    for _ in range(2):
        started = time.perf_counter()
        fresh.check({"city": "Lisbon", "unit": "c", "days": 2})
        times.append((time.perf_counter() - started) * 1000)
    return times[0], times[1]


async def p6(rounds: int = 7, tool_counts: tuple[int, ...] = (1, 8, 32)) -> str:
    """Per tool count: ms per turn over `rounds` runs, interleaved (1, 8, 32, 1, 8, 32, ...), once
    every tool has been called once (a tool's first call builds its pydantic model: timed apart)."""
    for n in tool_counts:
        await per_turn_ms(n, turns=max(n, 3))
    out: dict[str, Any] = {str(n): [] for n in tool_counts}
    for _ in range(rounds):
        for n in tool_counts:
            out[str(n)].append(await per_turn_ms(n))
    firsts = [first_check_ms() for _ in range(rounds)]
    out["first_check_ms"] = [f for f, _ in firsts]
    out["later_check_ms"] = [s for _, s in firsts]
    return json.dumps(out)
