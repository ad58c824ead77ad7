"""``python -m aerix run``: an agent on an OpenAI-compatible server, its events streamed to the terminal.

    python -m aerix run --base-url http://127.0.0.1:8080/v1 --model qwen "Umbrella for Lisbon?"
    python -m aerix run --base-url ... --model ... --json "..."     # one JSON event per line
    python -m aerix serve --root build/site --proxy http://127.0.0.1:8080/v1   # aerix.serve
    python -m aerix worker --store postgresql://... --agent myapp:make_agent   # aerix.worker_cli

The model's text streams as it comes; every other event is a line of its own. Control
characters from the model (ESC, CR, BEL, DEL, C1...; all but newline and tab) are printed as
``\\x1b``-style escapes, never obeyed; ``--json`` lines escape them too. Ctrl-C aborts
the run (the server stops generating) and it ends ``end abort``; a second Ctrl-C quits at once.
Exit status: 0 on a final answer, 1 on any other ending, 130 when aborted, 2 on bad arguments.
Needs httpx on CPython: ``pip install 'aerix[openai]'``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal as signals
import sys
from contextlib import aclosing
from typing import Any, Sequence, TextIO

from . import __version__
from .abort import Abort
from .agent import Agent
from .engines.openai import OpenAIModel
from .errors import AerixError
from .events import Event
from .serve import KEY_ENV, arguments, command
from .worker_cli import arguments as worker_arguments, command as worker_command

__all__ = ["main", "parser", "run_command"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all C0 but tab and newline, DEL, C1
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f]")


_ABOUT = """\
aerix: an agent runtime. A Python turn loop that runs in the web page (Pyodide) and on CPython;
here, on CPython, it drives a model on an OpenAI-compatible server (llama.cpp's llama-server,
vLLM, ...) and streams the run's events to the terminal (`run`), or serves the page with a
proxy to such a server that holds its API key, so the page holds none (`serve`), or executes the
durable runs of a store beside other workers (`worker`)."""

_EXAMPLES = """\
examples:
  python -m aerix run --base-url http://127.0.0.1:8080/v1 --model qwen "Umbrella for Lisbon?"
  AERIX_PROXY_KEY=sk-... python -m aerix serve --root build/site --proxy https://api.example/v1

