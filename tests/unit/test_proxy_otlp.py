"""aerix.proxy_otlp through aerix.serve (issue 31, part 2): the page's ``POST /v1/traces`` goes to an
OpenTelemetry collector with the collector's headers added, as the page sent it; the page's own
credentials do not, nor does a request another site's page could cause. The collector here is a
loopback receiver: a stdlib HTTP server in a thread that records what it got."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

if sys.platform == "emscripten":
    pytest.skip("the proxy runs on CPython: Pyodide has no sockets for it", allow_module_level=True)

from test_proxy import ask, start, stop

from aerix.cli import main as cli_main
from aerix.errors import AerixError
from aerix.proxy_otlp import Collector, otlp_headers
from aerix.testing import ScriptedModel
from aerix.trace_export import otlp_json
from aerix.tracing import SpanCollector, Tracer

SECRET = "collector-key-0123456789"
PAGE = {"Origin": "http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}


class Receiver:
    """An OTLP/HTTP collector: records (path, headers, body) and answers what ``answer`` says."""

    def __init__(self) -> None:
        self.got: list[tuple[str, dict[str, str], bytes]] = []
        self.answer: tuple[int, bytes] = (200, b"{}")
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((self.path, dict(self.headers.items()), body))
                status, text = receiver.answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<!doctype html><title>site</title>")
    return root


@pytest.fixture
def receiver():
    fake = Receiver()
    yield fake
    fake.close()


@pytest.fixture
def site(root, receiver):
    server, thread, port = start(root, None, otlp=Collector(receiver.url, headers={"x-api-key": SECRET}))
    yield port
    stop(server, thread)


def page_headers(port: int, **more: str) -> dict[str, str]:
    return {k: v.format(port=port) for k, v in PAGE.items()} | more


async def a_trace() -> bytes:
    spans = SpanCollector()
    from aerix import Agent

    await Agent(model=ScriptedModel(['{"thought": "t", "final": "hi"}']), name="helper", tracer=Tracer(exporters=[spans])).ask("hello")
    return json.dumps(otlp_json(spans.spans)).encode()


async def test_a_trace_reaches_the_collector_as_the_page_sent_it_with_the_collectors_headers(site, receiver):
    body = await a_trace()
    status, headers, answer, _ = ask(site, "POST", "/v1/traces", body, page_headers(site, Cookie="session=1", Authorization="Bearer page-token"))
    assert (status, answer) == (200, b"{}") and headers["content-type"] == "application/json"
    ((path, got, forwarded),) = receiver.got
    assert path == "/v1/traces" and forwarded == body
    assert json.loads(forwarded)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] == "invoke_agent helper"
    got = {k.lower(): v for k, v in got.items()}
    assert got["x-api-key"] == SECRET and got["content-type"] == "application/json"
    assert not {"cookie", "authorization", "origin", "sec-fetch-site"} & set(got)


def test_the_collectors_answer_comes_back_with_its_headers_blanked_out(site, receiver):
    receiver.answer = (401, json.dumps({"error": f"bad key {SECRET}"}).encode())
    status, _, answer, raw = ask(site, "POST", "/v1/traces", b"{}", page_headers(site))
    assert status == 401 and b"[redacted]" in answer and SECRET.encode() not in raw


@pytest.mark.parametrize(
    ("method", "headers", "status", "words"),
    [
        ("GET", {"Sec-Fetch-Site": "same-origin"}, 405, "/v1/traces takes POST only"),
        ("POST", {"Origin": "https://evil.example", "Content-Type": "application/json"}, 403, "another origin"),
        ("POST", {"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, 403, "another site's page"),
        ("POST", {"Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain"}, 415, "OTLP/HTTP takes application/json or application/x-protobuf"),
    ],
)
def test_what_another_page_could_cause_or_no_collector_takes_is_refused(site, receiver, method, headers, status, words):
    got, answer_headers, answer, _ = ask(site, method, "/v1/traces", b"{}" if method == "POST" else None, headers)
    assert got == status and words in json.loads(answer)["detail"] and receiver.got == []
    if status == 405:
        assert answer_headers["allow"] == "POST"


def test_a_collector_that_is_gone_is_a_502(root):
    gone = Receiver()
    gone.close()
    server, thread, port = start(root, None, otlp=gone.url)
    try:
        status, _, answer, _ = ask(port, "POST", "/v1/traces", b"{}", page_headers(port))
    finally:
        stop(server, thread)
    assert status == 502 and "could not reach the collector" in json.loads(answer)["detail"]


def test_without_a_collector_traces_is_no_path_of_the_site(root):
    server, thread, port = start(root, None)
    try:
        status, _, _, _ = ask(port, "POST", "/v1/traces", b"{}", page_headers(port))
    finally:
        stop(server, thread)
    assert status == 501


def test_the_collectors_url_gets_v1_traces_when_it_has_no_path():
    assert Collector("http://127.0.0.1:4318").url == "http://127.0.0.1:4318/v1/traces"
    assert Collector("http://127.0.0.1:4318/").url == "http://127.0.0.1:4318/v1/traces"
    assert Collector("https://otel.example/api/traces").url == "https://otel.example/api/traces"
    assert SECRET not in repr(Collector("http://c", headers={"k": SECRET}))
    with pytest.raises(AerixError, match="must be an http"):
        Collector("ftp://c")
    with pytest.raises(AerixError, match="no user"):
        Collector("http://me:pw@c")


def test_otlp_headers_reads_opentelemetrys_variable():
    assert otlp_headers("api-key=a%20b, x-team = t1") == {"api-key": "a b", "x-team": "t1"}
    assert otlp_headers(None) == otlp_headers("") == {}
    with pytest.raises(AerixError, match="name=value"):
        otlp_headers("justaname")


def test_the_command_line(tmp_path, monkeypatch, capsys):
    assert cli_main(["serve", "--root", str(tmp_path), "--proxy-otlp", "ftp://collector"]) == 2
    assert "the OTLP collector must be an http(s) URL" in capsys.readouterr().err
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "broken")
    assert cli_main(["serve", "--root", str(tmp_path), "--proxy-otlp", "http://127.0.0.1:4318"]) == 2
    assert "name=value" in capsys.readouterr().err
