"""The real site, the real engine, a real browser: Debian's Chromium driven by Playwright.

Every page records its requests; a test fails if any goes to another origin or fails. Every page
test runs in both modes of the runtime (the `mode` fixture): "page" (Python and the engine in
the page) and "worker" (in a Web Worker, `boot({worker: true})`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from build.chromium import CHROMIUM, launch
from build.dist import build_dist
from build.serve import serve

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"


@pytest.fixture(scope="session")
def site():
    if not (SITE / "index.html").exists():
        pytest.fail("build/site is not built: run `make build` (make test-e2e does)")
    server, thread = serve(str(SITE), 0)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


# The files a site of its own (dist_site) serves beside the dist folder.
OWN_SITE_FILES = ("/", "/index.html", "/app.mjs", "/tiny.gguf")


def dist_site(root, page, app):
    """A site of its own at ``root`` (a generator for a fixture): the dist folder `make dist` makes
    of build/site (its tarball checked and left out, no model in it), ``page`` as index.html and
    ``app`` as app.mjs (``%(dist)s`` the dist folder's name in both) and tiny.gguf; served with
    build.serve's headers. Yields (origin, dist name, manifest)."""
    if not (SITE / "pyodide-lock.json").exists() or not (SITE / "models" / "tiny.gguf").exists():
        pytest.fail("build/site is not built: run `make build` (make test-e2e does)")
    folder = build_dist(SITE, root)
    tarball = root / f"{folder.name}.tar.gz"
    assert tarball.is_file()
    tarball.unlink()  # the site serves the folder only
    assert not list(folder.rglob("*.gguf")), "the dist must hold no model"
    (root / "index.html").write_text(page % {"dist": folder.name})
    (root / "app.mjs").write_text(app % {"dist": folder.name})
    shutil.copyfile(SITE / "models" / "tiny.gguf", root / "tiny.gguf")
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    server, _ = serve(root, 0)
    yield f"http://127.0.0.1:{server.server_address[1]}", folder.name, manifest
    server.shutdown()
    server.server_close()


def dist_site_paths(traffic, name, manifest):
    """The paths a page of a dist_site asked for, checked: every request to its origin and
    answered, each for a file of the site or of the dist."""
    assert traffic.foreign == [], f"requests left the origin: {traffic.foreign}"
    assert traffic.failed == [], f"requests failed: {traffic.failed}"
    allowed = {*OWN_SITE_FILES, *(f"/{name}/{f['file']}" for f in manifest["files"])}
    paths = [urlsplit(u).path for u in traffic.urls if not u.startswith(("data:", "blob:"))]
    assert [p for p in paths if p not in allowed] == []
    return paths


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (make test-e2e does)")
    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


class Traffic:
    """Every request a page made, and every one that failed or left the origin."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.urls: list[str] = []
        self.foreign: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []

    def on_request(self, request) -> None:
        url = request.url
        self.urls.append(url)
        if url.startswith(("data:", "blob:")):
            return
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.foreign.append(url)

    def on_failed(self, request) -> None:
        # A blob: URL is the page's own memory (the engine's worker scripts): a load of one
        # aborted because the page reloaded or navigated away is not a request that failed.
        if request.url.startswith("blob:") and "ERR_ABORTED" in (request.failure or ""):
            return
        self.failed.append(f"{request.url} ({request.failure})")

    def on_response(self, response) -> None:
        if response.status >= 400 and not getattr(self, "expect_missing", None) == response.url:
            self.failed.append(f"{response.url} ({response.status})")


def open_page(browser, site, path="/embed.html", expect_missing=None):
    context = browser.new_context()
    page, traffic = open_tab(context, site, path, expect_missing)
    return context, page, traffic


def open_tab(context, site, path="/embed.html", expect_missing=None):
    """A new page (tab) of ``context`` at ``path``, its traffic watched."""
    page = context.new_page()
    traffic = Traffic(site)
    traffic.expect_missing = expect_missing
    page.on("request", traffic.on_request)
    page.on("requestfailed", traffic.on_failed)
    page.on("response", traffic.on_response)
    page.on("console", lambda m: traffic.console.append(f"{m.type}: {m.text}"))
    page.set_default_timeout(120_000)
    page.goto(site + path)
    return page, traffic


@pytest.fixture
def fresh_page(browser, site):
    """A new page with nothing booted; the test must leave its traffic clean."""
    opened = []

    def make(path="/embed.html", expect_missing=None):
        context, page, traffic = open_page(browser, site, path, expect_missing)
        opened.append((context, traffic))
        return page, traffic

    yield make
    for context, traffic in opened:
        context.close()
        assert traffic.foreign == [], f"requests left the origin: {traffic.foreign}"
        assert traffic.failed == [], f"requests failed: {traffic.failed}"


def sent_schema(request):
    """The JSON Schema a recorded engine request was decoded under, or None.

    The completion endpoint (the engine's "text" prompt mode) takes it as `json_schema`; the chat
    endpoint as `response_format` (strict)."""
    if "json_schema" in request:
        return request["json_schema"]
    fmt = request.get("response_format")
    if fmt is None:
        return None
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    return fmt["json_schema"]["schema"]


MODES = ("page", "worker")


@pytest.fixture(scope="module", params=MODES)
def mode(request):
    """The runtime's mode for this module's page tests: "page" or "worker"."""
    return request.param


@pytest.fixture
def worker(mode):
    """`boot({worker})` for the mode under test."""
    return mode == "worker"


def demo(mode, query=""):
    """The demo page's path in a mode (`?worker=0|1`), with more of the query."""
    return f"/index.html?worker={int(mode == 'worker')}" + (f"&{query}" if query else "")


BOOT = """async (opts) => {
  const { boot } = await import("/aerix.mjs");
  window.ai = await boot({ model: "/models/tiny.gguf", engine: { recorder: true, seed: 7 }, ...opts });
  return window.ai.timings;
}"""


@pytest.fixture(scope="module")
def booted(browser, site, mode):
    """One page, booted once per test module and mode (Pyodide + the tiny model), shared by its tests."""
    context, page, traffic = open_page(browser, site)
    page.evaluate(BOOT, {"worker": mode == "worker"})
    yield page
    context.close()
    assert traffic.foreign == [], f"requests left the origin: {traffic.foreign}"
    assert traffic.failed == [], f"requests failed: {traffic.failed}"
