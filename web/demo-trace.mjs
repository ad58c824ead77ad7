// The demo's Trace panel: the spans of the last run (its agent's `tracer: { keep: true }`, read
// with `agent.traces()`, docs/traces.md) as a timeline: a row per span, indented under its parent
// (run → generation, tool, generation), a bar from its start to its end on the run's scale, and
// its duration.

/**
 * One row of the timeline: a span, its depth under the run, its start from the run's start and
 * its duration (ms), and its bar as fractions of the run (`left`, `width`).
 * @typedef {{name: string, depth: number, startMs: number, durationMs: number, status: string, left: number, width: number}} TraceRow
 */

/**
 * The rows of one trace (spans as `agent.traces()` gives them), parents before their children,
 * siblings by start time.
 * @param {any[]} spans
 * @returns {TraceRow[]}
 */
export function timeline(spans) {
  if (!spans?.length) return [];
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map();
  for (const span of [...spans].sort((a, b) => a.startMs - b.startMs)) {
    const parent = ids.has(span.parentId) ? span.parentId : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const start = Math.min(...spans.map((s) => s.startMs));
  const total = Math.max(Math.max(...spans.map((s) => s.endMs ?? s.startMs)) - start, 1e-3);
  /** @type {TraceRow[]} */
  const rows = [];
  const walk = (span, depth) => {
    const took = span.durationMs ?? 0;
    rows.push({ name: span.name, depth, startMs: span.startMs - start, durationMs: took, status: span.status, left: (span.startMs - start) / total, width: took / total });
    for (const child of children.get(span.spanId) ?? []) walk(child, depth + 1);
  };
  for (const root of children.get(null) ?? []) walk(root, 0);
  return rows;
}

/** A duration as a person reads it. */
const shown = (ms) => (ms < 1 ? `${ms.toFixed(2)} ms` : ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`);

/**
 * Draw one trace in the panel `el` (a `<section>` with an `<ol>`), hidden when there is none.
 * @param {HTMLElement} el
 * @param {any[]} spans
 * @returns {TraceRow[]} what is drawn
 */
export function drawTrace(el, spans) {
  const rows = timeline(spans);
  el.hidden = rows.length === 0;
  const items = rows.map((row) => {
    const li = document.createElement("li");
    li.className = `span ${row.status}`;
    li.innerHTML = '<span class="name"></span><span class="track"><span class="bar"></span></span><span class="ms"></span>';
    const name = /** @type {HTMLElement} */ (li.querySelector(".name"));
    name.textContent = row.name;
    name.style.paddingLeft = `${row.depth * 1.1}em`;
    const bar = /** @type {HTMLElement} */ (li.querySelector(".bar"));
    bar.style.left = `${(row.left * 100).toFixed(2)}%`;
    bar.style.width = `${Math.max(row.width * 100, 0.5).toFixed(2)}%`;
    /** @type {HTMLElement} */ (li.querySelector(".ms")).textContent = shown(row.durationMs);
    return li;
  });
  /** @type {HTMLElement} */ (el.querySelector("ol")).replaceChildren(...items);
  return rows;
}
