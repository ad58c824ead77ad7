"""The tools the fuzzed agents use, made once (a tool builds its input check on first use).

``echo`` hands the model's own words back as a result: the way a model's text (or a web page's,
or an e-mail's) comes back into the prompt, and so the way to try to forge a turn. ``send`` is
an effect; ``ask_first`` asks a human first (``ctx.approve``), which pauses a durable run.
``INPUTS`` draws an input for each, usually a valid one.
"""

from __future__ import annotations

import random
from typing import Any, Callable, Literal

from aerix import Agent, Limits, tool
from aerix.stores import MemoryStore

from .draw import json_value, pick, string

__all__ = ["INPUTS", "TOOLS", "agent_options", "final", "make_agent"]


@tool
def echo(text: str) -> str:
    """Say the text back."""
    return text


@tool
def add(a: float, b: float) -> dict:
    """Add two numbers."""
    return {"sum": a + b}


@tool
def pick_one(choice: Literal["x", "y"], times: int = 1) -> list:
    """Pick x or y, some times."""
    return [choice] * max(0, min(times, 3))


send = tool(
    name="send",
    description="Send a message (an effect: once per call).",
    input={"to": {"type": "string", "required": True}},
    run=lambda input, ctx: f"sent to {input['to']}",
    effect=True,
)


async def _ask_first(input: dict[str, Any], ctx: Any) -> str:
    decision = await ctx.approve(f"Do {input['what']}?", input.get("why"))
    return f"did {input['what']}" if decision else f"not allowed: {decision.reason}"


ask_first = tool(
    name="ask_first",
    description="Do something once a human approves.",
    input={"what": {"type": "string", "required": True}, "why": {"type": "string"}},
    run=_ask_first,
)

TOOLS = [echo, add, pick_one, send, ask_first]


def _maybe(rng: random.Random, good: Callable[[], Any]) -> Any:
    """Usually a valid input; sometimes any JSON value (a wrong type, a missing field)."""
    return good() if rng.random() < 0.8 else json_value(rng)


INPUTS: dict[str, Callable[[random.Random], Any]] = {
    "echo": lambda rng: _maybe(rng, lambda: {"text": string(rng)}),
    "add": lambda rng: _maybe(rng, lambda: {"a": pick(rng, (1, 2.5, -0.0, 1e308)), "b": pick(rng, (1, "2", True))}),
    "pick_one": lambda rng: _maybe(rng, lambda: {"choice": pick(rng, ("x", "y", "z")), "times": pick(rng, (1, 3, -1))}),
    "send": lambda rng: _maybe(rng, lambda: {"to": string(rng, 2)}),
    "ask_first": lambda rng: _maybe(rng, lambda: {"what": string(rng, 2), "why": "because"}),
}


def final(text: str = "ok") -> str:
    return '{"thought": "done", "final": "%s"}' % text


def agent_options(rng: random.Random) -> dict[str, Any]:
    """The drawn parts of an Agent: limits, constrain, and whether runs are durable."""
    return {
        "limits": Limits(
            turns=rng.randint(1, 6),
            retries=rng.randint(0, 3),
            max_tokens=pick(rng, (16, 512)),
            result_chars=pick(rng, (None, 10, 4000)),
        ),
        "constrain": rng.random() < 0.5,
        "durable": rng.random() < 0.4,
    }


def make_agent(model: Any, options: dict[str, Any], tools: list[Any] = TOOLS, **more: Any) -> Agent:
    store = MemoryStore() if options["durable"] else None
    return Agent(model=model, instructions="Fuzz.", tools=tools, limits=options["limits"], constrain=options["constrain"], store=store, **more)
