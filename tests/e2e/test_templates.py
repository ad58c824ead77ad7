"""Chat templates other than ChatML (issue 21, point 2), on the real engine in the page: generated
GGUFs that carry the published templates of Llama 3, Gemma 3, Qwen 3, Mistral v0.3 and Phi-3.5
(build/templates/, build/families.py). For each: an agent run of two prompts decoded under the
turn schema on every request; the prompt llama.cpp rendered is the template's own rendering (in
page mode, checked token for token against the completion endpoint); turn 2 reuses the cache;
and a GGUF with no template fails boot with an error naming the fix."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from conftest import sent_schema

from build.families import FAMILIES, render

RUN = """async ({ model, worker }) => {
  const { boot } = await import("/aerix.mjs");
  const ai = await boot({ model, worker, engine: { recorder: true, seed: 7 } });
  window.ai = ai;
  const agent = ai.agent({
    instructions: "You are a travel helper.",
    tools: [{ name: "weather", description: "Today's forecast for a city.", input: { city: { type: "string", required: true } }, run: async ({ city }) => `Sunny in ${city}` }],
    limits: { turns: 3, retries: 2, maxTokens: 96 },
    generation: { temperature: 0.8 },
  });
  await agent.ready;
  const runs = [];
  for (const prompt of ["Umbrella for Lisbon?", "And for Oslo?"]) {
    const events = [];
    for await (const ev of agent.run(prompt)) if (ev.type !== "text" && ev.type !== "final_delta") events.push(ev);
    runs.push(events);
  }
  await new Promise((ok) => setTimeout(ok, 50)); // the worker's info update, if any
  return { runs, requests: ai.engine.requests, schema: agent.schema, info: { ...ai.engine.info } };
}"""

# The last chat request sent again (non-streamed, one token), then the expected text through the
# completion endpoint: the same prompt tokens, all but the last found in the cache, means
# llama.cpp rendered exactly the expected text.
PROBE = """async (expected) => {
  const w = window.ai.engine.wllama;
  const request = window.ai.engine.requests.at(-1);
  const { stream, stream_options, ...rest } = request;
  const chat = await w.createChatCompletion({ ...rest, max_tokens: 1, temperature: 0, cache_prompt: true });
  const text = await w.createCompletion({ prompt: expected, max_tokens: 1, temperature: 0, cache_prompt: true });
  return { chat: chat.usage, text: text.usage };
}"""


def expected_prompt(chat, request) -> str:
    context = {}
    if chat.name == "llama3":
        context["date_string"] = datetime.now(timezone.utc).strftime("%d %b %Y")
    if "chat_template_kwargs" in request:
        context.update(request["chat_template_kwargs"])
    text = render(chat, request["messages"], **context)
    # llama.cpp drops the template's own BOS text where the model adds a BOS token itself
    return text[len(chat.bos) :] if chat.add_bos and text.startswith(chat.bos) else text


@pytest.mark.parametrize("chat", FAMILIES, ids=[c.name for c in FAMILIES])
def test_an_agent_runs_on_each_template_family(fresh_page, worker, chat):
    page, _ = fresh_page()
    out = page.evaluate(RUN, {"model": f"/models/tpl-{chat.name}.gguf", "worker": worker})
    requests, runs = out["requests"], out["runs"]
    for events in runs:
        endings = [e for e in events if e["type"] in ("final", "end")]
        assert len(endings) == 1 and events[-1] == endings[0], events
        assert not (events[-1]["type"] == "end" and events[-1]["reason"] == "error"), events[-1]
    assert requests and all(sent_schema(r) == out["schema"] for r in requests), "a request without the turn schema"
    mode = out["info"]["prompt"]
    assert mode == ("text" if chat.name == "qwen3" else "chat"), mode  # Qwen 3 renders as ChatML: aerix writes the text
    usage = [[e for e in events if e["type"] == "usage"] for events in runs]
    first_of_turn_2, last_of_turn_1 = usage[1][0], usage[0][-1]
    if chat.name == "mistral":
        # v0.3 moves the system message into the last user message every turn: little is shared
        assert first_of_turn_2["cachedTokens"] < last_of_turn_1["promptTokens"] // 2, (first_of_turn_2, last_of_turn_1)
    else:
        assert first_of_turn_2["cachedTokens"] >= last_of_turn_1["promptTokens"] - 1, (first_of_turn_2, last_of_turn_1)
    if worker:
        return  # the token-for-token check below needs the page's wllama
    last = requests[-1]
    if mode == "text":
        assert last["prompt"] == expected_prompt(chat, {"messages": _messages_of(last["prompt"])})
        return
    if chat.name == "qwen3":
        assert last["chat_template_kwargs"] == {"enable_thinking": False}
    probe = page.evaluate(PROBE, expected_prompt(chat, last))
    assert probe["text"]["prompt_tokens"] == probe["chat"]["prompt_tokens"], probe
    assert probe["text"]["prompt_tokens_details"]["cached_tokens"] == probe["text"]["prompt_tokens"] - 1, probe


def _messages_of(chatml: str) -> list[dict[str, str]]:
    """The messages of a ChatML prompt that ends with the assistant's header."""
    body = chatml.removesuffix("<|im_start|>assistant\n")
    out = []
    for part in body.split("<|im_start|>")[1:]:
        role, _, content = part.partition("\n")
        out.append({"role": role, "content": content.removesuffix("<|im_end|>\n")})
    return out


def test_a_model_without_a_chat_template_fails_boot_naming_the_fix(fresh_page, worker):
    page, _ = fresh_page()
    message = page.evaluate(
        """async (worker) => {
          const { boot } = await import("/aerix.mjs");
          try { await boot({ model: "/models/tpl-none.gguf", worker }); return null; } catch (e) { return e.message; }
        }""",
        worker,
    )
    assert message is not None and "has no chat template" in message and "template:" in message, message
