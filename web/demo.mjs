// The demo page: boot aerix, give the agent the demo's tools (demo-tools.mjs: weather, time,
// convert, calculate, save_note, with fake but checkable data), and show a run as it happens.
// The default model is the bundled one, trained on exactly these tools and instructions.
// `window.demo` lets a headless browser drive it and read the transcript.
import { boot } from "./aerix.mjs";
import { INSTRUCTIONS, tools as demoTools } from "./demo-tools.mjs";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const MODEL = params.get("model") || "./models/aerix-tools.gguf";
// ?baseUrl=http://127.0.0.1:8080/v1&serverModel=NAME: the same demo on an OpenAI-compatible server
// on this machine. Only on this machine: the prompts typed here go to that server, so a link must
// not be able to send them anywhere else. The page's CSP (build/serve.py) allows the same origins.
const LOOPBACK = ["127.0.0.1", "localhost"]; // not [::1]: a CSP cannot name an IPv6 address
const SERVER = serverFrom(params.get("baseUrl"));

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
window.demo = { ready: false, running: false, transcript, error: null, server: SERVER?.baseUrl ?? null, toasts: [] };

// The "toast" channel: a tool that emits to it (ctx.emit("toast", body, {title})) shows a small
// toast for a few seconds. The demo's own tools do not emit (the bundled model was trained on them
// as they are): the channel is here for tools you add.
function showToast(message) {
  window.demo.toasts.push(message);
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

function card(kind, title, body) {
  const el = document.createElement("div");
  el.className = `card ${kind}`;
  el.innerHTML = `<h3></h3><pre></pre>`;
  el.querySelector("h3").textContent = title;
  el.querySelector("pre").textContent = body;
  $("log").append(el);
  return el;
}

let aerix;
try {
  aerix = await boot({
    ...(SERVER ? { engine: SERVER } : { model: MODEL }),
    onProgress: (p) => {
      if (p.phase === "model" && p.total) $("progress").value = p.loaded / p.total;
      $("status").textContent = p.phase === "model" ? `Downloading the model… ${Math.round(p.loaded / 1024)} KiB` : `Loaded: ${p.phase}`;
    },
  });
  const t = aerix.timings;
  $("progress").value = 1;
  $("status").textContent = "Ready.";
  $("timings").textContent = `ready in ${t.ready} ms (python ${t.python} · packages ${t.packages} · imports ${t.imports} · engine ${t.engine}, in parallel)`;
  const info = aerix.engine.info;
  if (SERVER) $("model").textContent = `Model ${SERVER.model} on the server ${aerix.engine.baseUrl} · runs kept in IndexedDB`;
  else $("model").textContent = `Model ${MODEL} · vocab ${info.n_vocab} · ctx ${info.n_ctx} · threads ${info.n_threads} · ${crossOriginIsolated ? "cross-origin isolated" : "not isolated"} · runs kept in IndexedDB`;
  window.demo.timings = t;
} catch (e) {
  $("status").textContent = `Could not start: ${e.message}`;
  window.demo.error = String(e.message || e);
}

// "Treat tool results as untrusted web content": weather and time stand for tools that bring
// text from outside (a web page, an e-mail), so their results taint the conversation, and
// save_note stands for one that acts on the user's behalf, so once the conversation is tainted it
// waits for the user's approval (docs/trust.md). Like the approval box, the box is read at each
// call. The flags are not part of what the model sees: the system message and the turn schema
// stay those the bundled model was trained on.
const untrusted = () => $("untrusted").checked;
// The box outlives a reload, so a run waiting on the guard is answered under the same flags.
$("untrusted").checked = localStorage.getItem("aerix-demo-untrusted") === "1";
$("untrusted").addEventListener("change", () => localStorage.setItem("aerix-demo-untrusted", untrusted() ? "1" : "0"));
const TRUST = { weather: { taint: untrusted }, time: { taint: untrusted }, save_note: { guardWhenTainted: untrusted } };
const tools = demoTools.map((t) => (TRUST[t.name] ? { ...t, trust: TRUST[t.name] } : t));

// One durable agent per setting of the constraint box; runs live in IndexedDB, so a reload can
// resume them. The approval box is read at each call, so a waiting run keeps its gate.
const agents = new Map();
function agentFor(constrain) {
  if (!agents.has(constrain)) {
    agents.set(
      constrain,
      aerix.agent({
        instructions: INSTRUCTIONS,
        tools,
        limits: { turns: 6, retries: 2, maxTokens: 256 },
        generation: { temperature: 0 }, // the bundled model is small: greedy is what its eval measures
        constrain,
        durable: true,
        channels: [{ name: "toast", out: showToast }],
        hooks: {
          beforeCall: async (call, ctx) => {
            if (!$("approve").checked) return null;
            const decision = await ctx.approve(`Run ${call.tool}?`, JSON.stringify(call.input));
            return decision.approved ? null : { deny: decision.reason || "you said no" };
          },
        },
      }),
    );
  }
  return agents.get(constrain);
}
window.demo.agent = () => agentFor($("constrain").checked); // the agent the next prompt goes to

let controller = null;

/** Show a run's events as they come; a waiting run ends in an approval card. */
async function show(agent, events) {
  window.demo.running = true;
  $("run").disabled = true;
  $("stop").disabled = false;
  let stream = null;
  try {
    for await (const ev of events) {
      transcript.push(ev);
      if (ev.type === "text") {
        stream ??= card("stream", "Model (streaming)", "");
        stream.querySelector("pre").textContent += ev.text;
        continue;
      }
      stream = null;
      if (ev.type === "usage") {
        const line = document.createElement("div");
        line.className = "usage";
        line.textContent = `prompt ${ev.promptTokens} tokens (cached ${ev.cachedTokens}) → ${ev.completionTokens} tokens`;
        $("log").append(line);
      } else if (ev.type === "turn") {
        if (ev.thought) card("thought", `Turn ${ev.turn} · thought`, ev.thought);
      } else if (ev.type === "call") {
        card("call", `Call ${ev.id} · ${ev.tool}`, JSON.stringify(ev.input));
      } else if (ev.type === "taint") {
        card("taint", `Untrusted content · from ${ev.source}`, `The result of ${ev.at} came from outside: from now on a note waits for your approval.`);
      } else if (ev.type === "artifact") {
        artifactCard(agent, ev);
      } else if (ev.type === "result") {
        card(`result${ev.error ? " error" : ""}`, `Result ${ev.id} · ${ev.tool}`, ev.text);
      } else if (ev.type === "retry") {
        card("retry", `Retry after turn ${ev.turn}`, ev.reason);
      } else if (ev.type === "waiting") {
        approvalCard(agent, { runId: ev.runId, id: ev.approvalId, title: ev.title, body: ev.body });
      } else if (ev.type === "final") {
        card("final", "Answer", ev.text);
      } else if (ev.type === "end") {
        card("end", `Ended: ${ev.reason}`, ev.message);
      }
    }
  } catch (e) {
    card("end", "Error", String(e.message || e));
  } finally {
    window.demo.running = false;
    $("run").disabled = false;
    $("stop").disabled = true;
  }
}

// Object URLs of the download links shown; revoked when the log is cleared for a new prompt.
const links = [];

/** A file the run kept (an attachment, or a tool's put): a card with a link to download it, the
 * Blob read back from the store through the JS API (agent.artifact). */
async function artifactCard(agent, ev) {
  const el = card("artifact", `File · ${ev.filename ?? ev.id}`, `${ev.mediaType} · ${ev.size} bytes`);
  el.dataset.artifact = ev.id;
  try {
    const { meta, blob } = await agent.artifact(ev.id);
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = meta.filename ?? meta.id;
    link.textContent = `Download ${meta.filename ?? meta.id}`;
    links.push(link.href);
    el.append(link);
  } catch (e) {
    el.querySelector("pre").textContent += `\n(could not read it back: ${e.message})`;
  }
}

function approvalCard(agent, approval) {
  const el = card("waiting", `Waiting for you · ${approval.title}`, approval.body ?? "");
  el.dataset.approval = approval.id;
  const row = document.createElement("div");
  row.className = "choices";
  for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.className = approved ? "approve" : "deny";
    button.addEventListener("click", () => {
      row.remove();
      el.querySelector("h3").textContent = `${approved ? "Approved" : "Denied"} · ${approval.title}`;
      controller = new AbortController();
      show(agent, agent.approve(approval.runId, approval.id, approved, { signal: controller.signal }));
    });
    row.append(button);
  }
  el.append(row);
}

