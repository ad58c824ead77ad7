"""Area ``store``: a store that fails, loses writes and corrupts records, then recovers.

``FaultyStore`` is a ``MemoryStore`` whose methods (``create_run``, ``get_run``, ``save_run``,
``list_runs``, ``get_effect``, ``put_effect``) fail at drawn calls and at a drawn rate: they
raise (``OSError``, ``KeyError``, an ``AerixError`` of kind ``store`` or another, ...), lose a
write, refuse one (as a store does for a stale revision or a lost lease), answer a write as a store
written before revisions does (``None``), store or return a corrupt record (a key gone, a wrong type, an unknown version or status, a
checkpoint without its counters, messages that are not messages), or return a value of the wrong
type. A case plays a few durable runs (answering approvals), may call ``runs()``/``recover()``
while the faults go on (only ``AerixError(kind="store")`` may come out), then stops the faults:
``runs()`` and ``recover()`` must work, each run ``recover()`` offers must resume (or be refused
as unreadable with ``AerixError(kind="store")``), and a new run must answer.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from typing import Any, Callable

from aerix import AerixError, Agent, Limits
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

from .draw import pick
from .fixtures import TOOLS, final
from .harness import Case, Probe

__all__ = ["FaultyStore", "draw"]

METHODS = ("create_run", "get_run", "save_run", "list_runs", "get_effect", "put_effect")
FAULTS: dict[str, tuple[str, ...]] = {
    "create_run": ("raise", "corrupt", "wrong type", "lost"),
    "get_run": ("raise", "corrupt", "wrong type", "gone"),
    "save_run": ("raise", "raise", "corrupt", "lost", "refused", "wrong type"),
    "list_runs": ("raise", "corrupt", "wrong type"),
    "get_effect": ("raise", "wrong type", "stale"),
    "put_effect": ("raise", "lost", "refused", "wrong type"),
}
_ERRORS: tuple[Callable[[], BaseException], ...] = (
    lambda: OSError(28, "No space left on device"),
    lambda: RuntimeError("database is locked"),
    lambda: KeyError("id"),
    lambda: TimeoutError(),
    lambda: ValueError(""),
    lambda: AerixError("store", "quota exceeded"),
    lambda: AerixError("engine", "a store raising another kind of AerixError"),
)
_WRONG: dict[str, tuple[Any, ...]] = {
    "create_run": (None, [], "r", 5),
    "get_run": ([], "r", 5, {"id": 5}),
    "list_runs": (None, {}, [5, "x", None], "runs"),
    "get_effect": (5, b"sent", {"result": "sent"}, ["sent"], True),
}


def corrupt(rng: random.Random, record: Any) -> Any:
    """A copy of ``record`` with one thing wrong (its ``id`` and ``created_at`` stay: the store needs them)."""
    record = copy.deepcopy(record)
    if not isinstance(record, dict):
        return record
    checkpoint = record.get("checkpoint") if isinstance(record.get("checkpoint"), dict) else None
    damage = pick(rng, (
        "drop prompt", "drop status", "drop checkpoint", "drop ending", "drop approvals", "status", "version", "prompt type",
        "checkpoint type", "no messages", "message none", "message no content", "content type", "drop calls_made",
        "drop generations", "pending type", "pending half", "ending type", "ending unknown", "ending half", "approval type",
        "approval half", "approvals list", "status running", "status waiting",
    ))
    if damage.startswith("drop ") and damage[5:] in record:
        del record[damage[5:]]
    elif damage in ("drop calls_made", "drop generations") and checkpoint is not None:
        checkpoint.pop(damage[5:], None)
    elif damage == "status":
        record["status"] = pick(rng, ("bogus", None, 5, "corrupt"))
    elif damage == "status running" or damage == "status waiting":
        record["status"] = damage[7:]
    elif damage == "version":
        record["version"] = pick(rng, (2, "1", None, 0))
    elif damage == "prompt type":
        record["prompt"] = pick(rng, (5, None, ["p"]))
    elif damage == "checkpoint type":
        record["checkpoint"] = pick(rng, ("x", [], 5))
    elif checkpoint is not None and damage in ("no messages", "message none", "message no content", "content type"):
        messages = checkpoint.get("messages") or [{}]
        messages[0] = {"no messages": messages[0], "message none": None, "message no content": {"role": "system"}, "content type": {"role": "system", "content": 5}}[damage]
        checkpoint["messages"] = [] if damage == "no messages" else messages
    elif checkpoint is not None and damage == "pending type":
        checkpoint["pending"] = pick(rng, ("x", 5, []))
    elif checkpoint is not None and damage == "pending half":
        checkpoint["pending"] = {"turn": 1, "final": None}
    elif damage == "ending type":
        record["ending"] = "final"
    elif damage == "ending unknown":
        record["ending"], record["status"] = {"type": "nope"}, "completed"
    elif damage == "ending half":
        record["ending"], record["status"] = {"type": "final"}, "completed"
    elif damage == "approval type":
        record["approvals"] = {"a": 5}
    elif damage == "approval half":
        record["approvals"], record["status"] = {"a": {"id": "a"}}, "waiting"
    elif damage == "approvals list":
        record["approvals"] = ["a"]
    return record


class FaultyStore(MemoryStore):
    """A ``MemoryStore`` that fails at the drawn calls (``plan``: ``(method, nth call) -> fault``)
    and at ``rate`` on any call, while ``armed``."""

    def __init__(self, plan: dict[tuple[str, int], str], rate: float, seed: int) -> None:
        super().__init__()
        self.plan, self.rate, self.rng = plan, rate, random.Random(seed)
        self.armed = True
        self.calls: Counter[str] = Counter()
        self.log: list[str] = []

    def _fault(self, method: str) -> str | None:
        self.calls[method] += 1
        if not self.armed:
            return None
        fault = self.plan.get((method, self.calls[method]))
        if fault is None and self.rng.random() < self.rate:
            fault = pick(self.rng, FAULTS[method])
        if fault is not None:
            self.log.append(f"{method}#{self.calls[method]}: {fault}")
        if fault == "raise":
            raise pick(self.rng, _ERRORS)()
        return fault

    def _wrong(self, method: str) -> Any:
        return copy.deepcopy(pick(self.rng, _WRONG[method]))

    async def create_run(self, run: dict[str, Any]) -> Any:
        fault = self._fault("create_run")
        if fault == "wrong type":
            return self._wrong("create_run")
        if fault == "lost":
            return copy.deepcopy(run)
        stored = await super().create_run(corrupt(self.rng, run) if fault == "corrupt" else run)
        return stored

    async def get_run(self, run_id: str) -> Any:
        fault = self._fault("get_run")
        if fault == "wrong type":
            return self._wrong("get_run")
        if fault == "gone":
            return None
        run = await super().get_run(run_id)
        return corrupt(self.rng, run) if fault == "corrupt" and run is not None else run

    async def save_run(self, run: dict[str, Any], revision: int | None = None, holder: str | None = None) -> Any:
        fault = self._fault("save_run")
        if fault in ("refused", "wrong type"):
            return False if fault == "refused" else None  # None: what a store written before revisions answers
        if fault != "lost":
            return await super().save_run(corrupt(self.rng, run) if fault == "corrupt" else run, revision, holder)
        return True

    async def list_runs(self) -> Any:
        fault = self._fault("list_runs")
        if fault == "wrong type":
            return self._wrong("list_runs")
        runs = await super().list_runs()
        if fault == "corrupt" and runs:
            at = self.rng.randrange(len(runs))
            runs[at] = corrupt(self.rng, runs[at])
        return runs

    async def get_effect(self, key: str) -> Any:
        fault = self._fault("get_effect")
        if fault == "wrong type":
            return self._wrong("get_effect")
        if fault == "stale":
            return "recorded by someone else"
        return await super().get_effect(key)

    async def put_effect(self, key: str, result: str, run_id: str | None = None, holder: str | None = None) -> Any:
        fault = self._fault("put_effect")
        if fault in ("refused", "wrong type"):
            return False if fault == "refused" else None
        return True if fault == "lost" else await super().put_effect(key, result, run_id, holder)


def _model_text(rng: random.Random) -> str:
    return pick(rng, (
        final("done"),
        '{"thought": "send", "calls": [{"tool": "send", "input": {"to": "ana"}}]}',
        '{"thought": "send twice", "calls": [{"tool": "send", "input": {"to": "ana"}}, {"tool": "send", "input": {"to": "ana"}}]}',
        '{"thought": "ask", "calls": [{"tool": "ask_first", "input": {"what": "pay"}}]}',
        '{"thought": "echo", "calls": [{"tool": "echo", "input": {"text": "hi"}}, {"tool": "add", "input": {"a": 1, "b": 2}}]}',
        "not json",
    ))


def draw(rng: random.Random) -> Case:
    plan = {(pick(rng, METHODS), rng.randint(1, 12)): "" for _ in range(rng.randint(0, 4))}
    plan = {at: pick(rng, FAULTS[at[0]]) for at in plan}
    rate = pick(rng, (0.0, 0.0, 0.05, 0.2))
    store_seed = rng.randrange(1 << 30)
    replies = [_model_text(rng) for _ in range(rng.randint(2, 8))]
    prompts = [f"task {i}" for i in range(rng.randint(1, 3))]
    decisions = [rng.random() < 0.5 for _ in range(4)]
    peek = rng.random() < 0.3  # call runs()/recover() while the faults go on
    inputs = {"plan": plan, "rate": rate, "store_seed": store_seed, "replies": replies, "prompts": prompts, "decisions": decisions, "peek": peek}

    async def play(probe: Probe) -> None:
        store = FaultyStore(plan, rate, store_seed)
        queue = list(replies)
        model = ScriptedModel(lambda messages, options: queue.pop(0) if queue else final("done"))
        agent = Agent(model=model, instructions="Fuzz.", tools=TOOLS, limits=Limits(turns=4, retries=1), store=store)
        answers = iter(decisions)
        for i, prompt in enumerate(prompts):
            events = await probe.run(f"run {i + 1}", lambda: agent.run(prompt))
            while events and events[-1].type == "waiting" and (approved := next(answers, None)) is not None:
                waiting: Any = events[-1]
                events = await probe.run(f"approve {waiting.approval_id}", lambda: agent.approve(waiting.run_id, waiting.approval_id, approved), allow=_refused)
            if peek:
                for what in ("runs", "recover"):
                    try:
                        await (agent.runs() if what == "runs" else agent.recover())
                    except AerixError as e:
                        if e.kind != "store":
                            probe.fail("recover", f"{what}() while failing: AerixError {e.kind}", f"{what}() raised {e!r} while the store failed")
                    except Exception as e:
                        probe.fail("recover", f"{what}() while failing: {type(e).__name__}", f"{what}() raised {type(e).__name__}: {e} while the store failed")
        probe.note(f"faults: {store.log}")
        store.armed = False
        await _after_the_faults(probe, agent, store)
        agent.model = good = ScriptedModel([final()])
        await probe.again("new run", lambda: agent.run("And now?"))
        probe.check_sent(c.messages for c in model.calls + good.calls)

    return Case(inputs, play)


def _unreadable(e: BaseException) -> bool:
    """The documented refusal of a record that cannot be read."""
    return isinstance(e, AerixError) and e.kind == "store"


def _refused(e: BaseException) -> bool:
    """``approve``'s documented refusals: a record that cannot be read, an approval it does not
    hold (a lost or corrupt write took it) or one already answered."""
    return isinstance(e, AerixError) and e.kind in ("store", "options")


async def _after_the_faults(probe: Probe, agent: Agent, store: FaultyStore) -> None:
    for what in ("runs", "recover"):
        try:
            found = await (agent.runs() if what == "runs" else agent.recover())
        except Exception as e:
            probe.fail("recover", f"{what}() raised {type(e).__name__}", f"{what}() after the faults stopped: {type(e).__name__}: {e}")
            return
    for record in found[:3]:
        await probe.run(f"resume {record.status} run", lambda: agent.resume(record.id), allow=_unreadable)
