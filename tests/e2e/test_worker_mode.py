"""Where the code of a page agent runs, in both modes, on the bundled model and the real engine
(issue 20): a JS tool written in the page runs in the page and can touch the DOM; a tool given as
`{module, export}` runs where Python runs (in worker mode, the worker: the page's own instance of
the module never sees the call); and in worker mode the page's main thread stays free during a run
(a 10 ms page timer never waits more than 50 ms, while aerix boots or runs; in page mode the
boot holds it far longer). And every final of these runs streamed first as `final_delta` text."""

from __future__ import annotations

import pytest

LIFE = """async ({ worker, prompts }) => {
  // a page timer: the longest wait between its firings, while aerix boots and while it runs
  const waits = { boot: 0, run: 0 };
  let phase = "boot", last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    waits[phase] = Math.max(waits[phase], now - last);
    last = now;
  }, 10);
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  const ai = await boot({ model: "/models/aerix-tools.gguf", worker });
  phase = "run";
  last = performance.now();
  const asked = document.createElement("ul");
  asked.id = "asked";
  document.body.append(asked);
  // the demo's tools, as the bundled model was trained on them: weather in the page, writing to
  // the DOM; save_note from the module, imported where Python runs
  const tools = demo.tools.map((t) => {
    if (t.name === "weather") {
      return { ...t, run: async (input) => {
        const item = document.createElement("li");
        item.textContent = input.city;
        asked.append(item);
        return demo.weather(input);
      } };
    }
    if (t.name === "save_note") {
      const { run, ...spec } = t;
      return { ...spec, module: "/demo-tools.mjs", export: "saveNote" };
    }
    return t;
  });
  const runs = [];
  for (const prompt of prompts) {
    const agent = ai.agent({ instructions: demo.INSTRUCTIONS, tools, limits: { turns: 4, retries: 2, maxTokens: 256 }, generation: { temperature: 0 } });
    const events = [];
    for await (const ev of agent.run(prompt)) if (ev.type !== "text") events.push(ev);
    runs.push(events);
  }
  clearInterval(timer);
  const cities = [...asked.children].map((li) => li.textContent);
  return { waits, runs, asked: cities, weather: cities.map((city) => demo.weather({ city })), pageNotes: [...demo.notes], worker: ai.worker };
}"""

WEATHER = ["Do I need an umbrella in Lisbon today?", "What's the weather like in Oslo?"]
NOTES = ["Remind me to water the plants.", "Note to self: call the bank", "Don't forget: buy oat milk"]


@pytest.fixture(scope="module")
def lived(browser, site, mode):
    from conftest import open_page

    context, page, traffic = open_page(browser, site)
    out = page.evaluate(LIFE, {"worker": mode == "worker", "prompts": WEATHER + NOTES})
    context.close()
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    assert out["worker"] is (mode == "worker")
    for events in out["runs"]:
        assert sum(e["type"] in ("final", "end") for e in events) == 1, events
    return out


def test_every_final_streamed_as_text_first(lived):
    """The final_delta events since the last retry (a retry drops what came before) join into the
    final's text, in every run that ends in a final."""
    finals = [events for events in lived["runs"] if events[-1]["type"] == "final"]
    assert len(finals) >= 3, [events[-1] for events in lived["runs"]]
    pieces = []
    for events in finals:
        since = max([i for i, e in enumerate(events) if e["type"] == "retry"], default=-1)
        deltas = [e["text"] for e in events[since + 1 :] if e["type"] == "final_delta"]
        assert deltas and "".join(deltas) == events[-1]["text"], (deltas, events[-1])
        pieces.append(len(deltas))
    assert max(pieces) > 1, f"no answer came in more than one piece: {pieces}"


def calls_and_results(out, tool):
    """Each call of `tool` in the runs with its result (call ids are per run)."""
    pairs = []
    for events in out["runs"]:
        results = {e["id"]: e for e in events if e["type"] == "result"}
        pairs += [(e, results[e["id"]]) for e in events if e["type"] == "call" and e["tool"] == tool]
    return pairs


def test_a_js_tool_written_in_the_page_runs_in_the_page_and_touches_the_dom(lived):
    pairs = calls_and_results(lived, "weather")
    assert pairs, "the bundled model called weather for none of the weather prompts"
    assert lived["asked"] == [c["input"]["city"] for c, _ in pairs], "each call wrote its city into the page's DOM"
    assert [(r["text"], r["error"]) for _, r in pairs] == [(w, False) for w in lived["weather"]]


def test_a_module_tool_runs_where_python_runs(lived, mode):
    pairs = calls_and_results(lived, "save_note")
    assert pairs, "the bundled model called save_note for none of the note prompts"
    saved = [c["input"]["text"].strip() for c, _ in pairs]
    assert [(r["text"], r["error"]) for _, r in pairs] == [(f"note saved: {s}", False) for s in saved]
    # the module's `notes` list: in page mode the tool ran in the page's own instance of the module;
    # in worker mode it ran in the worker's, so the page's stayed empty
    assert lived["pageNotes"] == (saved if mode == "page" else [])


def test_in_worker_mode_the_page_timer_never_waits_over_50_ms(lived, mode):
    waits = lived["waits"]
    print(f"{mode} mode: the page timer's longest wait: boot {waits['boot']:.0f} ms, runs {waits['run']:.0f} ms")
    if mode == "worker":
        assert waits["run"] <= 50 and waits["boot"] <= 50, waits
    else:  # what worker mode is for: in page mode, Pyodide's start holds the thread (README: about 1.7 s)
        assert waits["boot"] > 50, waits
