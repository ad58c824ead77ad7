"""Cases 2, 4 and 5: an aerix agent on the real engine (tiny model, wasm tier) in the page."""

from __future__ import annotations

from conftest import sent_schema

TOOL = """{
  name: "weather",
  description: "Today's forecast for a city.",
  input: { city: { type: "string", description: "City name", required: true } },
  run: async ({ city }) => `Sunny in ${city}`,
}"""

RUN = (
    """async ({ prompts, constrain, limits }) => {
  const before = window.ai.engine.requests.length;
  const agent = window.ai.agent({ tools: [%s], constrain, limits, generation: { temperature: 0.8 } });
  const runs = [];
  for (const prompt of prompts) {
    const events = [];
    for await (const ev of agent.run(prompt)) events.push(ev);
    runs.push(events);
  }
  return { runs, requests: window.ai.engine.requests.slice(before), schema: agent.schema };
}"""
    % TOOL
)

ENDINGS = ("final", "end")


def run_in_page(page, prompts, constrain=True, limits=None):
    return page.evaluate(RUN, {"prompts": prompts, "constrain": constrain, "limits": limits or {"turns": 6, "retries": 3, "maxTokens": 160}})


def test_every_generation_is_decoded_under_the_turn_schema(booted):
    out = run_in_page(booted, ["Umbrella for Lisbon?", "What about Oslo?", "And Rome?"])
    generations = sum(1 for events in out["runs"] for e in events if e["type"] == "usage")
    attempts = len(out["requests"])
    assert attempts >= generations >= 3
    for request in out["requests"]:
        assert sent_schema(request) == out["schema"]
        assert request["stream"] is True and request["cache_prompt"] is True
    for events in out["runs"]:
        assert [e["type"] in ENDINGS for e in events].count(True) == 1 and events[-1]["type"] in ENDINGS
        for e in events:
            if e["type"] == "retry":
                # under the grammar a finished turn is always valid: only a cut turn or
                # unusable engine output may be refused
                # (or a number too large for a float: the grammar lets 3e+8052… through)
                assert e["reason"].startswith(("cut:", "engine output:", "bad number:")), e["reason"]
            if e["type"] == "usage":
                assert e["promptTokens"] > 0 and e["completionTokens"] > 0


def test_without_the_constraint_no_schema_is_sent_and_parse_and_retry_happens(booted):
    out = run_in_page(booted, ["Umbrella for Lisbon?"], constrain=False, limits={"turns": 3, "retries": 2, "maxTokens": 48})
    assert out["requests"], "no generation reached the engine"
    assert all(sent_schema(r) is None for r in out["requests"])
    events = out["runs"][0]
    retries = [e for e in events if e["type"] == "retry"]
    assert retries, "a noise model without a grammar should have been refused at least once"
    assert [e["type"] in ENDINGS for e in events].count(True) == 1


def test_abort_during_a_generation_ends_abort_and_the_engine_still_works(booted):
    out = booted.evaluate(
        """async () => {
      const agent = window.ai.agent({ tools: [%s], limits: { maxTokens: 400 } });
      const controller = new AbortController();
      const first = [];
      for await (const ev of agent.run("Write a very long thought about Lisbon.", { signal: controller.signal })) {
        first.push(ev);
        if (ev.type === "text") controller.abort();
      }
      const second = [];
      for await (const ev of agent.run("Now answer briefly.")) second.push(ev);
      return { first, second };
    }"""
        % TOOL
    )
    first, second = out["first"], out["second"]
    assert first[-1] == {"type": "end", "reason": "abort", "message": first[-1]["message"]}
    assert [e["type"] for e in first].count("usage") == 0  # the generation was cut short, not finished
    assert second[-1]["type"] in ENDINGS and [e["type"] in ENDINGS for e in second].count(True) == 1
    assert any(e["type"] == "usage" for e in second)


def test_turn_two_reuses_the_engine_prefix_cache(booted):
    out = booted.evaluate(
        """async () => {
      const agent = window.ai.agent({ tools: [%s], limits: { maxTokens: 160, retries: 3 } });
      const usage = [];
      for (const prompt of ["Umbrella for Lisbon?", "And for Porto?"]) {
        for await (const ev of agent.run(prompt)) if (ev.type === "usage") usage.push(ev);
      }
      return usage;
    }"""
        % TOOL
    )
    assert len(out) >= 2
    for later in out[1:]:
        assert later["cachedTokens"] > 0
        assert later["cachedTokens"] <= later["promptTokens"]


