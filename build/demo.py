"""`make demo`: serve the demo page, run an agent in it in headless Chromium, print the transcript,
then keep the page up for a person to open.

    python -m build.demo [--port 8642] [--prompt "..."] [--model ./models/aerix-tools.gguf]

DEMO_HOLD=0 exits after the run instead of serving until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from aerix.cli import _printable  # the CLI's escaping of control characters

from .chromium import launch
from .serve import serve

ROOT = Path(__file__).resolve().parent.parent


def transcript(events: list[dict]) -> list[str]:
    """The lines `make demo` prints for a run's events: the model's raw text of each generation on
    one line (its `text` deltas joined; the `final_delta` pieces of the answer are not lines of
    their own), then a line per event that says something."""
    out, text = [], ""
    for ev in events:
        if ev["type"] == "text":
            text += ev["text"]
            continue
        if ev["type"] == "final_delta":
            continue
        if text:
            out.append(f"  model    {text}")
            text = ""
        shown = line(ev)
        if shown:
            out.append(shown)
    if text:
        out.append(f"  model    {text}")
    return [_printable(s) for s in out]  # a model's text must not drive the terminal


def line(ev: dict) -> str | None:
    """One transcript line per event; text deltas are gathered into the turn that follows."""
    kind = ev["type"]
    if kind == "usage":
        return f"  usage    prompt {ev['promptTokens']} (cached {ev['cachedTokens']}) → {ev['completionTokens']} tokens"
    if kind == "turn":
        return f"turn {ev['turn']}   thought: {ev.get('thought')!r}"
    if kind == "call":
        return f"  call     {ev['id']} {ev['tool']}({json.dumps(ev['input'], ensure_ascii=False)})"
    if kind == "result":
        return f"  result   {ev['id']} {'ERROR ' if ev['error'] else ''}{ev['text']}"
    if kind == "retry":
        return f"retry    after turn {ev['turn']}: {ev['reason']}"
    if kind == "final":
        return f"FINAL    {ev['text']}"
    if kind == "end":
        return f"END      {ev['reason']}: {ev['message']}"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8642)
    ap.add_argument("--root", default=str(ROOT / "build" / "site"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--prompt", default="Do I need an umbrella in Lisbon today?")
    ap.add_argument("--model", default=None, help="a GGUF URL relative to the page (default: the page's own)")
    args = ap.parse_args()

    from playwright.sync_api import sync_playwright

    server, _ = serve(args.root, args.port)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    page_url = url + (f"?model={args.model}" if args.model else "")
    print(f"serving {args.root} at {url}")
    foreign: list[str] = []
    with sync_playwright() as p:
        browser = launch(p, args.chromium)
        page = browser.new_page()
        page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith((url, "data:", "blob:")) else None)
        started = time.monotonic()
        page.goto(page_url)
        page.wait_for_function("() => window.demo && (window.demo.ready || window.demo.error)", timeout=180_000)
        error = page.evaluate("window.demo.error")
        if error:
            print(f"the page could not start: {error}", file=sys.stderr)
            return 1
        print(f"page ready in {time.monotonic() - started:.1f} s: {page.inner_text('#timings')}")
        print(page.inner_text("#model"))
        page.fill("#prompt", args.prompt)
        page.click("#run")
        print(f"\nprompt   {args.prompt}")
        page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running", timeout=600_000)
        for shown in transcript(page.evaluate("window.demo.transcript")):
            print(shown)
        browser.close()
    if foreign:
        print(f"requests left the origin: {foreign}", file=sys.stderr)
        return 1
    if os.environ.get("DEMO_HOLD", "1") == "0":
        server.shutdown()
        return 0
    print(f"\nThe demo page is up at {url} — open it in a browser. Ctrl-C to stop.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
