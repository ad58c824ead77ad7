"""What an agent's first prompt costs in tokens: the system message for the demo's tools and for
BFCL-sized tool sets, in the default and compact turn formats, counted by each model's tokenizer.

    .venv/bin/python -m bench.prompt_tokens [--gguf PATH ...] [--json]

The tokenizer is the GGUF's own byte-level BPE, rebuilt with the `tokenizers` package from the
file's header (``build.general.base.tokenizer``; no weights are read and no server is started).
The tool sets: the demo's five tools and instructions (``build.model.demo_tools``, what the page's
demo sends), and tool sets the size of BFCL's (one function, as in ``simple``; four, the most in
``multiple``; and eight) drawn from ``build.general``'s generated tool families (seed 7), never
from BFCL's text. Each is counted alone (the system message) and as the whole first prompt, the
ChatML text web/prompt.mjs sends for it with the demo's first task. For SmolLM2-sized models the
last column turns the prompt into seconds at the page's measured prompt rate (``make bench`` P9,
SmolLM2-135M Q8_0, 2 threads: 79.6 tok/s, 2026-12-01): a reading of that measurement, not a
measurement of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from aerix import Agent, TurnFormat
from aerix.testing import ScriptedModel
from aerix.tools import Tool

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_GGUFS = (
    Path.home() / ".cache" / "aerix" / "smollm2" / "SmolLM2-135M-Instruct-Q8_0.gguf",  # make smollm2 (aerix-general has its tokenizer)
    ROOT / "models" / "aerix-tools.gguf",  # the bundled model
)
FORMATS = {
    "default": TurnFormat(),
    "compact": TurnFormat(system="compact"),
    "compact+thought-none": TurnFormat(system="compact", thought="none"),
}
FIRST_TASK = "Do I need an umbrella in Lisbon today?"  # the demo's prompt box (web/index.html)
FAMILY_SEED = 7
SIZES = (1, 4, 8)  # BFCL: simple has one function, multiple up to four; eight for the trend
PAGE_PROMPT_TOK_S = 79.6  # make bench P9, SmolLM2-135M Q8_0 in the page, 2 threads (bench/README.md)

__all__ = ["FORMATS", "SIZES", "count", "first_prompt", "family_tools", "main", "page_rate", "table", "tool_sets"]


def family_tools(n: int, seed: int = FAMILY_SEED) -> list[Tool]:
    """``n`` generated tools (``build.general.families``): the first family that has exactly ``n``,
    else tools of successive families, the first of each name, until there are ``n``."""
    from build.general.families import Runtime, aerix_tools, make_families

    families = make_families(seed)
    for family in families:
        if len(family.tools) == n:
            return aerix_tools(family, Runtime())
    out: dict[str, Tool] = {}
    for family in families:
        for t in aerix_tools(family, Runtime()):
            out.setdefault(t.name, t)
            if len(out) == n:
                return list(out.values())
    raise ValueError(f"the families of seed {seed} hold fewer than {n} tools")


def tool_sets() -> list[tuple[str, str, list[Tool]]]:
    """``(name, instructions, tools)``: the demo's agent, then a generated set of each of ``SIZES``."""
    from build.model.demo_tools import INSTRUCTIONS, aerix_tools

    return [("demo (5 tools)", INSTRUCTIONS, aerix_tools())] + [(f"{n} generated tool{'s' * (n > 1)}", "", family_tools(n)) for n in SIZES]


def first_prompt(system: str, user: str) -> str:
    """The first prompt as web/prompt.mjs renders it for a ChatML model (its text mode)."""
    from build.models import chatml

    return chatml([{"role": "system", "content": system}, {"role": "user", "content": user}])


def load_tokenizer(gguf: Path) -> Any:
    """The GGUF's tokenizer, from its header only (the tensors are not read)."""
    from gguf import GGUFReader

    from build.general.base import Base, tokenizer

    reader = GGUFReader(gguf)
    return tokenizer(Base(gguf, dict(reader.fields), {}, {}))


def count(encode: Any, sets: Sequence[tuple[str, str, list[Tool]]]) -> list[dict[str, Any]]:
    """One row per tool set and format: the system message's tokens and the first prompt's.
    ``encode(text) -> number of tokens``."""
    rows = []
    for name, instructions, tools in sets:
        for fmt_name, fmt in FORMATS.items():
            system = Agent(model=ScriptedModel([]), instructions=instructions, tools=tools, turn_format=fmt).system
            rows.append({"tools": name, "format": fmt_name, "system_chars": len(system), "system_tokens": encode(system),
                         "prompt_tokens": encode(first_prompt(system, FIRST_TASK))})  # fmt: skip
    return rows


def table(model: str, rows: list[dict[str, Any]], rate: float | None = None) -> str:
    """Markdown: each row with its tokens against the default format of the same tools, and with a
    ``rate`` (prompt tokens/s) the seconds its first prompt takes to read at that rate."""
    default = {r["tools"]: r["prompt_tokens"] for r in rows if r["format"] == "default"}
    head = "| model | tools | format | system message (chars) | system message (tokens) | first prompt (tokens) | vs default |"
    lines = [head + (f" at {rate} tok/s |" if rate else ""), "|---" * (8 if rate else 7) + "|"]
    for r in rows:
        change = r["prompt_tokens"] - default[r["tools"]]
        line = (f"| {model} | {r['tools']} | {r['format']} | {r['system_chars']} | {r['system_tokens']} | {r['prompt_tokens']} | "
                f"{change:+d} ({change / default[r['tools']]:+.0%}) |")  # fmt: skip
        lines.append(line + (f" {r['prompt_tokens'] / rate:.1f} s |" if rate else ""))
    return "\n".join(lines)


def page_rate(model: str) -> float | None:
    """P9's measured page prompt rate for SmolLM2-135M Q8_0 and the models that share its size
    (aerix-general is SmolLM2 with an adapter merged); None for any other model."""
    return PAGE_PROMPT_TOK_S if any(k in model.lower() for k in ("smollm2", "aerix-general")) else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", action="append", type=Path, help="a GGUF whose tokenizer counts (repeatable; default: SmolLM2 Q8_0 and the bundled model)")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON instead of tables")
    args = ap.parse_args(argv)
    ggufs = args.gguf or [p for p in DEFAULT_GGUFS if p.is_file()]
    if not ggufs:
        sys.exit("prompt_tokens: no GGUF to count with (make smollm2 fetches SmolLM2; or --gguf PATH)")
    sets = tool_sets()
    counted: dict[str, list[dict[str, Any]]] = {}
    for gguf in ggufs:
        tok = load_tokenizer(gguf)
        counted[gguf.stem] = count(lambda text: len(tok.encode(text, add_special_tokens=False).ids), sets)
    if args.json:
        print(json.dumps(counted, indent=1))
    else:
        print("\n\n".join(table(model, rows, page_rate(model)) for model, rows in counted.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