GENERATIONS_AND_REUSE = """async (prompt) => {
  const { loadEngine } = await import("/engine.mjs");
  const engine = await loadEngine({ model: "/models/tiny.gguf", wllamaBase: "/wllama/", prompt });
  const schema = { type: "object", properties: { thought: { type: "string" }, final: { type: "string" } },
                   required: ["thought", "final"], additionalProperties: false };
  const generate = async (messages, seed) => {
    let text = "", done = null;
    for await (const d of engine.chat(messages, { max_tokens: 96, constraint: schema, generation: { temperature: 0.7, seed } })) {
      if (d.type === "text") text += d.text; else done = d;
    }
    return { text, bytes: new TextEncoder().encode(text).length, ...done.usage };
  };
  const out = [];
  for (const seed of [1, 2, 3, 4]) {
    const messages = [{ role: "system", content: `Conversation ${seed}. Answer with one JSON turn.` },
                      { role: "user", content: "Do I need an umbrella in Lisbon today?" }];
    const first = await generate(messages, seed);
    const second = await generate([...messages, { role: "assistant", content: first.text }, { role: "user", content: "And tomorrow?" }], seed);
    out.push([first, second]);
  }
  const mode = engine.info.prompt;
  await engine.close();
  return { mode, out };
}"""


def test_the_engine_generates_only_what_the_reply_shows(booted):
    """The engine's cache must hold each reply as the conversation stores it, so that the next turn
    can reuse it. llama.cpp's chat endpoint lets the model wrap its JSON in a Markdown fence that
    it strips from the reply: tokens generated (and cached) that the next prompt does not have,
    which ended the prefix reuse at the very start of the previous reply (seeds 1-3 here take the
    fence). The engine renders ChatML itself and uses the completion endpoint instead, so nothing
    generated is hidden: a reply of n UTF-8 bytes comes from at most n tokens plus end-of-turn."""
    result = booted.evaluate(GENERATIONS_AND_REUSE, "auto")
    assert result["mode"] == "text"
    for first, second in result["out"]:
        for g in (first, second):
            assert 0 < g["completion_tokens"] <= g["bytes"] + 1, g
        assert second["cached_tokens"] >= first["prompt_tokens"], (first, second)


PREFILL = """async ({ instructions, prefill }) => {
  const agent = window.ai.agent({ instructions, tools: [%s], limits: { maxTokens: 160, retries: 3 } });
  const read = prefill ? await agent.prefill() : null;
  const messages = agent.messages;
  const usage = [];
  for await (const ev of agent.run("Umbrella for Lisbon?")) if (ev.type === "usage") usage.push(ev);
  return { read, messages, first: usage[0] };
}"""  % TOOL


def test_a_prefilled_agent_s_first_run_reads_only_its_question(booted):
    # instructions no agent of this page had: nothing of them is in the engine's cache
    cold = booted.evaluate(PREFILL, {"instructions": "Zebra crossing rules apply. Answer in one line.", "prefill": False})
    warm = booted.evaluate(PREFILL, {"instructions": "Quokka island rules apply. Answer in one line.", "prefill": True})
    read, first = warm["read"], warm["first"]
    assert read["promptTokens"] > 100 and read["cachedTokens"] < 10, read  # the engine read the system message
    assert len(warm["messages"]) == 1  # the conversation is as it was
    # the run read only what is new: its question, and the turn's opening where it differs from the
    # prefill's (`<|im_start|>user` for `<|im_start|>assistant`; a few tokens more on the tiny model's tokenizer)
    assert first["cachedTokens"] >= 0.95 * read["promptTokens"], (read, first)
    assert first["promptTokens"] - first["cachedTokens"] < 0.1 * first["promptTokens"], first
    assert cold["first"]["cachedTokens"] < 10 and cold["first"]["promptTokens"] - cold["first"]["cachedTokens"] > 100
