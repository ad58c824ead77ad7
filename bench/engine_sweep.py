"""Where the page's prompt time goes (issue 30): one model's prompt and generation rates in the page
for variants of the engine's options (KV cache types, flash attention, batch sizes) and of
Chromium's V8 flags, on a short and a long prompt, each engine's first run ("cold": its wasm code
as first compiled, in workers that have computed nothing yet) and its second ("warm").

    .venv/bin/python -m bench.engine_sweep [--model smollm2-q8_0.gguf] [--threads 2] [--rounds 1]
        [--variant 'NAME=option:value,option:value' ...] [--js-flags '' --js-flags '--no-liftoff']
        [--out bench/results/engine-sweep.json]

Rates are llama.cpp's own timings (bench/bench.mjs's ``p9Wasm``: a fresh engine per prompt, the
prompt run twice with a different last token, ``cache_prompt`` off, 32 tokens generated). A
variant's options are ``loadEngine``'s (web/engine.mjs): ``cacheTypeK``, ``cacheTypeV``,
``flashAttn``, ``nBatch``, ``nUbatch``. Each ``--js-flags`` value is its own browser (Chromium's
``--js-flags``: V8's, e.g. ``--no-liftoff`` compiles all wasm with the optimising tier at once);
variants, prompts and browsers interleave round by round. Figures, not a pass/fail test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench.first_answer import SWEEP_PROMPT
from bench.run import P9_PROMPT, bench_page

ROOT = Path(__file__).resolve().parent.parent
PROMPTS = {"short": P9_PROMPT, "long": SWEEP_PROMPT}  # ~160 and ~790 SmolLM2 tokens: P9's and the n_ubatch sweep's
VARIANTS = {
    "default": {},
    "kv f16, flash off": {"flashAttn": False},
    "kv f32, flash off": {"cacheTypeK": "f32", "cacheTypeV": "f32", "flashAttn": False},
    "kv f32, flash on": {"cacheTypeK": "f32", "cacheTypeV": "f32", "flashAttn": True},
    "kv q8_0, flash on": {"cacheTypeK": "q8_0", "cacheTypeV": "q8_0", "flashAttn": True},
}

__all__ = ["PROMPTS", "VARIANTS", "parse_variant", "sweep", "table", "main"]


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME=option:value,option:value`` -> (name, options); numbers and true/false as such."""
    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"a variant is NAME=option:value,...; got {text!r}")
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = part.partition(":")
        if not sep:
            raise argparse.ArgumentTypeError(f"variant {name!r}: {part!r} is not option:value")
        options[key] = {"true": True, "false": False}.get(value, int(value) if value.isdigit() else value)
    return name.strip(), options


def sweep(browsers: dict[str, Any], origin: str, model: str, threads: int, variants: dict[str, dict[str, Any]], rounds: int,
          log: Callable[[str], None] = print) -> dict[str, Any]:  # fmt: skip
    """Each browser × variant × prompt, ``rounds`` times: the cold and warm run's rates."""
    pages = {flags: bench_page(browser, origin, 900_000) for flags, browser in browsers.items()}
    runs: list[dict[str, Any]] = []
    for r in range(rounds):
        for name, options in variants.items():
            for flags, page in pages.items():
                for length, prompt in PROMPTS.items():
                    args = {"model": f"/models/{model}", "nThreads": threads, "prompt": f"{prompt} [{r}]", "n": 32, "runs": 2, **options}
                    out = page.evaluate("(a) => window.bench.p9Wasm(a)", args)
                    for i, t in enumerate(out["timings"]):
                        runs.append({"variant": name, "js_flags": flags, "prompt": length, "run": "cold" if i == 0 else "warm", "round": r,
                                     "prompt_n": t["prompt_n"], "prompt_tok_s": t["prompt_per_second"],
                                     "gen_tok_s": t["predicted_per_second"]})  # fmt: skip
                    cold, warm = runs[-2], runs[-1]
                    log(f"{name} [{flags or 'no js flags'}] {length} ({cold['prompt_n']} tokens): prompt {cold['prompt_tok_s']:.1f} cold, "
                        f"{warm['prompt_tok_s']:.1f} warm tok/s; generation {cold['gen_tok_s']:.1f} / {warm['gen_tok_s']:.1f} tok/s")  # fmt: skip
    for page in pages.values():
        page.context.close()
    return {"model": model, "threads": threads, "rounds": rounds, "variants": variants, "js_flags": list(browsers), "runs": runs}


def table(record: dict[str, Any]) -> str:
    """Markdown: one row per variant and browser, the median rates of each prompt, cold and warm."""
    def med(rows: list[dict[str, Any]], key: str) -> str:
        return f"{statistics.median(r[key] for r in rows):.1f}" if rows else "–"

    head = "| variant | V8 flags | short prompt cold / warm | long prompt cold / warm | generation (long) cold / warm |"
    lines = [head, "|---|---|---|---|---|"]
    for name in record["variants"]:
        for flags in record["js_flags"]:
            pick = lambda length, run: [r for r in record["runs"] if (r["variant"], r["js_flags"], r["prompt"], r["run"]) == (name, flags, length, run)]  # noqa: E731
            cells = [f"{med(pick(p, 'cold'), 'prompt_tok_s')} / {med(pick(p, 'warm'), 'prompt_tok_s')}" for p in PROMPTS]
            gen = f"{med(pick('long', 'cold'), 'gen_tok_s')} / {med(pick('long', 'warm'), 'gen_tok_s')}"
            lines.append(f"| {name} | {flags or '(none)'} | {cells[0]} | {cells[1]} | {gen} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-q8_0.gguf", help="a GGUF in build/site/models")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--variant", type=parse_variant, action="append", help="NAME=option:value,... (default: VARIANTS)")
    ap.add_argument("--js-flags", action="append", help="V8 flags of one browser; repeat for several ('' for none)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "engine-sweep.json")
    args = ap.parse_args(argv)
    if not (ROOT / "build" / "site" / "models" / args.model).is_file():
        sys.exit(f"engine_sweep: build/site/models/{args.model} is missing (make smollm2)")
    variants = dict(args.variant) if args.variant else VARIANTS

    from playwright.sync_api import sync_playwright

    from bench.run import launch, log, start_server, write_result

    server, origin = start_server()
    started = time.monotonic()
    with sync_playwright() as pw:
        flags = args.js_flags or [""]
        browsers = {f: launch(pw, extra=[f"--js-flags={f}"] if f else []) for f in flags}
        record = sweep(browsers, origin, args.model, args.threads, variants, args.rounds, log)
        for b in browsers.values():
            b.close()
    server.shutdown()
    write_result(args.out, record, table(record), started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
