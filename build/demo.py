"""`make demo`: serve the demo page, run an agent in it in headless Chromium, print the transcript,
then keep the page up for a person to open.

    python -m build.demo [--port 8642] [--prompt "..."] [--model general|smollm2|bundled|./models/X.gguf]

`make demo MODEL=general` runs it on aerix-general (made first by `make general-model`).
DEMO_HOLD=0 exits after the run instead of serving until Ctrl-C.

With PyPI's `mcp` installed (the test extra), it also starts the demo's MCP server
(build/demo_mcp.py) and forwards `/mcp/library` to it: the page's "MCP tools" box connects there
(`?mcp=/mcp/library` prefills it). It says which, and stops that server when it exits.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

from aerix.cli import _printable  # the CLI's escaping of control characters

from .chromium import launch
from .demo_mcp import McpServer
from .serve import serve

ROOT = Path(__file__).resolve().parent.parent

# The names `make demo MODEL=...` takes: the file in the site's models/ and the make target that puts
# it there (None: the page's own, the bundled model)
NAMES = {
    "bundled": (None, "build"),
    "general": ("aerix-general-q8_0.gguf", "general-model"),
    "smollm2": ("smollm2-q8_0.gguf", "smollm2"),
    "smollm2-q4_1": ("smollm2.gguf", "smollm2"),
}


ANSWERED = ("final_delta", "final", "end")  # the first sign of the answer a person waits for


def model_url(model: str | None, site: Path) -> str | None:
    """The ?model= for `--model`: a name of NAMES (its file must be in the site) or a URL as given."""
    if model is None or model not in NAMES:
        return model
    file, target = NAMES[model]
    if file is None:
        return None
    if not (site / "models" / file).is_file():
        raise SystemExit(f"demo: --model {model}: {site / 'models' / file} is missing; `make {target}` makes it")
    return f"./models/{file}"


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


MCP_NAME = "library"  # the page reaches the demo's MCP server as /mcp/library


def start_mcp() -> McpServer | None:
    """The demo's MCP server, if PyPI's `mcp` is here; says what it did either way."""
    if importlib.util.find_spec("mcp") is None:
        print(f"no MCP server: PyPI's mcp is not installed (pip install -e '.[test]'); the page's MCP box has nothing at /mcp/{MCP_NAME}")
        return None
    try:
        server = McpServer()
    except RuntimeError as e:
        print(f"no MCP server: {e}", file=sys.stderr)
        return None
    print(f"MCP server build/demo_mcp.py at {server.url}, forwarded as /mcp/{MCP_NAME}")
    return server


def show_mcp(page) -> None:
    """What the page's MCP box found at ?mcp= (demo-mcp.mjs), in a line."""
    try:
        page.wait_for_function("() => window.demo.mcp && window.demo.mcp.probed", timeout=60_000)
    except Exception:
        print("MCP box: the page did not answer whether it found the server")
        return
    found = page.evaluate("window.demo.mcp")
    if found["error"]:
        print(f"MCP box: {found['url']} did not answer: {found['error']}")
    else:
        print(f"MCP box: {found['url']} offers {', '.join(t['name'] for t in found['offered'])} (Connect gives them to the agent)")


def main() -> int:
    mcp = start_mcp()
    try:
        return demo(mcp)
    finally:
        if mcp:
            mcp.stop()


def demo(mcp: McpServer | None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8642)
    ap.add_argument("--root", default=str(ROOT / "build" / "site"))
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--prompt", default="Do I need an umbrella in Lisbon today?")
    ap.add_argument("--model", default=None,
                    help=f"{', '.join(NAMES)} or a GGUF URL relative to the page (default: the page's own, the bundled model)")
    args = ap.parse_args()
    args.model = model_url(args.model, Path(args.root))

    from playwright.sync_api import sync_playwright

    server, _ = serve(args.root, args.port, **({"mcp": {MCP_NAME: mcp.url}} if mcp else {}))
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    query = [f"model={args.model}"] * bool(args.model) + [f"mcp=/mcp/{MCP_NAME}"] * bool(mcp)
    page_url = url + (f"?{'&'.join(query)}" if query else "")
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
        ahead = page.evaluate("window.demo.prefill ?? null")
        if ahead:
            print(f"system message read ahead (agent.prefill): {ahead['promptTokens'] - ahead['cachedTokens']} tokens in {ahead['ms'] / 1000:.1f} s, "
                  "before the prompt is sent, as while a person types")
        if mcp:
            show_mcp(page)
        page.fill("#prompt", args.prompt)
        clicked = time.monotonic()
        page.click("#run")
        print(f"\nprompt   {args.prompt}")
        page.wait_for_function(f"() => window.demo.transcript.some(e => {json.dumps(list(ANSWERED))}.includes(e.type))", timeout=600_000)
        first = time.monotonic() - clicked
        page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running", timeout=600_000)
        took = time.monotonic() - clicked
        for shown in transcript(page.evaluate("window.demo.transcript")):
            print(shown)
        print(f"first answer token after {first:.1f} s; the run took {took:.1f} s")
        browser.close()
    if foreign:
        print(f"requests left the origin: {foreign}", file=sys.stderr)
        return 1
    if os.environ.get("DEMO_HOLD", "1") == "0":
        server.shutdown()
        return 0
    print(f"\nThe demo page is up at {page_url} — open it in a browser. Ctrl-C to stop.")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
