"""`make gpu-check`: one agent and the throughput figures with WebGPU, for a machine with a GPU.

    .venv/bin/python -m build.gpu_check [--model /models/smollm2-q8_0.gguf] [--threads 2]

Serves build/site and opens it in headless Chromium with the GPU and WebGPU on
(build/chromium.py GPU_ARGS), boots aerix with `engine: {gpu: "require"}` (so a browser without a
WebGPU adapter fails here, saying why), runs one agent (the bundled model and the demo's tools)
and measures prompt processing and generation tokens/s on `--model` with WebGPU and with `gpu:
"off"` side by side. Prints the figures; exits 1 when WebGPU is not there. Not part of `make
test`: this machine has no GPU (the e2e tests check that "require" fails clearly and "auto" runs
on the CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import chromium
from .serve import serve

ROOT = Path(__file__).resolve().parent.parent
PROMPT = ("The history of weather forecasting begins with the observation of the sky. " * 12).strip()

AGENT = """async ({ threads }) => {
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  try {
    const ai = await boot({ model: "/models/aerix-tools.gguf", worker: true, engine: { gpu: "require", nThreads: threads } });
    const agent = ai.agent({ instructions: demo.INSTRUCTIONS, tools: demo.tools, generation: { temperature: 0 } });
    const started = performance.now();
    const events = [];
    for await (const ev of agent.run("Do I need an umbrella in Lisbon today?")) if (ev.type !== "text" && ev.type !== "final_delta") events.push(ev);
    return { info: ai.engine.info, events, ms: performance.now() - started };
  } catch (e) { return { error: e.message }; }
}"""

RATES = """async ({ model, gpu, threads, prompt }) => {
  const { loadEngine } = await import("/engine.mjs");
  const engine = await loadEngine({ model, wllamaBase: "/wllama/", manifest: "/models/models.json", gpu, nThreads: threads });
  const out = [];
  for (let i = 0; i < 3; i++) {
    let t = null;
    await engine.wllama.createCompletion({ prompt: `${prompt} (${i})`, stream: true, max_tokens: 64, temperature: 0, ignore_eos: true,
      cache_prompt: false, stream_options: { include_usage: true }, onData: (c) => (t = c.timings ?? t) });
    out.push(t);
  }
  const info = { ...engine.info };
  await engine.close();
  return { info, timings: out };
}"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="/models/smollm2-q8_0.gguf", help="the GGUF for the throughput figures (make smollm2)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if not (ROOT / "build" / "site" / args.model.lstrip("/")).is_file():
        print(f"gpu-check: build/site{args.model} is missing: run `make smollm2` (or pass --model)", file=sys.stderr)
        return 1
    from playwright.sync_api import sync_playwright

    server, _ = serve(str(ROOT / "build" / "site"), 0)
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with sync_playwright() as p:
            browser = chromium.launch(p, gpu=True)
            page = browser.new_page()
            page.set_default_timeout(600_000)
            page.goto(url + "/embed.html")
            adapter = page.evaluate("async () => { const a = await navigator.gpu?.requestAdapter(); return a ? (a.info ? { vendor: a.info.vendor, architecture: a.info.architecture, description: a.info.description } : {}) : null; }")
            print(f"gpu-check: WebGPU adapter: {json.dumps(adapter)}")
            run = page.evaluate(AGENT, {"threads": args.threads})
            if "error" in run:
                print(f"gpu-check: {run['error']}", file=sys.stderr)
                return 1
            ending = run["events"][-1]
            print(f"gpu-check: agent on the bundled model: backend {run['info']['backend']}, layers {run['info']['gpuLayers']}, "
                  f"ended {ending['type']} in {run['ms'] / 1000:.1f} s: {ending.get('text') or ending.get('message')}")  # fmt: skip
            for gpu in ("require", "off"):
                rates = page.evaluate(RATES, {"model": args.model, "gpu": gpu, "threads": args.threads, "prompt": PROMPT})
                pp = sorted(t["prompt_per_second"] for t in rates["timings"])[1]
                tg = sorted(t["predicted_per_second"] for t in rates["timings"])[1]
                print(f"gpu-check: {args.model} gpu={gpu}: backend {rates['info']['backend']} ({rates['info']['gpuLayers']} layers), "
                      f"prompt {pp:.1f} tok/s, generation {tg:.1f} tok/s (median of 3)")  # fmt: skip
            browser.close()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
