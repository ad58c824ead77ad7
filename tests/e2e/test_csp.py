"""Issue 17, item 11: the pages run under a Content-Security-Policy that allows their own origin
only (and OpenAI-compatible servers on this machine), and the demo's `?baseUrl=` sends prompts to
no server but one on this machine, saying so on the page.

    .venv/bin/python -m pytest tests/e2e/test_csp.py -q

A page "runs clean" when the browser reported no CSP violation (`securitypolicyviolation` events,
recorded from before the page's first script) and printed nothing about the policy on the console.

Under this policy a string handed to `page.wait_for_function` must be a function ("() => ..."):
Playwright evaluates an expression again at every poll with `eval`, which the policy refuses after
the first, synchronous, one; a function is evaluated once.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from build.serve import policy

SITE = Path(__file__).resolve().parents[2] / "build" / "site"

WATCH = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.cspViolations.push(`${e.effectiveDirective} refused ${e.blockedURI || "(inline)"} at ${e.sourceFile}:${e.lineNumber}`);
}, true);
"""
READY = "() => window.demo && (window.demo.ready || window.demo.error)"
MENTIONS_CSP = ("Content Security Policy", "Content-Security-Policy", "unsafe-eval")  # violations, parse errors


class Watched:
    """A page in a context of its own, with every request, console line and page error recorded."""

    def __init__(self, browser) -> None:
        self.context = browser.new_context()
        self.context.add_init_script(WATCH)
        self.page = self.context.new_page()
        self.page.set_default_timeout(120_000)
        self.requests: list[str] = []
        self.console: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    def origins(self) -> set[str]:
        return {f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in self.requests if not u.startswith(("data:", "blob:"))}

    def assert_clean(self) -> None:
        """No CSP violation reported by the page and nothing about the policy on its console."""
        assert self.page.evaluate("window.cspViolations") == [], "the page broke its own CSP"
        assert [line for line in self.console if any(m in line for m in MENTIONS_CSP)] == [], self.console

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser):
    opened: list[Watched] = []

    def make() -> Watched:
        opened.append(Watched(browser))
        return opened[-1]

    yield make
    for w in opened:
        w.close()


@pytest.fixture
def loopback_server():
    """A stand-in for an OpenAI-compatible server on another port of 127.0.0.1: enough of one for
    the demo to boot on it (GET /v1/models, with CORS), recording what reached it."""
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("Origin")))
            body = json.dumps({"object": "list", "data": [{"id": "stub", "object": "model"}]}).encode()
            self.send_response(200 if self.path == "/v1/models" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def demo(site: str, base_url: str | None = None, model: str | None = None, worker: bool | None = None) -> str:
    query = [f"baseUrl={quote(base_url, safe='')}"] if base_url is not None else []
    query += [f"worker={int(worker)}"] if worker is not None else []
    query += [f"serverModel={model}"] if model else []
    return f"{site}/index.html" + ("?" + "&".join(query) if query else "")


def test_the_demo_sends_its_csp_and_boots_and_runs_under_it(watched, site, worker):
    w = watched()
    response = w.page.goto(demo(site, worker=worker))
    page = (SITE / "index.html").read_bytes()
    headers = response.all_headers()
    assert headers.get("content-security-policy") == policy(page)
    assert headers.get("cross-origin-opener-policy") == "same-origin" and headers.get("cross-origin-embedder-policy") == "require-corp"
    meta = w.page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
    assert meta == policy(page, meta=True), "build/site/index.html has no CSP meta: run `make build`"

    w.page.wait_for_function(READY, timeout=180_000)
    assert w.page.evaluate("window.demo.error") is None
    assert w.page.evaluate("crossOriginIsolated") is True  # so wllama started its threads, from blob: workers
    assert w.page.locator("#server-notice").count() == 0
    # One run: the engine generates in its worker, the Python loop calls a tool, all under the policy.
    w.page.fill("#prompt", "What time is it in Nairobi?")
    w.page.click("#run")
    w.page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running", timeout=300_000)
    transcript = w.page.evaluate("window.demo.transcript")
    assert any(e["type"] == "usage" for e in transcript), transcript
    assert w.origins() == {site}, w.origins()
    w.assert_clean()


def test_a_base_url_off_this_machine_is_refused_and_the_page_model_used(watched, site):
    w = watched()
    w.page.goto(demo(site, "https://evil.example/v1", "x"))
    notice = w.page.wait_for_selector("#server-notice", state="visible")
    assert notice.inner_text().startswith("Refused ?baseUrl=https://evil.example/v1")
    w.page.wait_for_function(READY, timeout=180_000)
    assert w.page.evaluate("[window.demo.error, window.demo.server]") == [None, None]
    footer = w.page.inner_text("#model")
    assert "aerix-tools.gguf" in footer and "on the server" not in footer
    assert not [u for u in w.requests if urlsplit(u).hostname == "evil.example"]  # (the page's own query names it)
    assert w.origins() == {site}, w.origins()
    w.assert_clean()


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1.evil.example:8080/v1",  # a name that starts like loopback
        "http://localhost@evil.example/v1",  # loopback as a user name
        "https://127.0.0.1:8080/v1",  # not the http loopback origins the policy allows
        "http://[::1]:8080/v1",  # IPv6 loopback: a CSP cannot name it, so neither does the demo
        "/v1",  # not a server address at all
        "javascript:alert(1)",
    ],
)
def test_every_other_base_url_is_refused_on_the_page(watched, site, base_url):
    w = watched()
    w.page.goto(demo(site, base_url))
    notice = w.page.wait_for_selector("#server-notice", state="visible")
    assert notice.inner_text().startswith(f"Refused ?baseUrl={base_url}:")
    assert w.page.evaluate("window.demo.server") is None


def test_a_loopback_base_url_is_used_with_a_notice_and_the_policy_lets_it_through(watched, site, loopback_server, worker):
    url, seen = loopback_server
    w = watched()
    w.page.goto(demo(site, f"{url}/v1", "stub", worker))
    notice = w.page.wait_for_selector("#server-notice", state="visible")
    assert notice.inner_text() == f"Your prompts go to the server at {url}, not to a model in this page."
    w.page.wait_for_function(READY, timeout=180_000)
    assert w.page.evaluate("window.demo.error") is None
    assert w.page.evaluate("window.demo.server") == f"{url}/v1"
    assert "on the server" in w.page.inner_text("#model")
    assert ("/v1/models", site) in seen, seen  # the page's own fetch reached it: connect-src allows loopback
    assert not [u for u in w.requests if "/wllama/" in u or u.endswith(".gguf")], "the in-page engine was loaded"
    assert w.origins() == {site, url}, w.origins()
    w.assert_clean()


@pytest.mark.parametrize(
    ("path", "done"),
    [("/bench/page.html", "() => window.bench !== undefined"), ("/bench/boot.html?mode=bare", "() => window.result !== undefined")],
    ids=["page", "boot"],
)
def test_the_bench_pages_run_under_the_policy_and_their_inline_script_is_allowed_by_its_hash(watched, path, done):
    """bench/run.py serves bench/ beside the site with serve.py's handler: same headers."""
    from bench.run import start_server

    server, origin = start_server()
    try:
        w = watched()
        response = w.page.goto(origin + path)
        assert "'sha256-" in response.all_headers()["content-security-policy"]
        w.page.wait_for_function(done, timeout=180_000)
        result = w.page.evaluate("window.result ?? null")
        assert result is None or (result.get("ok") and not result.get("error")), result
        w.assert_clean()
    finally:
        server.shutdown()
        server.server_close()
