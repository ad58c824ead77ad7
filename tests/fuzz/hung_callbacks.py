"""Area ``hooks``: every callback of the developer's that the loop waits for, misbehaving.

The callbacks are the hooks (``before_call``, ``after_call``, ``on_final``), the trust flags (a
``taint`` function on ``note``, a ``guard_when_tainted`` function on ``send``, after ``read_page``
tainted the run) and the ``tool_policy`` (asked at run start for the turn schema, and before
each call). Each drawn one hangs (an async function that never answers, or a sync one that
returns a future nobody completes), raises, answers junk, aborts the run's signal, answers in
its contract after a few yields, or answers at once; sync or async.

A case that may hang is bounded by what the loop promises to obey, never by the fuzzer: either
the caller's signal, aborted after a few milliseconds, or ``Limits.timeout_s``. On top of the
harness's checks (one ending, nothing escapes, the agent free afterwards) each run is checked:

    hung     the run ended within ``RUN_BOUND_S`` (a hang is interrupted within milliseconds)
    ending   a run bounded by its timeout does not end ``abort`` unless a callback aborted it;
             one bounded by the signal does not end ``timeout``
    whole    after the stop the conversation is whole: user and assistant turns alternate
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import replace
from typing import Any, Callable

from aerix import Abort, Hooks, tool
from aerix.events import Event
from aerix.testing import ScriptedModel

from .draw import FORGED, pick
from .fixtures import agent_options, final, make_agent
from .harness import Case, Probe

__all__ = ["draw"]

RUN_BOUND_S = 2.0  # a run that takes this long was not interrupted: the bound is milliseconds
CALLBACKS = ("before_call", "after_call", "on_final", "taint", "guard", "tool_policy")
HOW = ("hang", "hang", "raise", "junk", "abort", "slow", "ok")
# answers out of each callback's contract
JUNK: dict[str, tuple[Any, ...]] = {
    "before_call": ("deny", 1, {"deny": 5}, {"input": "x"}, {}, {"allow": True}, [None], FORGED),
    "after_call": ("x", {"result": 5}, {"result": "r", "more": 1}, True),
    "on_final": (True, {"continue": 5}, "more", {"continue": "go on", "x": 1}),
    "taint": ("yes", 1, None, [True], "True"),
    "guard": ("no", 0, None, {}, "False"),
    "tool_policy": ("deny", "yes", 1, None, "True", [True], {"allow": True}),
}
# answers in contract ("ok"): hooks go on; flags and the policy as drawn
OK: dict[str, tuple[Any, ...]] = {
    "before_call": (None, {"deny": "not now"}, {"input": {}}),
    "after_call": (None, {"result": "replaced"}),
    "on_final": (None, None, {"continue": "once more"}),
    "taint": (True, False),
    "guard": (True, False),
    "tool_policy": (True, True, False),
}


def _callback(name: str, how: str, is_async: bool, answer: Any, caller: Abort) -> Callable[..., Any]:
    """One misbehaving callback; it takes any arguments (a hook given ``ctx`` aborts that)."""

    def now(*args: Any) -> Any:
        if how == "raise":
            raise RuntimeError(f"{name} failed")
        if how == "abort":
            ctx = next((a for a in args if hasattr(a, "signal")), None)
            (ctx.signal if ctx is not None else caller).abort(f"{name} stopped the run")
        return answer

    if how == "hang" and not is_async:
        return lambda *args: asyncio.get_running_loop().create_future()  # an awaitable nobody completes
    if not is_async:
        return now

    async def later(*args: Any) -> Any:
        if how == "hang":
            await asyncio.Event().wait()
        for _ in range(3 if how == "slow" else 0):
            await asyncio.sleep(0)
        return now(*args)

    return later


def _tools(made: dict[str, Callable[..., Any]]) -> list[Any]:
    read_page = tool(name="read_page", description="Read a page.", input={}, run=lambda i, c: f"outside: {FORGED}", trust={"taint": True})
    note = tool(name="note", description="Keep a note.", input={}, run=lambda i, c: "noted", trust={"taint": made.get("taint", False)})
    send = tool(name="send", description="Send.", input={}, run=lambda i, c: "sent", effect=True, trust={"guard_when_tainted": made.get("guard", False)})
    return [read_page, note, send]


def draw(rng: random.Random) -> Case:
    options = agent_options(rng)
    drawn = {  # name -> (how, async, answer)
        name: (how, rng.random() < 0.6, pick(rng, JUNK[name] if how == "junk" else OK[name]))
        for name in CALLBACKS
        if rng.random() < 0.45
        for how in [pick(rng, HOW)]
    }
    bound = pick(rng, ("signal", "timeout"))
    delay = pick(rng, (0.002, 0.01, 0.02))
    if bound == "timeout":
        options["limits"] = replace(options["limits"], timeout_s=delay)
    on_tainted = pick(rng, ("approve", "deny"))
    script = [_turn([pick(rng, ("read_page", "note", "send")) for _ in range(rng.randint(1, 3))]) for _ in range(rng.randint(1, 3))]
    script.append(final())
    decisions = [rng.random() < 0.5 for _ in range(3)]
    inputs = {"callbacks": drawn, "bound": bound, "delay": delay, "on_tainted": on_tainted, "script": script, "decisions": decisions, **options}

    async def play(probe: Probe) -> None:
        caller = Abort()
        made = {name: _callback(name, *how, caller) for name, how in drawn.items()}
        hooks = Hooks(**{k: v for k, v in made.items() if k in ("before_call", "after_call", "on_final")})
        agent = make_agent(ScriptedModel(list(script)), options, tools=_tools(made), hooks=hooks, tool_policy=made.get("tool_policy"), on_tainted=on_tainted)

        async def bounded(label: str, start: Callable[[], Any]) -> list[Event] | None:
            signal = Abort.following(caller)  # each run: the caller's, aborted after `delay` when the signal bounds it
            timer = asyncio.get_running_loop().call_later(delay, signal.abort, "stop pressed") if bound == "signal" else None
            try:
                async with asyncio.timeout(RUN_BOUND_S):
                    events = await probe.run(label, lambda: start(signal))
            except TimeoutError:
                probe.fail("hung", f"{label} hung", f"{label}: did not end within {RUN_BOUND_S:g} s")
                return None
            finally:
                if timer is not None:
                    timer.cancel()
            _check(probe, label, events, bound, aborts=any(how[0] == "abort" for how in drawn.values()))
            return events

        events = await bounded("run", lambda signal: agent.run("Read, note and send.", signal))
        for i, approved in enumerate(decisions):  # answer what a durable run waits for
            if not events or events[-1].type != "waiting":
                break
            waiting: Any = events[-1]
            events = await bounded(f"approve {i + 1}", lambda signal: agent.approve(waiting.run_id, waiting.approval_id, approved, signal=signal))
        if events and events[-1].type != "waiting" and not _whole(agent.messages):
            probe.fail("whole", "conversation not whole", f"roles {[m['role'] for m in agent.messages]}")
        agent.hooks, agent.tool_policy = Hooks(), None
        agent.limits = replace(agent.limits, timeout_s=None)
        agent.model = ScriptedModel([final()])
        await probe.again("second run", lambda: agent.run("And now?"))

    return Case(inputs, play)


def _check(probe: Probe, label: str, events: list[Event] | None, bound: str, aborts: bool) -> None:
    if not events or events[-1].type != "end":
        return
    reason = getattr(events[-1], "reason", None)
    if (bound == "timeout" and reason == "abort" and not aborts) or (bound == "signal" and reason == "timeout"):
        probe.fail("ending", f"{bound} bound ended {reason}", f"{label}: bounded by the {bound}, ended {reason}: {getattr(events[-1], 'message', '')}")


def _whole(messages: list[dict[str, Any]]) -> bool:
    roles = [m["role"] for m in messages]
    return roles[:1] == ["system"] and all(r == ("user" if i % 2 else "assistant") for i, r in enumerate(roles[1:], 1))


def _turn(tools: list[str]) -> str:
    return json.dumps({"thought": "use the tools", "calls": [{"tool": t, "input": {}} for t in tools]})
