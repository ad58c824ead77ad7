// The demo's MCP box (web/demo-mcp.mjs), its pure part: the path a person types is checked to be
// the page's own /mcp/NAME (the proxy's path), the listed tools become rows, and tools whose names
// the demo's tools already have are found before an agent is built with both.
import assert from "node:assert/strict";
import { test } from "node:test";

import { clashes, listed, mcpPath } from "../../web/demo-mcp.mjs";

test("a path on the page's origin, as the proxy serves it, is taken trimmed", () => {
  assert.equal(mcpPath("  /mcp/library "), "/mcp/library");
  assert.equal(mcpPath("/mcp/docs-2_x"), "/mcp/docs-2_x");
});

test("anything else is refused with what to type", () => {
  for (const bad of ["", "library", "mcp/library", "/mcp/", "/mcp/library/", "/mcp/a b", "http://127.0.0.1:8000/mcp", "//evil.example/mcp/x", "/mcp/../v1", null]) {
    assert.throws(() => mcpPath(bad), /is not an MCP server of this page: type \/mcp\/NAME/, String(bad));
  }
});

test("the listed tools become rows of name and description", () => {
  const tools = [{ name: "lookup_book", description: "Find a book.", mcp: { aerixMcp: "m1" } }, { name: "bare", mcp: { aerixMcp: "m2" } }];
  assert.deepEqual(listed(tools), [{ name: "lookup_book", description: "Find a book." }, { name: "bare", description: "" }]);
});

test("a server's tool named as a demo tool is a clash", () => {
  const own = ["weather", "time", "convert", "calculate", "save_note"];
  assert.deepEqual(clashes([{ name: "lookup_book" }, { name: "weather" }, { name: "time" }], own), ["weather", "time"]);
  assert.deepEqual(clashes([{ name: "library_hours" }], own), []);
});
