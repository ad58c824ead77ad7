"""aerix.proxy through aerix.serve: the page's /v1 requests go to an OpenAI-compatible server with
the key added, the stream comes back as it is made, and the key never reaches the page (issue 21,
item 7). The server here is a fake: a stdlib HTTP server that records what it got and streams
chunk by chunk, waiting for the test where the test says."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

if sys.platform == "emscripten":
    pytest.skip("the proxy runs on CPython: Pyodide has no sockets for it", allow_module_level=True)

from aerix.cli import main as cli_main
from aerix.cli import parser
from aerix.errors import AerixError
from aerix.proxy import Upstream, _Redactor
from aerix.serve import HEADERS, serve

KEY = "sk-test-0123456789abcdef"
FRAMES = [b'data: {"choices":[{"delta":{"content":"Hel"}}]}\n\n', b'data: {"choices":[{"delta":{"content":"lo"}}]}\n\n',
          b'data: {"choices":[{"delta":{},"finish_reason":"stop"}]}\n\n', b"data: [DONE]\n\n"]
MODELS = b'{"object":"list","data":[{"id":"tiny","object":"model"}]}'
PAGE = {"Sec-Fetch-Site": "same-origin"}  # what a browser sends with this site's page's GET (it sends no Origin)


class FakeServer:
    """An OpenAI-compatible server; what a chat request gets is its body's `scenario`."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []
        self.go = threading.Event()  # set by the test: the stream may go on past its first chunk
        self.left = threading.Event()  # a write failed: the proxy closed the connection
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.requests.append((self.command, self.path, dict(self.headers.items()), b""))
                self.answer(200, "application/json", [MODELS])

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append((self.command, self.path, dict(self.headers.items()), body))
                scenario = json.loads(body).get("scenario", "stream")
                if scenario == "stream":
                    self.answer(200, "text/event-stream", FRAMES, wait_after_first=True)
                elif scenario == "echo":  # a server that quotes the key back, in a header and split across chunks
                    text = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}}).encode()
                    cut = text.index(KEY.encode()) + 7
                    self.answer(401, "application/json", [text[:cut], text[cut:]], extra={"Retry-After": KEY, "X-Echo": KEY})
                elif scenario == "say":  # what the test wrote in the body: status, headers, chunks
                    asked = json.loads(body)
                    self.answer(asked["status"], "application/json", [c.encode("latin-1") for c in asked["chunks"]], extra=asked.get("headers"))
                elif scenario == "silent":
                    time.sleep(1)
                elif scenario == "endless":
                    self.endless()

            def answer(self, status: int, kind: str, chunks: list[bytes], *, wait_after_first: bool = False, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Transfer-Encoding", "chunked")
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                for i, chunk in enumerate(chunks):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                    if i == 0 and wait_after_first:
                        fake.go.wait(5)
                    time.sleep(0.01)
                self.wfile.write(b"0\r\n\r\n")

            def endless(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.monotonic() + 5
                try:
                    while time.monotonic() < deadline:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(FRAMES[0]), FRAMES[0]))
                        self.wfile.flush()
                        time.sleep(0.02)
                except OSError:
                    fake.left.set()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text("<!doctype html><title>site</title>")
    return root


@pytest.fixture(scope="module")
def upstream():
    fake = FakeServer()
    yield fake
    fake.close()


def start(root, proxy, **options):
    server, thread = serve(root, 0, proxy=proxy, **options)
    return server, thread, server.server_address[1]


def stop(server, thread):
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(scope="module")
def port(root, upstream):
    server, thread, port = start(root, upstream.url, key=KEY)
    yield port
    stop(server, thread)


def ask(port: int, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes, bytes]:
    """Status, headers (lower-case names), body, and every byte the page got, read to the close."""
    head = {"Host": f"127.0.0.1:{port}", **({"Content-Length": str(len(body))} if body is not None else {}), **(headers or {})}
    request = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(request.encode() + (body or b""))
        raw = b""
        while data := s.recv(65536):
            raw += data
    top, _, rest = raw.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.lower(): v for k, v in fields.items()}, rest, raw


def chat(scenario: str = "stream") -> bytes:
    return json.dumps({"model": "tiny", "stream": True, "messages": [{"role": "user", "content": "hi"}], "scenario": scenario}).encode()


