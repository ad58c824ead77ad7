// The demo's "MCP tools" box (docs/mcp.md#the-demo): a person names an MCP server on this page's
// own origin (`/mcp/NAME`, forwarded by `python -m aerix serve --proxy-mcp NAME=URL`; `make demo`
// starts a made-up library at /mcp/library, build/demo_mcp.py) and connects: `ai.mcpTools` lists
// its tools, the box shows them (name, description), and the demo's agent gets them beside its own
// five for the next prompts (demo.mjs asks `current()` for them at each prompt).
// `?mcp=/mcp/NAME` prefills the box and lists the server on load, to say whether it answers. The
// page never asks an /mcp/ path nobody named: on a site without the proxy that is a 404.
// The bundled model was never trained on these tools; aerix-general may use them.

/** What the box accepts: a path on this page's origin, as the proxy serves it. */
const PATH = /^\/mcp\/[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/**
 * The path typed in the box, checked: `/mcp/NAME` on this page's origin.
 * @param {string} text
 * @returns {string}
 */
export function mcpPath(text) {
  const path = String(text ?? "").trim();
  if (!PATH.test(path)) throw new Error(`"${path}" is not an MCP server of this page: type /mcp/NAME, the path \`python -m aerix serve --proxy-mcp NAME=URL\` forwards (the page reaches other sites only through its own origin)`);
  return path;
}

/**
 * The rows the box lists, one a tool: its name and description.
 * @param {{name: string, description?: string}[]} tools
 * @returns {{name: string, description: string}[]}
 */
export function listed(tools) {
  return tools.map((t) => ({ name: t.name, description: t.description ?? "" }));
}

/**
 * The server's tools whose names the demo's tools already have (an agent cannot hold two of a name).
 * @param {{name: string}[]} tools
 * @param {string[]} own the names of the demo's tools
 * @returns {string[]}
 */
export function clashes(tools, own) {
  return tools.map((t) => t.name).filter((name) => own.includes(name));
}

/**
 * What the box shows tests and `make demo`, as `window.demo.mcp`.
 * @typedef {object} McpState
 * @property {string|null} url the server named (`?mcp=` or the box)
 * @property {boolean} probed whether the `?mcp=` listing on load has answered (or failed)
 * @property {{name: string, description: string}[]} offered what that listing found
 * @property {{name: string, description: string}[]} connected the tools the agent gets now
 * @property {string|null} error the last listing's failure
 */

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** A line in the box's status. */
function say(/** @type {string} */ text, bad = false) {
  $("mcp-status").textContent = text;
  $("mcp-status").className = bad ? "bad" : "";
}

/** The box's list of tools. */
function show(/** @type {{name: string, description: string}[]} */ rows) {
  $("mcp-tools").replaceChildren(...rows.map((row) => {
    const li = document.createElement("li");
    li.innerHTML = "<code></code> <span></span>";
    /** @type {HTMLElement} */ (li.firstChild).textContent = row.name;
    /** @type {HTMLElement} */ (li.lastChild).textContent = row.description;
    return li;
  }));
}

/**
 * Set up the box over the booted runtime.
 * @param {any} aerix what `boot()` gave (its `mcpTools`), or undefined if it failed
 * @param {{own: string[], query: string|null, onChange?: () => void}} opts the demo's tool names,
 *   `?mcp=`, and what to do when the connected tools change
 * @returns {{state: McpState, current: () => ({key: string, tools: object[]}|null)}}
 */
export function setUpMcp(aerix, { own, query, onChange = () => {} }) {
  const field = /** @type {HTMLInputElement} */ ($("mcp-url"));
  const go = /** @type {HTMLButtonElement} */ ($("mcp-go"));
  /** @type {McpState} */
  const state = { url: null, probed: false, offered: [], connected: [], error: null };
  /** @type {{key: string, tools: object[]}|null} */
  let now = null;
  let connections = 0;
  /** List the server at the box's path; null (said in the box) if it fails. */
  async function list() {
    try {
      state.url = mcpPath(field.value);
      const tools = await aerix.mcpTools(state.url, { timeoutS: 20 });
      const clash = clashes(tools, own);
      if (clash.length) {
        end(tools);
        throw new Error(`its tool(s) ${clash.join(", ")} have the name of a demo tool`);
      }
      state.error = null;
      return tools;
    } catch (e) {
      state.error = String(e.message || e);
      say(`Could not list ${field.value.trim() || "(nothing typed)"}: ${state.error}`, true);
      return null;
    }
  }
  $("mcp-connect").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!aerix) return say("The page did not start: there is no agent to give tools to.", true);
    go.disabled = true;
    say(`Listing ${field.value.trim()}…`);
    const tools = await list();
    go.disabled = false;
    if (!tools) return;
    if (now) end(now.tools); // the server connected before this one: its session ends
    now = { key: `mcp${++connections}`, tools };
    state.connected = listed(tools);
    show(state.connected);
    $("mcp-drop").hidden = false;
    say(`Connected to ${state.url}: the agent has these ${tools.length} tool(s) beside the demo's for your next prompts. Their results count as untrusted (they come from outside).`);
    onChange();
  });
  $("mcp-drop").addEventListener("click", () => {
    if (now) end(now.tools);
    now = null;
    state.connected = [];
    show([]);
    $("mcp-drop").hidden = true;
    say("Disconnected: the next prompts go to the demo's own tools only.");
    onChange();
  });
  if (query) {
    field.value = query;
    probe(aerix && list, state);
  }
  return { state, current: () => now };
}

/** End a listing's MCP session (one DELETE through the proxy); a failure only costs the server a
 * session that expires. */
function end(/** @type {any} */ tools) {
  tools.close?.().catch(() => {});
}

/** `?mcp=`: list the server once, to say whether it answers; the box opens if it does. The
 * listing's session ends at once: Connect opens the agent's own. */
async function probe(/** @type {null | (() => Promise<any[]|null>)} */ list, /** @type {McpState} */ state) {
  const tools = list ? await list() : null;
  if (tools) {
    end(tools);
    state.offered = listed(tools);
    /** @type {HTMLDetailsElement} */ ($("mcp")).open = true;
    say(`${state.url} answers with ${tools.length} tool(s): ${tools.map((t) => t.name).join(", ")}. Connect to give them to the agent.`);
  }
  state.probed = true;
}
