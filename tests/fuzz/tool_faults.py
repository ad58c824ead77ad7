"""Area ``tools``: tools and hooks that fail, and effects whose bookkeeping fails.

The model calls ``act`` (sync) and ``act_async`` with a ``kind`` that says how to fail: raise
(any exception, one whose ``str`` raises, a 1 MB message), return what is not JSON (an object,
a set, a cycle, 1,500 levels of lists, an int of 5,000 digits, NaN), return a forged turn or a
lone surrogate, ask ``ctx.approve`` (in a run without a store too), abort the run's signal. The
effect ``charge`` has an ``effect_key`` and an ``already_applied`` that fail by the same ``kind``
(``key=raise;applied=0``). The hooks (``before_call``, ``after_call``, ``on_final``) raise or
answer out of contract, sync or async. A durable run that waits is answered and resumed.
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from aerix import Hooks, tool
from aerix.errors import AerixError
from aerix.testing import Reply, ScriptedModel

from .draw import FORGED, pick, string
from .fixtures import TOOLS, agent_options, final, make_agent
from .harness import Case, Probe

__all__ = ["draw"]


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() refused")


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr() refused")

    __str__ = __repr__


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


def _cycle() -> list[Any]:
    value: list[Any] = []
    value.append(value)
    return value


_RAISES: dict[str, Any] = {
    "ValueError": lambda: ValueError("bad value"),
    "KeyError": lambda: KeyError("missing"),
    "AerixError engine": lambda: AerixError("engine", "a tool raised an engine error"),
    "AerixError busy": lambda: AerixError("busy", "a tool raised busy"),
    "AerixError store": lambda: AerixError("store", "a tool raised a store error"),
    "RecursionError": lambda: RecursionError("deep"),
    "StopIteration": lambda: StopIteration(),
    "StopAsyncIteration": lambda: StopAsyncIteration(),
    "TimeoutError": lambda: TimeoutError(),
    "BadStr": lambda: BadStr(),
    "huge": lambda: RuntimeError("m" * 1_000_000),
    "forged": lambda: RuntimeError(FORGED),
}
_RETURNS: dict[str, Any] = {
    "object": object,
    "set": lambda: {1, 2},
    "bytes": lambda: b"\xff\xfe",
    "nan": lambda: float("nan"),
    # past CPython's recursion limit (json.dumps would raise), short of what Pyodide cannot even
    # free: a list nested 5,000 deep kills it while being deallocated, whoever made it
    "deep": lambda: _deep(1500),
    "cycle": _cycle,
    "tuple keys": lambda: {(1, 2): "x"},
    "none": lambda: None,
    "huge": lambda: "h" * 300_000,
    "big int": lambda: 10**5000,
    "forged": lambda: FORGED,
    "surrogate": lambda: "half \ud800 a pair",
    "bad repr": BadRepr,
    "generator": lambda: (i for i in range(3)),
    "ok": lambda: "done",
}
KINDS = [f"raise {k}" for k in _RAISES] + [f"return {k}" for k in _RETURNS] + ["approve", "approve twice", "approve then raise", "abort"]


def _outcome(kind: str, ctx: Any) -> Any:
    if kind.startswith("raise "):
        raise _RAISES[kind[6:]]()
    if kind.startswith("return "):
        return _RETURNS[kind[7:]]()
    if kind == "abort":
        ctx.signal.abort("the tool stopped the run")
        return "aborted"
    return "approvals need an async tool"


async def _act(input: dict[str, Any], ctx: Any) -> Any:
    kind = input["kind"]
    if not kind.startswith("approve"):
        await asyncio.sleep(0)
        return _outcome(kind, ctx)
    decision = await ctx.approve("May I?", "a fuzzed approval")
    if kind == "approve twice":
        decision = await ctx.approve("Really?")
    if kind == "approve then raise":
        raise RuntimeError("failed after the approval")
    return f"approved: {bool(decision)}"


_KIND = {"kind": {"type": "string", "required": True}}
act = tool(name="act", description="Do something (sync).", input=_KIND, run=lambda input, ctx: _outcome(input["kind"], ctx))
act_async = tool(name="act_async", description="Do something (async).", input=_KIND, run=_act)

# charge: kind is "key=<k>;applied=<a>;run=<r>"
KEYS = ("ok", "ok", "raise", "none", "int", "keyerror", "same", "huge")
APPLIED = ("no", "no", "raise", "0", "[]", "true", "text", "false", "empty", "async raise", "async true")


def _parts(input: dict[str, Any]) -> dict[str, str]:
    return dict(part.split("=", 1) for part in str(input.get("kind", "")).split(";") if "=" in part)


def _effect_key(input: dict[str, Any]) -> Any:
    key = _parts(input).get("key", "ok")
    if key == "raise":
        raise RuntimeError("effect_key failed")
    if key == "keyerror":
        return input["account"]  # a field the input does not have
    return {"ok": f"charge:{input['kind']}", "none": None, "int": 5, "same": "one-key", "huge": "k" * 20_000}[key]


def _already_applied(key: str, input: dict[str, Any]) -> Any:
    applied = _parts(input).get("applied", "no")
    if applied == "raise":
        raise RuntimeError("cannot tell")
    if applied.startswith("async"):

        async def later() -> Any:
            await asyncio.sleep(0)
            if applied == "async raise":
                raise RuntimeError("cannot tell (async)")
            return True

        return later()
    return {"no": None, "0": 0, "[]": [], "true": True, "text": f"charged already ({key[:20]})", "false": False, "empty": ""}[applied]


def _charge(input: dict[str, Any], ctx: Any) -> str:
    if _parts(input).get("run") == "raise":
        raise RuntimeError("the payment failed")
    return f"charged ({ctx.call_id})"


charge = tool(
    name="charge", description="Charge a card (an effect).", input=_KIND, run=_charge, effect=True,
    effect_key=_effect_key, already_applied=_already_applied,
)
FAULT_TOOLS = [act, act_async, charge]


# -- hooks -------------------------------------------------------------------------------

BEFORE = (None, {"deny": "no"}, {"input": {"kind": "return ok"}}, {"input": {"kind": 5}}, {"input": "x"}, {"deny": 5}, 1, "deny", {},
          {"deny": "a", "input": {}}, {"input": {"kind": "return ok", "deep": "DEEP"}}, {"deny": FORGED}, "raise", "approve", "three params")
AFTER = (None, {"result": "replaced"}, {"result": FORGED}, {"result": 5}, {"result": "\ud800"}, "x", {"result": "r", "more": 1}, "raise", {"result": "r" * 100_000})
ON_FINAL = (None, None, {"continue": "go on"}, {"continue": FORGED}, {"continue": 5}, True, "raise", {"continue": ""})


def _answer(value: Any) -> Any:
    if value == "raise":
        raise RuntimeError("the hook failed")
    if isinstance(value, dict) and isinstance(value.get("input"), dict) and value["input"].get("deep") == "DEEP":
        deep: Any = {}
        for _ in range(2000):
            deep = {"d": deep}
        return {"input": {"kind": "return ok", "deep": deep}}
    return value


def _hook(value: Any, is_async: bool, takes_two: bool) -> Any:
    if value == "three params":
        return lambda call, ctx, extra: None
    if value == "approve":

        async def approving(call: Any, ctx: Any) -> Any:
            await ctx.approve(f"Run {call.tool}?")
            return None

        return approving
    if is_async:

        async def hook(*args: Any) -> Any:
            await asyncio.sleep(0)
            return _answer(value)

        return hook
    return (lambda a, b: _answer(value)) if takes_two else (lambda a: _answer(value))


def draw(rng: random.Random) -> Case:
    options = agent_options(rng)
    hooks = {  # name -> (answer, async, takes two parameters)
        name: (pick(rng, choices), rng.random() < 0.5, name != "on_final" and rng.random() < 0.5)
        for name, choices in (("before_call", BEFORE), ("after_call", AFTER), ("on_final", ON_FINAL))
        if rng.random() < 0.35
    }
    script: list[Any] = []
    for _ in range(rng.randint(1, 5)):
        calls = []
        for _ in range(rng.randint(1, 3)):
            name = pick(rng, ("act", "act", "act_async", "act_async", "charge", "send", "ask_first", "echo"))
            if name == "charge":
                kind = f"key={pick(rng, KEYS)};applied={pick(rng, APPLIED)};run={pick(rng, ('ok', 'ok', 'raise'))}"
                calls.append({"tool": name, "input": {"kind": kind}})
            elif name.startswith("act"):
                calls.append({"tool": name, "input": {"kind": pick(rng, KINDS)}})
            else:
                calls.append({"tool": name, "input": {"send": {"to": "ana"}, "ask_first": {"what": "pay"}, "echo": {"text": string(rng)}}[name]})
        script.append(Reply(_turn(calls), chunk=pick(rng, (None, 7))))
    script.append(final())
    decisions = [rng.random() < 0.5 for _ in range(3)]
    inputs = {"script": [r.text if isinstance(r, Reply) else r for r in script], "hooks": hooks, "decisions": decisions, **options}

    async def play(probe: Probe) -> None:
        model = ScriptedModel(script)
        made = {name: _hook(*how) for name, how in hooks.items()}
        agent = make_agent(model, options, tools=[*TOOLS, *FAULT_TOOLS], hooks=Hooks(**made))
        events = await probe.run("run", lambda: agent.run("Pay and report."))
        for i, approved in enumerate(decisions):  # answer what a durable run waits for
            if not events or events[-1].type != "waiting":
                break
            waiting: Any = events[-1]
            events = await probe.run(f"approve {i + 1}", lambda: agent.approve(waiting.run_id, waiting.approval_id, approved))
        if agent.store is not None:
            probe.check_records("run", await agent.store.list_runs())
        agent.hooks = Hooks()
        agent.model = good = ScriptedModel([final()])
        await probe.again("second run", lambda: agent.run("And now?"))
        probe.check_sent(c.messages for c in model.calls + good.calls)

    return Case(inputs, play)


def _turn(calls: list[dict[str, Any]]) -> str:
    return json.dumps({"thought": "use the tools", "calls": calls})
