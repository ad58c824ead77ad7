// The demo's Trace panel (web/demo-trace.mjs): a trace as agent.traces() gives it, as rows of a
// timeline: parents before children, siblings by start, bars as fractions of the run.
import assert from "node:assert/strict";
import { test } from "node:test";

import { timeline } from "../../web/demo-trace.mjs";

const span = (name, spanId, parentId, startMs, durationMs, status = "unset") => ({ name, spanId, parentId, startMs, endMs: startMs + durationMs, durationMs, status });

test("a run's spans become rows: the run, then its generation, tool and generation in start order", () => {
  // as agent.traces() gives them: the run first, the rest not in order
  const spans = [span("invoke_agent travel", "r", null, 1000, 100), span("chat", "g2", "r", 1060, 40), span("execute_tool weather", "t", "r", 1050, 10, "error"), span("chat", "g1", "r", 1000, 50)];
  const rows = timeline(spans);
  assert.deepEqual(rows.map((r) => [r.name, r.depth]), [["invoke_agent travel", 0], ["chat", 1], ["execute_tool weather", 1], ["chat", 1]]);
  assert.deepEqual(rows.map((r) => [r.startMs, r.durationMs]), [[0, 100], [0, 50], [50, 10], [60, 40]]);
  assert.deepEqual(rows.map((r) => [r.left, r.width]), [[0, 1], [0, 0.5], [0.5, 0.1], [0.6, 0.4]]);
  assert.equal(rows[2].status, "error");
});

test("a sub-run nests under the calling tool; no spans, no rows", () => {
  const spans = [span("invoke_agent boss", "r", null, 0, 10), span("execute_tool ask", "t", "r", 2, 6), span("invoke_agent helper", "s", "t", 3, 4), span("chat", "g", "s", 3, 4)];
  assert.deepEqual(timeline(spans).map((r) => [r.name, r.depth]), [["invoke_agent boss", 0], ["execute_tool ask", 1], ["invoke_agent helper", 2], ["chat", 3]]);
  assert.deepEqual(timeline([]), []);
});
