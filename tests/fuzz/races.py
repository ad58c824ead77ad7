"""Area ``races``: executors and ``recover()`` racing over one durable run through a slow store.

``SlowStore`` is a ``MemoryStore`` whose every call lets the event loop run a drawn number of
times: a read is made first and answered late (its copy may be stale by then), a write waits
first. A case starts run ``r1`` on agent A and, as concurrent tasks, lets agent B resume it and
agent R call ``recover()`` at drawn moments while the clock jumps past the lease (A's or B's sync
tool ``block`` jumps it too, as a blocked event loop would, so a lease lapses mid-run and another
executor takes over). Then the races stop and the run is finished. Checked:

    ending   exactly one ending: the run's record ends, once ended no write changes it, and
             every stream that ended (``final``/``end``) shows the recorded ending, or the
             "lease ... was lost" stop of an executor another one took the run over from
    effect   no effect applied after its result was recorded (and, when ``send`` has an
             ``already_applied`` mark, none applied twice)
    stale    no newer record replaced by an older one: each save the store accepted is the
             revision after the one before, and the checkpoint never goes back
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

from aerix import AerixError, Agent, Limits, tool
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

from .draw import pick
from .harness import Case, Probe

__all__ = ["SlowStore", "draw"]

ENDED = ("completed", "failed", "cancelled")
LOST = "was lost to another executor"


class SlowStore(MemoryStore):
    """A ``MemoryStore`` that yields to the event loop ``pick(rng, delays)`` times per call, and
    logs each write it accepts (``saves``, ``effects``) with a sequence number (``seq``)."""

    def __init__(self, seed: int, delays: tuple[int, ...]) -> None:
        super().__init__()
        self.rng, self.delays = random.Random(seed), delays
        self.seq = 0
        self.saves: list[dict[str, Any]] = []
        self.effects: list[tuple[str, int]] = []

    async def _slow(self) -> None:
        for _ in range(pick(self.rng, self.delays)):
            await asyncio.sleep(0)

    async def create_run(self, run: dict[str, Any]) -> dict[str, Any]:
        await self._slow()
        return await super().create_run(run)

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        run = await super().get_run(run_id)
        await self._slow()
        return run

    async def list_runs(self) -> list[dict[str, Any]]:
        runs = await super().list_runs()
        await self._slow()
        return runs

    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> bool:
        await self._slow()
        written = await super().save_run(run, revision, holder)
        if written:  # what the checks need of it
            self.seq += 1
            generations = (run.get("checkpoint") or {}).get("generations", 0)
            self.saves.append({"id": run["id"], "status": run["status"], "revision": run.get("revision"), "generations": generations, "ending": run.get("ending")})
        return written

    async def get_effect(self, key: str) -> str | None:
        result = await super().get_effect(key)
        await self._slow()
        return result

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> bool:
        await self._slow()
        written = await super().put_effect(key, result, run_id, holder)
        if written:
            self.seq += 1
            self.effects.append((key, self.seq))
        return written

    async def acquire_lease(self, name: str, holder: str, expires_at: float, now: float) -> bool:
        await self._slow()
        return await super().acquire_lease(name, holder, expires_at, now)

    async def release_lease(self, name: str, holder: str) -> None:
        await self._slow()
        await super().release_lease(name, holder)

    async def get_lease(self, name: str) -> dict[str, Any] | None:
        lease = await super().get_lease(name)
        await self._slow()
        return lease


class World:
    """What a case shares: the clock, the store, and each application of an effect. The tools
    are made once (a tool builds its input check on first use) and find the case's world here."""

    current: World | None = None

    def __init__(self, store: SlowStore, marked: bool) -> None:
        self.now = 1000.0
        self.store = store
        self.applied: list[tuple[str, int]] = []  # (effect key, the store's seq when it was applied)
        self.marked = marked
        World.current = self

    def clock(self) -> float:
        return self.now

    def agent(self, script: list[str], answer: str) -> Agent:
        def reply(messages: list[dict[str, Any]], options: Any) -> str:
            n = sum(1 for m in messages if m["role"] == "assistant")  # any executor goes on the same way
            return script[n] if n < len(script) else json.dumps({"thought": "t", "final": answer})

        tools = [_BLOCK, _SEND_MARKED if self.marked else _SEND]
        return Agent(model=ScriptedModel(reply), tools=tools, store=self.store, clock=self.clock, limits=Limits(turns=8))


def _world() -> World:
    assert World.current is not None
    return World.current


def _block(input: dict[str, Any], ctx: Any) -> str:  # sync: nothing else runs meanwhile
    _world().now += input["s"]
    return f"blocked {input['s']} s"


def _send(input: dict[str, Any], ctx: Any) -> str:
    world = _world()
    world.applied.append((f"send:{input['to']}", world.store.seq))
    return f"sent to {input['to']}"


