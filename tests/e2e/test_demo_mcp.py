"""The demo's MCP tools box (issue 31, part 1: "the demo shows MCP tools"), both modes, on the
bundled model: the site served as `make demo` serves it, with the demo's MCP server
(build/demo_mcp.py, PyPI's `mcp` SDK) started here and forwarded as `/mcp/library`.

(1) `?mcp=/mcp/library` prefills the box and lists the server on load: the box opens and says it
    answers with `lookup_book` and `library_hours`;
(2) Connect lists the tools (name, description) in the box, and the demo's agent has them beside
    its five: in its turn schema (the nested `book.author` input included) and in the schema of the
    first request the next prompt sends to the engine (`?record=1`); that run ends once;
(3) Disconnect: the agent for the next prompt has the demo's five only;
(4) without `?mcp=` the page asks no /mcp/ path (a 404 on a site without the proxy), and a path
    that is not the page's own `/mcp/NAME` is refused in the box.

What the bundled model does with the tools is not asserted: it was never trained on them."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, SITE, open_page, sent_schema
from conftest import demo as demo_path
from test_demo_handoff import offered

READY = "() => window.demo && window.demo.ready"
DONE = "() => window.demo.transcript.length > 0 && !window.demo.running"
DEMO_TOOLS = {t["name"] for t in json.loads((ROOT / "web" / "demo-tools.json").read_text())["tools"]}
LIBRARY = {"lookup_book", "library_hours"}
SCHEMA = "async () => { const agent = window.demo.agent(); await agent.ready; return agent.schema; }"


@pytest.fixture(scope="module")
def library_site():
    try:
        import mcp  # noqa: F401 - the server's SDK
    except ImportError:
        pytest.skip("the demo's MCP server needs PyPI's mcp (pip install -e '.[test]')")
    from aerix.serve import serve
    from build.demo_mcp import McpServer

    if not (SITE / "index.html").exists():
        pytest.fail("build/site is not built: run `make build` (make test-e2e does)")
    server = McpServer()
    site, _ = serve(str(SITE), 0, mcp={"library": server.url})
    yield f"http://127.0.0.1:{site.server_address[1]}"
    site.shutdown()
    site.server_close()
    server.stop()


def tools_in(schema: dict) -> set[str]:
    return offered(schema)[0]


def wait_for_count(page, seen, n, timeout_s=10.0):
    """Until ``seen`` holds ``n`` items (Playwright's events arrive while the page waits); then
    a little longer, to catch one too many."""
    for _ in range(int(timeout_s * 10)):
        if len(seen) >= n:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(300)
    assert len(seen) == n, seen


def test_the_demo_connects_to_an_mcp_server_and_its_agent_gets_the_tools(browser, library_site, mode):
    context, page, traffic = open_page(browser, library_site, demo_path(mode, "mcp=/mcp/library&record=1"))
    ended = []  # the MCP sessions the page ended: DELETE /mcp/library (from the worker too)
    page.on("request", lambda r: ended.append(r.url) if r.method == "DELETE" and r.url.endswith("/mcp/library") else None)
    try:
        page.wait_for_function(READY, timeout=180_000)
        # (1) found on load; the listing's session ended at once
        page.wait_for_function("() => window.demo.mcp.probed", timeout=60_000)
        wait_for_count(page, ended, 1)
        state = page.evaluate("window.demo.mcp")
        assert state["error"] is None and [t["name"] for t in state["offered"]] == ["lookup_book", "library_hours"], state
        assert page.evaluate("document.getElementById('mcp').open") and page.input_value("#mcp-url") == "/mcp/library"
        assert "answers with 2 tool(s): lookup_book, library_hours" in page.inner_text("#mcp-status")
        assert tools_in(page.evaluate(SCHEMA)) == DEMO_TOOLS  # not connected yet
        # (2) connected: listed, and in the agent's schema
        page.click("#mcp-go")
        page.wait_for_function("() => window.demo.mcp.connected.length === 2", timeout=60_000)
        rows = page.locator("#mcp-tools li").all_inner_texts()
        assert [r.split(" ", 1)[0] for r in rows] == ["lookup_book", "library_hours"]
        assert "Find a book in the town library's catalogue" in rows[0] and "opening hours" in rows[1]
        assert "Connected to /mcp/library" in page.inner_text("#mcp-status")
        schema = page.evaluate(SCHEMA)
        assert tools_in(schema) == DEMO_TOOLS | LIBRARY
        assert '"author"' in json.dumps(schema)  # the nested input, decoded under it
        before = page.evaluate("window.demo.requests.length")
        page.fill("#prompt", "Is Invisible Cities in at the library?")
        page.click("#run")
        page.wait_for_function(DONE, timeout=180_000)
        requests = page.evaluate("window.demo.requests")[before:]
        assert requests and tools_in(sent_schema(requests[0])) == DEMO_TOOLS | LIBRARY
        events = page.evaluate("window.demo.transcript")
        endings = [e for e in events if e["type"] in ("final", "end")]
        assert len(endings) == 1 and not (endings[0]["type"] == "end" and endings[0]["reason"] == "error"), endings
        assert len(ended) == 1, ended  # the agent's session is open while connected
        # (3) disconnected: the agent's session ended
        page.click("#mcp-drop")
        assert page.evaluate("window.demo.mcp.connected") == [] and page.locator("#mcp-tools li").count() == 0
        assert tools_in(page.evaluate(SCHEMA)) == DEMO_TOOLS
        wait_for_count(page, ended, 2)
    finally:
        context.close()
    # the MCP client stops reading an answer's event stream once it has the answer: Chromium calls
    # that ERR_ABORTED (docs/mcp.md); any other failure counts
    assert traffic.foreign == [] and [f for f in traffic.failed if not ("/mcp/library" in f and "ERR_ABORTED" in f)] == [], traffic.failed
    assert any(u.endswith("/mcp/library") for u in traffic.urls)


def test_without_a_query_the_page_asks_no_mcp_path_and_refuses_a_foreign_one(browser, library_site, mode):
    context, page, traffic = open_page(browser, library_site, demo_path(mode))
    try:
        page.wait_for_function(READY, timeout=180_000)
        state = page.evaluate("window.demo.mcp")
        assert state["probed"] is False and state["offered"] == [] and not page.evaluate("document.getElementById('mcp').open")
        page.click("#mcp summary")
        page.fill("#mcp-url", "http://127.0.0.1:1/mcp")
        page.click("#mcp-go")
        page.wait_for_function("() => window.demo.mcp.error !== null", timeout=30_000)
        assert "is not an MCP server of this page: type /mcp/NAME" in page.inner_text("#mcp-status")
        assert page.evaluate("window.demo.mcp.connected") == []
    finally:
        context.close()
    assert not [u for u in traffic.urls if "/mcp" in u], traffic.urls
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
