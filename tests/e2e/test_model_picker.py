"""The demo's model picker (issue 21, item 4): the Model panel shows what the booted model is
(engine.info's facts), and boots another: a .gguf picked or dropped (kept in this browser, so the
next visit loads it with no file picked), a URL, or the bundled model again. In both modes.

    .venv/bin/python -m pytest tests/e2e/test_model_picker.py -q

Each test is one browser context: its page loads and reloads share the Cache API ("aerix-models"),
as a person's visits do. The facts the page shows are read from its `#facts` (one `dd` per fact,
`data-fact` naming it) and from `window.demo.model`.
"""

from __future__ import annotations

import json

from conftest import ROOT, SITE, demo

READY = "() => window.demo && (window.demo.ready || window.demo.error)"
DONE = "() => window.demo.transcript.length > 0 && !window.demo.running"
ENDINGS = ("final", "end")
CARD = json.loads((ROOT / "models" / "aerix-tools.json").read_text())
KEPT = "model=aerix-local"  # the query of a page booted on a kept file


def tiny() -> bytes:
    """build/site's tiny.gguf: a noise model (297 tokens, F32, ChatML)."""
    return (SITE / "models" / "tiny.gguf").read_bytes()


def ready(page) -> dict:
    """Wait for the demo to boot; its model's facts."""
    page.wait_for_function(READY, timeout=180_000)
    assert page.evaluate("window.demo.error") is None
    return page.evaluate("window.demo.model")


def shown(page, fact: str) -> str:
    return page.text_content(f'#facts dd[data-fact="{fact}"]')


def gguf_requests(traffic, name: str) -> list[str]:
    return [u for u in traffic.urls if u.split("?")[0].endswith(f"/models/{name}")]


def test_the_demo_shows_the_bundled_models_facts(fresh_page, mode):
    page, _ = fresh_page(demo(mode))
    facts = ready(page)
    assert facts["bundled"] is True and facts["model"] == "./models/aerix-tools.gguf"
    assert facts["name"] == "aerix-tools"
    assert facts["architecture"] == "llama"
    assert facts["quantisation"] == CARD["quant"] == "Q8_0"  # general.file_type 7
    assert facts["n_params"] == CARD["parameters"] and facts["parameters"] == "3.7M"  # counted from its tensor table
    assert facts["template"] == "chatml"
    assert facts["n_ctx"] == 4096 and facts["n_ctx_train"] == CARD["config"]["context"]
    assert facts["n_vocab"] == CARD["config"]["vocab"]
    assert facts["n_threads"] >= 1
    assert facts["backend"] == "cpu"  # Chromium runs with --disable-gpu: no WebGPU adapter
    assert facts["loadMs"] > 0
    # the page shows them
    assert shown(page, "architecture") == "llama"
    assert shown(page, "quantisation") == "Q8_0"
    assert shown(page, "template") == "chatml"
    assert shown(page, "parameters") == "3.7M (3,672,320)"
    assert shown(page, "context") == f"4096 tokens (trained for {CARD['config']['context']})"
    assert shown(page, "threads") == str(facts["n_threads"])
    assert shown(page, "backend") == "cpu"
    assert shown(page, "cached") in ("the network", "this browser's cache")
    assert "the bundled model" in shown(page, "model")
    assert page.is_hidden("#model-note") and page.is_hidden("#bundled-link")


def test_the_picker_offers_the_chat_models_this_site_holds(fresh_page, mode):
    offered = ["aerix-tools.gguf", "aerix-general-q8_0.gguf", "smollm2-q8_0.gguf", "smollm2.gguf"]  # demo-picker's order
    listed = {m["file"] for m in json.loads((SITE / "models" / "models.json").read_text())["models"]}
    page, _ = fresh_page(demo(mode))
    ready(page)
    page.wait_for_selector("#offered li")
    items = page.eval_on_selector_all("#offered li", "els => els.map(e => [e.dataset.file, e.textContent, e.querySelector('a').href])")
    assert [f for f, _, _ in items] == [f for f in offered if f in listed]  # the noise models (tiny, tpl-*) are not offered
    for file, text, href in items:
        if file == "aerix-tools.gguf":
            assert "model=" not in href and "this one" in text  # the page's own
        else:
            assert href.endswith(f"?worker={int(mode == 'worker')}&model=.%2Fmodels%2F{file}") and "this one" not in text


