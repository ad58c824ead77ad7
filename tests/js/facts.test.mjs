// What the model picker shows about a model (web/facts.mjs), under Node's own test runner: the
// chat-template family of every published template the site carries (build/templates/), the
// names of llama.cpp's file types, and the parameter count read from a real GGUF's header.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { describe, test } from "node:test";

import { factsFrom, FILE_TYPES, ggufParameters, quantisationName, sizeLabel, templateFamily } from "../../web/facts.mjs";

const ROOT = new URL("../../", import.meta.url);
const TEMPLATES = new URL("build/templates/", ROOT);
// The template every model the build makes carries (build/models.py, CHAT_TEMPLATE): ChatML.
const CHATML =
  "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}" +
  "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
const bytes = (path) => new Blob([readFileSync(new URL(path, ROOT))]);

describe("templateFamily", () => {
  test("each published template in build/templates is its family", () => {
    const files = readdirSync(TEMPLATES).filter((f) => f.endsWith(".jinja")).sort();
    assert.deepEqual(files, ["gemma.jinja", "llama3.jinja", "mistral.jinja", "phi.jinja", "qwen3.jinja"]);
    for (const file of files) assert.equal(templateFamily(readFileSync(new URL(file, TEMPLATES), "utf8")), file.replace(".jinja", ""), file);
  });

  test("ChatML is chatml; no template is none; anything else is other", () => {
    assert.equal(templateFamily(CHATML), "chatml");
    for (const none of ["", "  \n", null, undefined]) assert.equal(templateFamily(none), "none");
    assert.equal(templateFamily("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"), "other");
  });

  test("a llama.cpp built-in name counts as its family", () => {
    assert.equal(templateFamily("chatml"), "chatml");
    assert.equal(templateFamily("llama3"), "llama3");
    assert.equal(templateFamily("mistral-v7"), "mistral");
    assert.equal(templateFamily("vicuna"), "other");
  });

  test("markers it tells apart: Qwen 3's thinking, Phi-4's separator, Llama 2's [INST]", () => {
    assert.equal(templateFamily(`${CHATML}{% if enable_thinking is defined %}{% endif %}`), "qwen3");
    assert.equal(templateFamily("{% for m in messages %}<|im_start|>{{ m.role }}<|im_sep|>{{ m.content }}<|im_end|>{% endfor %}"), "phi");
    assert.equal(templateFamily("{{ bos_token }}[INST] <<SYS>>\n{{ system }}\n<</SYS>>\n\n{{ user }} [/INST]"), "other");
  });
});

describe("quantisation names", () => {
  test("general.file_type values by llama.cpp's llama_ftype names", () => {
    const expected = { 0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 30: "IQ4_XS", 32: "BF16" };
    for (const [value, name] of Object.entries(expected)) {
      assert.equal(quantisationName(value), name, `file_type ${value}`); // llama.cpp gives metadata as strings
      assert.equal(quantisationName(Number(value)), name);
    }
  });

  test("removed values are not named; unknown ones say their number; none is unknown", () => {
    for (const removed of [5, 6, 33, 34, 35]) assert.equal(FILE_TYPES[removed], undefined);
    assert.equal(quantisationName("99"), "ftype 99");
    assert.equal(quantisationName(undefined), "unknown");
    assert.equal(quantisationName(""), "unknown");
    assert.equal(quantisationName("Q8_0"), "unknown");
  });
});

describe("parameters", () => {
  test("the count read from the bundled model's tensor table is the one its model card gives", async () => {
    const card = JSON.parse(readFileSync(new URL("models/aerix-tools.json", ROOT), "utf8"));
    assert.equal(await ggufParameters(bytes("models/aerix-tools.gguf")), card.parameters);
    assert.equal(sizeLabel(card.parameters), "3.7M");
  });

  test("a file that is not GGUF, or is cut inside its header, has no count", async () => {
    assert.equal(await ggufParameters(new Blob(["not a model at all"])), null);
    const whole = readFileSync(new URL("models/aerix-tools.gguf", ROOT));
    assert.equal(await ggufParameters(new Blob([whole.subarray(0, 2000)])), null);
    assert.equal(await ggufParameters(new Blob([])), null);
  });

  test("labels as people write them", () => {
    assert.equal(sizeLabel(120256), "120K");
    assert.equal(sizeLabel(134515008), "135M");
    assert.equal(sizeLabel(596049920), "596M");
    assert.equal(sizeLabel(1.236e9), "1.2B");
    assert.equal(sizeLabel(7.6e9), "7.6B");
    assert.equal(sizeLabel(null), "unknown");
    assert.equal(sizeLabel(0), "unknown");
  });
});

describe("factsFrom", () => {
  test("the facts of the bundled model, from metadata as llama.cpp gives it", () => {
    const metadata = { "general.architecture": "llama", "general.name": "aerix-tools", "general.file_type": "7", "llama.context_length": "2048" };
    assert.deepEqual(factsFrom({ metadata, template: CHATML, nParams: 3672320 }), {
      name: "aerix-tools",
      architecture: "llama",
      parameters: "3.7M",
      n_params: 3672320,
      quantisation: "Q8_0",
      template: "chatml",
    });
  });

  test("the file's own size label wins over the count; what is missing is unknown", () => {
    const facts = factsFrom({ metadata: { "general.size_label": "0.6B" }, nParams: 596049920 });
    assert.equal(facts.parameters, "0.6B");
    assert.equal(facts.n_params, 596049920);
    assert.deepEqual(factsFrom({}), {
      name: "unknown",
      architecture: "unknown",
      parameters: "unknown",
      n_params: null,
      quantisation: "unknown",
      template: "none",
    });
  });
});
