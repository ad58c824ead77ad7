/**
 * What a loaded model is, in the words a model picker shows: its architecture, size,
 * quantisation and chat-template family. Pure functions over what llama.cpp reports (its GGUF
 * metadata, as strings) and the GGUF file's own header; engine.mjs puts the result in `info`.
 *
 *   factsFrom({ metadata: wllama.getModelMetadata().meta, template, nParams: await ggufParameters(blob) })
 *   // { name: "aerix-tools", architecture: "llama", parameters: "3.7M", n_params: 3672320,
 *   //   quantisation: "Q8_0", template: "chatml" }
 *
 * @module facts
 */

/**
 * llama.cpp's `llama_ftype` (include/llama.h), the value of a GGUF's `general.file_type`, by name.
 * "MOSTLY_" is dropped: the big matrices have this type, the small 1-d tensors stay F32. Values
 * llama.cpp removed (5, 6, 33-35) are not listed.
 */
export const FILE_TYPES = Object.freeze({
  0: "F32",
  1: "F16",
  2: "Q4_0",
  3: "Q4_1",
  4: "Q4_1_SOME_F16",
  7: "Q8_0",
  8: "Q5_0",
  9: "Q5_1",
  10: "Q2_K",
  11: "Q3_K_S",
  12: "Q3_K_M",
  13: "Q3_K_L",
  14: "Q4_K_S",
  15: "Q4_K_M",
  16: "Q5_K_S",
  17: "Q5_K_M",
  18: "Q6_K",
  19: "IQ2_XXS",
  20: "IQ2_XS",
  21: "Q2_K_S",
  22: "IQ3_XS",
  23: "IQ3_XXS",
  24: "IQ1_S",
  25: "IQ4_NL",
  26: "IQ3_S",
  27: "IQ3_M",
  28: "IQ2_S",
  29: "IQ2_M",
  30: "IQ4_XS",
  31: "IQ1_M",
  32: "BF16",
  36: "TQ1_0",
  37: "TQ2_0",
  38: "MXFP4_MOE",
});

/**
 * The name of a `general.file_type` value: "Q4_K_M" for 15; "ftype N" for a value this table
 * does not know; "unknown" when the file gives none (llama.cpp then guesses from the tensors).
 * @param {string|number|undefined|null} fileType
 */
export function quantisationName(fileType) {
  if (fileType === undefined || fileType === null || String(fileType).trim() === "") return "unknown";
  const n = Number(fileType);
  if (!Number.isInteger(n)) return "unknown";
  return FILE_TYPES[n] ?? `ftype ${n}`;
}

// Names llama.cpp takes as a built-in template in place of Jinja text (`template: "chatml"`).
const BUILT_IN = { chatml: "chatml", llama3: "llama3", gemma: "gemma", phi3: "phi", phi4: "phi", "mistral-v1": "mistral", "mistral-v3": "mistral", "mistral-v3-tekken": "mistral", "mistral-v7": "mistral" };

/**
 * The family of a chat template, by the markers it writes: "chatml", "qwen3" (ChatML that can
 * think), "llama3", "gemma", "mistral", "phi", "other" (a template of none of these), or "none"
 * (no template). A llama.cpp built-in name ("chatml") counts as its family.
 * @param {string|null|undefined} text the Jinja text (`tokenizer.chat_template`)
 * @returns {"chatml"|"qwen3"|"llama3"|"gemma"|"mistral"|"phi"|"other"|"none"}
 */
