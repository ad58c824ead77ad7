"""Two agents on one page engine at once (issue 28): the engine runs their generations one at a
time (web/generation.mjs, ONE AT A TIME), so neither slows the other into a cut turn nor reads the
other's tokens. On the bundled model, in both modes (in worker mode the engine and its queue are
in the worker), with the demo's tools: each agent, asked about its own city, calls `weather` for
it and ends `final` quoting its own result; every request the engine received carries the schema
of the agent that sent it. tests/js/engine-queue.test.mjs shows the order itself on a fake wllama."""

from __future__ import annotations

import json

import pytest
from conftest import open_page, sent_schema

RUN = """async ([prompts, worker]) => {
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  const ai = await boot({ model: "/models/aerix-tools.gguf", engine: { recorder: true }, worker });
  const agents = prompts.map(() => ai.agent({
    instructions: demo.INSTRUCTIONS, tools: demo.tools,
    limits: { turns: 4, retries: 2, maxTokens: 256 }, generation: { temperature: 0 },
  }));
  await Promise.all(agents.map((agent) => agent.ready));
  const before = ai.engine.requests.length;
  // both runs at once: neither waits for the other's run, only the engine takes turns
  const runs = await Promise.all(agents.map(async (agent, i) => {
    const events = [];
    for await (const ev of agent.run(prompts[i])) if (ev.type !== "text") events.push(ev);
    return { events, schema: agent.schema };
  }));
  return {
    runs,
    requests: ai.engine.requests.slice(before),
    expected: ["Lisbon", "Coimbra"].map((city) => demo.weather({ city })),
  };
}"""

PROMPTS = ["Do I need an umbrella in Lisbon today?", "What's the weather like in Coimbra?"]
CITIES = ["Lisbon", "Coimbra"]


@pytest.fixture(scope="module")
def together(browser, site, mode):
    context, page, traffic = open_page(browser, site)
    out = page.evaluate(RUN, [PROMPTS, mode == "worker"])
    context.close()
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    return out


@pytest.mark.parametrize("index", [0, 1])
def test_each_agent_ends_final_with_its_own_tool_result(together, index):
    events = together["runs"][index]["events"]
    calls = [e for e in events if e["type"] == "call"]
    results = [e for e in events if e["type"] == "result"]
    assert calls and all(c["tool"] == "weather" and c["input"] == {"city": CITIES[index]} for c in calls), events
    assert results and all(r["text"] == together["expected"][index] and r["error"] is False for r in results), events
    assert [e["type"] in ("final", "end") for e in events].count(True) == 1
    assert events[-1]["type"] == "final", events
    assert together["expected"][index] in events[-1]["text"]
    assert together["expected"][1 - index] not in events[-1]["text"]


def test_every_generation_is_decoded_under_its_own_agents_schema(together):
    requests = together["requests"]
    generations = sum(1 for run in together["runs"] for e in run["events"] if e["type"] == "usage")
    assert len(requests) >= generations >= 4  # two turns each at least: the call, then the final
    owners = []
    for request in requests:
        text = json.dumps(request)
        owner = [i for i, prompt in enumerate(PROMPTS) if json.dumps(prompt)[1:-1] in text]
        assert len(owner) == 1, f"a request holds {len(owner)} of the two prompts: {text[:400]}"
        owners.append(owner[0])
        assert sent_schema(request) == together["runs"][owner[0]]["schema"]
        assert request["stream"] is True and request["cache_prompt"] is True
    assert sorted(set(owners)) == [0, 1]
