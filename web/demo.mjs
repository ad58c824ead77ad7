// The demo page: boot aerix, give the agent the demo's tools (demo-tools.mjs: weather, time,
// convert, calculate, save_note, with fake but checkable data), and show a run as it happens:
// the page draws the state of a chat store (chat.mjs), the answer as it streams included.
// The default model is the bundled one, trained on exactly these tools and instructions; the
// Model panel (demo-picker.mjs) shows what the booted model is and boots another (?model=).
// `window.demo` lets a headless browser drive it and read the transcript, the store and the model.
import { boot, chat } from "./aerix.mjs";
import { setUpMcp } from "./demo-mcp.mjs";
import { BUNDLED, setUpPicker, showFacts } from "./demo-picker.mjs";
import { desks } from "./demo-routing.mjs";
import { drawTrace } from "./demo-trace.mjs";
import { tools as demoTools } from "./demo-tools.mjs";

/** @param {string} id */
const $ = (id) => document.getElementById(id);
/** An <input> of the page (its value, checked, files), by id. */
const input = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id));
/** A <button> of the page, by id. */
const button = (/** @type {string} */ id) => /** @type {HTMLButtonElement} */ ($(id));
const params = new URLSearchParams(location.search);
// a URL, or a file kept in this browser (aerix-local:...); see demo-picker.mjs
const MODEL = params.get("model") || BUNDLED;
// ?baseUrl=http://127.0.0.1:8080/v1&serverModel=NAME: the same demo on an OpenAI-compatible server
// on this machine. Only on this machine: the prompts typed here go to that server, so a link must
// not be able to send them anywhere else. The page's CSP (build/serve.py) allows the same origins.
const LOOPBACK = ["127.0.0.1", "localhost"]; // not [::1]: a CSP cannot name an IPv6 address
const SERVER = serverFrom(params.get("baseUrl"));
// Python and the engine run in a Web Worker (aerix.mjs), the recommended mode: the page stays
// responsive while they boot. ?worker=0 runs them in this page instead.
const WORKER = params.get("worker") !== "0";
// ?record=1 keeps every request sent to the engine in the page, as `demo.requests` (tests read them)
const RECORD = params.get("record") === "1";

/** The server `?baseUrl=` names, if it is on this machine; said on the page either way. */
function serverFrom(baseUrl) {
  if (!baseUrl) return null;
  let url = null;
  try {
    url = new URL(baseUrl);
  } catch {}
  if (url?.protocol !== "http:" || !LOOPBACK.includes(url.hostname) || url.username || url.password) {
    notice("end", `Refused ?baseUrl=${baseUrl}: this demo sends prompts only to a server on this machine (http://127.0.0.1:PORT or http://localhost:PORT). It uses the model in this page instead.`);
    return null;
  }
  notice("call", `Your prompts go to the server at ${url.origin}, not to a model in this page.`);
  return { baseUrl: url.href, model: params.get("serverModel") || "default" };
}

function notice(kind, text) {
  const el = document.createElement("p");
  el.id = "server-notice";
  el.className = `card ${kind}`;
  el.setAttribute("role", "status");
  el.textContent = text;
  $("boot").before(el);
}

const transcript = [];
// `chat`: the chat store the log draws (its getState() is what the page shows); `model`: what the
// booted model is (demo-picker.mjs's showFacts); `progress`: the model phase's progress reports
/**
 * What the demo shows tests and a person at the console, as `window.demo`.
 * @typedef {object} DemoState
 * @property {boolean} ready
 * @property {boolean} running
 * @property {object[]} transcript
 * @property {string|null} error
 * @property {string|null} server
 * @property {string[]} toasts
 * @property {object|null} chat
 * @property {object|null} model
 * @property {object[]} progress
 * @property {Record<string, number>} [timings] the boot's phases, in ms
 * @property {() => object} [agent] the agent the last prompt went to
 * @property {{promptTokens: number, cachedTokens: number, completionTokens: number, ms: number}|null} [prefill] the travel desk's system message read on load (agent.prefill)
 * @property {{scores: Record<string, number>, desk: string}|null} [route] how the last prompt was routed
 * @property {{type: string, source: string, target: string}|null} [handoff] the last prompt's `handoff` event
 * @property {object[]} [requests] with `?record=1`: every request sent to the engine (tests read them)
 * @property {object[]} [trace] the last run's trace as the Trace panel draws it (demo-trace.mjs's rows)
 * @property {import("./demo-mcp.mjs").McpState} [mcp] the MCP box: the server named, its tools, those the agent has
 */