$("ask").addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!aerix || window.demo.running) return;
  const prompt = $("prompt").value.trim();
  if (!prompt) return;
  $("log").replaceChildren();
  transcript.length = 0;
  for (const url of links.splice(0)) URL.revokeObjectURL(url);
  const attachments = [...$("files").files]; // kept as the run's first artifacts
  $("files").value = "";
  controller = new AbortController();
  const agent = agentFor($("constrain").checked);
  card("prompt", "You", prompt);
  await show(agent, agent.run(prompt, { signal: controller.signal, ...(attachments.length ? { attachments } : {}) }));
});

$("stop").addEventListener("click", () => controller?.abort());

// Runs a reload, a closed tab or a crash left behind: offer to go on with them.
if (aerix) {
  const agent = agentFor(true);
  for (const run of await agent.recover()) {
    if (run.approval) {
      card("prompt", `Earlier run · ${run.status}`, run.prompt);
      approvalCard(agent, { runId: run.id, ...run.approval });
    } else {
      const el = card("interrupted", `Interrupted run · ${run.status}`, run.prompt);
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Resume";
      button.addEventListener("click", () => {
        el.remove();
        controller = new AbortController();
        show(agent, agent.resume(run.id, { signal: controller.signal }));
      });
      el.append(button);
    }
  }
  $("run").disabled = false;
  window.demo.ready = true;
}
