"""Structured output in the page on the real engine (issue 19, point 1): every generation is
decoded under a turn schema whose final branch is the output schema, and every run that ends
with a final answer gives an object that the schema accepts; its object streamed first, in
both modes, as `output_delta` events (issue 31, point 4)."""

from __future__ import annotations

from conftest import sent_schema

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "umbrella": {"type": "boolean"},
        "mode": {"enum": ["train", "car"]},
    },
    "required": ["city", "days", "umbrella", "mode"],
}

RUN = """async ({ schema, prompts }) => {
  const before = window.ai.engine.requests.length;
  const agent = window.ai.agent({ output: { schema }, limits: { turns: 4, retries: 3, maxTokens: 200 }, generation: { temperature: 0.9 } });
  const runs = [];
  for (const prompt of prompts) {
    const events = [];
    for await (const ev of agent.run(prompt)) events.push(ev);
    runs.push(events);
  }
  return { runs, requests: window.ai.engine.requests.slice(before), schema: agent.schema, system: agent.system };
}"""


def test_every_final_is_a_decoded_valid_object(booted):
    out = booted.evaluate(RUN, {"schema": SCHEMA, "prompts": ["Plan a trip to Lisbon.", "And to Oslo?", "One more, to Rome."]})
    assert out["requests"], "no generation reached the engine"
    final_branch = out["schema"]["properties"]["final"]
    assert final_branch["properties"].keys() == SCHEMA["properties"].keys() and final_branch["additionalProperties"] is False
    for request in out["requests"]:
        assert sent_schema(request) == out["schema"], "the engine decodes under the output schema"
    assert "# Your answer" in out["system"]
    finals = 0
    for events in out["runs"]:
        assert [e["type"] in ("final", "end") for e in events].count(True) == 1
        last = events[-1]
        if last["type"] == "final":
            finals += 1
            value = last["output"]
            assert set(value) == set(SCHEMA["properties"]) and isinstance(value["city"], str)
            assert isinstance(value["days"], int) and isinstance(value["umbrella"], bool) and value["mode"] in ("train", "car")
        since = max((i for i, e in enumerate(events) if e["type"] == "retry"), default=-1)  # a retry drops what streamed
        streamed = [e["output"] for e in events[since + 1 :] if e["type"] == "output_delta"]
        for before, after in zip(streamed, streamed[1:]):
            assert all(after.get(k) == v for k, v in before.items()), "each object extends the one before"
        if last["type"] == "final":
            assert streamed and streamed[-1] == last["output"], "the final's object streamed whole first"
        for e in events:
            if e["type"] == "retry":  # under the grammar only a cut turn or unusable output is refused
                assert e["reason"].startswith(("cut:", "engine output:", "bad number:")), e["reason"]
    assert finals >= 1, "a noise model under the schema reaches a final in at least one of three runs"