/** @type {DemoState} */
const demo = { ready: false, running: false, transcript, error: null, server: SERVER?.baseUrl ?? null, toasts: [], chat: null, model: null, progress: [] };
Object.assign(window, { demo });
setUpPicker(MODEL, !!SERVER);

// The "toast" channel: a tool that emits to it (ctx.emit("toast", body, {title})) shows a small
// toast for a few seconds. The demo's own tools do not emit (the bundled model was trained on them
// as they are): the channel is here for tools you add.
function showToast(message) {
  demo.toasts.push(message);
  let box = $("toasts");
  if (!box) {
    box = document.createElement("div");
    box.id = "toasts";
    box.setAttribute("aria-live", "polite");
    document.body.append(box);
  }
  const el = document.createElement("div");
  el.className = "toast";
  el.innerHTML = "<strong></strong><p></p>";
  el.querySelector("strong").textContent = message.title ?? "";
  el.querySelector("p").textContent = message.body;
  box.append(el);
  setTimeout(() => el.remove(), 5000);
}

let aerix;
try {
  aerix = await boot({
    ...(SERVER ? { engine: SERVER } : { model: MODEL, engine: { recorder: RECORD } }),
    worker: WORKER,
    onProgress: (p) => {
      if (p.phase !== "model") return void ($("status").textContent = `Loaded: ${p.phase}`);
      demo.progress.push(p);
      if (p.total) /** @type {HTMLProgressElement} */ ($("progress")).value = p.loaded / p.total;
      const of = p.total ? ` of ${Math.round(p.total / 1024)}` : "";
      $("status").textContent = `${p.cached ? "Reading the model from this browser's cache" : "Downloading the model"}… ${Math.round(p.loaded / 1024)}${of} KiB`;
    },
  });
  const t = aerix.timings;
  /** @type {HTMLProgressElement} */ ($("progress")).value = 1;
  $("status").textContent = "Ready.";
  $("timings").textContent = `ready in ${t.ready} ms (python ${t.python} · packages ${t.packages} · imports ${t.imports} · engine ${t.engine}, in parallel${aerix.worker ? ", in a worker" : ", in this page"})`;
  const info = aerix.engine.info;
  if (SERVER) $("model").textContent = `Model ${SERVER.model} on the server ${aerix.engine.baseUrl} · runs kept in IndexedDB`;
  else $("model").textContent = `Model ${MODEL} · vocab ${info.n_vocab} · ctx ${info.n_ctx} · threads ${info.n_threads} · ${crossOriginIsolated ? "cross-origin isolated" : "not isolated"} · runs kept in IndexedDB`;
  if (!SERVER) demo.model = showFacts(info, MODEL);
  demo.timings = t;
  if (RECORD) demo.requests = aerix.engine.requests;
} catch (e) {
  $("status").textContent = `Could not start: ${e.message}`;
  demo.error = String(e.message || e);
}

// "Treat tool results as untrusted web content": weather and time stand for tools that bring
// text from outside (a web page, an e-mail), so their results taint the conversation, and
// save_note stands for one that acts on the user's behalf, so once the conversation is tainted it
// waits for the user's approval (docs/trust.md). Like the approval box, the box is read at each
// call. The flags are not part of what the model sees: the system message and the turn schema
// stay those the bundled model was trained on.
const untrusted = () => input("untrusted").checked;
// The box outlives a reload, so a run waiting on the guard is answered under the same flags.
input("untrusted").checked = localStorage.getItem("aerix-demo-untrusted") === "1";
$("untrusted").addEventListener("change", () => localStorage.setItem("aerix-demo-untrusted", untrusted() ? "1" : "0"));
const TRUST = { weather: { taint: untrusted }, time: { taint: untrusted }, save_note: { guardWhenTainted: untrusted } };
const tools = demoTools.map((t) => (TRUST[t.name] ? { ...t, trust: TRUST[t.name] } : t));

