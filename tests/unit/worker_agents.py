"""The agent the worker tests execute (tests/unit/test_worker.py), made by ``factory(store)`` as
``python -m aerix worker --agent worker_agents:factory`` makes it.

A run's prompt is its script, e.g. ``"tag=r1 steps=3 sleep=0.1 approve=1"``: ``steps`` calls of
the effect tool ``step`` (one per turn), each taking ``sleep`` seconds, then a final answer;
``approve=1``: the first step asks a person first (``ctx.approve``). A step's effect key is
``<tag>/<n>`` (``effect_key``). Each application is written down as it happens: a line
``<effect key> <pid>`` in $AERIX_TEST_LEDGER when set, in ``<store file>.effects`` for a
SQLiteStore on a file, else in
:data:`APPLIED` (a store in memory, this process); ``already_applied`` looks there, so an effect
whose record a crash cut off is not applied again.
"""

from __future__ import annotations

import asyncio
import json
import os

from aerix import Agent, tool
from aerix.testing import ScriptedModel

APPLIED: list[str] = []  # effect keys applied in this process, for stores in memory
LEDGER_ENV = "AERIX_TEST_LEDGER"  # a ledger file for a store without a file of its own (PostgreSQL), shared by processes


def script_of(prompt: str) -> dict:
    pairs = dict(part.split("=", 1) for part in prompt.split() if "=" in part)
    return {"tag": pairs.get("tag", "run"), "steps": int(pairs.get("steps", 1)), "sleep": float(pairs.get("sleep", 0)), "approve": pairs.get("approve") == "1"}


def reply(messages: list[dict[str, str]], options: dict) -> str:
    """The next turn, from the prompt and how many turns the conversation holds already."""
    script = script_of(messages[1]["content"])
    done = sum(1 for m in messages if m["role"] == "assistant")
    if done < script["steps"]:
        step = {"tag": script["tag"], "n": done + 1, "sleep": script["sleep"], "ask": script["approve"] and done == 0}
        return json.dumps({"thought": "next step", "calls": [{"tool": "step", "input": step}]})
    return json.dumps({"thought": "all done", "final": f"did {script['steps']} steps"})


class Ledger:
    """Where applied effects are written down: a file beside the store's, or :data:`APPLIED`."""

    def __init__(self, store) -> None:
        path = getattr(store, "path", None)
        self.path = os.environ.get(LEDGER_ENV) or (None if path in (None, ":memory:") else f"{path}.effects")

    def keys(self) -> list[str]:
        if self.path is None:
            return list(APPLIED)
        if not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8") as f:
            return [line.split()[0] for line in f if line.strip()]

    def add(self, key: str) -> None:
        if self.path is None:
            APPLIED.append(key)
            return
        with open(self.path, "a", encoding="utf-8") as f:  # one short append: whole, or not at all
            f.write(f"{key} {os.getpid()}\n")
            f.flush()
            os.fsync(f.fileno())


def key_of(input: dict) -> str:
    return f"{input['tag']}/{input['n']}"


def factory(store, clock=None) -> Agent:
    ledger = Ledger(store)

    async def run_step(input, ctx):
        if input["ask"]:
            decision = await ctx.approve(f"Step {input['n']} of {input['tag']}?")
            if not decision.approved:
                return f"step {input['n']} refused: {decision.reason}"
        await asyncio.sleep(input["sleep"])
        ledger.add(key_of(input))
        return f"step {input['n']} done"

    step = tool(
        name="step",
        description="Do one step (a side effect).",
        input={
            "tag": {"type": "string", "required": True},
            "n": {"type": "integer", "required": True},
            "sleep": {"type": "number", "required": True},
            "ask": {"type": "boolean", "required": True},
        },
        run=run_step,
        effect=True,
        effect_key=key_of,
        already_applied=lambda key, input: True if key in ledger.keys() else None,
    )
    return Agent(model=ScriptedModel(reply), tools=[step], store=store, clock=clock)


def not_an_agent(store):
    return "an agent"


def without_store(store) -> Agent:
    return Agent(model=ScriptedModel(reply))
