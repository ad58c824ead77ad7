"""Issue 21 item 6: `make dist` used in a site of its own. The dist folder, built from build/site by
build/dist.py, and beside it a minimal page of the site's own (index.html, app.mjs) and a model
(tiny.gguf, copied in for this test only); nothing else from build/site. Served with build.serve's
headers (COOP/COEP, CSP), the page boots aerix from the dist in both modes and runs an agent with a
JavaScript tool: one ending, every request to the site's origin, every one answered.

    .venv/bin/python -m pytest tests/e2e/test_dist.py -q
"""

from __future__ import annotations

import pytest
from conftest import dist_site, dist_site_paths, open_page

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>a site of its own</title>
  <link rel="icon" href="data:,">
  <script type="module" src="./app.mjs"></script>
</head>
<body><p>This page is not aerix's: it boots aerix from ./%(dist)s/.</p></body>
</html>
"""

# The site's own module: what README.txt's third step tells a site to write, plus a tool.
APP = """import { boot } from "./%(dist)s/aerix.mjs";

const ran = [];
const tools = [{
  name: "weather",
  description: "Today's forecast for a city.",
  input: { city: { type: "string", description: "City name", required: true } },
  run: async ({ city }) => { ran.push(city); return `Sunny in ${city}`; },
}];

window.app = {
  ran,
  async start(worker) {
    this.ai = await boot({ model: "./tiny.gguf", worker, engine: { seed: 7 } });
    const models = await (await fetch("./%(dist)s/models/models.json")).json();
    return { timings: this.ai.timings, worker: this.ai.worker, isolated: crossOriginIsolated, models };
  },
  async run(prompt) {
    const agent = this.ai.agent({ tools, limits: { turns: 4, retries: 3, maxTokens: 160 } });
    const events = [];
    for await (const ev of agent.run(prompt)) events.push(ev);
    return events;
  },
};
"""

ENDINGS = ("final", "end")


@pytest.fixture(scope="module")
def own_site(tmp_path_factory):
    """The site's root, served: the dist folder, the page, the model. Yields (origin, dist name, manifest)."""
    yield from dist_site(tmp_path_factory.mktemp("own-site"), PAGE, APP)


def test_a_page_of_its_own_boots_aerix_from_the_dist_and_runs_an_agent(browser, own_site, worker):
    origin, name, manifest = own_site
    context, page, traffic = open_page(browser, origin, "/index.html")
    try:
        page.wait_for_function("() => window.app !== undefined")
        booted = page.evaluate("(worker) => window.app.start(worker)", worker)
        assert booted["worker"] is worker
        assert booted["isolated"] is True  # build.serve's COOP/COEP: wllama may use threads
        assert booted["models"] == {"models": []}
        assert 0 < booted["timings"]["ready"]

        events = page.evaluate("(prompt) => window.app.run(prompt)", "Umbrella for Lisbon?")
        ran = page.evaluate("window.app.ran")
    finally:
        context.close()

    # one ending, the last event; the model really generated
    assert [e["type"] in ENDINGS for e in events].count(True) == 1 and events[-1]["type"] in ENDINGS, events
    assert any(e["type"] == "usage" and e["completionTokens"] > 0 for e in events)
    # each call the model made ran the page's JavaScript tool, and its result is the tool's answer
    # (a repeat of an earlier call is answered by the repeat guard, without running the tool again)
    calls = [e for e in events if e["type"] == "call"]
    results = {e["id"]: e for e in events if e["type"] == "result" and "repeatOf" not in e}
    assert ran == [c["input"]["city"] for c in calls if c["id"] in results]
    for call in calls:
        if call["id"] in results:
            assert (results[call["id"]]["text"], results[call["id"]]["error"]) == (f"Sunny in {call['input']['city']}", False)

    # every request went to this site, and only for the page's files or the dist's
    paths = dist_site_paths(traffic, name, manifest)
    # and the runtime really came from the dist folder
    for part in ("pyodide/pyodide.asm.wasm", "pyodide-lock.json", "wheels/aerix-", "wheels/pydantic_core-", "wllama/wllama.wasm"):
        assert any(p.startswith(f"/{name}/{part}") for p in paths), part
    assert "/tiny.gguf" in paths
    assert not [line for line in traffic.console if "Content Security Policy" in line], traffic.console