// The desks (demo-routing.mjs): with the routing box on, each prompt goes to the desk the model
// scores higher (agent.choose); with the handoff box on, to a front desk that hands it over to one
// (handoffs). The boxes exclude each other. The approval box is read at each call.
const problems = []; // failures of the page's own clicks, shown as cards
const hooks = {
  beforeCall: async (call, ctx) => {
    if (!input("approve").checked) return null;
    const decision = await ctx.approve(`Run ${call.tool}?`, JSON.stringify(call.input));
    return decision.approved ? null : { deny: decision.reason || "you said no" };
  },
};
const { agentFor, frontDesk, route } = desks(aerix, { tools, channels: [{ name: "toast", out: showToast }], hooks, problems });
for (const [id, other] of [["route", "handoff"], ["handoff", "route"]]) {
  $(id).addEventListener("change", () => input(id).checked && (input(other).checked = false));
}
let sentTo = null; // the agent the last prompt went to
let routed = null; // {scores, desk} of the last prompt, when it was routed
let handed = null; // the `handoff` event of the last prompt, when the front desk handed it over
// The MCP box (demo-mcp.mjs): the tools of a server it connected to join the desk's for the next
// prompts (not the front desk's: it has handoffs only), in an agent of their own.
const mcp = setUpMcp(aerix, { own: tools.map((t) => t.name), query: params.get("mcp"), onChange: () => (sentTo = null) });
demo.mcp = mcp.state;
demo.agent = () => sentTo ?? agentFor(input("constrain").checked, "travel", mcp.current());

/** The agent for a prompt: the front desk, the desk the scores pick (shown as a card), or travel. */
async function agentForPrompt(prompt) {
  const constrain = input("constrain").checked;
  if (input("handoff").checked) return frontDesk(constrain);
  if (!input("route").checked) return agentFor(constrain, "travel", mcp.current());
  const { desk, scores } = await route(prompt);
  if (scores) demo.route = routed = { scores, desk };
  return agentFor(constrain, desk, mcp.current());
}

// -- the log: drawn from the chat store's state ------------------------------------------------

// One chat store per agent (chat.mjs): the page draws the state of the one it shows, and every
// event of its runs also goes to demo.transcript (cleared for each new prompt).
const stores = new Map();
function storeFor(agent) {
  const onEvent = (ev) => (transcript.push(ev), ev.type === "handoff" && (handed = demo.handoff = ev));
  if (!stores.has(agent)) stores.set(agent, chat(agent, { onEvent }));
  return stores.get(agent);
}
let shown = null; // the store drawn in #log
let unsubscribe = () => {};
function showStore(store) {
  if (store === shown) return store;
  unsubscribe();
  shown = store;
  demo.chat = store;
  unsubscribe = store.subscribe(draw);
  draw();
  return store;
}

// What the page adds to the state: runs a reload left interrupted (offered for resume), failures
// of its own clicks, and the download links of the files shown (object URLs, revoked when their
// files leave the state).
let interrupted = [];
const links = new Map(); // artifact id -> {href, filename}, or null while it is read back