`python -m aerix worker --store URL --agent module:factory` executes durable runs (docs/server.md).
`python -m aerix COMMAND --help` lists a command's options. `run`'s exit status: 0 on a final
answer, 1 on any other ending, 130 when aborted (Ctrl-C), 2 on bad arguments. `run` needs httpx:
pip install 'aerix[openai]'; `serve` needs nothing more."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m aerix", description=_ABOUT, epilog=_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action="version", version=f"aerix {__version__}")
    commands = top.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="run an agent on an OpenAI-compatible server and stream its events",
        description="Run one prompt through an agent on an OpenAI-compatible server. The model's text streams\nas it comes; every other event is a line of its own (with --json, one JSON event per line).",
        epilog="example:\n  python -m aerix run --base-url http://127.0.0.1:8080/v1 --model qwen --json \"Umbrella for Lisbon?\"",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("prompt", help="what to ask")
    run.add_argument("--base-url", required=True, help="the API root, /v1 included (http://127.0.0.1:8080/v1)")
    run.add_argument("--model", required=True, help="the model name the server knows")
    run.add_argument("--api-key", default=os.environ.get("AERIX_API_KEY"), help="sent as a Bearer token (default: $AERIX_API_KEY)")
    run.add_argument("--instructions", default="", help="the agent's instructions (the system message starts with them)")
    run.add_argument("--max-tokens", type=int, default=512, help="per generation (default 512)")
    run.add_argument("--turns", type=int, default=8, help="generations per run, retries included (default 8)")
    run.add_argument("--retries", type=int, default=2, help="extra attempts after a refused or cut turn (default 2)")
    run.add_argument("--temperature", type=float, default=None, help="sampling temperature (not sent unless given)")
    run.add_argument("--seed", type=int, default=None, help="sampling seed (not sent unless given)")
    run.add_argument("--no-constrain", action="store_true", help="send no turn schema; parse and retry only")
    run.add_argument("--json", action="store_true", help="print each event as one JSON line")
    serving = commands.add_parser(
        "serve",
        help="serve the site; with --proxy, forward its /v1 to a server with the key",
        description="Serve the built site with the headers the page needs (cross-origin isolation, the CSP).\nWith --proxy URL, the page's /v1/models and /v1/chat/completions go to that OpenAI-compatible\nserver with the API key from the environment, so the page needs no key:\nboot({engine: {baseUrl: \"/v1\", model}}). Needs no extra: the standard library only.",
        epilog=f"example:\n  {KEY_ENV}=sk-... python -m aerix serve --root build/site --proxy http://127.0.0.1:8080/v1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    arguments(serving)
    working = commands.add_parser(
        "worker",
        help="execute the durable runs of a store, beside other workers",
        description="Execute the durable runs of a store: queued runs, interrupted ones, answered approvals, and\nruns whose executor died (its lease expired). Several workers on one store share the work.\nSIGTERM or SIGINT drains: the run going stops at its next checkpoint, its lease given back.",
        epilog="example:\n  python -m aerix worker --store sqlite:///runs.sqlite3 --agent myapp.agents:make_agent --concurrency 2",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    worker_arguments(working)
    return top


async def run_command(args: argparse.Namespace, *, out: TextIO | None = None, signal: Any = None, transport: Any = None) -> int:
    """Run ``args`` (from :func:`parser`), writing events to ``out``; the exit status."""
    out = out or sys.stdout
    generation = {k: v for k, v in (("temperature", args.temperature), ("seed", args.seed)) if v is not None}
    model = OpenAIModel(args.base_url, args.model, api_key=args.api_key, transport=transport)
    agent = Agent(
        model=model,
        instructions=args.instructions,
        limits={"turns": args.turns, "retries": args.retries, "max_tokens": args.max_tokens},
        generation=generation,
        constrain=not args.no_constrain,
    )
    show = _JsonLines(out) if args.json else _Terminal(out)
    last: Event | None = None
    async with aclosing(agent.run(args.prompt, signal)) as events:
        async for ev in events:
            show(ev)
            last = ev
    if last is not None and last.type == "final":
        return 0
    return 130 if last is not None and getattr(last, "reason", None) == "abort" else 1


class _JsonLines:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, ev: Event) -> None:
        # json.dumps escapes C0 characters; DEL and C1 (U+009B is a CSI) get \u escapes too: still JSON
        line = json.dumps(ev.to_dict(), ensure_ascii=False)
        self.out.write(_UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", line) + "\n")
        self.out.flush()


class _Terminal:
    """Text as it streams; a line per other event."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.in_text = False

    def __call__(self, ev: Event) -> None:
        d = ev.to_dict()
        if ev.type in ("final_delta", "output_delta"):
            return  # the answer decoded from the text already printed
        if ev.type == "text":
            self.out.write(_printable(d["text"]))
            self.in_text = True
        else:
            if self.in_text:
                self.out.write("\n")
                self.in_text = False
            self.out.write(_printable(_line(d)) + "\n")
        self.out.flush()


def _printable(text: str) -> str:
    """``text`` safe for a terminal: control characters (C0 but newline and tab, DEL, C1) are
    shown as ``\\x1b``-style escapes, so a model's text cannot move the cursor, clear the
    screen, retitle the window or hide what came before."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _line(d: dict[str, Any]) -> str:
    kind = d["type"]
    if kind == "usage":
        return f"· usage: {d['prompt_tokens']} prompt tokens ({d['cached_tokens']} cached), {d['completion_tokens']} generated"
    if kind == "turn":
        calls = ", ".join(c["tool"] for c in d["calls"]) or "final answer"
        return f"· turn {d['turn']}: {calls}"
    if kind == "call":
        return f"· call {d['id']} {d['tool']} {json.dumps(d['input'], ensure_ascii=False)}"
    if kind == "result":
        return f"· result {d['id']} {d['tool']}{' (error)' if d['error'] else ''}: {d['text']}"
    if kind == "retry":
        return f"· retry after turn {d['turn']}: {d['reason']}"
    if kind == "final":
        return f"final: {d['text']}"
    if kind == "end":
        return f"end {d['reason']}: {d['message']}"
    return f"· {kind}: {json.dumps({k: v for k, v in d.items() if k != 'type'}, ensure_ascii=False)}"


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        return command(args)
    if args.command == "worker":
        return worker_command(args)
    try:
        return asyncio.run(_main(args))
    except AerixError as e:  # a bad option: the developer's mistake, said plainly
        print(f"aerix: {_printable(e.message)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


async def _main(args: argparse.Namespace) -> int:
    abort = Abort()
    loop = asyncio.get_running_loop()

    def on_interrupt() -> None:
        if abort.aborted:  # the second Ctrl-C: stop waiting for a polite ending
            raise KeyboardInterrupt
        abort.abort("interrupted")

    try:
        loop.add_signal_handler(signals.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError, ValueError):  # no signal handling here (Windows, a thread)
        pass
    try:
        return await run_command(args, signal=abort)
    finally:
        try:
            loop.remove_signal_handler(signals.SIGINT)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
