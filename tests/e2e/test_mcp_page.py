"""MCP tools in the page (issue 31, part 1; docs/mcp.md#in-the-page), both modes: a real MCP server
(tests/unit/mcp_server.py, PyPI's `mcp` SDK, event-stream answers) started here, reached only
through the page's origin (`aerix.serve`'s `mcp=`, `--proxy-mcp docs=URL`, holding its key), and
`ai.mcpTools("/mcp/docs", ...)` giving its tools to agents:

(1) listing: the tools chosen and named (`prefix`, `getWeatherNow` as `docs_get_weather_now`),
    their nested input in the agent's turn schema;
(2) a call with nested input (an order of items to an address) and its result; a tool that fails
    (`isError`) is the call's error result and the run goes on;
(3) a call that hangs past `timeoutS` is the result `error: timed out after 2 s`, and the server's
    call is cancelled;
(4) the key is added by the proxy and never reaches the page (the server saw it, redacted back);
(5) taint: after an MCP result, a durable agent's guarded JS tool waits for approval, then runs;
(6) another `/mcp/` name is the proxy's 404 as an `engine` error; an unknown option is refused;
(7) `close()` on what `ai.mcpTools` gave sends one DELETE with the listing's session id through
    the proxy however often it is called, the server forgets the session, and the tools' calls
    after it (an agent built before, one built after) are error results naming the ended session.

The generations come from an OpenAI-compatible server of test_state_page.py's kind that answers
from a script, forwarded through the same origin (`serve(proxy=...)`), so every request the page
makes is to its own origin.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from build.demo_mcp import start_listening
from build.ports import free_port
from conftest import ROOT, SITE, open_page
from test_state_page import ScriptedServer, calls, final, turn_by_script

KEY = "sk-mcp-e2e-0123456789abcdef"
ORDER = {"items": [{"sku": "A-1", "qty": 2}], "ship_to": {"city": "Lyon", "lines": ["1 rue X"]}}
FIRST = {
    "Order two A-1 to Lyon": calls("docs_place_order", ORDER),
    "Wait for it": calls("docs_hang", {}),
    "Who am I?": calls("docs_seen_headers", {}),
    "Weather in Oslo?": calls("docs_get_weather_now", {"city": "Oslo"}),
    "Add 2 and 3": calls("docs_add", {"a": 2, "b": 3}),
}
AFTER = {
    "docs_place_order": calls("docs_fail", {"reason": "no stock"}),
    "docs_fail": final("ordered"),
    "docs_hang": final("gave up"),
    "docs_seen_headers": final("seen"),
    "docs_get_weather_now": calls("send_message", {"to": "eve@example.org"}),
    "send_message": final("Done."),
    "docs_add": final("added"),
}


class McpServer:
    """tests/unit/mcp_server.py in a subprocess on a free loopback port (as tests/unit/test_mcp.py starts it)."""

    def __init__(self, marks: Path) -> None:
        self.marks = marks
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        script = ROOT / "tests" / "unit" / "mcp_server.py"
        self.process = start_listening([sys.executable, str(script), str(port), "sse", str(marks)], port, "MCP test server")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.process.stderr.close()


@pytest.fixture(scope="module")
def site_with_mcp(tmp_path_factory):
    try:
        import mcp  # noqa: F401 - the server's SDK
    except ImportError:
        print("test_mcp_page: skipped, PyPI's mcp is not installed (pip install -e '.[test]')")
        pytest.skip("the MCP server of these tests needs PyPI's mcp (pip install -e '.[test]')")
    from aerix.proxy import Upstream
    from aerix.serve import serve

    if not (SITE / "index.html").exists():
        pytest.fail("build/site is not built: run `make build` (make test-e2e does)")
    marks = tmp_path_factory.mktemp("mcp-page")
    server = McpServer(marks)
    scripted = ScriptedServer(lambda body: turn_by_script(body, FIRST, AFTER))
    site, _ = serve(str(SITE), 0, proxy=f"{scripted.url}/v1", mcp={"docs": Upstream(server.url, key=KEY)})
    yield f"http://127.0.0.1:{site.server_address[1]}", marks, server.url
    site.shutdown()
    site.server_close()
    scripted.stop()
    server.stop()


RUN = """async (worker) => {
  const error = (e) => ({ name: e.name, kind: e.kind ?? null, message: e.message });
  const drain = async (events) => { const all = []; for await (const ev of events) if (!["text", "final_delta", "usage"].includes(ev.type)) all.push(ev); return all; };
  const { boot } = await import("/aerix.mjs");
  const ai = await boot({ engine: { baseUrl: "/v1", model: "scripted", retries: 0 }, worker });
  const docs = await ai.mcpTools("/mcp/docs", { prefix: "docs_", tools: ["place_order", "fail", "getWeatherNow", "seen_headers"] });
  const slow = await ai.mcpTools("/mcp/docs", { prefix: "docs_", tools: ["hang"], timeoutS: 2 });
  const shop = ai.agent({ tools: [...docs, ...slow], limits: { turns: 4 } });
  await shop.ready;
  const order = await drain(shop.run("Order two A-1 to Lyon"));
  const started = performance.now();
  const hung = await drain(shop.run("Wait for it"));
  const hungMs = performance.now() - started;
  const seen = await drain(shop.run("Who am I?"));
  const sent = [];
  const guarded = ai.agent({
    name: "mcp_guarded", durable: true, limits: { turns: 4 },
    tools: [...docs, { name: "send_message", description: "Send a message.", input: { to: { type: "string", required: true } },
                       trust: { guardWhenTainted: true }, run: ({ to }) => (sent.push(to), `sent to ${to}`) }],
  });
  const tainted = await drain(guarded.run("Weather in Oslo?"));
  const sentBefore = [...sent];
  const waiting = tainted[tainted.length - 1];
  const approved = waiting.type === "waiting" ? await drain(guarded.approve(waiting.runId, waiting.approvalId, true)) : [];
  const other = await ai.mcpTools("/mcp/other").then(() => null, error);
  const badOption = await ai.mcpTools("/mcp/docs", { timeout: 1 }).then(() => null, error);
  return { docs, slow, schema: JSON.stringify(shop.schema), order, hung, hungMs, seen, tainted, sentBefore, sent, approved, other, badOption };
}"""


def results(events: list[dict]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "result"]


def test_an_mcp_servers_tools_run_in_the_page_through_the_proxy(browser, site_with_mcp, mode):
    origin, marks, _ = site_with_mcp
    context, page, traffic = open_page(browser, origin, expect_missing=f"{origin}/mcp/other")
    try:
        out = page.evaluate(RUN, mode == "worker")
    finally:
        context.close()
    # (1) listing
    assert [d["name"] for d in out["docs"]] == ["docs_place_order", "docs_get_weather_now", "docs_fail", "docs_seen_headers"]  # the server's order
    assert out["docs"][0]["description"] == "Place an order of several items." and all(isinstance(d["mcp"]["aerixMcp"], str) for d in out["docs"])
    assert "docs_place_order" in out["schema"] and "ship_to" in out["schema"] and "sku" in out["schema"]  # nested input, decoded under it
    # (2) nested input, the tool's error
    order = out["order"]
    placed, failed = results(order)
    assert json.loads(placed) == {"count": 2, "skus": ["A-1"], "city": "Lyon", "note": None}
    assert failed == "error: Error executing tool fail: cannot do it: no stock"
    assert [e["error"] for e in order if e["type"] == "result"] == [False, True] and order[-1]["type"] == "final" and order[-1]["text"] == "ordered"
    assert [e["source"] for e in order if e["type"] == "taint"] == ["docs_place_order"]  # results come from outside
    # (3) a timeout; the server's call cancelled
    assert results(out["hung"]) == ["error: timed out after 2 s"] and out["hung"][-1]["text"] == "gave up"
    assert out["hungMs"] < 10_000
    deadline = time.monotonic() + 10
    while not (marks / "hang.cancelled").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (marks / "hang.cancelled").exists(), "the server's call was not cancelled (notifications/cancelled)"
    # (4) the key: added by the proxy, redacted back, never in the page
    assert json.loads(results(out["seen"])[0]) == {"authorization": "Bearer [redacted]", "cookie": None}
    assert KEY not in json.dumps(out)
    # (5) taint: the guarded tool waits for a person, then runs
    tainted = out["tainted"]
    assert [e["type"] for e in tainted if e["type"] in ("call", "taint", "result")][:3] == ["call", "taint", "result"]
    assert [e["source"] for e in tainted if e["type"] == "taint"] == ["docs_get_weather_now"]
    assert tainted[-1]["type"] == "waiting" and "send_message" in tainted[-1]["title"] and out["sentBefore"] == []
    assert out["sent"] == ["eve@example.org"] and out["approved"][-1]["type"] == "final" and out["approved"][-1]["text"] == "Done."
    # (6) refusals
    assert out["other"]["kind"] == "engine" and "404" in out["other"]["message"] and "/mcp/docs" in out["other"]["message"]
    assert out["badOption"]["kind"] == "options" and '["timeout"]' in out["badOption"]["message"]
    assert traffic.foreign == [], traffic.foreign
    # a timed-out call's fetch may be aborted by the page: the only failure allowed
    assert [f for f in traffic.failed if not ("/mcp/docs" in f and "ERR_ABORTED" in f)] == [], traffic.failed


CLOSE = """async (worker) => {
  const drain = async (events) => { const all = []; for await (const ev of events) if (!["text", "final_delta", "usage"].includes(ev.type)) all.push(ev); return all; };
  const { boot } = await import("/aerix.mjs");
  const ai = await boot({ engine: { baseUrl: "/v1", model: "scripted", retries: 0 }, worker });
  const adding = await ai.mcpTools("/mcp/docs", { prefix: "docs_", tools: ["add"] });
  const before = ai.agent({ tools: [...adding], limits: { turns: 3 } });
  const open = await drain(before.run("Add 2 and 3"));
  const keys = Object.keys(adding);
  const closed = await Promise.all([adding.close(), adding.close()]);
  await adding.close();
  const after = await drain(before.run("Add 2 and 3"));
  const built = ai.agent({ tools: [...adding], limits: { turns: 3 } });
  const builtAfter = await drain(built.run("Add 2 and 3"));
  return { open, keys, closed, after, builtAfter };
}"""


def test_close_ends_the_mcp_session_in_the_page(browser, site_with_mcp, mode):
    import httpx

    origin, _, server_url = site_with_mcp
    context, page, traffic = open_page(browser, origin)
    sent: list[tuple[str, str | None, str | None]] = []  # (method, session id, JSON-RPC method) of each /mcp/docs request
    page.on("request", lambda r: sent.append((r.method, r.headers.get("mcp-session-id"), json.loads(r.post_data or "{}").get("method"))) if r.url.endswith("/mcp/docs") else None)
    try:
        out = page.evaluate(CLOSE, mode == "worker")
    finally:
        context.close()
    assert results(out["open"]) == ["5"] and out["keys"] == ["0"] and out["closed"] == [None, None]
    (session_id,) = {sid for method, sid, rpc in sent if method == "POST" and rpc == "tools/call"}
    assert [(m, sid) for m, sid, _ in sent if m == "DELETE"] == [("DELETE", session_id)]  # once, with the listing's session id
    assert [m for m, _, _ in sent][-1] == "DELETE"  # no new session after it
    ended = f"error: MCP server {origin}/mcp/docs: tools/call: the session was ended (aclose)"
    assert results(out["after"]) == [ended] and out["after"][-1]["text"] == "added"
    assert results(out["builtAfter"]) == [ended]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    answer = httpx.post(server_url, json=body, headers={"mcp-session-id": session_id, "accept": "application/json, text/event-stream"})
    assert answer.status_code == 404  # the server has forgotten it
    # the MCP client stops reading an event stream once it has its answer: Chromium says ERR_ABORTED
    assert traffic.foreign == [] and [f for f in traffic.failed if not ("/mcp/docs" in f and "ERR_ABORTED" in f)] == [], (traffic.foreign, traffic.failed)