/** The cards the state shows, in order: each `{key, kind, title, body}` and what it needs. */
function views(state) {
  const out = [];
  const card = (key, kind, title, body, more = {}) => out.push({ key, kind, title, body: body ?? "", ...more });
  for (const run of interrupted) card(`interrupted:${run.id}`, "interrupted", `Interrupted run · ${run.status}`, run.prompt, { resume: run });
  if (routed) {
    const scores = Object.entries(routed.scores).map(([option, p]) => `${(p * 100).toFixed(1)} %  ${option}`).join("\n");
    card("route", "call", `Routed to the ${routed.desk} desk · agent.choose`, scores);
  }
  if (handed) card("handoff", "call", `Handed to the ${handed.target} desk · handoffs`, `${handed.source} → ${handed.target}: the run goes on under the ${handed.target} desk`);
  const lastPrompt = state.messages.findLastIndex((m) => m.role === "user");
  const message = (m, i) => (m.role === "user" ? card(`m${i}`, "prompt", "You", m.text) : card(`m${i}`, "final", "Answer", m.text));
  state.messages.slice(0, lastPrompt + 1).forEach(message); // earlier turns of the conversation, then this run's prompt
  const { taint } = state;
  const taintCard = () => card("taint", "taint", `Untrusted content · from ${taint.source}`, `The result of ${taint.at} came from outside${untrusted() ? ": from now on a note waits for your approval" : ""}.`);
  if (taint && !state.calls.some((c) => c.id === taint.at)) taintCard(); // an earlier run's
  const files = (callId) => {
    for (const a of state.artifacts.filter((x) => x.callId === callId)) card(`artifact:${a.id}`, "artifact", `File · ${a.filename ?? a.id}`, `${a.mediaType} · ${a.size} bytes`, { artifact: a });
  };
  files(null); // the attachments
  for (const c of state.calls) {
    card(`call:${c.id}`, "call", `Call ${c.id} · ${c.tool}`, JSON.stringify(c.input));
    files(c.id);
    if (taint?.at === c.id) taintCard();
    if ("result" in c) card(`result:${c.id}`, `result${c.error ? " error" : ""}`, `Result ${c.id} · ${c.tool}`, c.result);
  }
  for (const a of state.approvals) card(`approval:${a.approvalId}`, "waiting", `Waiting for you · ${a.title}`, a.body, { approval: a });
  if (state.thought) card("thought", "thought", "Thought", state.thought);
  if (state.answer) card("answer", "final streaming", "Answer (streaming)", state.answer);
  else if (state.status === "running") card("answer", "stream", "Model", "working…");
  state.messages.slice(lastPrompt + 1).forEach((m, i) => message(m, lastPrompt + 1 + i)); // this run's answer
  if (state.ending?.type === "end") card("ending", "end", `Ended: ${state.ending.reason}`, state.ending.message);
  if (state.error) card("error", "end", "Error", state.error.message);
  problems.forEach((text, i) => card(`problem${i}`, "end", "Error", text));
  const u = state.usage;
  if (u.promptTokens || u.completionTokens) out.push({ key: "usage", kind: "usage", text: `this conversation: prompt ${u.promptTokens} tokens (cached ${u.cachedTokens}) → ${u.completionTokens} tokens` });
  return out;
}

/** A card's element, made once per key: later draws change only its text. */
function make(view) {
  const el = document.createElement("div");
  if (view.kind === "usage") return el;
  el.innerHTML = "<h3></h3><pre></pre>";
  if (view.approval) approvalButtons(el, view.approval);
  if (view.resume) resumeButton(el, view.resume);
  if (view.artifact) el.dataset.artifact = view.artifact.id;
  return el;
}

function update(el, view) {
  const className = view.kind === "usage" ? "usage" : `card ${view.kind}`;
  if (el.className !== className) el.className = className;
  if (view.kind === "usage") {
    if (el.textContent !== view.text) el.textContent = view.text;
    return;
  }
  const [h3, pre] = el.children;
  if (h3.textContent !== view.title) h3.textContent = view.title;
  if (pre.textContent !== view.body) pre.textContent = view.body;
  if (view.artifact) downloadLink(el, view.artifact);
}

const drawn = new Map(); // key -> element in #log

/** Bring #log to the state's cards, keeping each card's element (a link or a button being
 * clicked stays the same node while the answer streams). */
function draw() {
  const state = shown.getState();
  const wanted = views(state);
  const keys = new Set(wanted.map((v) => v.key));
  for (const [key, el] of drawn) if (!keys.has(key)) (el.remove(), drawn.delete(key));
  const log = $("log");
  let at = log.firstChild;
  for (const view of wanted) {
    let el = drawn.get(view.key);
    if (!el) drawn.set(view.key, (el = make(view)));
    update(el, view);
    if (el === at) at = at.nextSibling;
    else log.insertBefore(el, at);
  }
  for (const [id, link] of links) {
    if (link && !state.artifacts.some((a) => a.id === id)) (link.href && URL.revokeObjectURL(link.href), links.delete(id));
  }
}

/** A file the run kept (an attachment, or a tool's put): a link to download it, the Blob read
 * back from the store through the JS API (agent.artifact). */
