/**
 * Prompt modes: who renders the model's chat template (PROMPT MODES below), and the request a
 * generation sends to llama.cpp (`buildRequest`) in either mode.
 *
 * @module prompt
 */

/*
 * PROMPT MODES. Under `response_format`, llama.cpp's chat path lets the model wrap its JSON in a
 * Markdown fence (```json ... ```) and strips the fence from the reply it returns. A noise model
 * takes the fence on most turns (about 11 hidden tokens of 50 on bench.gguf), a real model when it
 * likes fences. Those tokens cost generation time, and the next prompt, rendered from the reply as
 * it was returned, leaves the engine's cache right at the start of that reply: measured, turn 2
 * reused exactly turn 1's prompt and nothing of the reply. So where we can render the model's
 * template ourselves we do, and send the text with `json_schema` to the completion endpoint, whose
 * grammar is the schema and nothing else. What is left: a reply whose sampled tokens differ from
 * how its text tokenizes is processed again from the first difference (wllama 3.13 takes prompts
 * as text only: a token array fails in the server core with json type_error.302).
 */

const CHATML_START = "<|im_start|>";
const CHATML_END = "<|im_end|>";

/**
 * The chat endpoint's messages: two in a row of one role joined into one, with a blank line
 * between. aerix sends two user messages in a row after a refused or cut turn (its note follows
 * the prompt), and the templates of Gemma and Mistral refuse that ("roles must alternate").
 * Joining keeps the text of later turns the same, so prefix reuse is kept.
 */
function alternating(turns) {
  const out = [];
  for (const m of turns) {
    const last = out[out.length - 1];
    if (last && last.role === m.role && m.role !== "system") last.content = `${last.content}\n\n${m.content}`;
    else out.push({ ...m });
  }
  return out;
}

/** A conversation in ChatML, ready for the assistant's reply. */
function chatmlPrompt(messages) {
  let text = "";
  for (const m of messages) text += `${CHATML_START}${m.role}\n${m.content}${CHATML_END}\n`;
  return `${text}${CHATML_START}assistant\n`;
}

/**
 * "text" when the model's template is ChatML and our rendering gives exactly the tokens of
 * llama.cpp's own (the same probe through both paths: the second must reuse all but the last
 * token of the first); otherwise "chat".
 */
export async function choosePromptMode(wllama, wanted, template) {
  if (wanted === "chat") return "chat";
  let same = false;
  if (template.includes(CHATML_START) && template.includes(CHATML_END)) {
    const probe = [
      { role: "system", content: "aerix probe" },
      { role: "user", content: "one" },
      { role: "assistant", content: '{"a": 2}' },
      { role: "user", content: "three" },
    ];
    try {
      await wllama.createChatCompletion({ messages: probe, max_tokens: 1, temperature: 0, cache_prompt: true });
      const { usage } = await wllama.createCompletion({ prompt: chatmlPrompt(probe), max_tokens: 1, temperature: 0, cache_prompt: true });
      same = usage?.prompt_tokens > 1 && usage.prompt_tokens_details?.cached_tokens === usage.prompt_tokens - 1;
    } catch {
      same = false;
    }
  }
  if (wanted === "text" && !same) throw new Error("loadEngine: prompt \"text\" needs a ChatML model whose template renders as ChatML");
  return same ? "text" : "chat";
}


/**
 * The body of one request to wllama: `prompt` (text mode, for `createCompletion`) or `messages`
 * (chat mode, for `createChatCompletion`), streamed, with the prompt cache on and usage asked for.
 * @param {{role: string, content: string}[]} turns
 * @param {import("./generation.mjs").ChatOptions} options
 * @param {"text"|"chat"} promptMode
 * @param {boolean} [thinks]
 * @returns {Record<string, any>}
 */
export function buildRequest(turns, { max_tokens, constraint: schema, generation, top_logprobs }, promptMode, thinks = false) {
  const request = {
    ...(generation ?? {}),
    ...(promptMode === "text" ? { prompt: chatmlPrompt(turns) } : { messages: alternating(turns) }),
    stream: true,
    cache_prompt: true,
    stream_options: { include_usage: true },
  };
  if (max_tokens != null) request.max_tokens = max_tokens;
  // a template that can think (Qwen 3) is asked not to, unless the caller says otherwise: hidden
  // thinking would spend tokens the reply never shows, and the turn schema wants the JSON at once
  if (thinks && promptMode !== "text" && request.chat_template_kwargs === undefined) request.chat_template_kwargs = { enable_thinking: false };
  if (top_logprobs > 0) {
    // llama.cpp reads n_probs on both endpoints; its chat endpoint wants the OpenAI pair as well
    request.n_probs = top_logprobs;
    if (promptMode !== "text") Object.assign(request, { logprobs: true, top_logprobs });
  }
  if (schema && promptMode === "text") {
    request.json_schema = schema; // the completion endpoint ignores response_format
  } else if (schema) {
    request.response_format = { type: "json_schema", json_schema: { name: "turn", schema, strict: true } };
  }
  return request;
}
