"""Agent state writes (issue 26): the time and memory of N collection upserts, with a store that
keeps the state by item, beside the same store seen through ``get_state``/``put_state`` only
(each write reads and writes the whole state, as every write did before), side by side.

    PYTHONPATH=py python bench/state_writes.py              # 3,000 upserts per case
    PYTHONPATH=py python bench/state_writes.py --n 500 --only memory

Figures, not a test. Each case runs in a fresh process, so its peak memory is its own: the
total time, the mean time of a write over the first and over the last tenth of the writes (the
same when a write costs the same however much the state holds), and the peak resident memory
less what the process held before the first write. The SQLite file is in the system's temp
folder (pass ``TMPDIR`` for another disk): each write is a transaction, so an fsync, which on a
file is most of a write's time once a write no longer grows with the state.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any

CASES = {
    "sqlite-file": "SQLiteStore on a file",
    "sqlite-memory": 'SQLiteStore(":memory:")',
    "memory": "MemoryStore",
}


class WholeOnly:
    """``store`` seen through the Store protocol alone: agent state is kept whole."""

    def __init__(self, store: Any) -> None:
        from aerix.stores import STORE_METHODS

        for name in STORE_METHODS:
            setattr(self, name, getattr(store, name))


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


async def _one(case: str, kept: str, n: int) -> dict[str, Any]:
    from pydantic import BaseModel

    from aerix import Agent
    from aerix.stores import MemoryStore
    from aerix.stores.sqlite import SQLiteStore
    from aerix.testing import ScriptedModel

    class Todo(BaseModel):
        id: str
        title: str
        done: bool = False

    folder = tempfile.mkdtemp(prefix="aerix-state-bench-")
    store: Any = None
    if case == "sqlite-file":
        store = SQLiteStore(os.path.join(folder, "state.sqlite3"))
    elif case == "sqlite-memory":
        store = SQLiteStore(":memory:")
    elif case == "memory":
        store = MemoryStore()
    agent = Agent(model=ScriptedModel([]), name="planner", store=store if kept == "by item" or store is None else WholeOnly(store), state={"todos": Todo})
    todos = agent.state.collection("todos")
    before = _rss_mib()
    times = []
    start = time.perf_counter()
    for i in range(n):
        t = time.perf_counter()
        await todos.upsert({"id": f"t{i:05}", "title": f"Task {i}: buy milk and call Ana about the weekend"})
        times.append(time.perf_counter() - t)
    total = time.perf_counter() - start
    tenth = max(1, n // 10)
    assert len(await todos.list()) == n
    if case == "sqlite-file":
        store.close()
        os.remove(os.path.join(folder, "state.sqlite3"))
    os.rmdir(folder)
    return {
        "total_s": total,
        "first_ms": 1000 * sum(times[:tenth]) / tenth,
        "last_ms": 1000 * sum(times[-tenth:]) / tenth,
        "peak_mib": _rss_mib() - before,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--only", choices=[*CASES, "none"], action="append", help="run only these stores (repeatable)")
    parser.add_argument("--case", nargs=2, help=argparse.SUPPRESS)  # one case, in its own process
    args = parser.parse_args()
    if args.case:
        print(json.dumps(asyncio.run(_one(args.case[0], args.case[1], args.n))))
        return
    rows = [(case, kept) for case in (args.only or [*CASES, "none"]) for kept in (("by item", "whole") if case != "none" else ("in memory",))]
    print(f"{args.n} upserts of one collection's documents, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"{'store':<28} {'kept':<10} {'total s':>9} {'first ms/write':>15} {'last ms/write':>14} {'peak MiB':>9}")
    for case, kept in rows:
        out = subprocess.run([sys.executable, __file__, "--n", str(args.n), "--case", case, kept], capture_output=True, text=True, check=True)
        f = json.loads(out.stdout)
        name = CASES.get(case, "no store (Agent in memory)")
        print(f"{name:<28} {kept:<10} {f['total_s']:>9.2f} {f['first_ms']:>15.2f} {f['last_ms']:>14.2f} {f['peak_mib']:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