function downloadLink(el, artifact) {
  if (el.querySelector("a, p")) return;
  const link = links.get(artifact.id);
  if (link?.href) {
    const a = document.createElement("a");
    a.href = link.href;
    a.download = link.filename;
    a.textContent = `Download ${link.filename}`;
    el.append(a);
  } else if (link?.error) {
    const p = document.createElement("p");
    p.textContent = `(could not read it back: ${link.error})`;
    el.append(p);
  } else if (!links.has(artifact.id)) {
    links.set(artifact.id, null);
    const store = shown;
    store.agent.artifact(artifact.id).then(
      // saved, never rendered: a tool's text/html opened in a tab would run as this page's origin
      ({ meta, blob }) => links.set(artifact.id, { href: URL.createObjectURL(new Blob([blob], { type: "application/octet-stream" })), filename: meta.filename ?? meta.id }),
      (e) => links.set(artifact.id, { error: e.message }),
    ).then(() => shown === store && draw());
  }
}

function approvalButtons(el, approval) {
  el.dataset.approval = approval.approvalId;
  const row = document.createElement("div");
  row.className = "choices";
  for (const [label, approved] of /** @type {[string, boolean][]} */ ([["Approve", true], ["Deny", false]])) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.className = approved ? "approve" : "deny";
    button.addEventListener("click", async () => {
      const buttons = /** @type {HTMLButtonElement[]} */ ([...row.children]);
      for (const b of buttons) b.disabled = true; // the card goes once the store takes the answer
      await drive(shown.approve(approval.approvalId, approved));
      for (const b of buttons) b.disabled = false;
    });
    row.append(button);
  }
  el.append(row);
}

function resumeButton(el, run) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Resume";
  button.addEventListener("click", () => {
    interrupted = interrupted.filter((r) => r !== run);
    drive(shown.resume(run.id));
  });
  el.append(button);
}

/** The page is busy while a run's events come: `demo.running`, Run and Stop follow. */
async function drive(settled) {
  demo.running = true;
  button("run").disabled = true;
  button("stop").disabled = false;
  try {
    const state = await settled;
    if (state?.error?.prompt !== undefined) input("prompt").value = state.error.prompt; // refused (too long): back in the box to shorten
    demo.trace = drawTrace($("trace"), (await demo.agent().traces()).at(-1) ?? []);
  } catch (e) {
    problems.push(String(e.message || e));
    draw();
  } finally {
    demo.running = false;
    button("run").disabled = false;
    button("stop").disabled = true;
  }
}

$("ask").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!aerix || demo.running) return;
  const prompt = input("prompt").value.trim();
  if (!prompt) return;
  transcript.length = 0;
  problems.length = 0;
  interrupted = [];
  const attachments = [...input("files").files]; // kept as the run's first artifacts
  input("files").value = "";
  demo.running = true;
  routed = demo.route = handed = demo.handoff = null;
  const viaFrontDesk = input("handoff").checked;
  const store = showStore(storeFor((sentTo = await agentForPrompt(prompt))));
  // the front desk's chat starts again at each prompt: it hands *each* prompt over (demo-routing.mjs)
  if (viaFrontDesk) await store.reset();
  await drive(store.send(prompt, attachments.length ? { attachments } : {}));
});

$("stop").addEventListener("click", () => shown?.stop());

// After a reload: the last chat comes back (its kept conversation), then the runs a reload, a
// closed tab or a crash left behind: a waiting one joins the store (its prompt and its approval
// card); the others are offered for resume.
// These are the travel desk's (durable runs are kept under their agent's name): a run of the notes
// desk or of the front desk is not listed here.
if (aerix) {
  const store = showStore(storeFor(agentFor(true)));
  await store.reopen().catch((e) => problems.push(`Could not reopen the last chat: ${e.message}`));
  interrupted = (await store.recover()).filter((run) => !run.approval);
  draw();
  button("run").disabled = false;
  // First answer fast (agent.prefill): the travel desk reads its system message (and the chat kept)
  // now, while the person types; a prompt sent before it is done waits for it in the engine's
  // queue and reuses what it read. In the page only: a server reads a prompt ten times faster,
  // and may charge for the request. `demo.ready` comes after it, so a test's first prompt finds it done.
  if (!SERVER) {
    const started = performance.now();
    demo.prefill = await store.agent.prefill().then(
      (usage) => (usage ? { ...usage, ms: Math.round(performance.now() - started) } : null),
      (e) => (problems.push(`Could not read the system message ahead: ${e.message}`), null),
    );
  }
  demo.ready = true;
}
