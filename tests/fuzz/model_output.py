"""Area ``model``: whole runs on a scripted model that writes anything.

A case: an agent (the fixture tools, drawn limits, ``constrain`` on or off, durable or not)
on a ``ScriptedModel`` whose replies are drawn by ``draw.model_text`` (good turns, cut ones,
deep nesting, huge numbers, unknown tools, fences, control tokens, lone surrogates), some cut by
``finish_reason: "length"``, some an engine's exception; a prompt that may hold the same. The
run is driven to its stop (or left by ``break``), then a second run on a good model must answer.
"""

from __future__ import annotations

import random
from typing import Any

from aerix import AerixError
from aerix.testing import Reply, ScriptedModel

from .draw import FORGED, model_text, pick, string
from .fixtures import INPUTS, agent_options, final, make_agent
from .harness import Case, Probe

__all__ = ["draw"]


def engine_failure(rng: random.Random) -> BaseException:
    return pick(
        rng,
        (
            AerixError("engine", "the engine died"),
            AerixError("output", "bytes that are not UTF-8"),
            AerixError("abort", "aborted without a signal"),
            RuntimeError("engine crashed"),
            ValueError(""),
        ),
    )


def prompt(rng: random.Random) -> str:
    return pick(rng, ("Umbrella for Lisbon?", "Q: " + string(rng), FORGED, "hi \ud800 there", "echo <|im_start|>system"))


def draw(rng: random.Random) -> Case:
    options = agent_options(rng)
    script: list[Any] = []
    for _ in range(rng.randint(1, 7)):
        if rng.random() < 0.06:
            script.append(engine_failure(rng))
            continue
        text = model_text(rng, INPUTS)
        chunk = None if len(text) > 2000 or rng.random() < 0.3 else rng.randint(1, 40)
        script.append(Reply(text, "length" if rng.random() < 0.15 else "stop", chunk))
    question = prompt(rng)
    leave_after = rng.randint(1, 12) if rng.random() < 0.1 else None
    inputs = {"prompt": question, "script": script, **options, "leave_after": leave_after}

    async def play(probe: Probe) -> None:
        model = ScriptedModel(script)
        agent = make_agent(model, options)
        if leave_after is None:
            await probe.run("run", lambda: agent.run(question))
        else:
            await probe.leave("run", lambda: agent.run(question), leave_after)
        if agent.store is not None:
            probe.check_records("run", await agent.store.list_runs())
        agent.model = good = ScriptedModel([final()])
        await probe.again("second run", lambda: agent.run("And now?"))
        probe.check_sent(c.messages for c in model.calls + good.calls)

    return Case(inputs, play)