export function templateFamily(text) {
  const t = String(text ?? "").trim();
  if (!t) return "none";
  if (!/\{[{%]/.test(t)) return BUILT_IN[t] ?? "other";
  if (t.includes("<|im_start|>")) {
    if (t.includes("<|im_sep|>")) return "phi"; // Phi-4 writes ChatML's markers with its own separator
    if (t.includes("enable_thinking") || t.includes("<think>")) return "qwen3";
    return "chatml";
  }
  if (t.includes("<|start_header_id|>") && t.includes("<|eot_id|>")) return "llama3";
  if (t.includes("<start_of_turn>")) return "gemma";
  if (t.includes("[INST]") && !t.includes("<<SYS>>")) return "mistral"; // <<SYS>> is Llama 2's
  if (t.includes("<|assistant|>") && t.includes("<|end|>")) return "phi";
  return "other";
}

/** A parameter count as people write it: 3672320 → "3.7M", 596049920 → "596M", 1.2e9 → "1.2B". */
export function sizeLabel(n) {
  if (!(Number.isFinite(n) && n > 0)) return "unknown";
  for (const [unit, scale] of /** @type {[string, number][]} */ ([["T", 1e12], ["B", 1e9], ["M", 1e6], ["K", 1e3]])) {
    if (n >= scale) {
      const v = n / scale;
      return `${v >= 100 ? Math.round(v) : Number(v.toPrecision(2))}${unit}`;
    }
  }
  return String(n);
}

/**
 * The facts a picker shows, from what llama.cpp reported and what the page found.
 * @param {object} [found]
 * @param {Record<string, string>} [found.metadata] the GGUF's key/values as llama.cpp gives them
 *   (wllama's `getModelMetadata().meta`: every value a string, arrays left out)
 * @param {string} [found.template] the chat template in use (the model's own, or the one given)
 * @param {number|null} [found.nParams] the parameter count from the GGUF's tensor table
 * @returns {{name: string, architecture: string, parameters: string, n_params: number|null,
 *   quantisation: string, template: string}}
 *   `parameters`: the file's own `general.size_label` when it has one, else the count rounded
 *   ("unknown" when neither is known).
 */
export function factsFrom({ metadata = {}, template = "", nParams = null } = {}) {
  const n = Number.isFinite(nParams) && nParams > 0 ? nParams : null;
  return {
    name: metadata["general.name"] || "unknown",
    architecture: metadata["general.architecture"] || "unknown",
    parameters: metadata["general.size_label"] || sizeLabel(n),
    n_params: n,
    quantisation: quantisationName(metadata["general.file_type"]),
    template: templateFamily(template),
  };
}

/*
 * THE GGUF HEADER. llama.cpp counts a model's parameters but wllama does not pass the count on,
 * so it is read from the file: the tensor table after the key/values gives each tensor's shape.
 * Layout (little-endian, versions 2 and 3): "GGUF", u32 version, u64 tensor count, u64 key/value
 * count; each key/value a string key, a u32 type and its value; each tensor a string name, a u32
 * dimension count, that many u64 dimensions, a u32 type and a u64 offset. A string is a u64
 * length and its bytes. The header is read in slices, so a large model is not read whole; the
 * vocabulary's arrays make it some megabytes on a real model.
 */

const SCALAR_BYTES = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;
const SLICE = 1 << 20; // bytes read at a time
const MAX_HEADER = 256 << 20; // a header larger than this is not a GGUF this module can read

/**
 * The number of parameters in a GGUF file (the sum over its tensors of their element counts),
 * or null when the header cannot be read (not GGUF, version 1, cut short, or larger than 256 MiB).
 * @param {Blob} blob
 * @returns {Promise<number|null>}
 */
export async function ggufParameters(blob) {
  try {
    return await countTensors(blob);
  } catch {
    return null;
  }
}

async function countTensors(blob) {
  let start = 0; // where `view` starts in the file
  let view = new DataView(new ArrayBuffer(0));
  let at = 0; // the read position in the file
  const has = (n) => at + n <= start + view.byteLength;
  const load = async (n) => {
    if (at + n > blob.size || at + n > MAX_HEADER) throw new RangeError("the GGUF header ends early");
    start = at;
    view = new DataView(await blob.slice(at, at + Math.max(n, SLICE)).arrayBuffer());
  };
  // each read checks its bytes are in the view, and loads the next slice when they are not
  const u32 = async () => (has(4) || (await load(4)), (at += 4), view.getUint32(at - 4 - start, true));
  const u64 = async () => (has(8) || (await load(8)), (at += 8), Number(view.getBigUint64(at - 8 - start, true)));
  const skip = async (n) => {
    if (n > MAX_HEADER) throw new RangeError("a GGUF value larger than the header can be");
    if (!has(n)) await load(n);
    at += n;
  };
  const value = async (type) => {
    if (type === STRING) return skip(await u64());
    if (type === ARRAY) {
      const [itemType, count] = [await u32(), await u64()];
      if (itemType in SCALAR_BYTES) return skip(SCALAR_BYTES[itemType] * count);
      for (let i = 0; i < count; i++) await value(itemType);
      return;
    }
    if (!(type in SCALAR_BYTES)) throw new TypeError(`GGUF value type ${type}`);
    return skip(SCALAR_BYTES[type]);
  };

  if ((await u32()) !== 0x46554747) return null; // "GGUF"
  const version = await u32();
  if (version < 2) return null; // version 1 counts in u32: no model llama.cpp loads today
  const tensors = await u64();
  const pairs = await u64();
  for (let i = 0; i < pairs; i++) {
    await skip(await u64()); // the key
    await value(await u32());
  }
  let total = 0;
  for (let i = 0; i < tensors; i++) {
    await skip(await u64()); // the name
    const dims = await u32();
    let elements = 1;
    for (let d = 0; d < dims; d++) elements *= await u64();
    await skip(12); // type, offset
    total += elements;
  }
  return total;
}
