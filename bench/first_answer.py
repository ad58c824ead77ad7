"""P10: what a person waits for before an answer starts, and the batch-size sweep of the engine.

    .venv/bin/python -m bench.first_answer [--runs 3] [--threads 2] [--models smollm2-q8_0.gguf,...]
        [--modes page,worker] [--n-batch N] [--n-ubatch N] [--engine cacheTypeK:f32,flashAttn:false]
        [--system compact] [--instructions last] [--prefill] [--out bench/results/p10.json]
    .venv/bin/python -m bench.first_answer --ubatch-sweep 32,64,128,256,512 [--model smollm2-q8_0.gguf]
        [--threads 2] [--runs 3]

P10 (also in `make bench`, `bench/run.py --only P10`): a demo task on a new page, in ms from its
send to the first answer token (the first ``final_delta`` event), on 2 engine threads, page and
worker mode, for SmolLM2-135M Q8_0, the bundled model, and aerix-general when the site has it.
"cold": the first agent of a page that has just booted (bench/first_answer.html, a fresh browser
context per load: the model is fetched, nothing is in the engine's cache). "warm": a second agent
with the same instructions and tools, in the same page, on the other demo task (the tasks swap
every run). "other": a third agent in the same page with the same tools and other instructions, on
the cold agent's task; with the default turn format it shares nothing but ``<|im_start|>system``
with the engine's cache, with ``--instructions last`` (turnFormat.instructions) everything in the
system message before its instructions. ``--prefill``: the cold agent calls ``agent.prefill()`` and
awaits it before its send, as a page does while the person types (its time: ``prefill_ms``; the
cold figures then count from the send). Beside each: the first token (the first ``text`` event: the engine has read the
prompt), how many generations came before the answer, and the prompt tokens the engine processed
on the agent's first generation (``usage``: prompt − cached), which shows the warm agent reusing
the cold one's system message.

``--ubatch-sweep``: the page's prompt rate on one model for each llama.cpp ``n_ubatch`` given
(bench/bench.mjs's P9 side, an engine loaded per value, a prompt of about 800 tokens), from
llama.cpp's own timings; the values interleave round by round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
P10_MODELS = ("smollm2-q8_0.gguf", "aerix-tools.gguf")  # SmolLM2 Q8_0 (make smollm2) and the bundled model
P10_ALSO = ("aerix-general-q8_0.gguf",)  # measured too when the site has it (make general-model)
TASKS = ("Do I need an umbrella in Lisbon today?", "What time is it in Tokyo?")  # the demo's kind of task
THREADS = 2
GOALS_MS = {"cold": 4000.0, "warm": 1500.0}  # issue 30
SIDES = ("cold", "warm", "other")  # "other" (other instructions) has no goal
SWEEP_PROMPT = ("The history of weather forecasting begins with the observation of the sky. " * 60).strip()

__all__ = ["GOALS_MS", "TASKS", "engine_options", "figures", "main", "p10", "rows", "sweep_rows", "ubatch_sweep"]


def _summary(values: list[float]) -> dict[str, Any] | None:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)} if values else None


def _load(browser: Any, origin: str, query: dict[str, Any]) -> dict[str, Any]:
    """One page load in a fresh browser context; its window.result."""
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(900_000)
        page.goto(f"{origin}/bench/first_answer.html?{urlencode(query, doseq=True)}")
        page.wait_for_function("() => window.result !== undefined", polling=500)
        result: dict[str, Any] = page.evaluate("window.result")
    finally:
        context.close()
    if not result.get("ok"):
        raise RuntimeError(f"first_answer.html {query}: {result.get('error')}")
    return result


def p10(browser: Any, origin: str, runs: int, *, threads: int = THREADS, models: tuple[str, ...] | None = None,
        modes: tuple[str, ...] = ("page", "worker"), n_batch: int | None = None, n_ubatch: int | None = None,
        engine: dict[str, Any] | None = None, system: str = "full", instructions: str = "first", prefill: bool = False,
        log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """P10 for each model and mode, `runs` page loads each (each boots a page and runs two agents
    on a real model: tens of seconds), interleaved model by model and mode by mode."""
    chosen = models or P10_MODELS + tuple(m for m in P10_ALSO if (SITE / "models" / m).is_file())
    missing = [m for m in chosen if not (SITE / "models" / m).is_file()]
    if missing:
        log(f"P10 skipped {', '.join(missing)}: not in build/site/models (make smollm2 / make general-model)")
    chosen = tuple(m for m in chosen if m not in missing)
    raw: dict[str, list[dict[str, Any]]] = {}
    for i in range(runs):
        tasks = TASKS if i % 2 == 0 else TASKS[::-1]
        for model in chosen:
            for mode in modes:
                query: dict[str, Any] = {"model": f"/models/{model}", "worker": int(mode == "worker"), "threads": threads, "task": list(tasks)}
                query.update({k: v for k, v in (("nBatch", n_batch), ("nUbatch", n_ubatch)) if v is not None})
                query.update({k: int(v) if isinstance(v, bool) else v for k, v in (engine or {}).items()})
                if system != "full":
                    query["system"] = system
                if instructions != "first":
                    query["instructions"] = instructions
                if prefill:
                    query["prefill"] = 1
                result = _load(browser, origin, query)
                raw.setdefault(f"{model} {mode}", []).append(result)
                cold, warm, other = result["cold"], result["warm"], result["other"]
                ahead = f" after a prefill of {cold['prefillMs']:.0f} ms ({cold['prefill']})" if "prefillMs" in cold else ""
                log(f"P10 {model} {mode} run {i + 1}: cold answer {cold['firstAnswerMs']} ms (first token {cold['firstTokenMs']}){ahead}, "
                    f"warm answer {warm['firstAnswerMs']} ms (first token {warm['firstTokenMs']}); warm first prompt {warm['usage'][:1]}; "
                    f"other instructions: answer {other['firstAnswerMs']} ms (first token {other['firstTokenMs']}), first prompt {other['usage'][:1]}")  # fmt: skip
    return {"threads": threads, "runs": runs, "tasks": list(TASKS), "n_batch": n_batch, "n_ubatch": n_ubatch, "engine": engine or {}, "system": system,
            "instructions": instructions, "prefill": prefill, "figures": {key: figures(results) for key, results in raw.items()}, "raw": raw}  # fmt: skip


def figures(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of one model and mode over its page loads (an agent that never answered counts
    in ``answered`` and not in the times)."""
    out: dict[str, Any] = {"ready_ms": _summary([r["ready"] for r in results]), "engine": results[0].get("engine", {})}
    for side in SIDES:
        if any(side not in r for r in results):  # a result from before "other" was measured
            continue
        agents = [r[side] for r in results]
        answered = [a for a in agents if a["firstAnswerMs"] is not None]
        first = [a["usage"][0] for a in agents if a["usage"]]
        out[side] = {
            "first_answer_ms": _summary([a["firstAnswerMs"] for a in answered]),
            "first_token_ms": _summary([a["firstTokenMs"] for a in agents if a["firstTokenMs"] is not None]),
            "page_to_answer_ms": _summary([a["sentAt"] + a["firstAnswerMs"] for a in answered]),
            "generations_to_answer": _summary([a["answerGeneration"] for a in answered]),
            "first_prompt_tokens": _summary([u[0] for u in first]),
            "first_cached_tokens": _summary([u[1] for u in first]),
            "first_processed_tokens": _summary([u[0] - u[1] for u in first]),
            "answered": f"{len(answered)}/{len(agents)}",
            "prefill_ms": _summary([a["prefillMs"] for a in agents if "prefillMs" in a]),
            "endings": sorted({str(a["ending"]) for a in agents}),
        }
    return out


