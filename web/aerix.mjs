/**
 * aerix in the page: boot Python (Pyodide + the aerix wheel) and the engine, in parallel, all
 * from this page's origin; then build agents from JavaScript.
 *
 *   import { boot } from "./aerix.mjs";
 *   const aerix = await boot({ model: "./models/tiny.gguf", worker: true, onProgress: (p) => console.log(p) });
 *   const agent = aerix.agent({
 *     instructions: "You are a travel helper.",
 *     tools: [{ name: "weather", description: "Forecast for a city.",
 *               input: { city: { type: "string", required: true } },
 *               run: async ({ city }, { signal, callId }) => `Sunny in ${city}` },
 *             { name: "sum", description: "Add numbers.", input: { xs: { type: "array", items: { type: "number" } } },
 *               module: "./my-tools.mjs" }],   // imported and run where Python runs (the worker)
 *     limits: { turns: 8, maxTokens: 384 },
 *     hooks: { beforeCall: (call) => null },
 *     channels: [{ name: "toast", out: (message) => showToast(message) }],  // a tool: await ctx.emit("toast", body, { title })
 *   });
 *   for await (const ev of agent.run("Umbrella for Lisbon?", { signal })) console.log(ev);
 *   const answer = await agent.ask("And for Porto?");   // { text, thought, events }
 *   const boss = aerix.agent({ tools: [agent.asTool("travel", "Answers travel questions.")] });  // Python's as_tool
 *   await agent.state.set("home", "Lisbon");  // Python's agent.state: get/set/delete/load, collection(name).list/get/upsert/remove
 *   const docs = await aerix.mcpTools("/mcp/docs", { prefix: "docs_" });  // an MCP server's tools, through serve --proxy-mcp
 *   const reader = aerix.agent({ tools: [...docs] });                       // Python's mcp_tools (docs/mcp.md)
 *   await docs.close();                                                     // ends the MCP session (one DELETE)
 *
 * Two modes, one API:
 * - `worker: true`: Python, the aerix wheel and the engine's client run in a module Web Worker
 *   (worker.mjs); the page's main thread stays free for the UI. Tools, hooks and channels written
 *   in the page still run in the page (each call is a message back), so they keep the DOM; a tool
 *   given as `{module, export}` runs in the worker. Abort crosses as a message. remote.mjs lists
 *   the few differences (`agent()` builds in the background: see `agent.ready`).
 * - `worker: false` (the default): everything in the page, and `aerix.pyodide` is the Pyodide
 *   the agents run in, for `pyodide.runPython` users. Python that runs there gets the engine with
 *   `from aerix.engines.js import page_model`.
 * `aerix.runPython(code)` works in both: the value of `code`, as plain JavaScript.
 *
 * The same agents run against an OpenAI-compatible server instead of the in-page engine:
 *
 *   const aerix = await boot({ engine: { baseUrl: "http://127.0.0.1:8080/v1", model: "qwen", apiKey } });
 *
 * Then no wllama and no GGUF are loaded; every generation is a streamed `fetch` from Python
 * (`aerix.OpenAIModel`), and the server must allow this page's origin (CORS).
 *
 * @module aerix
 */

import { bootHere } from "./runtime.mjs";
import { bootWorker } from "./remote.mjs";

/** `chat(agent)`: a reactive store of one agent's conversation for UIs (chat.mjs). */
export { chat } from "./chat.mjs";
/**
 * Models kept in this browser (model-cache.mjs, MODEL CACHE): `keepModel(file, key)` keeps a file the
 * person picked and gives the `model` that loads it on later visits ("aerix-local:..."),
 * `cachedModels()` lists what is kept, `forgetModel(model)` removes one.
 */
export { cachedModels, forgetModel, keepModel } from "./engine.mjs";
/**
 * `loadEngine(options)`: the engine alone, for a page that runs its own Pyodide and never calls
 * `boot()` (docs/page.md, "Your own Pyodide"); Python takes it as `aerix.engines.js.JsModel(engine)`.
 */
export { loadEngine } from "./engine.mjs";

const HERE = new URL("./", import.meta.url);

/**
 * Boot Python and the engine in parallel.
 *
 * @param {object} options
 * @param {string|Blob} [options.model] a GGUF file: a URL (any GGUF you host), a Blob, or a model
 *   kept in this browser ("aerix-local:...", from `keepModel`); not needed with `engine.baseUrl`.
 * @param {boolean} [options.worker=false] run Python and the engine in a Web Worker (see above).
 * @param {boolean} [options.cache=true] keep a model fetched from a URL in this browser (Cache API,
 *   "aerix-models") and load it from there on the next boot, with no request for it while the
 *   site's `models/models.json` gives the same sha256 (a model it does not list is revalidated);
 *   false: neither read nor write. A Blob is cached only with `cacheKey`. model-cache.mjs's MODEL CACHE
 *   says more.
 * @param {string} [options.cacheKey] with a Blob `model`: keep its bytes in this browser under this
 *   key once they load, as `keepModel` does, for `model: "aerix-local:" + encodeURIComponent(key)`.
 * @param {string|URL} [options.base] where the site's files are (default: next to this module).
 * @param {object} [options.engine] options for `loadEngine` (nCtx, nThreads, nBatch, nUbatch, nGpuLayers, seed, recorder);
 *   or, for an OpenAI-compatible server, `{ baseUrl, model, apiKey, params, headers, retries, backoffS,
 *   maxBackoffS }` (OpenAIModel's parameters; any other is refused): `baseUrl` includes `/v1`, `model`
 *   is the name the server knows, `params` more body fields for every request, `retries` how many
 *   times a 429/503 is asked again after a wait (`backoffS` doubled each time, at most `maxBackoffS`).
 * @param {(p: {phase: string, loaded?: number, total?: number, ms?: number, cached?: boolean}) => void} [options.onProgress]
 *   phases: "python", "packages", "imports" (each with `ms` when done) and "model" (bytes, with
 *   `cached`: true when they come from this browser's cache).
 * @returns {Promise<{pyodide: object|null, engine: object, agent: Function, runPython: Function, mcpTools: Function, timings: object, worker: boolean}>}
 */
export async function boot({ worker = false, base = HERE, ...options } = {}) {
  if (typeof worker !== "boolean") throw new TypeError(`boot({ worker }) must be true or false, got ${worker}`);
  const root = new URL(base, location.href);
  return worker ? bootWorker(root, options) : bootHere({ ...options, base: root });
}
