/**
 * In-page half of `make bfcl`'s comparison (bench/bfcl.py, --page-sample): the same agent as the
 * native run, built by the same Python (bench/bfcl_agent.py, loaded into this page's Pyodide), on
 * the same GGUF in the page's engine, one question at a time, up to its first accepted turn: run
 * by aerix.evals in the page's Pyodide as natively (evals.run, a case with stop_after "turn");
 * BFCL's checker scores the record on the Python side (bench/bfcl_score.py).
 *
 * The page is bench/bfcl_page.html, served next to the site (bench/run.py's server), so it has
 * the site's origin and headers.
 */

import { boot } from "/aerix.mjs";

const S = {};

/** Boot aerix on `model` (a URL under /models/) and load bench/bfcl_agent.py into its Pyodide. */
export async function setup({ model, nThreads = 1 }) {
  const started = performance.now();
  S.ai = await boot({ model, engine: { nThreads } });
  const code = await (await fetch("/bench/bfcl_agent.py")).text();
  S.ai.pyodide.FS.writeFile("/home/pyodide/bfcl_agent.py", code);
  await S.ai.pyodide.runPythonAsync("import sys; sys.path.insert(0, '/home/pyodide'); import bfcl_agent");
  S.agent = S.ai.pyodide.pyimport("bfcl_agent");
  S.model = S.ai.pyodide.runPython("from aerix.engines.js import page_model; page_model()");
  await S.ai.engine.settled;
  return { ms: performance.now() - started, info: S.ai.engine.info };
}

/**
 * One question (its BFCL entry as JSON text): bfcl_agent.question_json's record, as JSON text
 * (parsed in Python, so 2.0 stays a float as it is natively).
 */
export async function question({ category, entry, variant = "default" }) {
  return await S.agent.question_json(S.model, category, entry, variant);
}
