"""The bundled model (models/aerix-tools.gguf) does real work in the page, offline: asked for the
weather in a city, the agent calls `weather` with that city, and its final answer quotes the
tool's result. On the real engine, wasm tier, with the demo's tools (web/demo-tools.mjs)."""

from __future__ import annotations

import hashlib
import json

import pytest
from conftest import ROOT

RUN = """async ([prompts, worker]) => {
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  const ai = await boot({ model: "/models/aerix-tools.gguf", engine: { recorder: true }, worker });
  const runs = [];
  for (const prompt of prompts) {
    const agent = ai.agent({
      instructions: demo.INSTRUCTIONS, tools: demo.tools,
      limits: { turns: 4, retries: 2, maxTokens: 256 }, generation: { temperature: 0 },
    });
    const events = [];
    for await (const ev of agent.run(prompt)) if (ev.type !== "text") events.push(ev);
    runs.push({ events, system: agent.system });
  }
  const cities = ["Lisbon", "Coimbra"];
  // the prompt the engine builds from a conversation must be the tokens the model was trained on
  const probe = await (await fetch("/models/aerix-tools.json")).json().then((c) => c.probe);
  let usage = null;
  for await (const d of ai.engine.chat(probe.messages, { max_tokens: 1, generation: { temperature: 0 } })) if (d.type === "done") usage = d.usage;
  return { runs, expected: cities.map((city) => demo.weather({ city })), probe: { want: probe.prompt_tokens, got: usage.prompt_tokens } };
}"""

PROMPTS = ["Do I need an umbrella in Lisbon today?", "What's the weather like in Coimbra?"]  # Coimbra: never in training


@pytest.fixture(scope="module")
def runs(browser, site, mode):
    from conftest import open_page

    context, page, traffic = open_page(browser, site)
    out = page.evaluate(RUN, [PROMPTS, mode == "worker"])
    context.close()
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    return out


@pytest.mark.parametrize("index, city", [(0, "Lisbon"), (1, "Coimbra")])
def test_asked_for_the_weather_the_agent_calls_weather_and_quotes_its_result(runs, index, city):
    events = runs["runs"][index]["events"]
    calls = [e for e in events if e["type"] == "call"]
    results = [e for e in events if e["type"] == "result"]
    assert calls and calls[0]["tool"] == "weather" and calls[0]["input"] == {"city": city}, events
    assert results[0]["text"] == runs["expected"][index] and results[0]["error"] is False
    assert events[-1]["type"] == "final", events
    assert runs["expected"][index] in events[-1]["text"]


def test_the_page_sends_the_system_message_the_model_was_trained_on(runs):
    trained = json.loads((ROOT / "models" / "aerix-tools.json").read_text())
    for run in runs["runs"]:
        assert hashlib.sha256(run["system"].encode()).hexdigest() == trained["system_sha256"], (
            "aerix's system message or the demo's tools changed since the bundled model was trained: run `make model`"
        )


def test_the_engine_tokenizes_a_conversation_as_training_did(runs):
    # models/aerix-tools.json holds a conversation and its token count under the training
    # tokenizer and template; llama.cpp (its gpt-2 pre-tokenizer, our merges, ChatML) must agree
    assert runs["probe"]["got"] == runs["probe"]["want"], runs["probe"]
