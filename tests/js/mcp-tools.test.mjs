// `ai.mcpTools(url, options)` (web/handle.mjs's mcpToolsOver, as runtime.mjs and remote.mjs use it):
// options checked here in both modes, the URL resolved against the page, and in worker mode the
// tools' plain data crossing back from the worker and into an agent's `tools` as it came, with a
// trust function still callable after the listing call settled (the worker keeps it); `close()` on
// what it gives ending the session once, in both modes, the array still plain data.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { MCP_OPTIONS, mcpToolsOver } from "../../web/handle.mjs";
import { workerSide } from "./fake-runtime.mjs";

const isOptionsError = (words) => (e) => e.name === "AerixError" && e.kind === "options" && e.message.includes(words);

describe("ai.mcpTools", () => {
  const had = Object.getOwnPropertyDescriptor(globalThis, "location");
  before(() => Object.defineProperty(globalThis, "location", { value: { href: "http://site.test/app/index.html" }, configurable: true }));
  after(() => (had ? Object.defineProperty(globalThis, "location", had) : delete globalThis.location));

  test("the proxy's path is the page's origin, and the options reach Python as given", async () => {
    const got = [];
    const mcpTools = mcpToolsOver(async (url, options) => (got.push([url, options]), { tools: [], close: async () => {} }));
    await mcpTools("/mcp/docs", { prefix: "docs_", timeoutS: 5, tools: ["search"], headers: { "X-Tenant": "a" }, trust: { taint: false } });
    await mcpTools("mcp/docs");
    assert.deepEqual(got, [
      ["http://site.test/mcp/docs", { prefix: "docs_", timeoutS: 5, tools: ["search"], headers: { "X-Tenant": "a" }, trust: { taint: false } }],
      ["http://site.test/app/mcp/docs", {}],
    ]);
  });

  test("an unknown option or a URL that is no string is refused before Python is called", async () => {
    const mcpTools = mcpToolsOver(async () => assert.fail("Python was called"));
    await assert.rejects(mcpTools("/mcp/docs", { timeout: 5 }), isOptionsError(`unknown mcpTools("/mcp/docs") option(s) ["timeout"]; known: ${JSON.stringify([...MCP_OPTIONS].sort())}`));
    await assert.rejects(mcpTools(undefined), isOptionsError("url must be a non-empty string, got undefined"));
    await assert.rejects(mcpTools("/mcp/docs", ["search"]), isOptionsError("must be an object, got an array"));
  });

  test("close() ends the listing's session once, however often it is called; the array stays plain data", async () => {
    const closed = [];
    const tool = { name: "docs_search", description: "Search the docs.", mcp: { aerixMcp: "m1" } };
    const mcpTools = mcpToolsOver(async () => ({ tools: [tool], close: async () => (closed.push("s1"), "Python's None") }));
    const docs = await mcpTools("/mcp/docs");
    assert.deepEqual([...docs], [tool]);
    assert.deepEqual(Object.keys(docs), ["0"]); // close is not enumerable: the tools cross as they are
    assert.equal(JSON.stringify(docs), JSON.stringify([tool]));
    assert.deepEqual(structuredClone(docs), [tool]); // what postMessage does with it
    const first = docs.close();
    assert.equal(docs.close(), first); // the same promise: one DELETE
    assert.equal(await first, undefined);
    await docs[Symbol.asyncDispose](); // `await using docs = ...`
    assert.deepEqual(closed, ["s1"]);
  });

  test("worker: the tools come back as plain data and go into an agent's tools as they came", async () => {
    const calls = [];
    const side = await workerSide(calls);
    try {
      const asked = [];
      const docs = await side.mcpTools("/mcp/docs", { prefix: "docs_", trust: { taint: (input) => (asked.push(input), true) } });
      assert.deepEqual(docs, [{ name: "docs_search", description: "Search the docs.", mcp: { aerixMcp: "m1" } }]);
      const [[, url, options]] = calls.filter((c) => c[0] === "mcpTools");
      assert.equal(url, "http://site.test/mcp/docs");
      assert.equal(options.prefix, "docs_");
      // the listing call has settled: the trust function is still the page's, callable from the worker
      assert.equal(await options.trust.taint({ q: "x" }), true);
      assert.deepEqual(asked, [{ q: "x" }]);
      const agent = side.agent({ tools: [...docs] });
      await agent.ready;
      const [, agentOptions] = calls.find((c) => c[0] === "agent");
      assert.deepEqual(agentOptions.tools, docs);
      // close() crosses to the worker, whose close ends the session once
      assert.equal(typeof docs.close, "function");
      await Promise.all([docs.close(), docs.close()]);
      await docs.close();
      assert.deepEqual(calls.filter((c) => c[0] === "mcpClose"), [["mcpClose", "s1"]]);
    } finally {
      side.close();
    }
  });
});
