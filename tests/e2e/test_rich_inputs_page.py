"""Rich tool inputs in the page on the real engine (issue 27, part 1), in both modes: a JavaScript
tool whose input is a JSON Schema with an array of objects (a pattern, integer bounds, a nullable
field, a bounded string) is decoded under that whole schema, and every call any generation makes
reaches the tool with an input the schema accepts.

The tiny model is noise: what it writes is whatever the grammar lets through, so a call that
passes here passes because the schema held it, not because the model knew the tool."""

from __future__ import annotations

import re

from conftest import sent_schema

from aerix import tool
from aerix.compaction import SUMMARY_SCHEMA

SCHEMA = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 9},
                    "gift": {"type": ["boolean", "null"]},
                },
                "required": ["sku", "qty"],
            },
        },
        "note": {"type": "string", "maxLength": 12},
    },
    "required": ["items"],
}

RUN = """async ({ schema, prompts }) => {
  window.__orders = [];
  const before = window.ai.engine.requests.length;
  const order = { name: "order", description: "Place an order of stock items.", input: schema,
                  run: async (input) => { window.__orders.push(JSON.parse(JSON.stringify(input))); return "placed"; } };
  const agent = window.ai.agent({ tools: [order], limits: { turns: 6, retries: 3, maxTokens: 400 }, generation: { temperature: 1.0 } });
  const runs = [];
  for (const prompt of prompts) {
    const events = [];
    for await (const ev of agent.run(prompt)) events.push(ev);
    runs.push(events);
  }
  return { runs, requests: window.ai.engine.requests.slice(before), schema: agent.schema, system: agent.system, orders: window.__orders };
}"""

PROMPTS = ["Order two boxes of ABC-12.", "Add one XYZ-01 as a gift.", "Order three more lines.", "Repeat the last order.", "Order anything.", "Two of QRS-55.", "Order again.", "One more."]


def test_a_tool_taking_an_array_of_objects_gets_a_valid_input_on_every_generation(booted):
    out = booted.evaluate(RUN, {"schema": SCHEMA, "prompts": PROMPTS})
    python_twin = tool(name="order", description="Place an order of stock items.", input=SCHEMA, run=lambda i: "placed")
    (shape,) = [out["schema"]["anyOf"][0]["properties"]["calls"]["items"]]
    assert shape["properties"]["input"] == python_twin.input_schema(), "the turn schema carries the tool's whole schema, closed"
    assert shape["properties"]["input"]["properties"]["items"]["items"]["additionalProperties"] is False
    assert "  - sku (string, required, matching ^[A-Z]{3}-[0-9]{2}$)" in out["system"]
    assert out["requests"], "no generation reached the engine"
    # eight noisy runs fill the tiny model's context, so a compaction may ask for a summary (under its own schema)
    turns = [r for r in out["requests"] if sent_schema(r) != SUMMARY_SCHEMA]
    assert turns, "no turn reached the engine"
    for request in turns:
        assert sent_schema(request) == out["schema"]
    calls = results = 0
    for events in out["runs"]:
        assert [e["type"] in ("final", "end") for e in events].count(True) == 1
        for e in events:
            if e["type"] == "retry":  # under the grammar only a cut turn or unusable engine output is refused
                assert e["reason"].startswith(("cut:", "engine output:")), e["reason"]
            if e["type"] == "call":
                calls += 1
                python_twin.check(e["input"])  # raises, naming the path, if the schema did not hold
            if e["type"] == "result":
                results += 1
                assert not e["error"], e["text"]
    assert calls >= 1, f"no call in {len(PROMPTS)} runs: nothing was shown (the noise model took the final branch every time)"
    assert len(out["orders"]) + sum(1 for events in out["runs"] for e in events if e["type"] == "result" and "repeatOf" in e) == results
    for order in out["orders"]:
        python_twin.check(order)
        for line in order["items"]:
            assert re.fullmatch(r"[A-Z]{3}-[0-9]{2}", line["sku"]) and 1 <= line["qty"] <= 9