def test_a_picked_file_loads_runs_and_comes_back_from_the_cache_on_the_next_visit(fresh_page, mode):
    page, traffic = fresh_page(demo(mode))
    assert ready(page)["bundled"] is True
    with page.expect_navigation(url=lambda url: KEPT in url, timeout=60_000):
        page.set_input_files("#model-file", files=[{"name": "tiny.gguf", "mimeType": "application/octet-stream", "buffer": tiny()}])
    facts = ready(page)
    assert facts["bundled"] is False and facts["model"].startswith("aerix-local:tiny.gguf")
    assert facts["n_vocab"] == 297 and facts["name"] == "aerix-tiny"
    assert facts["quantisation"] == "F32" and facts["template"] == "chatml"
    assert facts["cached"] is True  # kept before the page reloaded, then read back from the cache
    progress = page.evaluate("window.demo.progress")
    assert progress and all(p["phase"] == "model" and p["cached"] is True for p in progress), progress
    assert progress[-1]["loaded"] == progress[-1]["total"] == len(tiny())
    assert shown(page, "cached") == "your file, kept in this browser"
    assert page.is_visible("#model-note") and page.is_visible("#bundled-link")  # the tools were made for the bundled model
    assert "tiny.gguf" in page.text_content("#kept")

    # an agent run works on it: a noise model under the turn schema, so any ending, but exactly one
    page.fill("#prompt", "Hello")
    page.click("#run")
    page.wait_for_function(DONE, timeout=300_000)
    events = page.evaluate("window.demo.transcript")
    assert [e["type"] in ENDINGS for e in events].count(True) == 1 and events[-1]["type"] in ENDINGS, events
    assert any(e["type"] == "usage" and e["promptTokens"] > 0 for e in events), events

    # the next visit: the same address, no file picked, the model from the cache
    page.reload()
    again = ready(page)
    assert again["model"] == facts["model"] and again["n_vocab"] == 297 and again["cached"] is True
    assert gguf_requests(traffic, "tiny.gguf") == []  # the file never crossed the network


def test_a_gguf_dropped_on_the_page_is_loaded_and_anything_else_is_refused(fresh_page, mode):
    page, _ = fresh_page(demo(mode))
    ready(page)
    drop = """async ([name, url]) => {
      const bytes = await (await fetch(url)).blob();
      const data = new DataTransfer();
      data.items.add(new File([bytes], name));
      document.body.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    }"""
    page.evaluate(drop, ["notes.txt", "/models/models.json"])
    page.wait_for_function("() => document.getElementById('picker-status').textContent.includes('not a .gguf')")
    assert KEPT not in page.url
    with page.expect_navigation(url=lambda url: KEPT in url, timeout=60_000):
        page.evaluate(drop, ["tiny.gguf", "/models/tiny.gguf"])
    facts = ready(page)
    assert facts["n_vocab"] == 297 and facts["cached"] is True


def test_a_model_url_shows_its_template_family_and_the_way_back(fresh_page, mode):
    page, _ = fresh_page(demo(mode, "model=/models/tpl-llama3.gguf"))
    facts = ready(page)
    assert facts["bundled"] is False and facts["template"] == "llama3" and shown(page, "template") == "llama3"
    assert facts["name"] == "aerix-tpl-llama3" and facts["architecture"] == "llama"
    assert page.is_visible("#model-note")
    # a URL typed in the panel boots it, fetched with progress
    with page.expect_navigation(url=lambda url: "tiny.gguf" in url, timeout=60_000):
        page.fill("#model-url", "/models/tiny.gguf")
        page.click("#model-load")
    facts = ready(page)
    assert facts["n_vocab"] == 297 and facts["cached"] is False and shown(page, "cached") == "the network"
    progress = page.evaluate("window.demo.progress")
    assert progress[-1]["loaded"] == progress[-1]["total"] == len(tiny()) and not progress[-1]["cached"]
    # and back to the bundled model, with ?worker= kept
    with page.expect_navigation(timeout=60_000):
        page.click("#bundled-link")
    assert "model=" not in page.url and f"worker={int(mode == 'worker')}" in page.url
    facts = ready(page)
    assert facts["bundled"] is True and facts["template"] == "chatml"
    assert page.is_hidden("#model-note")
