"""Parallel calls (issue 31, part 4): how long one turn of two 0.2 s tool calls takes, with and
without ``tool(..., parallel=True)``, on ``ScriptedModel`` (no engine: the figure is the calls').

    PYTHONPATH=py python -m bench.parallel_calls            # 5 runs of each, medians
    PYTHONPATH=py python -m bench.parallel_calls --runs 20 --seconds 0.5

Figures, not a test: each run is a fresh Agent whose script is one turn calling both tools, then
a final answer; the time is the whole run's, wall clock (``time.perf_counter``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

from aerix import Agent, tool
from aerix.testing import ScriptedModel


def agent(parallel: bool, seconds: float) -> Agent:
    async def wait(input: dict[str, str], ctx: object) -> str:
        await asyncio.sleep(seconds)  # an I/O-bound tool: a fetch, a query
        return f"{input['what']} after {seconds:g} s"

    tools = [tool(name=name, description=f"Fetch {name}.", input={"what": {"type": "string", "required": True}}, run=wait, parallel=parallel) for name in ("one", "two")]
    turn = {"thought": "both", "calls": [{"tool": "one", "input": {"what": "a"}}, {"tool": "two", "input": {"what": "b"}}]}
    script = [json.dumps(turn), json.dumps({"thought": "done", "final": "ok"})]
    return Agent(model=ScriptedModel(script), tools=tools)


async def one_run(parallel: bool, seconds: float) -> float:
    made = agent(parallel, seconds)
    start = time.perf_counter()
    answer = await made.ask("go")
    took = time.perf_counter() - start
    assert answer.text == "ok"
    return took


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.2, help="how long each tool call waits")
    args = ap.parse_args()
    print(f"two {args.seconds:g} s tool calls in one turn, {args.runs} runs each (median, min-max):")
    for parallel in (False, True):
        times = [await one_run(parallel, args.seconds) for _ in range(args.runs)]
        label = "parallel=True " if parallel else "parallel=False"
        print(f"  {label}  {statistics.median(times):.3f} s  ({min(times):.3f}-{max(times):.3f})")


if __name__ == "__main__":
    asyncio.run(main())
