"""Chaos, measured (issue 32): N worker processes (``python -m aerix worker``) on one store execute
M durable runs with effect tools and approvals, while a random worker is killed with SIGKILL every
few seconds and started again; then every run is checked and the figures printed.

    make chaos                                          # 4 workers, 200 runs
    PYTHONPATH=py python -m bench.chaos --workers 2 --runs 10 --store sqlite:////tmp/c.sqlite3

Each run's prompt is its script (the agent is :func:`factory`, a scripted model, no engine):
``steps`` calls of the effect tool ``step``, each ``sleep`` seconds long; one run in three asks a
person first (``ctx.approve``), which the driver answers through the API (``Agent.answer``), as a
service's approval page would; the worker that next polls continues it. A step's effect key is
``<run tag>/<n>`` (``effect_key``) and each application is a row in a ledger (SQLite, beside the
logs, no unique key so that a double shows), which ``already_applied`` reads: an effect whose
record a kill cut off is found there, not applied again (docs/durable.md, "Effect tools").

Checked at the end: every run ended (exactly one ending in its record, ``final``; at most one
``ended`` log line across all workers), no effect key applied twice, none missing, no run lost;
every worker drained by SIGTERM exited 0. Printed: throughput (runs per minute, first enqueue to
last ending) and, per kill, the recovery time: from the SIGKILL to the first line of another
worker taking over a run the killed one held (``state=recovered``), about ``--lease-s`` plus a poll.

The store: ``--store URL`` (``postgresql://...`` or ``sqlite:///...``, as ``python -m aerix worker``
takes it); by default a throwaway PostgreSQL when one is installed (:func:`throwaway_postgres`),
else a SQLite file in a temporary folder (a line says so). The report names the store it ran on.
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LEDGER_ENV = "AERIX_CHAOS_LEDGER"


# -- the agent the workers execute ------------------------------------------------------------------


def _script(prompt: str) -> dict[str, Any]:
    pairs = dict(part.split("=", 1) for part in prompt.split() if "=" in part)
    return {"tag": pairs["tag"], "steps": int(pairs["steps"]), "sleep": float(pairs["sleep"]), "approve": pairs.get("approve") == "1"}


def _reply(messages: list[dict[str, str]], options: dict[str, Any]) -> str:
    script = _script(messages[1]["content"])
    done = sum(1 for m in messages if m["role"] == "assistant")
    if done < script["steps"]:
        step = {"tag": script["tag"], "n": done + 1, "sleep": script["sleep"], "ask": script["approve"] and done == 0}
        return json.dumps({"thought": "next", "calls": [{"tool": "step", "input": step}]})
    return json.dumps({"thought": "done", "final": f"{script['tag']}: {script['steps']} steps"})


class Ledger:
    """Every application of an effect, one row each (no unique key: a double is countable)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        self.db.execute("create table if not exists applied (key text not null, pid integer not null, t real not null)")

    def add(self, key: str) -> None:
        self.db.execute("insert into applied values (?, ?, ?)", (key, os.getpid(), time.time()))

    def has(self, key: str) -> bool:
        return self.db.execute("select 1 from applied where key = ?", (key,)).fetchone() is not None

    def counts(self) -> dict[str, int]:
        return dict(self.db.execute("select key, count(*) from applied group by key").fetchall())


def factory(store: Any) -> Any:
    """``--agent bench.chaos:factory``: the chaos agent on ``store``, its ledger from $AERIX_CHAOS_LEDGER."""
    from aerix import Agent, tool
    from aerix.testing import ScriptedModel

    ledger = Ledger(os.environ[LEDGER_ENV])

    async def run_step(input: dict[str, Any], ctx: Any) -> str:
        if input["ask"] and not (await ctx.approve(f"Step {input['n']} of {input['tag']}?")).approved:
            return "refused"
        await asyncio.sleep(input["sleep"])
        ledger.add(f"{input['tag']}/{input['n']}")
        return f"step {input['n']} done"

    fields = {"tag": "string", "n": "integer", "sleep": "number", "ask": "boolean"}
    step = tool(
        name="step",
        description="One step with a side effect.",
        input={k: {"type": t, "required": True} for k, t in fields.items()},
        run=run_step,
        effect=True,
        effect_key=lambda input: f"{input['tag']}/{input['n']}",
        already_applied=lambda key, input: True if ledger.has(key) else None,
    )
    return Agent(model=ScriptedModel(_reply), tools=[step], store=store, name="chaos")


# -- the store ------------------------------------------------------------------------------------


