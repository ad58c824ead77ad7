// The demo's model picker: what the model the page booted is (engine.info's facts), and the ways
// to boot another: a URL, a .gguf file from this computer (the file input, or dropped on the
// page), a model this browser kept, or the bundled one again. Each is a reload with ?model=, a
// fresh boot: a picked file is first kept in this browser (aerix's keepModel) and the page
// reloads with ?model=aerix-local:..., so the next visit loads it from there with no file picked.
import { cachedModels, forgetModel, keepModel } from "./aerix.mjs";

export const BUNDLED = "./models/aerix-tools.gguf";
const LOCAL = "aerix-local:";
// The chat models a site may hold (models/models.json lists what this one has): the picker offers
// those it finds, in this order. The others there (tiny, bench, tpl-*) are the tests' noise models.
export const OFFERED = [
  ["aerix-tools.gguf", "aerix-tools: the bundled model, 3.7 M parameters, trained on this page's five tools"],
  ["aerix-general-q8_0.gguf", "aerix-general: SmolLM2-135M tuned here for any tools (Q8_0, 145 MB)"],
  ["smollm2-q8_0.gguf", "SmolLM2-135M-Instruct, untuned (Q8_0, 145 MB)"],
  ["smollm2.gguf", "SmolLM2-135M-Instruct, untuned (Q4_1, 98 MB)"],
];