def rows(p: dict[str, Any] | None) -> list[tuple[str, str, str, str, str, str]]:
    """bench/run.py's table lines for P10: (figure, what, goal, median, min–max, context)."""
    out: list[tuple[str, str, str, str, str, str]] = []
    for key, f in (p or {}).get("figures", {}).items():
        for side in (x for x in SIDES if x in f):
            s = f[side]
            answer, goal = s["first_answer_ms"], GOALS_MS.get(side)
            mark = "" if goal is None or answer is None else " ✓" if answer["median"] <= goal else " ✗"
            median = "none" if answer is None else f"{answer['median']:.0f}{mark}"
            spread = "" if answer is None else f"{answer['min']:.0f}–{answer['max']:.0f}"
            token, processed = s["first_token_ms"], s["first_processed_tokens"]
            context = [f"answered in {s['answered']} runs", f"first token {token['median']:.0f} ms" if token else "no token"]
            if s["generations_to_answer"]:
                context.append(f"answer in generation {s['generations_to_answer']['median']:.0f}")
            if processed:
                context.append(f"first generation processed {processed['median']:.0f} of {s['first_prompt_tokens']['median']:.0f} prompt tokens "
                               f"({s['first_cached_tokens']['median']:.0f} from the cache)")  # fmt: skip
            if s.get("prefill_ms"):
                context.append(f"after agent.prefill() of {s['prefill_ms']['median'] / 1000:.1f} s before the send")
            if side == "cold" and s["page_to_answer_ms"]:
                context.append(f"page load → answer {s['page_to_answer_ms']['median'] / 1000:.1f} s (ready at {f['ready_ms']['median'] / 1000:.1f} s)")
            what = "send → first answer token, ms: " + {"cold": "new page, first agent" + (", prefilled" if s.get("prefill_ms") else ""), "warm": "second agent, same page, same system message",
                                                        "other": "third agent, same page, same tools, other instructions"}[side]  # fmt: skip
            out.append((f"P10 {key} {side}", what, "—" if goal is None else f"≤ {goal:.0f} ms", median, spread, "; ".join(context)))
    return out


