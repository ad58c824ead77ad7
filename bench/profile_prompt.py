"""Which wasm functions the page's engine spends its time in (issue 30): Chromium's own CPU
profiler over every thread of the page (the engine's worker and its llama.cpp threads, which run
the ggml kernels), while one model reads a long prompt and while it decodes.

    .venv/bin/python -m bench.profile_prompt [--model smollm2-q8_0.gguf] [--threads 2]
        [--engine cacheTypeK:f32,flashAttn:false] [--top 20] [--out bench/results/profile-prompt.json]

The engine is loaded first (web/engine.mjs's ``loadEngine``, outside the trace), then two
completions are traced with Playwright's ``browser.start_tracing`` (category
``disabled-by-default-v8.cpu_profiler``): "prompt", a ~790-token prompt and one generated token;
"decode", a short prompt and 96 generated tokens. wllama's wasm keeps its function names (a
``name`` section), so the samples name ggml's kernels. Each phase's table: the functions with the
most self time over all threads, as a share of the samples taken on the engine's threads (those
that ran wasm), and llama.cpp's own timings of that completion beside it. A reading aid, not a
pass/fail test.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable

from bench.first_answer import SWEEP_PROMPT

ROOT = Path(__file__).resolve().parent.parent
PHASES = {"prompt": (SWEEP_PROMPT, 1), "decode": ("Tell me a long story about the sea.", 96)}
CATEGORIES = "disabled-by-default-v8.cpu_profiler,v8"
IDLE = ("(idle)", "(program)", "(garbage collector)")

LOAD = """async ({ model, nThreads, options }) => {
  const { loadEngine } = await import("/engine.mjs");
  window.profiled = await loadEngine({ model, wllamaBase: "/wllama/", nThreads, manifest: "/models/models.json", ...options });
  return window.profiled.info;
}"""
RUN = """async ({ prompt, n }) => {
  let timings = null;
  await window.profiled.wllama.createCompletion({ prompt, stream: true, max_tokens: n, temperature: 0, ignore_eos: true,
    cache_prompt: false, stream_options: { include_usage: true }, onData: (c) => (timings = c.timings ?? timings) });
  return timings;
}"""

__all__ = ["PHASES", "self_times", "table", "main"]


def self_times(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Self time (µs) per function over every profiled thread of a Chrome trace, and per thread:
    the ``Profile``/``ProfileChunk`` events, their nodes' ``callFrame.functionName`` and
    ``samples`` with ``timeDeltas`` (a sample's time is the delta that follows it)."""
    names: dict[tuple[Any, Any], dict[int, str]] = defaultdict(dict)  # (pid, profile id) -> node id -> function
    wasm: dict[tuple[Any, Any], set[int]] = defaultdict(set)
    samples: dict[tuple[Any, Any], list[tuple[int, int]]] = defaultdict(list)
    threads: dict[tuple[Any, Any], Any] = {}
    for e in events:
        if e.get("name") not in ("Profile", "ProfileChunk"):
            continue
        key = (e.get("pid"), e.get("id"))
        threads.setdefault(key, e.get("tid"))
        data = (e.get("args") or {}).get("data") or {}
        profile = data.get("cpuProfile") or {}
        for node in profile.get("nodes") or []:
            frame = node.get("callFrame") or {}
            name = frame.get("functionName") or "(anonymous)"
            names[key][node["id"]] = name
            if frame.get("codeType") == "wasm" or frame.get("url", "").startswith("wasm://"):
                wasm[key].add(node["id"])
        ids, deltas = profile.get("samples") or [], data.get("timeDeltas") or []
        samples[key] += list(zip(ids, deltas[1:] + [0]))
    total: Counter[str] = Counter()
    per_thread: dict[str, dict[str, Any]] = {}
    engine_us = 0
    for key, pairs in samples.items():
        mine: Counter[str] = Counter()
        for node, us in pairs:
            mine[names[key].get(node, f"node {node}")] += max(us, 0)
        total.update(mine)
        busy = sum(us for name, us in mine.items() if name not in IDLE)
        ran_wasm = any(node in wasm[key] for node, _ in pairs)
        per_thread[f"{key[0]}:{threads[key]}"] = {"busy_us": busy, "wasm_us": sum(us for node, us in pairs if node in wasm[key]), "engine": ran_wasm}
        if ran_wasm:
            engine_us += busy
    return {"total_us": dict(total), "engine_busy_us": engine_us, "threads": per_thread}


def table(phase: str, times: dict[str, Any], top: int, timings: dict[str, Any] | None) -> str:
    busy = times["engine_busy_us"] or 1
    head = f"### {phase}"
    if timings:
        head += (f" (llama.cpp: prompt {timings.get('prompt_n')} tokens at {timings.get('prompt_per_second', 0):.1f} tok/s, "
                 f"{timings.get('predicted_n')} generated at {timings.get('predicted_per_second', 0):.1f} tok/s)")  # fmt: skip
    engine = sorted((t["wasm_us"] for t in times["threads"].values() if t["engine"]), reverse=True)
    head += f"; threads running wasm: {len(engine)} ({', '.join(f'{us / 1e6:.1f} s' for us in engine)} in wasm)"
    lines = [head, "", "| function | self ms | share of the engine threads' busy time |", "|---|---|---|"]
    skip = {*IDLE, "(root)"}
    for name, us in Counter({k: v for k, v in times["total_us"].items() if k not in skip}).most_common(top):
        lines.append(f"| `{name}` | {us / 1000:.0f} | {100 * us / busy:.1f} % |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from bench.first_answer import engine_options

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-q8_0.gguf", help="a GGUF in build/site/models")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--engine", type=engine_options, default={}, metavar="OPTION:VALUE,...")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "profile-prompt.json")
    args = ap.parse_args(argv)
    if not (ROOT / "build" / "site" / "models" / args.model).is_file():
        sys.exit(f"profile_prompt: build/site/models/{args.model} is missing (make smollm2)")

    from playwright.sync_api import sync_playwright

    from bench.run import bench_page, launch, log, start_server, write_result

    server, origin = start_server()
    started = time.monotonic()
    record: dict[str, Any] = {"model": args.model, "threads": args.threads, "engine": args.engine, "phases": {}}
    texts = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as tmp:
        browser = launch(pw)
        page = bench_page(browser, origin, 900_000)
        record["info"] = page.evaluate(LOAD, {"model": f"/models/{args.model}", "nThreads": args.threads, "options": args.engine})
        page.evaluate(RUN, {"prompt": "Warm up.", "n": 4})  # the first completion's one-off costs stay out of the trace
        for phase, (prompt, n) in PHASES.items():
            trace = Path(tmp) / f"{phase}.json"
            browser.start_tracing(page=None, path=str(trace), categories=CATEGORIES.split(","))
            timings = page.evaluate(RUN, {"prompt": prompt, "n": n})
            browser.stop_tracing()
            events = json.loads(trace.read_text(encoding="utf-8"))
            times = self_times(events["traceEvents"] if isinstance(events, dict) else events)
            record["phases"][phase] = {"timings": timings, **times}
            texts.append(table(phase, times, args.top, timings))
            log(f"profiled {phase}: {len(times['total_us'])} functions, engine threads busy {times['engine_busy_us'] / 1e6:.1f} s")
        browser.close()
    server.shutdown()
    write_result(args.out, record, "\n\n".join(texts), started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
