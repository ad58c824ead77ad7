"""Case 3: JavaScript tools and hooks called from the Python loop; the <script> embed; runPython."""

from __future__ import annotations

from conftest import sent_schema

PROMPTS = ["Umbrella for Lisbon?", "Weather in Oslo?", "Is Rome sunny?", "Porto?", "Paris weather", "Check Berlin", "Madrid now?", "Vienna?"]


def test_js_tool_and_js_before_call_hook_run_from_the_python_loop(booted):
    out = booted.evaluate(
        """async (prompts) => {
      const seen = { hook: [], tool: [] };
      const agent = window.ai.agent({
        tools: [{
          name: "weather", description: "Today's forecast for a city.",
          input: { city: { type: "string", required: true } },
          run: async (input, { signal, callId }) => {
            seen.tool.push({ input, callId, hasSignal: signal === null || typeof signal.aborted === "boolean" });
            return { city: input.city, sky: "sunny" };
          },
        }],
        hooks: {
          beforeCall: async (call) => {
            seen.hook.push(call);
            return seen.hook.length % 2 === 0 ? { deny: "every second call is refused" } : null;
          },
        },
        limits: { maxTokens: 160, turns: 4, retries: 3 },
      });
      const events = [];
      for (const p of prompts) {
        for await (const ev of agent.run(p)) events.push(ev);
        if (seen.hook.length >= 2) break;
        agent.reset();
      }
      return { events, seen };
    }""",
        PROMPTS,
    )
    events, seen = out["events"], out["seen"]
    calls = [e for e in events if e["type"] == "call"]
    results = {e["id"]: e for e in events if e["type"] == "result"}
    assert calls, "the tiny model made no tool call in any of the prompts"
    # the JS hook saw every call the model made, with its id, tool and input
    assert [(h["id"], h["tool"], h["input"]) for h in seen["hook"]] == [(c["id"], c["tool"], c["input"]) for c in calls]
    for i, call in enumerate(calls):
        result = results[call["id"]]
        if i % 2 == 1:  # refused by the hook: the tool never ran for it
            assert (result["text"], result["error"]) == ("refused: every second call is refused", True)
        else:
            assert result["error"] is False
            assert result["text"] == '{"city": %s, "sky": "sunny"}' % __import__("json").dumps(call["input"]["city"], ensure_ascii=False)
    ran = [t["callId"] for t in seen["tool"]]
    assert ran == [c["id"] for i, c in enumerate(calls) if i % 2 == 0]
    assert all(t["hasSignal"] for t in seen["tool"])


def test_the_script_tag_embed(fresh_page, worker):
    page, _ = fresh_page("/embed.html")
    out = page.evaluate(
        """async (worker) => {
      if (typeof window.aerix?.boot !== "function") return { error: "no window.aerix.boot" };
      const ai = await window.aerix.boot({ model: "/models/tiny.gguf", engine: { recorder: true }, worker });
      const agent = ai.agent({ instructions: "Be brief.", limits: { maxTokens: 96, retries: 4 } });
      const events = [];
      for await (const ev of agent.run("Say hello.")) events.push(ev);
      return { events, requests: ai.engine.requests.length, ready: ai.timings.ready };
    }""",
        worker,
    )
    assert "error" not in out, out
    events = out["events"]
    assert events[-1]["type"] in ("final", "end") and [e["type"] in ("final", "end") for e in events].count(True) == 1
    assert out["requests"] == sum(1 for e in events if e["type"] == "usage") + sum(
        1 for e in events if e["type"] == "retry" and e["reason"].startswith("engine output:")
    )


def test_python_in_the_page_drives_the_engine_with_run_python(booted):
    out = booted.evaluate(
        """async () => {
      const before = window.ai.engine.requests.length;
      const result = await window.ai.runPython(`
from aerix import Agent, Limits, tool
from aerix.engines.js import page_model

def city_weather(input, ctx):
    return "Sunny in " + input["city"]

weather = tool(name="weather", description="Forecast for a city.",
               input={"city": {"type": "string", "required": True}}, run=city_weather)
agent = Agent(model=page_model(), tools=[weather], limits=Limits(max_tokens=160, retries=3))
events = [ev.to_dict() async for ev in agent.run("Umbrella for Lisbon?")]
import json
json.dumps({"events": events, "schema": agent.schema})
`);
      const requests = window.ai.engine.requests.slice(before);
      return { ...JSON.parse(result), requests };
    }"""
    )
    events = out["events"]
    assert [e["type"] in ("final", "end") for e in events].count(True) == 1
    assert out["requests"] and all(sent_schema(r) == out["schema"] for r in out["requests"])
    for e in events:
        if e["type"] == "result" and not e["error"]:
            # a repeated call is answered by the repeat guard: its note, then the earlier result
            text = e["text"].split("\n", 1)[-1] if e.get("repeat_of") else e["text"]
            assert text.startswith("Sunny in "), e