/** @param {string} id */
const $ = (id) => document.getElementById(id);
/** An <input> of the page, by id. */
const input = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id));
/** The page's <progress> bar. */
const progress = () => /** @type {HTMLProgressElement} */ ($("progress"));
const resolve = (model) => (model.startsWith(LOCAL) ? model : new URL(model, location.href).href);
const mib = (bytes) => (bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`);

/** Whether `model` (a ?model= value) is the bundled one. */
export function isBundled(model) {
  return resolve(model) === resolve(BUNDLED);
}

/** The page's address with ?model= set (null: the bundled model); ?worker= is kept, a server dropped. */
export function withModel(model) {
  const url = new URL(location.href);
  for (const name of ["model", "baseUrl", "serverModel"]) url.searchParams.delete(name);
  if (model && !isBundled(model)) url.searchParams.set("model", model);
  return url.href;
}

/** How a person calls a model: a kept file by its name, a URL by its path on this site. */
export function modelLabel(model) {
  if (model.startsWith(LOCAL)) {
    let key = model.slice(LOCAL.length);
    try {
      key = decodeURIComponent(key);
    } catch {}
    return key.replace(/:\d+:\d+$/, ""); // the demo's keys: name:size:lastModified
  }
  const url = new URL(model, location.href);
  return url.origin === location.origin ? url.pathname : url.href;
}

/** Boot another model: the page again, with ?model=. */
function reloadWith(model) {
  location.assign(withModel(model));
}

/** Keep a picked .gguf in this browser, then boot it. */
async function pick(file) {
  const status = $("picker-status");
  if (!file) return;
  if (!/\.gguf$/i.test(file.name)) {
    status.textContent = `${file.name} is not a .gguf file: pick a GGUF model.`;
    return;
  }
  status.textContent = `Keeping ${file.name} (${mib(file.size)}) in this browser, for this visit and the next…`;
  const bar = progress().value;
  $("progress").removeAttribute("value"); // the cache says nothing until it is done: a bar that only moves
  try {
    reloadWith(await keepModel(file, `${file.name}:${file.size}:${file.lastModified}`));
  } catch (e) {
    status.textContent = `Could not load ${file.name}: ${e.message}`;
    progress().value = bar;
  }
}

/**
 * Wire the picker's controls. They work while the model loads and after a boot that failed (a
 * URL that is not there, a kept model the browser evicted): the way out is always here.
 * @param {string} current the ?model= this page booted (or tried to)
 * @param {boolean} [server] the page talks to a server instead (?baseUrl=)
 */
export function setUpPicker(current, server = false) {
  /** @type {HTMLAnchorElement} */ ($("bundled-link")).href = withModel(null);
  $("bundled-link").hidden = isBundled(current) && !server;
  $("load-url").addEventListener("submit", (event) => {
    event.preventDefault();
    const url = input("model-url").value.trim();
    if (url) reloadWith(url);
  });
  $("model-file").addEventListener("change", () => pick(input("model-file").files[0]));
  // Drop a .gguf anywhere on the page. The prompt's attachment input takes its own drops; any
  // other file dropped is not opened in place of the page.
  const files = (event) => event.dataTransfer?.types?.includes("Files") && event.target !== $("files");
  document.addEventListener("dragover", (event) => {
    if (!files(event)) return;
    event.preventDefault();
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", (event) => event.relatedTarget === null && document.body.classList.remove("dropping"));
  document.addEventListener("drop", (event) => {
    document.body.classList.remove("dropping");
    if (!files(event)) return;
    event.preventDefault();
    pick(event.dataTransfer.files[0]);
  });
  listKept(current);
  listOffered(current);
}

/** The chat models this site holds (its models.json), each a link that boots it. */
async function listOffered(current) {
  /** @type {{file: string}[]} */
  let listed = [];
  try {
    const response = await fetch(new URL("models/models.json", location.href));
    listed = response.ok ? (await response.json()).models ?? [] : [];
  } catch {}
  const files = new Set(listed.map((m) => m.file));
  const items = OFFERED.filter(([file]) => files.has(file)).map(([file, label]) => {
    const model = `./models/${file}`;
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = withModel(model);
    link.textContent = label;
    item.dataset.file = file;
    item.append(link, resolve(model) === resolve(current) ? " · this one" : "");
    return item;
  });
  $("offered").replaceChildren(...items);
  $("offered-title").hidden = items.length === 0;
}

/** The models this browser keeps, each a link that boots it and a button that forgets it. */
async function listKept(current) {
  const list = $("kept");
  const kept = (await cachedModels().catch(() => [])).filter((m) => !isBundled(m.model)).reverse(); // the last kept first
  list.replaceChildren();
  for (const { model, size } of kept) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = withModel(model);
    link.textContent = modelLabel(model);
    const forget = document.createElement("button");
    forget.type = "button";
    forget.className = "forget";
    forget.textContent = "Forget";
    forget.addEventListener("click", async () => {
      await forgetModel(model);
      listKept(current);
    });
    item.append(link, ` · ${size ? mib(size) : "size unknown"}${resolve(model) === resolve(current) ? " · this one" : ""} `, forget);
    list.append(item);
  }
  $("kept-title").hidden = kept.length === 0;
}

/**
 * Show what the booted model is, and return it (window.demo.model holds it).
 * @param {object} info the engine's info (engine.mjs: its facts, context, threads, how it loaded)
 * @param {string} model the ?model= it was booted from
 */
export function showFacts(info, model) {
  const bundled = isBundled(model);
  const facts = {
    model,
    bundled,
    name: info.name,
    architecture: info.architecture,
    parameters: info.parameters,
    n_params: info.n_params,
    quantisation: info.quantisation,
    template: info.template,
    n_ctx: info.n_ctx,
    n_ctx_train: info.n_ctx_train,
    n_vocab: info.n_vocab,
    n_threads: info.n_threads,
    backend: info.backend,
    gpuLayers: info.gpuLayers ?? null,
    cached: info.cached,
    fetchMs: info.fetchMs,
    loadMs: info.loadMs,
  };
  const from = model.startsWith(LOCAL) ? "your file, kept in this browser" : info.cached ? "this browser's cache" : "the network";
  const rows = [
    ["model", "Model", `${info.name} · ${bundled ? "the bundled model" : modelLabel(model)}`],
    ["architecture", "Architecture", info.architecture],
    ["parameters", "Parameters", info.n_params ? `${info.parameters} (${info.n_params.toLocaleString("en")})` : info.parameters],
    ["quantisation", "Quantisation", info.quantisation],
    ["template", "Chat template", info.template],
    ["context", "Context", `${info.n_ctx} tokens${info.n_ctx_train ? ` (trained for ${info.n_ctx_train})` : ""}`],
    ["threads", "Threads", String(info.n_threads)],
    ["backend", "Backend", info.backend === "webgpu" && info.gpuLayers ? `webgpu (${info.gpuLayers} layers offloaded)` : info.backend],
    ["cached", "Loaded from", from],
    ["time", "Load time", `${Math.round(info.fetchMs)} ms to get the bytes, ${Math.round(info.loadMs)} ms to load`],
  ];
  $("facts").replaceChildren(
    ...rows.flatMap(([key, label, value]) => {
      const dt = document.createElement("dt");
      const dd = document.createElement("dd");
      dt.textContent = label;
      dd.textContent = value ?? "unknown";
      dd.dataset.fact = key;
      return [dt, dd];
    }),
  );
  $("model-note").hidden = bundled;
  return facts;
}
