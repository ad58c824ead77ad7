"""aerix.evals in the page (issue 31, part 3), in both modes: Python in the page (`ai.runPython`,
Pyodide in the page or in the worker) runs `evals.run` against the page's own engine with the
bundled model, on three held-out tasks of `make eval` as its cases (`build/model/score.eval_case`,
loaded into the page's Python with the Python mirror of the demo's tools), one fresh agent each,
and gets the report back: per case and in total, well-formed and consistent, the same checks
CPython gives for the same events, and (the bundled model's trained tools, tasks it passes in
bench/results/eval.json in both modes) every case passed."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT

from aerix import Agent, evals
from aerix.testing import ScriptedModel
from build.model import corpus, score
from build.model import demo_tools as demo

# held-out tasks (corpus.eval_tasks) the bundled model passes, constrained or not: convert, weather, time
PICKED = {0: "convert", 3: "weather", 4: "time"}
# what the page's Python needs of build/model: the eval's cases and the demo's tools in Python
FILES = ("build/model/__init__.py", "build/model/score.py", "build/model/demo_tools.py", "web/demo-tools.json")

SETUP = """
import json, os, sys
root = "/tmp/aerix-evals"
for path, text in json.loads({files!r}).items():
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w", encoding="utf-8") as f:
        f.write(text)
sys.path.insert(0, root)
"""

RUN = """
import json
from aerix import Agent, evals
from aerix.engines.js import page_model
from build.model import score
from build.model import demo_tools as demo

tasks = json.loads({tasks!r})
model = page_model()  # the page's engine, once; a fresh agent per case


def make_agent():
    return Agent(model=model, instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools(),
                 limits={{"turns": 6, "retries": 2, "max_tokens": 256}}, generation={{"temperature": 0}})


report = await evals.run([score.eval_case(t) for t in tasks], make_agent)
json.dumps({{"report": report.to_dict(), "table": report.table(), "summary": report.summary(),
            "events": [[e.to_dict() for e in r.outcome.events] for r in report.results],
            "model": type(model).__name__, "system": make_agent().system}})
"""


@pytest.fixture(scope="module")
def page_report(browser, site, mode):
    from conftest import open_page

    tasks = corpus.eval_tasks()
    picked = [tasks[i].to_dict() for i in PICKED]
    assert [t["kind"] for t in picked] == list(PICKED.values())
    files = json.dumps({"build/__init__.py": "", **{p: (ROOT / p).read_text(encoding="utf-8") for p in FILES}})
    context, page, traffic = open_page(browser, site)
    page.set_default_timeout(300_000)
    try:
        page.evaluate(
            """async ([worker]) => {
          const { boot } = await import("/aerix.mjs");
          window.ai = await boot({ model: "/models/aerix-tools.gguf", worker });
        }""",
            [mode == "worker"],
        )
        page.evaluate("(code) => window.ai.runPython(code)", SETUP.format(files=files))
        out = json.loads(page.evaluate("(code) => window.ai.runPython(code)", RUN.format(tasks=json.dumps(picked))))
    finally:
        context.close()
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    return picked, out


def test_the_pages_python_runs_evals_on_the_pages_engine_and_gets_a_well_formed_report(page_report):
    tasks, out = page_report
    report, cases = out["report"], out["report"]["cases"]
    assert out["model"] == "JsModel", "the cases ran on something else than the page's engine"
    assert [c["name"] for c in cases] == [c["prompt"] for c in cases] == [t["prompt"] for t in tasks]
    for case in cases:
        assert [c["name"] for c in case["checks"]] == ["ending", "calls", "quoted"]  # each task needs a tool
        assert case["passed"] == all(c["passed"] for c in case["checks"])
        assert case["reasons"] == [f"{c['name']}: {c['reason']}" for c in case["checks"] if not c["passed"]]
        assert case["tokens"]["prompt"] > 0 and case["tokens"]["completion"] > 0 and case["seconds"] > 0
        assert [r["id"] for r in case["results"]] == [c["id"] for c in case["calls"]]
    totals = report["totals"]
    assert totals["cases"] == 3 and totals["passed"] + totals["failed"] == 3
    assert totals["passed"] == sum(c["passed"] for c in cases) and totals["pass_rate"] == totals["passed"] / 3
    for key in ("prompt", "completion", "cached"):
        assert totals["tokens"][key] == sum(c["tokens"][key] for c in cases)
    assert totals["seconds"] == pytest.approx(sum(c["seconds"] for c in cases), abs=1e-5)
    assert out["summary"].startswith(f"3 cases: {totals['passed']} passed, {totals['failed']} failed")
    assert out["table"].splitlines()[-1] == out["summary"] and all(t["prompt"][:20] in out["table"] for t in tasks)


def test_cpython_scores_the_pages_events_as_the_page_did(page_report):
    tasks, out = page_report
    for task, case, events in zip(tasks, out["report"]["cases"], out["events"]):
        again = evals.score(score.eval_case(task), events, case["seconds"]).to_dict()
        assert again == case


def test_the_bundled_model_passes_its_trained_tasks_and_the_page_renders_its_system_message(page_report):
    tasks, out = page_report
    cases = out["report"]["cases"]
    assert out["report"]["totals"]["passed"] == 3, out["table"]
    for task, case in zip(tasks, cases):
        assert [c["tool"] for c in case["calls"]] == [c["tool"] for c in task["calls"]]
        ((call,), (result,)) = case["calls"], case["results"]
        assert result["text"] == demo.run(call["tool"], call["input"]) and result["text"] in case["answer"]
    trained = Agent(model=ScriptedModel([]), instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools()).system
    assert out["system"] == trained
