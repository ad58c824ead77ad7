"""Long conversations in the page (issue 22), on the real engine, in both modes: a 30-exchange chat
in a 1,024-token context is compacted and runs to its end (the bundled model and the demo's tools:
two of its tools, since the system message for all five takes 788 of the 1,024 tokens, and the
noise model's 297-token vocabulary spends most of them on the system message alone); the demo reopens its chat after a
reload and goes on with it; `choose` gives scores that sum to 1, and the demo routes with them."""

from __future__ import annotations

import math

from conftest import demo

# 30 exchanges with one agent in a 1,024-token context (the engine's n_ctx, which the page gives
# the agent as limits.contextTokens): every run's events, and the engine's requests.
CHAT = """async ({ worker, exchanges }) => {
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  const ai = await boot({ model: "/models/aerix-tools.gguf", worker, engine: { nCtx: 1024, seed: 7, recorder: true } });
  const agent = ai.agent({
    instructions: demo.INSTRUCTIONS, tools: demo.tools.filter((t) => t.name === "weather" || t.name === "time"),
    limits: { turns: 3, retries: 2, maxTokens: 128 },
    generation: { temperature: 0 },
  });
  const cities = ["Lisbon", "Porto", "Oslo", "Rome", "Madrid", "Paris", "Vienna", "Berlin", "Nairobi", "Tokyo"];
  const asks = [(c) => `Do I need an umbrella in ${c} today?`, (c) => `What time is it in ${c}?`, (c) => `What's the weather like in ${c}?`];
  const runs = [];
  for (let i = 0; i < exchanges; i++) {
    const events = [];
    for await (const ev of agent.run(asks[i % 3](cities[i % 10]))) if (ev.type !== "text" && ev.type !== "final_delta") events.push(ev);
    runs.push(events);
  }
  return { runs, nCtx: ai.engine.info.n_ctx, messages: agent.messages.length };
}"""


def test_a_30_exchange_chat_in_a_1024_token_context_is_compacted_and_runs_to_the_end(fresh_page, worker):
    page, _ = fresh_page()
    out = page.evaluate(CHAT, {"worker": worker, "exchanges": 30})
    assert out["nCtx"] == 1024
    runs = out["runs"]
    assert len(runs) == 30
    for events in runs:
        endings = [e for e in events if e["type"] in ("final", "end")]
        assert len(endings) == 1 and events[-1] is endings[0] or events[-1] == endings[0], events
        assert not (events[-1]["type"] == "end" and events[-1]["reason"] in ("error", "context")), events[-1]
    compactions = [e for events in runs for e in events if e["type"] == "compact"]
    assert len(compactions) >= 2, "a 30-exchange chat in 1,024 tokens was compacted less than twice"
    for c in compactions:
        assert c["droppedTurns"] >= 1 and c["tokensAfter"] < c["tokensBefore"], c
        assert c["method"] in ("model", "digest")
    # every generation fit the context, its reply included (the engine would have failed otherwise)
    usage = [e for events in runs for e in events if e["type"] == "usage"]
    assert usage and max(u["promptTokens"] + u["completionTokens"] for u in usage) <= 1024


CHOOSE = """async ({ question, options }) => {
  const agent = window.ai.agent({ instructions: "You route requests." });
  await agent.ready;
  const before = agent.messages;
  const scores = await agent.choose(question, options);
  return { scores, same: JSON.stringify(agent.messages) === JSON.stringify(before) };
}"""


def test_choose_gives_each_option_a_score_and_they_sum_to_1(booted):
    options = ["the travel desk", "the notes desk", "the math desk"]
    out = booted.evaluate(CHOOSE, {"question": "Will it rain in Porto tomorrow?", "options": options})
    scores = out["scores"]
    assert list(scores) == options
    assert all(0 <= p <= 1 for p in scores.values())
    assert math.isclose(sum(scores.values()), 1.0, abs_tol=1e-6)
    assert out["same"], "choose changed the conversation"


READY = "() => window.demo && window.demo.ready"
DONE = "() => window.demo.transcript.length > 0 && !window.demo.running"


def ask(page, prompt):
    page.fill("#prompt", prompt)
    page.click("#run")
    page.wait_for_function(DONE, timeout=180_000)
    return page.evaluate("window.demo.transcript")


def test_the_demo_reopens_its_chat_after_a_reload_and_goes_on_with_it(fresh_page, mode):
    page, _ = fresh_page(demo(mode))
    page.wait_for_function(READY, timeout=180_000)
    first = ask(page, "What's the weather like in Lisbon?")
    assert first[-1]["type"] == "final", first
    page.reload()
    page.wait_for_function(READY, timeout=180_000)
    shown = page.evaluate("window.demo.chat.getState().messages")
    assert [m["role"] for m in shown] == ["user", "assistant"] and shown[0]["text"] == "What's the weather like in Lisbon?", shown
    assert shown[1]["text"] == first[-1]["text"]
    assert page.locator("#log .card.final pre").all_text_contents() == [first[-1]["text"]], "the page shows the reopened chat"
    second = ask(page, "What time is it in Nairobi?")
    assert second[-1]["type"] in ("final", "end")
    sent = [m["content"] for m in page.evaluate("window.demo.agent().messages") if m["role"] == "user"]
    assert sent[0] == "What's the weather like in Lisbon?" and "What time is it in Nairobi?" in sent, "the chat went on from the reopened one"


def test_the_demo_routes_a_prompt_by_the_models_scores(fresh_page, mode):
    page, _ = fresh_page(demo(mode))
    page.wait_for_function(READY, timeout=180_000)
    page.check("#route")
    events = ask(page, "Save a note: buy bread.")
    assert events[-1]["type"] in ("final", "end") and not (events[-1]["type"] == "end" and events[-1]["reason"] == "error"), events[-1]
    route = page.evaluate("window.demo.route")
    assert route is not None, page.evaluate("window.demo.chat.getState().error")
    assert route["desk"] in ("travel", "notes")
    assert math.isclose(sum(route["scores"].values()), 1.0, abs_tol=1e-6)
    assert page.locator(".card", has_text="Routed to the").count() == 1