def throwaway_postgres(stack: ExitStack) -> str | None:
    """The DSN of a fresh database on a throwaway PostgreSQL started for this run (build/pg.py:
    ``initdb`` into a temporary folder, a loopback port; stopped and removed when ``stack``
    closes), or ``None``, saying why on stdout, when none can be had here."""
    from build.pg import missing_reason
    from build.pg import throwaway_postgres as start

    reason = missing_reason()
    if reason is not None:
        print(f"chaos: no throwaway PostgreSQL ({reason}): the store is a SQLite file")
        return None
    return stack.enter_context(start()).new_database("chaos")


# -- the driver -----------------------------------------------------------------------------------


class Fleet:
    """The worker processes: each slot's current process, its log, and every kill."""

    def __init__(self, store_url: str, folder: Path, args: argparse.Namespace) -> None:
        self.url, self.folder, self.args = store_url, folder, args
        self.where = store_url  # the store's repr, for the report
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: list[Path] = []
        self.kills: list[dict[str, Any]] = []
        self.incarnations: dict[str, int] = {}

    def start(self, slot: str) -> None:
        n = self.incarnations[slot] = self.incarnations.get(slot, 0) + 1
        log = self.folder / f"{slot}.{n}.log"
        self.logs.append(log)
        env = {**os.environ, LEDGER_ENV: str(self.folder / "ledger.sqlite3"), "PYTHONPATH": os.pathsep.join([str(ROOT / "py"), str(ROOT)])}
        argv = [sys.executable, "-m", "aerix", "worker", "--store", self.url, "--agent", "bench.chaos:factory", "--name", f"{slot}.{n}"]
        argv += ["--lease-s", str(self.args.lease_s), "--poll-s", str(self.args.poll_s), "--concurrency", str(self.args.concurrency)]
        with log.open("w") as err:
            self.procs[slot] = subprocess.Popen(argv, env=env, cwd=ROOT, stderr=err, stdout=subprocess.DEVNULL)

    def kill_one(self, rng: random.Random) -> None:
        slot = rng.choice(sorted(self.procs))
        proc, log = self.procs[slot], self.folder / f"{slot}.{self.incarnations[slot]}.log"
        proc.send_signal(signal.SIGKILL)
        at = time.time()
        proc.wait()
        self.kills.append({"slot": slot, "at": at, "log": log, "held": held(log)})
        self.start(slot)

    def drain(self) -> list[int]:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        return [proc.wait(timeout=120) for proc in self.procs.values()]


def lines(log: Path) -> list[dict[str, str]]:
    from aerix.worker import parse_line

    return [parse_line(line) for line in log.read_text(errors="replace").splitlines() if line.startswith("t=")]


def held(log: Path) -> set[str]:
    """The runs a worker's log shows it holding (taken, not yet released)."""
    holding: set[str] = set()
    for p in lines(log):
        if p.get("state") in ("taken", "resumed", "recovered"):
            holding.add(p["run"])
        elif p.get("state") == "released":
            holding.discard(p.get("run", ""))
    return holding


async def enqueue(api: Any, runs: int, rng: random.Random) -> list[tuple[str, str]]:
    made = []
    for i in range(runs):
        approve = "1" if i % 3 == 0 else "0"
        prompt = f"tag=c{i} steps=3 sleep={rng.choice([0.05, 0.1, 0.2])} approve={approve}"
        made.append(((await api.start(prompt, idempotency_key=f"chaos-{i}")).id, f"c{i}"))
    return made


async def answer_waiting(api: Any) -> int:
    """Approve every run waiting for a person; how many were answered."""
    from aerix.errors import AerixError

    answered = 0
    for record in await api.runs():
        pending = record.pending_approval() if record.status == "waiting" else None
        if pending is None:
            continue
        try:
            await api.answer(record.id, pending["id"], True, approver={"kind": "user", "id": "chaos-driver"})
            answered += 1
        except AerixError as e:
            if e.kind not in ("busy", "options"):  # busy: a worker holds it for a moment; options: answered meanwhile
                raise
    return answered


async def drive(args: argparse.Namespace, url: str, folder: Path) -> int:
    from aerix.worker_cli import open_store

    os.environ[LEDGER_ENV] = str(folder / "ledger.sqlite3")
    store = open_store(url)
    print(f"chaos: store {store!r}", flush=True)  # its repr: never a password
    try:
        return await _drive(args, store, Fleet(url, folder, args))
    finally:
        closed = store.close()
        if asyncio.iscoroutine(closed):
            await closed


