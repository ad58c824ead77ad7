"""The areas, by name, in the order they run: each module's ``draw(rng) -> Case``."""

from __future__ import annotations

import random
from typing import Callable

from . import engine_protocol, hung_callbacks, model_output, races, sse_bodies, store_faults, sub_agents, tool_faults
from .harness import Case

__all__ = ["AREAS"]

AREAS: dict[str, Callable[[random.Random], Case]] = {
    "model": model_output.draw,
    "engine": engine_protocol.draw,
    "tools": tool_faults.draw,
    "hooks": hung_callbacks.draw,
    "store": store_faults.draw,
    "races": races.draw,
    "sse": sse_bodies.draw,
    "sub-agents": sub_agents.draw,
}
