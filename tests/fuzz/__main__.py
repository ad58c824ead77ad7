"""``python -m tests.fuzz [--runs N] [--seed S] [--area NAME ...] [-v]``: see ``tests/fuzz/__init__.py``."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from .areas import AREAS
from .harness import LINEAR_LIMIT, AreaResult, fuzz, report
from .sse_bodies import linearity


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description="Seeded, bounded fuzzing of whole aerix runs.")
    parser.add_argument("--runs", type=int, default=int(os.environ.get("FUZZ_RUNS") or 10000), help="cases per area (default: $FUZZ_RUNS or 10000)")
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed; an area's case i has seed + i")
    parser.add_argument("--area", action="append", choices=list(AREAS), help="only this area (repeatable)")
    parser.add_argument("--no-linearity", action="store_true", help="skip timing SSE parsing on a 1 MB and an 8 MB line")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case: its inputs, its runs' events, what failed")
    args = parser.parse_args(argv)
    areas = args.area or list(AREAS)

    async def play() -> tuple[list[AreaResult], dict[str, Any] | None]:
        results = []
        for area in areas:
            result = await fuzz(area, AREAS[area], args.runs, args.seed, verbose=args.verbose, out=print)
            results.append(result)
            print(f"{area}: {result.cases} cases, {len(result.failures)} failures, {result.seconds:.1f} s", file=sys.stderr, flush=True)
        linear = None if "sse" not in areas or args.no_linearity else await linearity()
        return results, linear

    results, linear = asyncio.run(play())
    print(report(results, linear))
    return 1 if any(r.failures for r in results) or (linear is not None and linear["ratio"] > LINEAR_LIMIT) else 0


if __name__ == "__main__":
    sys.exit(main())