async def _drive(args: argparse.Namespace, store: Any, fleet: Fleet) -> int:
    api = factory(store)
    rng = random.Random(args.seed)
    fleet.where = repr(store)
    began = time.time()
    made = await enqueue(api, args.runs, rng)
    for i in range(args.workers):
        fleet.start(f"w{i + 1}")
    next_kill, deadline, ended = time.time() + args.kill_every, time.time() + args.timeout, 0
    try:
        while time.time() < deadline:
            await answer_waiting(api)
            ended = sum(1 for r in await api.runs() if r.ended)
            if ended == len(made):
                break
            if time.time() >= next_kill:
                fleet.kill_one(rng)
                next_kill = time.time() + args.kill_every * rng.uniform(0.5, 1.5)
            await asyncio.sleep(0.2)
    finally:
        exits = fleet.drain()
    return report(await check(api, made, fleet, exits), began, fleet, args)


async def check(api: Any, made: list[tuple[str, str]], fleet: Fleet, exits: list[int]) -> dict[str, Any]:
    records = {r.id: r for r in await api.runs()}
    counts = Ledger(os.environ[LEDGER_ENV]).counts()
    ended_lines: dict[str, int] = {}
    for log in fleet.logs:
        for p in lines(log):
            if p.get("state") == "ended":
                ended_lines[p["run"]] = ended_lines.get(p["run"], 0) + 1
    lost = [rid for rid, _ in made if rid not in records or not records[rid].ended]
    not_final = [rid for rid, _ in made if rid in records and records[rid].ended and (records[rid].ending or {}).get("type") != "final"]
    missing = [f"{tag}/{n}" for _, tag in made for n in (1, 2, 3) if counts.get(f"{tag}/{n}", 0) == 0]
    doubles = {k: c for k, c in counts.items() if c > 1}
    last = max((r.updated_at for r in records.values() if r.ended), default=time.time())
    return {"lost": lost, "not_final": not_final, "missing": missing, "doubles": doubles, "twice_ended": [r for r, c in ended_lines.items() if c > 1], "exits": exits, "last": last, "ended": len(made) - len(lost)}


def recoveries(fleet: Fleet) -> list[float]:
    """Per run a kill orphaned: seconds from the kill to another worker taking it over: mostly
    ``state=recovered`` (its record ``running``, the lease expired), or ``resumed`` where the kill
    fell between the killed worker taking the lease of a waiting or interrupted run and recording
    it ``running``."""
    taken_over: dict[str, list[float]] = {}
    for log in fleet.logs:
        for p in lines(log):
            if p.get("state") in ("recovered", "resumed") and "run" in p:
                taken_over.setdefault(p["run"], []).append(float(p["t"]))
    out = []
    for kill in fleet.kills:
        for run in kill["held"]:
            later = [t for t in taken_over.get(run, []) if t >= kill["at"]]
            if later:
                out.append(min(later) - kill["at"])
    return out


def report(found: dict[str, Any], began: float, fleet: Fleet, args: argparse.Namespace) -> int:
    took = max(found["last"] - began, 1e-9)
    rec = recoveries(fleet)
    orphaned = sum(len(k["held"]) for k in fleet.kills)
    print(f"chaos: {args.workers} workers x {args.concurrency}, {args.runs} runs, store {fleet.where}, lease {args.lease_s:g} s, poll {args.poll_s:g} s, seed {args.seed}")
    print(f"  ended {found['ended']}/{args.runs} in {took:.1f} s: {60 * found['ended'] / took:.1f} runs/min")
    print(f"  kills {len(fleet.kills)} (SIGKILL), runs orphaned {orphaned}, taken over {len(rec)}")
    if rec:
        print(f"  recovery (kill -> taken over): median {statistics.median(rec):.2f} s, max {max(rec):.2f} s")
    print(f"  lost runs {len(found['lost'])}, endings not final {len(found['not_final'])}, runs with two 'ended' lines {len(found['twice_ended'])}")
    print(f"  effects applied twice {len(found['doubles'])}, effects missing {len(found['missing'])}; drained workers' exit statuses {sorted(set(found['exits']))}")
    print(f"  logs and ledger: {fleet.folder}")
    bad = found["lost"] or found["not_final"] or found["missing"] or found["doubles"] or found["twice_ended"] or any(found["exits"])
    print("chaos: FAILED" if bad else "chaos: every run has exactly one ending, no effect applied twice, no run lost")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--store", default=None, help="postgresql://... or sqlite:///...; default: a throwaway PostgreSQL if installed, else a SQLite file")
    parser.add_argument("--concurrency", type=int, default=2, help="runs per worker at once")
    parser.add_argument("--kill-every", type=float, default=3.0, help="seconds between kills, on average")
    parser.add_argument("--lease-s", type=float, default=2.0)
    parser.add_argument("--poll-s", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=900.0, help="give up after this many seconds")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        folder = Path(tempfile.mkdtemp(prefix="aerix-chaos-"))
        url = args.store or throwaway_postgres(stack) or f"sqlite:///{folder}/runs.sqlite3"
        return asyncio.run(drive(args, url, folder))


if __name__ == "__main__":
    sys.exit(main())
