"""Case 1 and 6: the page boots from its own origin only; a bad model fails boot clearly."""

from __future__ import annotations

from conftest import demo


def test_demo_page_becomes_ready_from_its_own_origin(fresh_page, mode):
    page, traffic = fresh_page(demo(mode))
    page.wait_for_function("() => window.demo && (window.demo.ready || window.demo.error)", timeout=180_000)
    assert page.evaluate("window.demo.error") is None
    assert page.evaluate("crossOriginIsolated") is True
    timings = page.evaluate("window.demo.timings")
    assert 0 < timings["python"] <= timings["ready"] and timings["engine"] <= timings["ready"]
    # the page really fetched Pyodide, our wheels and the model from itself (fresh_page checks no other origin)
    fetched = "\n".join(traffic.urls)
    for part in ("/pyodide/pyodide.asm.wasm", "/pyodide-lock.json", "/wheels/aerix-", "/wheels/pydantic_core-", "/wllama/wllama.wasm", "/models/aerix-tools.gguf"):
        assert part in fetched, part


def boot_error(page, model, worker):
    return page.evaluate(
        """async ([model, worker]) => {
          const { boot } = await import("/aerix.mjs");
          const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("boot hung")), 60000));
          try { await Promise.race([boot({ model, worker }), timeout]); return null; }
          catch (e) { return String(e && e.message || e); }
        }""",
        [model, worker],
    )


def test_a_model_url_that_404s_is_a_clear_error(fresh_page, site, worker):
    page, _ = fresh_page(expect_missing=site + "/models/nowhere.gguf")
    message = boot_error(page, "/models/nowhere.gguf", worker)
    assert message is not None and message != "boot hung"
    assert "404" in message and "/models/nowhere.gguf" in message


def test_a_file_that_is_not_gguf_is_a_clear_error(fresh_page, worker):
    page, _ = fresh_page()
    message = boot_error(page, "/demo.css", worker)
    assert message is not None and message != "boot hung"
    assert "GGUF" in message and "demo.css" in message


def test_boot_without_a_model_is_refused(fresh_page, worker):
    page, _ = fresh_page()
    assert "needs a model" in boot_error(page, None, worker)


def test_a_worker_that_cannot_start_fails_boot_clearly(fresh_page, site):
    page, traffic = fresh_page(expect_missing=site + "/nowhere/worker.mjs")
    message = page.evaluate(
        """async () => {
          const { boot } = await import("/aerix.mjs");
          try { await boot({ model: "/models/tiny.gguf", worker: true, base: "/nowhere/" }); return null; }
          catch (e) { return String(e && e.message || e); }
        }"""
    )
    assert message is not None and message.startswith("the aerix worker failed"), message
    # the one request that was meant to fail
    traffic.failed = [f for f in traffic.failed if not f.startswith(site + "/nowhere/worker.mjs ")]


GPU = """async ([gpu, worker]) => {
  const { boot } = await import("/aerix.mjs");
  try {
    const ai = await boot({ model: "/models/tiny.gguf", worker, engine: { gpu } });
    const events = [];
    for await (const ev of ai.agent({ limits: { maxTokens: 32, turns: 2 } }).run("Hello")) events.push(ev.type);
    return { info: { ...ai.engine.info }, ending: events.at(-1) };
  } catch (e) { return { error: e.message }; }
}"""


def test_the_webgpu_switch_auto_runs_on_the_cpu_here_and_require_fails_naming_why(fresh_page, worker):
    page, _ = fresh_page()
    # this machine's Chromium runs with --disable-gpu: no WebGPU adapter
    auto = page.evaluate(GPU, ["auto", worker])
    assert auto.get("error") is None and auto["info"]["backend"] == "cpu" and auto["ending"] in ("final", "end"), auto
    off = page.evaluate(GPU, ["off", worker])
    assert off["info"]["backend"] == "cpu" and (off["info"]["gpuLayers"] is None or off["info"]["gpuLayers"].startswith("0/")), off
    required = page.evaluate(GPU, ["require", worker])
    assert "needs WebGPU" in required["error"] and 'gpu: "auto"' in required["error"], required
    bad = page.evaluate(GPU, ["yes", worker])
    assert 'gpu must be "auto", "off" or "require"' in bad["error"], bad