def _applied(key: str, input: dict[str, Any]) -> str | None:
    return f"sent to {input['to']}" if any(k == key for k, _ in _world().applied) else None


_BLOCK = tool(name="block", description="Blocks.", input={"s": {"type": "number", "required": True}}, run=_block)
_SEND_INPUT = {"to": {"type": "string", "required": True}}
_SEND = tool(name="send", description="Sends.", input=_SEND_INPUT, run=_send, effect=True, effect_key=lambda input: f"send:{input['to']}")
_SEND_MARKED = tool(
    name="send", description="Sends.", input=_SEND_INPUT, run=_send, effect=True, effect_key=lambda input: f"send:{input['to']}", already_applied=_applied
)


def _turn(rng: random.Random) -> str:
    calls = [
        pick(rng, ({"tool": "block", "input": {"s": pick(rng, (0, 10, 40, 100))}}, {"tool": "send", "input": {"to": pick(rng, ("ana", "bob", "cy"))}}))
        for _ in range(rng.randint(1, 2))
    ]
    return json.dumps({"thought": "t", "calls": calls})


def _refused(e: BaseException) -> bool:
    """A resume refused because another executor has the run, or before A created it."""
    return isinstance(e, AerixError) and (e.kind == "busy" or (e.kind == "options" and "no run" in e.message))


def draw(rng: random.Random) -> Case:
    script = [_turn(rng) for _ in range(rng.randint(1, 4))]
    moves = {who: [(rng.randint(0, 40), pick(rng, ("resume", "jump", "jump")) if who == "b" else "recover") for _ in range(rng.randint(0, 3))] for who in ("b", "r")}
    inputs = {"script": script, "moves": moves, "delays": pick(rng, ((0, 1), (0, 0, 1, 3), (0, 2, 8))), "marked": rng.random() < 0.5, "store_seed": rng.randrange(1 << 30)}

    async def play(probe: Probe) -> None:
        world = World(SlowStore(inputs["store_seed"], inputs["delays"]), inputs["marked"])
        a, b, r = world.agent(script, "A"), world.agent(script, "B"), world.agent(script, "R")
        streams: list[list[Any]] = []

        async def run(label: str, start: Any) -> None:
            events = await probe.run(label, start, allow=_refused)
            if events:
                streams.append(events)

        async def mover(who: str) -> None:
            for i, (wait, move) in enumerate(moves[who]):
                for _ in range(wait):
                    await asyncio.sleep(0)
                if move == "resume":
                    await run(f"b resume {i + 1}", lambda: b.resume("r1"))
                elif move == "jump":
                    world.now += 100.0  # past every lease: whoever holds one may be taken over
                else:
                    await r.recover()

        await asyncio.gather(run("a run", lambda: a.run("go", run_id="r1")), mover("b"), mover("r"))
        world.now += 1000.0  # the races are over: finish the run
        for attempt in range(4):
            record = await world.store.get_run("r1")
            if record is not None and record["status"] in ENDED:
                break
            await r.recover()
            await run(f"finish {attempt + 1}", lambda: b.resume("r1"))
        _check(probe, world, streams)

    return Case(inputs, play)


def _check(probe: Probe, world: World, streams: list[list[Any]]) -> None:
    store = world.store
    record = store._runs.get("r1")
    if record is None or record["status"] not in ENDED:
        probe.fail("ending", "never ended", f"r1 is {None if record is None else record['status']} after the races")
        return
    for events in streams:
        last = events[-1].to_dict() if events else None
        if last is not None and last["type"] in ("final", "end") and last != record["ending"] and LOST not in str(last.get("message")):
            probe.fail("ending", "another ending", f"a stream ended {last}, the record {record['ending']}")
    saves = [s for s in store.saves if s["id"] == "r1"]
    for before, after in zip(saves, saves[1:]):
        if before["status"] in ENDED:
            probe.fail("ending", "ended run written over", f"after {before['status']} the record was written {after['status']}")
        if after.get("revision") != before.get("revision", 0) + 1:
            probe.fail("stale", "revision", f"a save of revision {after.get('revision')} followed revision {before.get('revision')}")
        if after["generations"] < before["generations"]:
            probe.fail("stale", "checkpoint went back", f"a save at generation {after['generations']} followed one at {before['generations']}")
    recorded = {}
    for key, seq in store.effects:
        recorded.setdefault(key, seq)
    for key, seq in world.applied:
        if key in recorded and recorded[key] <= seq:
            probe.fail("effect", "applied after its record", f"{key} applied at {seq}, recorded at {recorded[key]}")
    counts = [k for k, _ in world.applied]
    if world.marked and len(counts) != len(set(counts)):
        probe.fail("effect", "applied twice", f"applications {world.applied} with an already_applied mark")
