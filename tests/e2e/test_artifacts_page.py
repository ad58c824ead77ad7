"""Artifacts in the page (issue 19, point 4), on the real engine: a file a JavaScript tool puts is
kept in IndexedDB as a Blob, survives a reload and downloads; the demo shows a download link for
an attachment; the IndexedDB store keeps the artifact part of the store contract.

The demo's tools and system message are those the bundled model was trained on, so the tool that
puts a file lives in this test's page script, on the generated noise model (tiny.gguf): at
temperature 2 it calls the only tool in some runs and answers in others, so the script tries runs
until one calls it (as tests/e2e/test_durable_page.py does)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import demo

BYTES = [0, 255, 1, 128, 10, 13, 200, 0, 37]  # not UTF-8: bytes must cross exactly

# One life of the page: boot, build the same durable agent (an IndexedDB store of its own), then
# either run until the tool has put its file, or (after the reload) read it back through the JS API.
LIFE = """async ({ phase, attempts, id, bytes, worker }) => {
  const { boot } = await import("/aerix.mjs");
  const { openStore } = await import("/store.mjs");
  const ai = await boot({ model: "/models/tiny.gguf", worker });
  window.ai = ai;
  const tools = [{
    name: "export", description: "Export the table as a file.", input: {},
    run: async (input, ctx) => {
      const art = await ctx.artifacts.put(new Uint8Array(bytes), "application/octet-stream", "table.bin");
      const text = await ctx.artifacts.put(new Blob(["a,b\\n1,2\\n"], { type: "text/csv" }), "text/csv", "table.csv");
      const back = await ctx.artifacts.get(art.id);
      let missing = null;
      try { await ctx.artifacts.get("art_missing"); } catch (e) { missing = String(e.message); }
      const seen = { art, text, back: { meta: back.meta, data: [...back.data], isBytes: back.data instanceof Uint8Array }, listed: await ctx.artifacts.list(), missing };
      sessionStorage.setItem("seen", JSON.stringify(seen));
      return "exported " + art.id;
    },
  }];
  const agent = ai.agent({ tools, store: openStore("aerix-artifacts"), limits: { turns: 3, retries: 2, maxTokens: 120 }, generation: { temperature: 2.0 } });
  if (phase === "first") {
    for (let i = 0; i < attempts; i++) {
      const events = [];
      for await (const ev of agent.run(`Export the table (try ${i}).`, { runId: `r${i}` })) events.push(ev);
      if (events.some((e) => e.type === "artifact")) return { events, runId: `r${i}`, tries: i + 1, seen: JSON.parse(sessionStorage.getItem("seen")) };
    }
    return { events: null, tries: attempts };
  }
  const { meta, blob } = await agent.artifact(id);
  const link = document.createElement("a");
  link.id = "download";
  link.href = URL.createObjectURL(blob);
  link.download = meta.filename;
  link.textContent = "download";
  document.body.append(link);
  let missing = null;
  try { await agent.artifact("art_missing"); } catch (e) { missing = { name: e.name, reason: e.reason, message: e.message }; }
  return { meta, type: blob.type, bytes: [...new Uint8Array(await blob.arrayBuffer())], runs: (await agent.runs()).map((r) => r.id), missing };
}"""


def test_an_artifact_a_js_tool_puts_survives_a_reload_and_downloads(fresh_page, worker):
    page, _ = fresh_page()
    page.evaluate("() => new Promise((ok) => { const r = indexedDB.deleteDatabase('aerix-artifacts'); r.onsuccess = r.onerror = r.onblocked = ok; })")
    first = page.evaluate(LIFE, {"phase": "first", "attempts": 12, "id": None, "bytes": BYTES, "worker": worker})
    if first["events"] is None:
        pytest.fail(f"in {first['tries']} runs the noise model never called the tool")
    events, seen = first["events"], first["seen"]
    made = [e for e in events if e["type"] == "artifact"]
    art = seen["art"]  # what the run's last call of the tool saw (the model may call it more than once)
    # the tool's view: put gives the meta, get the same bytes back as a Uint8Array, list this run's
    assert art["runId"] == first["runId"] and art["mediaType"] == "application/octet-stream" and art["size"] == len(BYTES)
    assert seen["back"] == {"meta": art, "data": BYTES, "isBytes": True}
    assert seen["text"]["size"] == 8 and seen["text"]["filename"] == "table.csv", "a Blob is read as its bytes"
    assert [a["id"] for a in seen["listed"]] == [e["id"] for e in made], "list: every file of the run, in put order"
    assert "artifact_not_found: no artifact 'art_missing'" in seen["missing"]
    # the events: camelCase, after each call and before its result
    assert made[-2] == {"type": "artifact", "id": art["id"], "mediaType": "application/octet-stream", "filename": "table.bin", "size": len(BYTES)}
    # a call the repeat guard answers with an earlier result runs nothing, so it puts no file
    order = [e["type"] for e in events if e["type"] in ("call", "artifact", "result")]
    # (and a call that ends the run `loop` never starts: its result is an error, with no call event)
    ran = [e for e in events if e["type"] == "result" and "repeatOf" not in e and not e["error"]]
    repeats = [e for e in events if e["type"] == "result" and "repeatOf" in e]
    assert len(made) == 2 * len(ran), order
    pairs = [i for i, t in enumerate(order) if t == "artifact" and order[i - 1] == "call"]
    assert all(order[i : i + 3] == ["artifact", "artifact", "result"] for i in pairs) and len(pairs) == len(ran), order
    calls = [e["id"] for e in events if e["type"] == "call"]
    assert all(r["repeatOf"] in calls and r["repeatOf"] != r["id"] for r in repeats)
    assert any(e["type"] == "result" and e["text"] == f"exported {art['id']}" for e in events)

    page.reload()
    second = page.evaluate(LIFE, {"phase": "second", "attempts": 0, "id": art["id"], "bytes": BYTES, "worker": worker})
    assert second["meta"] == art and second["bytes"] == BYTES and second["type"] == "application/octet-stream"
    assert first["runId"] in second["runs"], "the run is in IndexedDB too"
    assert second["missing"]["name"] == "AerixError" and second["missing"]["reason"] == "artifact_not_found"
    assert second["missing"]["message"].startswith("artifact_not_found")
    with page.expect_download() as download:
        page.click("#download")
    assert download.value.suggested_filename == "table.bin"
    assert Path(download.value.path()).read_bytes() == bytes(BYTES)


def test_the_indexeddb_store_keeps_the_artifact_contract(fresh_page, worker):
    page, _ = fresh_page()
    page.evaluate("""async (worker) => { const { boot } = await import("/aerix.mjs"); window.ai = await boot({ model: "/models/tiny.gguf", worker }); }""", worker)
    checked = page.evaluate(
        """async () => window.ai.runPython(`
from aerix.stores.contract import CHECKS
from aerix.stores.indexeddb import IndexedDBStore
names, failures = [], []
for i, check in enumerate(CHECKS):
    if "artifact" not in check.__name__ and "kept_id" not in check.__name__:
        continue
    names.append(check.__name__)
    try:
        await check(IndexedDBStore(name=f"artifact-contract-{i}"))
    except AssertionError as e:
        failures.append(f"{check.__name__}: {e}")
[names, failures]
`)"""
    )
    names, failures = checked
    assert len(names) == 5 and failures == []


def test_the_demo_shows_a_download_link_for_an_attachment(fresh_page, mode):
    page, _ = fresh_page(demo(mode))
    page.wait_for_function("() => window.demo && window.demo.ready", timeout=180_000)
    content = "city,rain\nLisbon,80\n".encode()
    page.set_input_files("#files", files=[{"name": "rain.csv", "mimeType": "text/csv", "buffer": content}])
    page.click("#run")
    link = page.locator(".card.artifact a[download]")
    link.wait_for(timeout=180_000)
    with page.expect_download() as download:
        link.click()
    assert download.value.suggested_filename == "rain.csv"
    assert Path(download.value.path()).read_bytes() == content
    page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running", timeout=180_000)
    events = page.evaluate("window.demo.transcript")
    assert events[0] == {"type": "artifact", "id": events[0]["id"], "mediaType": "text/csv", "filename": "rain.csv", "size": len(content)}
    assert events[-1]["type"] in ("final", "end")
    user = page.evaluate("window.demo.agent().messages")[1]["content"]
    assert user.endswith('Attached files (the run\'s first artifacts, in this order):\n1. "rain.csv" (text/csv, 20 bytes)'), user
    assert page.evaluate("document.getElementById('files').value") == "", "the picker is cleared for the next prompt"