def ubatch_sweep(browser: Any, origin: str, model: str, threads: int, ubatches: list[int], runs: int,
                 log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """The page's prompt and generation rates for each n_ubatch, `runs` rounds interleaved."""
    from bench.run import bench_page

    page = bench_page(browser, origin, 900_000)
    rates: dict[int, list[dict[str, Any]]] = {u: [] for u in ubatches}
    for i in range(runs):
        for u in ubatches:
            args = {"model": f"/models/{model}", "nThreads": threads, "prompt": f"{SWEEP_PROMPT} ({i})", "n": 8, "runs": 1, "nUbatch": u}
            wasm = page.evaluate("(a) => window.bench.p9Wasm(a)", args)
            t = wasm["timings"][0]
            rates[u].append({"prompt_tok_s": t["prompt_per_second"], "prompt_n": t["prompt_n"], "n_ubatch": wasm["info"].get("n_ubatch")})
            log(f"ubatch {u}: {t['prompt_per_second']:.1f} prompt tok/s over {t['prompt_n']} tokens (engine n_ubatch {wasm['info'].get('n_ubatch')})")
    page.context.close()
    return {"model": model, "threads": threads, "rates": {str(u): r for u, r in rates.items()}}


def sweep_rows(sweep: dict[str, Any]) -> str:
    """Markdown: one row per n_ubatch, the median prompt rate and its range."""
    lines = ["| n_ubatch | prompt tok/s (median) | min–max | prompt tokens |", "|---|---|---|---|"]
    for u, runs in sweep["rates"].items():
        s = _summary([r["prompt_tok_s"] for r in runs])
        if s:
            lines.append(f"| {u} | {s['median']:.1f} | {s['min']:.1f}–{s['max']:.1f} | {runs[0]['prompt_n']} |")
    return "\n".join(lines)


def engine_options(text: str) -> dict[str, Any]:
    """``cacheTypeK:f32,flashAttn:false`` -> the engine options (bench/engine_sweep.py's syntax)."""
    from bench.engine_sweep import parse_variant

    return parse_variant(f"engine={text}")[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="page loads per model and mode (P10), or rounds (sweep)")
    ap.add_argument("--threads", type=int, default=THREADS)
    ap.add_argument("--models", help="comma-separated GGUFs in build/site/models (default: P10's)")
    ap.add_argument("--modes", default="page,worker")
    ap.add_argument("--n-batch", type=int)
    ap.add_argument("--n-ubatch", type=int)
    ap.add_argument("--engine", type=engine_options, default=None, metavar="OPTION:VALUE,...",
                    help="more engine options: cacheTypeK, cacheTypeV (f32, f16, q8_0, ...), flashAttn (true/false)")
    ap.add_argument("--system", choices=("full", "compact"), default="full", help="the agents' system message (turnFormat.system)")
    ap.add_argument("--instructions", choices=("first", "last"), default="first", help="where the agents' instructions go (turnFormat.instructions)")
    ap.add_argument("--prefill", action="store_true", help="the cold agent calls agent.prefill() before its send")
    ap.add_argument("--ubatch-sweep", help="comma-separated n_ubatch values: measure the prompt rate for each instead of P10")
    ap.add_argument("--model", default="smollm2-q8_0.gguf", help="the sweep's model")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "p10.json")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from bench.run import launch, log, start_server, write_result

    server, origin = start_server()
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = launch(pw)
        if args.ubatch_sweep:
            record = ubatch_sweep(browser, origin, args.model, args.threads, [int(u) for u in args.ubatch_sweep.split(",")], args.runs, log)
            text = sweep_rows(record)
        else:
            models = tuple(args.models.split(",")) if args.models else None
            record = p10(browser, origin, args.runs, threads=args.threads, models=models, modes=tuple(args.modes.split(",")),
                         n_batch=args.n_batch, n_ubatch=args.n_ubatch, engine=args.engine, system=args.system,
                         instructions=args.instructions, prefill=args.prefill, log=log)  # fmt: skip
            text = "\n".join("| " + " | ".join(line) + " |" for line in rows(record))
        browser.close()
    server.shutdown()
    write_result(args.out, record, text, started, browser="chromium")
    return 0


if __name__ == "__main__":
    sys.exit(main())
