"""Traces from the page (issue 31, part 2), in both modes: an agent on the bundled model with the
demo's tools and `tracer: {url: "/v1/traces", keep: true}` posts each run's trace as OTLP/HTTP JSON
to the page's own origin, where `aerix.serve`'s `otlp=` (`--proxy-otlp`) forwards it to a loopback
OTLP receiver started here; the receiver gets the run's tree (invoke_agent → chat, execute_tool,
chat) and `agent.traces()` gives the same spans in the page. And the demo shows the last run's
trace in its Trace panel."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import SITE, Traffic
from conftest import demo as demo_path

from aerix.serve import serve


class Receiver:
    """An OTLP/HTTP collector on loopback: records each POST's (path, headers, JSON body)."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], Any]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(body)))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def traced_site():
    receiver = Receiver()
    server, _ = serve(str(SITE), 0, otlp=receiver.url)
    yield f"http://127.0.0.1:{server.server_address[1]}", receiver
    server.shutdown()
    server.server_close()
    receiver.close()


RUN = """async (worker) => {
  const { boot } = await import("/aerix.mjs");
  const demo = await import("/demo-tools.mjs");
  const ai = await boot({ model: "/models/aerix-tools.gguf", worker });
  const agent = ai.agent({
    name: "travel", instructions: demo.INSTRUCTIONS, tools: demo.tools,
    limits: { turns: 4, retries: 2, maxTokens: 256 }, generation: { temperature: 0 },
    tracer: { url: "/v1/traces", keep: true },
  });
  const events = [];
  for await (const ev of agent.run("Do I need an umbrella in Lisbon today?")) if (ev.type !== "text") events.push(ev);
  return { events, traces: await agent.traces() };
}"""


def spans_of(body: Any) -> list[dict[str, Any]]:
    ((resource,),) = [body["resourceSpans"]]
    ((scope,),) = [resource["scopeSpans"]]
    return scope["spans"]


def attribute(span: dict[str, Any], key: str) -> Any:
    (value,) = [a["value"] for a in span["attributes"] if a["key"] == key]
    return next(iter(value.values()))


def test_the_page_posts_each_runs_trace_as_otlp_json_through_its_origin(browser, traced_site, worker):
    origin, receiver = traced_site
    receiver.got.clear()
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(180_000)
    traffic = Traffic(origin)
    page.on("request", traffic.on_request)
    page.on("requestfailed", traffic.on_failed)
    page.on("response", traffic.on_response)
    posted: list[str] = []  # the page's posts of its trace that came back: closing before would abort one
    page.on("requestfinished", lambda r: posted.append(r.url) if r.url.endswith("/v1/traces") else None)
    try:
        page.goto(f"{origin}/embed.html")
        out = page.evaluate(RUN, worker)
        deadline = time.monotonic() + 30  # the post goes out after the run's stop, in a task of its own
        while not (receiver.got and posted) and time.monotonic() < deadline:
            page.wait_for_timeout(100)  # not time.sleep: Playwright hands over the page's events while it waits
    finally:
        context.close()
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    assert any(u.endswith("/v1/traces") for u in traffic.urls), "the page did not post its trace to its own origin"
    events = out["events"]
    assert [e["tool"] for e in events if e["type"] == "call"] == ["weather"] and events[-1]["type"] == "final", events

    ((path, headers, body),) = receiver.got
    assert path == "/v1/traces" and headers["content-type"].startswith("application/json")
    spans = spans_of(body)
    run = next(s for s in spans if "parentSpanId" not in s)
    children = sorted((s for s in spans if s.get("parentSpanId") == run["spanId"]), key=lambda s: int(s["startTimeUnixNano"]))
    assert run["name"] == "invoke_agent travel" and attribute(run, "gen_ai.operation.name") == "invoke_agent"
    assert [s["name"] for s in children] == ["chat", "execute_tool weather", "chat"] and len(spans) == 4
    assert attribute(children[1], "gen_ai.tool.name") == "weather" and attribute(children[0], "gen_ai.provider.name") == "llama.cpp"
    assert int(attribute(children[0], "gen_ai.usage.input_tokens")) > 0
    assert {s["traceId"] for s in spans} == {run["traceId"]} and all(int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"]) for s in spans)

    # the page kept the same trace, as plain data with times in ms
    (kept,) = out["traces"]
    assert [s["spanId"] for s in kept] == [run["spanId"], *(s["spanId"] for s in children)]
    assert all(s["durationMs"] >= 0 and s["endMs"] >= s["startMs"] for s in kept)


def test_the_demo_shows_the_last_runs_trace(fresh_page, mode):
    page, _ = fresh_page(demo_path(mode))
    page.wait_for_function("() => window.demo && window.demo.ready", timeout=180_000)
    assert page.is_hidden("#trace"), "no run yet: no trace"
    page.fill("#prompt", "Do I need an umbrella in Lisbon today?")
    page.click("#run")
    page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running && window.demo.trace", timeout=180_000)
    rows = page.evaluate("window.demo.trace")
    assert rows[0]["name"] == "invoke_agent travel" and rows[0]["depth"] == 0
    assert [r["name"] for r in rows[1:]][:2] == ["chat", "execute_tool weather"] and all(r["depth"] == 1 for r in rows[1:]), rows
    assert all(0 <= r["left"] <= 1 and r["durationMs"] >= 0 for r in rows)
    assert page.is_visible("#trace")
    assert page.locator("#trace li").count() == len(rows)
    assert page.locator("#trace li .name").first.text_content() == "invoke_agent travel"
