"""Issue 28 item 7: aerix in a Pyodide the page booted itself, never calling `boot()`.

The site of its own is the one of test_dist.py: the dist folder (`make dist`), a page and a
model. The page loads Pyodide with `loadPyodide` (the dist's core and lock file), installs the
dist's aerix wheel with `micropip.install(url)` (its dependencies resolve from the same lock, so
from the same folder, offline), loads the engine with `loadEngine` from aerix.mjs, hands it to
Python as `aerix.engines.js.JsModel(engine)`, and runs an agent from `pyodide.runPythonAsync`
whose tool is a JavaScript function made a tool by `aerix.js_tool`. One ending; every
generation decoded under the turn schema; every request to the site's origin, every one answered.

    .venv/bin/python -m pytest tests/e2e/test_own_pyodide.py -q
"""

from __future__ import annotations

import json

import pytest
from conftest import dist_site, dist_site_paths, open_page, sent_schema

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>a Pyodide of its own</title>
  <link rel="icon" href="data:,">
  <script type="module" src="./app.mjs"></script>
</head>
<body><p>This page boots Pyodide itself and installs aerix into it with micropip.</p></body>
</html>
"""

# What docs/page.md's "Your own Pyodide" tells a page to write, plus a tool and a recorder.
APP = """import { loadPyodide } from "./%(dist)s/pyodide/pyodide.mjs";
import { loadEngine } from "./%(dist)s/aerix.mjs";

const dist = new URL("./%(dist)s/", location.href);
const ran = [];

window.app = {
  ran,
  async start() {
    const pyodide = await loadPyodide({ indexURL: new URL("pyodide/", dist).href, lockFileURL: new URL("pyodide-lock.json", dist).href });
    await pyodide.loadPackage("micropip");
    const lock = await (await fetch(new URL("pyodide-lock.json", dist))).json();
    const wheel = new URL(lock.packages.aerix.file_name, dist).href;
    await pyodide.pyimport("micropip").install(wheel);
    this.engine = await loadEngine({ model: "./tiny.gguf", wllamaBase: new URL("wllama/", dist).href, recorder: true, seed: 7 });
    pyodide.globals.set("engine", this.engine);
    pyodide.globals.set("weather", async (input) => { ran.push(input.city); return `Sunny in ${input.city}`; });
    this.pyodide = pyodide;
    return { wheel, isolated: crossOriginIsolated, booted: typeof window.aerix };
  },
  async run(prompt) {
    this.pyodide.globals.set("prompt", prompt);
    const events = await this.pyodide.runPythonAsync(`
import json
from aerix import Agent, Limits, js_tool
from aerix.engines.js import JsModel

agent = Agent(
    model=JsModel(engine),
    tools=[js_tool("weather", "Today's forecast for a city.", {"city": {"type": "string", "description": "City name", "required": True}}, weather)],
    limits=Limits(turns=4, retries=3, max_tokens=160),
)
json.dumps([e.to_dict() for e in [e async for e in agent.run(prompt)]])
`);
    return { events: JSON.parse(events), requests: this.engine.requests };
  },
};
"""

ENDINGS = ("final", "end")


@pytest.fixture(scope="module")
def own_pyodide_site(tmp_path_factory):
    """The site's root, served: the dist folder, the page, the model. Yields (origin, dist name, manifest)."""
    yield from dist_site(tmp_path_factory.mktemp("own-pyodide"), PAGE, APP)


def test_a_pyodide_the_page_booted_itself_installs_aerix_with_micropip_and_runs_an_agent(browser, own_pyodide_site):
    origin, name, manifest = own_pyodide_site
    context, page, traffic = open_page(browser, origin, "/index.html")
    try:
        page.wait_for_function("() => window.app !== undefined")
        started = page.evaluate("() => window.app.start()")
        out = page.evaluate("(prompt) => window.app.run(prompt)", "Umbrella for Lisbon?")
        ran = page.evaluate("window.app.ran")
    finally:
        context.close()
    assert started["wheel"].endswith(".whl") and f"/{name}/wheels/aerix-" in started["wheel"]
    assert started["booted"] == "undefined"  # nothing of aerix.mjs's boot() ran

    events = out["events"]
    # one ending, the last event; the model really generated
    assert [e["type"] in ENDINGS for e in events].count(True) == 1 and events[-1]["type"] in ENDINGS, events
    assert any(e["type"] == "usage" and e["completion_tokens"] > 0 for e in events)
    # each call the model made that ran is the page's JavaScript function, its result the function's answer
    calls = [e for e in events if e["type"] == "call"]
    results = {e["id"]: e for e in events if e["type"] == "result" and not e.get("repeat_of")}
    assert ran == [c["input"]["city"] for c in calls if c["id"] in results]
    for call in calls:
        if call["id"] in results:
            assert (results[call["id"]]["text"], results[call["id"]]["error"]) == (f"Sunny in {call['input']['city']}", False)

    # every generation was decoded under the turn schema, and the schema names the JS tool
    requests = out["requests"]
    assert len(requests) == sum(1 for e in events if e["type"] == "usage") > 0
    for request in requests:
        schema = sent_schema(request)
        assert schema is not None, request
        assert "weather" in json.dumps(schema)

    # every request went to this site, only for the page's files or the dist's; aerix came by micropip
    paths = dist_site_paths(traffic, name, manifest)
    for part in ("wheels/micropip-", "wheels/aerix-", "wheels/pydantic_core-", "wheels/jinja2-", "wllama/wllama.wasm"):
        assert any(p.startswith(f"/{name}/{part}") for p in paths), part
