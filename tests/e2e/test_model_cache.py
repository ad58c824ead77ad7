"""Cached models (issue 20, point 3): a model fetched once loads from the browser's cache.

Each "page load" is a navigation in one browser context, so the Cache API's "aerix-models" is
shared between them, as between a person's visits. The manifest is the site's models.json.
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "build" / "site" / "models"
TINY = "/models/tiny.gguf"

BOOT = """async ({ model, cache, worker }) => {
  const { boot } = await import("/aerix.mjs");
  const progress = [];
  const t0 = performance.now();
  const onProgress = (p) => p.phase === "model" && progress.push({ ...p, t: performance.now() - t0 });
  window.ai = await boot({ model, ...(cache === null ? {} : { cache }), engine: { seed: 7 }, onProgress, worker: !!worker });
  return { progress, info: { ...window.ai.engine.info }, timings: window.ai.timings };
}"""

# The engine alone, as boot starts it (boot passes the site's manifest): seconds, not Pyodide's boot.
ENGINE = """async ({ model, cache }) => {
  const { loadEngine } = await import("/engine.mjs");
  const progress = [];
  const source = model === "blob" ? await (await fetch("/models/tiny.gguf")).blob() : model;
  const options = { manifest: "/models/models.json", onProgress: (p) => progress.push(p), ...(cache === null ? {} : { cache }) };
  const engine = await loadEngine({ model: source, ...options });
  const info = { ...engine.info };
  await engine.close();
  return { progress, info };
}"""

ENTRIES = """async () => {
  if (!(await caches.has("aerix-models"))) return null;
  const cache = await caches.open("aerix-models");
  const out = {};
  for (const request of await cache.keys()) {
    const entry = await cache.match(request);
    out[new URL(request.url).pathname] = { sha256: entry.headers.get("x-aerix-sha256"), size: (await entry.blob()).size };
  }
  return out;
}"""

RUN = """async () => {
  const agent = window.ai.agent({ limits: { turns: 3, maxTokens: 64 } });
  const events = [];
  for await (const ev of agent.run("Hello")) events.push(ev.type);
  return events;
}"""


class Watch:
    """The requests and responses for one model URL, per page load."""

    def __init__(self, page, path: str = TINY) -> None:
        self.requests: list[dict[str, str]] = []
        self.statuses: list[int] = []
        page.on("request", lambda r: r.url.endswith(path) and self.requests.append(r.headers))
        page.on("response", lambda r: r.url.endswith(path) and self.statuses.append(r.status))

    def take(self) -> tuple[list[dict[str, str]], list[int]]:
        taken = (self.requests[:], self.statuses[:])
        self.requests.clear()
        self.statuses.clear()
        return taken


def listed(name: str) -> dict:
    return next(m for m in json.loads((MODELS / "models.json").read_text())["models"] if m["file"] == name)


def load(page, site, script, model=TINY, cache=None, worker=False):
    page.goto(site + "/embed.html")
    return page.evaluate(script, {"model": model, "cache": cache, "worker": worker})


def model_phase(out) -> dict:
    """What a load reports about the model: cached or not, and how long its bytes took."""
    progress = out["progress"]
    assert progress, "no model progress was reported"
    cached = {p["cached"] for p in progress}
    assert len(cached) == 1, progress
    assert progress[-1]["loaded"] == progress[-1]["total"] > 0
    assert out["info"]["cached"] is cached.pop()
    return {"cached": out["info"]["cached"], "fetch_ms": round(out["info"]["fetchMs"]), "events": len(progress)}


def test_a_second_page_load_takes_the_model_from_the_cache_and_the_agent_runs(fresh_page, site, worker):
    page, _ = fresh_page()
    watch = Watch(page)

    first = model_phase(load(page, site, BOOT, worker=worker))
    requests, statuses = watch.take()
    assert first["cached"] is False and len(requests) == 1 and statuses == [200]
    tiny = listed("tiny.gguf")
    assert page.evaluate(ENTRIES) == {TINY: {"sha256": tiny["sha256"], "size": tiny["size"]}}

    second = model_phase(load(page, site, BOOT, worker=worker))
    assert watch.take() == ([], []), "the second page load asked for the model"
    assert second["cached"] is True
    events = page.evaluate(RUN)
    assert "usage" in events and events[-1] in ("final", "end"), events
    print(f"\nmodel phase, tiny.gguf: first boot {first}, second boot {second}")


def test_cache_false_neither_reads_nor_writes(fresh_page, site):
    page, _ = fresh_page()
    watch = Watch(page)

    assert model_phase(load(page, site, BOOT, cache=False))["cached"] is False
    assert len(watch.take()[0]) == 1
    # a Blob is never cached either
    out = load(page, site, ENGINE, model="blob")
    assert out["info"]["cached"] is False and out["progress"] == []
    watch.take()
    assert page.evaluate(ENTRIES) is None, "something was written to the cache"

    # with the model cached, cache: false still asks the network for it
    assert model_phase(load(page, site, ENGINE))["cached"] is False
    assert model_phase(load(page, site, ENGINE))["cached"] is True
    watch.take()
    assert model_phase(load(page, site, BOOT, cache=False))["cached"] is False
    assert len(watch.take()[0]) == 1


def test_a_changed_model_is_fetched_again(fresh_page, site):
    page, _ = fresh_page()
    watch = Watch(page)
    tiny, other = listed("tiny.gguf"), listed("aerix-tools.gguf")

    assert model_phase(load(page, site, ENGINE))["cached"] is False
    assert load(page, site, ENGINE)["info"]["n_vocab"] == 297
    watch.take()

    # the site changes tiny.gguf: other bytes under the same URL, and the manifest says so
    def manifest(route):
        body = route.fetch().json()
        for m in body["models"]:
            if m["file"] == "tiny.gguf":
                m.update(size=other["size"], sha256=other["sha256"])
        route.fulfill(json=body)

    page.route("**/models/models.json", manifest)
    page.route("**" + TINY, lambda route: route.fulfill(path=MODELS / "aerix-tools.gguf"))
    out = load(page, site, ENGINE)
    assert model_phase(out)["cached"] is False and out["info"]["n_vocab"] == 1024
    assert len(watch.take()[0]) == 1
    out = load(page, site, ENGINE)
    assert model_phase(out)["cached"] is True and out["info"]["n_vocab"] == 1024
    assert watch.take() == ([], [])
    assert page.evaluate(ENTRIES) == {TINY: {"sha256": other["sha256"], "size": other["size"]}}

    # and back
    page.unroute_all()
    out = load(page, site, ENGINE)
    assert model_phase(out)["cached"] is False and out["info"]["n_vocab"] == 297
    assert page.evaluate(ENTRIES) == {TINY: {"sha256": tiny["sha256"], "size": tiny["size"]}}


def test_a_model_the_manifest_does_not_list_is_revalidated(fresh_page, site):
    page, _ = fresh_page()
    watch = Watch(page)
    page.route("**/models/models.json", lambda route: route.fulfill(json={"models": []}))

    assert model_phase(load(page, site, ENGINE))["cached"] is False
    requests, statuses = watch.take()
    assert statuses == [200] and "if-modified-since" not in requests[0]

    # the cached copy is used after a conditional request whose 304 has no body
    assert model_phase(load(page, site, ENGINE))["cached"] is True
    requests, statuses = watch.take()
    assert statuses == [304] and "if-modified-since" in requests[0]
    assert page.evaluate(ENTRIES) == {TINY: {"sha256": None, "size": listed("tiny.gguf")["size"]}}
