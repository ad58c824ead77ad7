"""The turn-format ablations side by side: `make bfcl`'s results per variant, and the system
message's size in each variant.

    .venv/bin/python -m bench.bfcl_variants [--results bench/results]
    .venv/bin/python -m bench.bfcl_variants --tokens [--model PATH ...] [--out bench/results/bfcl-system-tokens.json]
    .venv/bin/python -m bench.bfcl_variants --chars

Without options: one Markdown row per results file ``bench/results/bfcl-<model>[-<variant>].json``
(``python -m bench.bfcl --variant NAME`` writes them; the variants are ``FORMATS`` in
``bench/bfcl_agent.py``): accuracy per category and in all, the runs with no accepted turn, the
first turns that held identical calls, the median prompt tokens of the first generation (the
engine's ``usage``), the median completion tokens up to the first accepted turn, and the median
seconds per question.

``--tokens``: the system message of each variant, for the demo's agent (``web/demo-tools.json``)
and for the tool sets of ``SIZED`` (BFCL questions of one, several and many functions), counted in
tokens by each model's own tokenizer: llama-server's ``/tokenize`` on the GGUF (the default
models of ``bench/bfcl.py`` unless ``--model``); written to ``--out`` and printed. ``--chars``:
the same messages in characters, without a server.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import urllib.request
from pathlib import Path
from typing import Any, Iterator

from bench import bfcl_agent, bfcl_data

__all__ = ["SIZED", "main", "system_messages", "tokens_table", "variants_table"]

SIZED = ("simple_python_0", "multiple_0", "parallel_multiple_0")  # one function, several, several for several calls
RESULTS = Path(__file__).resolve().parent / "results"


# -- the results side by side ------------------------------------------------------------------------


def variants_table(results: list[dict[str, Any]], categories: tuple[str, ...] = bfcl_data.CATEGORIES) -> str:
    """One row per results file (a model and a variant), in the order given."""
    head = ["model", "variant", *categories, "all", "no turn", "repeated calls", "prompt tokens", "completion tokens", "s/question"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        s, rows = r["summary"], r["questions"]
        accuracy = [f"{s[c]['accuracy']:.1%}" if c in s else "" for c in (*categories, "all")]
        prompts = [q["usage"][0][0] for q in rows if q.get("usage")]
        completions = [sum(u[1] for u in q["usage"]) for q in rows if q.get("usage")]
        seconds = [q["seconds"] for q in rows if q.get("seconds") is not None]
        cells = [r["model"]["name"], r.get("variant", "default"), *accuracy, str(s["all"]["no_turn"]), str(sum(map(_repeats, rows))),
                 _median(prompts, "{:.0f}"), _median(completions, "{:.0f}"), _median(seconds, "{:.2f}")]  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _repeats(record: dict[str, Any]) -> int:
    """1 when the first accepted turn held two identical calls (same tool, equal input)."""
    calls = (record.get("turn") or {}).get("calls") or []
    keys = [json.dumps([c["tool"], c["input"]], sort_keys=True) for c in calls]
    return int(len(set(keys)) < len(keys))


def _median(values: list[Any], form: str) -> str:
    return form.format(statistics.median(values)) if values else ""


def read_results(folder: Path) -> list[dict[str, Any]]:
    """Every ``bfcl-*.json`` with a summary in ``folder``, by model, then variant as FORMATS lists them."""
    found = []
    for path in sorted(folder.glob("bfcl-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "summary" in data and "model" in data:
            found.append(data)
    order = list(bfcl_agent.FORMATS)
    return sorted(found, key=lambda r: (r["model"]["name"], order.index(r.get("variant", "default")) if r.get("variant", "default") in order else len(order)))


# -- the system message's size -----------------------------------------------------------------------


def system_messages() -> Iterator[tuple[str, str, str]]:
    """``(variant, tool set, system message)`` for each variant of ``FORMATS`` and each tool set:
    ``demo`` (the demo's instructions and tools) and the questions of ``SIZED``."""
    from aerix import Agent
    from aerix.testing import ScriptedModel
    from build.model.demo_tools import INSTRUCTIONS, aerix_tools

    entries = {e["id"]: e for c in bfcl_data.CATEGORIES for e in bfcl_data.questions(c)}
    sets = [("demo", INSTRUCTIONS, aerix_tools())] + [(q, "", bfcl_agent.tools_for(entries[q]["function"])[0]) for q in SIZED]
    for variant, fmt in bfcl_agent.FORMATS.items():
        for name, instructions, tools in sets:
            agent = Agent(model=ScriptedModel([]), instructions=instructions, tools=tools, turn_format=fmt)
            yield variant, name, agent.system


def tokens_table(counts: dict[str, dict[str, dict[str, int]]], unit: str) -> str:
    """``counts``: model -> variant -> tool set -> size; one row per model and variant."""
    sets = ["demo", *SIZED]
    lines = ["| model | variant | " + " | ".join(f"{s} ({unit})" for s in sets) + " |", "|" + "---|" * (len(sets) + 2)]
    for model, variants in counts.items():
        for variant, sizes in variants.items():
            lines.append(f"| {model} | {variant} | " + " | ".join(str(sizes.get(s, "")) for s in sets) + " |")
    return "\n".join(lines)


def count_tokens(models: dict[str, Path], threads: int = 1) -> dict[str, dict[str, dict[str, int]]]:
    """Each model's token count of each variant's system messages, by its llama-server's ``/tokenize``."""
    import tempfile

    from bench.bfcl import NativeServer

    texts = list(system_messages())
    out: dict[str, dict[str, dict[str, int]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in models.items():
            server = NativeServer(path, name, threads, Path(tmp) / f"{name}.log")
            try:
                for variant, tool_set, text in texts:
                    out.setdefault(name, {}).setdefault(variant, {})[tool_set] = _tokenize(server.port, text)
            finally:
                server.stop()
    return out


def _tokenize(port: int, text: str) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", data=json.dumps({"content": text}).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        return len(json.loads(r.read())["tokens"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="where the bfcl-*.json results are (default bench/results)")
    ap.add_argument("--tokens", action="store_true", help="count each variant's system message in tokens (starts llama-server)")
    ap.add_argument("--chars", action="store_true", help="count each variant's system message in characters")
    ap.add_argument("--model", action="append", type=Path, help="a GGUF for --tokens (repeatable; default: bench/bfcl.py's)")
    ap.add_argument("--out", type=Path, default=RESULTS / "bfcl-system-tokens.json", help="where --tokens writes its counts")
    args = ap.parse_args(argv)
    bfcl_data.fetch()
    if args.chars:
        chars: dict[str, dict[str, int]] = {}
        for variant, tool_set, text in system_messages():
            chars.setdefault(variant, {})[tool_set] = len(text)
        print(tokens_table({"(any)": chars}, "characters"))
    elif args.tokens:
        from bench.bfcl import DEFAULT_MODELS

        models = {p.stem: p for p in args.model} if args.model else DEFAULT_MODELS
        missing = [str(p) for p in models.values() if not p.is_file()]
        if missing:
            sys.exit(f"bfcl-variants: no such model: {', '.join(missing)} (make smollm2 puts SmolLM2 in the site)")
        counts = count_tokens(models)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(counts, indent=1) + "\n", encoding="utf-8")
        print(tokens_table(counts, "tokens"))
    else:
        print(variants_table(read_results(args.results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