def test_the_stream_comes_through_byte_for_byte_as_it_is_made(port, upstream):
    upstream.go.clear()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        conn.request("POST", "/v1/chat/completions", body=chat(), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200 and response.getheader("Content-Type") == "text/event-stream"
        first = b""
        while len(first) < len(FRAMES[0]):  # a buffering proxy would time out here: the server waits for us
            first += response.read1(65536)
        assert first == FRAMES[0]
        upstream.go.set()
        assert first + response.read() == b"".join(FRAMES)
    finally:
        conn.close()


def test_upstream_gets_the_key_and_none_of_the_pages_credentials(port, upstream):
    upstream.go.set()
    page = {"Content-Type": "application/json", "Authorization": "Bearer page-token", "Cookie": "session=abc",
            "X-Other": "1", "Origin": f"http://127.0.0.1:{port}"}
    status, _, body, _ = ask(port, "POST", "/v1/chat/completions?debug=1", chat(), page)
    assert status == 200 and body == b"".join(FRAMES)
    method, path, headers, sent = upstream.requests[-1]
    assert (method, path, sent) == ("POST", "/v1/chat/completions", chat())
    assert headers["Authorization"] == f"Bearer {KEY}" and headers["Content-Type"] == "application/json"
    assert not {"Cookie", "X-Other", "Origin"} & set(headers), headers
    assert "page-token" not in json.dumps(headers)


def test_models_is_forwarded(port, upstream):
    status, headers, body, _ = ask(port, "GET", "/v1/models", headers=PAGE)
    assert (status, headers["content-type"], body) == (200, "application/json", MODELS)
    assert upstream.requests[-1][:2] == ("GET", "/v1/models")


def test_the_key_never_reaches_the_page_even_when_the_server_echoes_it(port):
    status, headers, body, raw = ask(port, "POST", "/v1/chat/completions", chat("echo"))
    assert status == 401 and KEY.encode() not in raw
    assert json.loads(body) == {"error": {"message": "Incorrect API key provided: [redacted]"}}
    assert headers["retry-after"] == "[redacted]" and "x-echo" not in headers  # only Content-Type and Retry-After pass


def test_the_key_is_in_no_log_line(root, upstream, capfd):
    server, thread, port = start(root, upstream.url, key=KEY, verbose=True)
    try:
        for scenario in ("echo", "stream"):
            upstream.go.set()
            assert ask(port, "POST", "/v1/chat/completions", chat(scenario))[0] in (200, 401)
    finally:
        stop(server, thread)
    err = capfd.readouterr().err
    assert '"POST /v1/chat/completions HTTP/1.1" 401' in err and KEY not in err


def test_proxied_answers_carry_the_sites_headers_and_static_files_are_still_served(port):
    for path in ("/v1/models", "/index.html", "/v1/nowhere"):
        status, headers, body, _ = ask(port, "GET", path, headers=PAGE)
        assert status == (404 if path == "/v1/nowhere" else 200), path
        assert headers["content-security-policy"], path
        for name, value in HEADERS.items():
            assert headers[name.lower()] == value, (path, name)
    assert ask(port, "GET", "/index.html")[2] == b"<!doctype html><title>site</title>"


def problem(answer: tuple[int, dict[str, str], bytes, bytes]) -> dict[str, Any]:
    status, headers, body, raw = answer
    assert headers["content-type"] == "application/problem+json" and KEY.encode() not in raw
    doc = json.loads(body)
    assert doc["status"] == status and doc["title"]
    return doc


def test_only_the_two_routes_are_forwarded(port, upstream):
    asked = len(upstream.requests)
    assert "forwards only GET /v1/models and POST /v1/chat/completions" in problem(ask(port, "GET", "/v1/embeddings"))["detail"]
    assert problem(ask(port, "POST", "/v1", b"{}"))["status"] == 404
    wrong = ask(port, "GET", "/v1/chat/completions")
    assert problem(wrong)["status"] == 405 and wrong[1]["allow"] == "POST"
    assert len(upstream.requests) == asked  # none went upstream


def test_a_body_too_big_or_without_a_length_is_refused(port, upstream):
    asked = len(upstream.requests)
    assert problem(ask(port, "POST", "/v1/chat/completions", headers={"Content-Length": str(9 << 20)}))["status"] == 413
    assert problem(ask(port, "POST", "/v1/chat/completions"))["status"] == 411
    assert problem(ask(port, "POST", "/v1/chat/completions", headers={"Content-Length": "12", "Transfer-Encoding": "chunked"}))["status"] == 411
    assert len(upstream.requests) == asked


def test_another_origin_or_host_is_refused(port, upstream):
    asked = len(upstream.requests)
    assert problem(ask(port, "POST", "/v1/chat/completions", chat(), {"Origin": "https://evil.example"}))["status"] == 403
    assert problem(ask(port, "POST", "/v1/chat/completions", chat(), {"Origin": "null"}))["status"] == 403
    # DNS rebinding: evil.example made to point at 127.0.0.1, its page asking as its own origin
    rebound = {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}"}
    assert problem(ask(port, "POST", "/v1/chat/completions", chat(), rebound))["status"] == 403
    assert len(upstream.requests) == asked
    assert ask(port, "GET", "/v1/models", headers={"Host": f"localhost:{port}", **PAGE})[0] == 200


def test_a_server_that_is_down_is_a_502(root):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nobody listens there once this closes
    server, thread, port = start(root, f"http://127.0.0.1:{closed}/v1", key=KEY)
    try:
        doc = problem(ask(port, "POST", "/v1/chat/completions", chat()))
        assert doc["status"] == 502 and f"127.0.0.1:{closed}" in doc["detail"]
    finally:
        stop(server, thread)


def test_a_server_that_does_not_answer_is_a_504(root, upstream):
    server, thread, port = start(root, Upstream(upstream.url, key=KEY, timeout_s=0.2))
    try:
        assert problem(ask(port, "POST", "/v1/chat/completions", chat("silent")))["status"] == 504
    finally:
        stop(server, thread)


def test_a_page_that_leaves_mid_stream_closes_the_upstream_connection(port, upstream):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    conn.request("POST", "/v1/chat/completions", body=chat("endless"), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.read1(65536).startswith(b"data: ")
    response.close()
    conn.close()
    assert upstream.left.wait(4), "the server went on streaming to nobody"


def test_without_a_proxy_v1_is_a_path_like_any_other(root):
    server, thread = serve(root, 0)
    try:
        port = server.server_address[1]
        assert ask(port, "GET", "/v1/models")[0] == 404
        assert ask(port, "POST", "/v1/chat/completions", chat())[0] == 501
    finally:
        stop(server, thread)


# -- the pieces ----------------------------------------------------------------------------------


def test_the_redactor_finds_the_key_across_any_cut_and_holds_nothing_back_at_a_frames_end():
    text = f'data: {{"echo":"Bearer {KEY}"}}\n\n'.encode()
    for cut in range(len(text) + 1):
        redact = _Redactor(KEY)
        out = redact.feed(text[:cut]) + redact.feed(text[cut:]) + redact.close()
        assert out == b'data: {"echo":"Bearer [redacted]"}\n\n', cut
    redact = _Redactor(KEY)
    assert redact.feed(FRAMES[0]) == FRAMES[0] and redact.held == b""
    assert redact.feed(b"sk-te") == b"" and redact.feed(b"a") == b"sk-tea"  # held while it could be the key
    assert _Redactor(None).feed(b"anything") == b"anything"


def test_upstream_checks_its_url_and_hides_its_key():
    upstream = Upstream("http://127.0.0.1:8080/v1/", key=f"  {KEY}\n")
    assert (upstream.url, upstream.key) == ("http://127.0.0.1:8080/v1", KEY)  # a key from a file ends in a newline
    assert KEY not in repr(upstream) and "[redacted]" in repr(upstream)
    for bad in ("127.0.0.1:8080/v1", "ftp://host/v1", "http://user:pw@host/v1", "http://host/v1?key=abc"):
        with pytest.raises(AerixError) as caught:
            Upstream(bad)
        assert "pw" not in caught.value.message and "abc" not in caught.value.message
    with pytest.raises(AerixError, match="not shown"):
        Upstream("http://host/v1", key="sk bad")


# -- python -m aerix serve -----------------------------------------------------------------------


def test_the_command_line(tmp_path, monkeypatch, capsys):
    args = parser().parse_args(["serve", "--root", str(tmp_path), "--proxy", "http://127.0.0.1:8080/v1", "--key-env", "MY_KEY", "--port", "0"])
    assert (args.command, args.root, args.proxy, args.key_env, args.port, args.host) == ("serve", str(tmp_path), "http://127.0.0.1:8080/v1", "MY_KEY", 0, "127.0.0.1")
    monkeypatch.delenv("MY_KEY", raising=False)
    assert cli_main(["serve", "--root", str(tmp_path), "--proxy", "http://127.0.0.1:8080/v1", "--key-env", "MY_KEY"]) == 2
    assert "$MY_KEY is not set" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # no build/site here
    assert cli_main(["serve"]) == 2
    assert "--root" in capsys.readouterr().err
    monkeypatch.setenv("MY_KEY", "sk bad")
    assert cli_main(["serve", "--root", str(tmp_path), "--proxy", "http://127.0.0.1:8080/v1", "--key-env", "MY_KEY"]) == 2
    err = capsys.readouterr().err
    assert "sk bad" not in err and "not shown" in err
