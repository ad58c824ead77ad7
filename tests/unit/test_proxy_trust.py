"""aerix.proxy and aerix.serve against a hostile page or client (issue 26, the proxy's and the static
server's low items): every form of the key redacted, half-open requests timed out with a 408, a
cross-site GET without an Origin refused, obs-fold and odd Content-Lengths refused, nosniff on every
response. Each test failed before its fix. Real sockets on loopback, as in test_proxy.py."""

from __future__ import annotations

import json
import select
import socket
import sys
import time
from urllib.parse import quote

import pytest

if sys.platform == "emscripten":
    pytest.skip("the proxy runs on CPython: Pyodide has no sockets for it", allow_module_level=True)

from test_proxy import KEY, PAGE, ask, chat, problem, root, start, stop, upstream  # noqa: F401 - fixtures

from aerix.proxy import _Redactor

ODD = "sk-te/st+0123456789abcdef"  # a key with the characters JSON and URLs escape


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04X}" if i % 2 else c for i, c in enumerate(text))


FORMS = {
    "as it is": ODD,
    "JSON \\/": ODD.replace("/", "\\/"),
    "JSON \\u002B": ODD.replace("+", "\\u002B"),
    "\\u-escaped, any character": escaped(ODD),
    "percent-encoded": quote(ODD, safe=""),
    "percent-encoded, lower case": quote(ODD, safe="").replace("%2F", "%2f").replace("%2B", "%2b"),
    "every character percent-encoded": "".join(f"%{b:02x}" for b in ODD.encode()),
}


@pytest.mark.parametrize("form", list(FORMS), ids=list(FORMS))
def test_the_redactor_finds_every_form_of_the_key_across_any_cut(form):
    text = f'{{"error": "bad key {FORMS[form]}"}}'.encode()
    for cut in range(len(text) + 1):
        redact = _Redactor(ODD)
        out = redact.feed(text[:cut]) + redact.feed(text[cut:]) + redact.close()
        assert out == b'{"error": "bad key [redacted]"}', (cut, out)


def test_a_body_that_ends_inside_the_key_shows_none_of_it():
    redact = _Redactor(ODD)
    out = redact.feed(b'{"error": "bad key ' + ODD[:10].encode()) + redact.close()
    assert out == b'{"error": "bad key [redacted]' and ODD[:4].encode() not in out


@pytest.fixture(scope="module")
def odd_port(root, upstream):  # noqa: F811 - the fixtures imported above
    server, thread, port = start(root, upstream.url, key=ODD)
    yield port
    stop(server, thread)


def say(status: int, chunks: list[str], headers: dict[str, str] | None = None) -> bytes:
    return json.dumps({"model": "tiny", "scenario": "say", "status": status, "chunks": chunks, "headers": headers or {}}).encode()


@pytest.mark.parametrize("form", list(FORMS), ids=list(FORMS))
def test_the_key_echoed_in_any_form_never_reaches_the_page(odd_port, form):
    echo = json.dumps({"error": {"message": "Incorrect API key provided: KEY"}}).replace("KEY", FORMS[form])
    cut = echo.index(FORMS[form]) + 5
    status, headers, body, raw = ask(odd_port, "POST", "/v1/chat/completions", say(401, [echo[:cut], echo[cut:]], {"Retry-After": FORMS[form]}))
    assert status == 401 and json.loads(body) == {"error": {"message": "Incorrect API key provided: [redacted]"}}
    assert headers["retry-after"] == "[redacted]" and FORMS[form].encode() not in raw and b"0123456789" not in raw


# -- half-open requests: a 408, and no thread held ----------------------------------------


@pytest.fixture(scope="module")
def quick_port(root, upstream):  # noqa: F811
    server, thread, port = start(root, upstream.url, key=KEY, request_timeout_s=0.5)
    yield port
    stop(server, thread)


def send_slowly(port: int, parts: list[bytes], pause: float = 0.0, wait: float = 5.0) -> tuple[bytes, float]:
    """Every byte the server answers (read to its close) and how long it took; ``parts`` are sent
    ``pause`` seconds apart, and then nothing more."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        for part in parts:
            s.sendall(part)
            if select.select([s], [], [], pause)[0]:
                break  # the server answered: sending more would only meet a closed socket
        raw = b""
        while data := s.recv(65536):
            raw += data
    return raw, time.monotonic() - started


def head(port: int, length: int, path: str = "/v1/chat/completions") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n".encode()


def status_of(raw: bytes) -> int:
    return int(raw.split(b" ", 2)[1]) if raw else 0


def test_a_body_that_stalls_gets_a_408(quick_port, upstream):  # noqa: F811
    asked = len(upstream.requests)
    raw, took = send_slowly(quick_port, [head(quick_port, 100) + b'{"model": '])
    assert status_of(raw) == 408 and b"application/problem+json" in raw and took < 3, raw
    assert len(upstream.requests) == asked


def test_headers_that_never_end_get_a_408(quick_port):
    raw, took = send_slowly(quick_port, [f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{quick_port}\r\n".encode()])
    assert status_of(raw) == 408 and took < 3, raw
    raw, _ = send_slowly(quick_port, [b"GET /index.html HTTP/1.1\r\nHost: x\r\n"])  # the static files too
    assert status_of(raw) == 408, raw


def test_a_request_dripped_a_byte_at_a_time_is_timed_out_as_a_whole(quick_port):
    drip = [bytes([b]) for b in f"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:{quick_port}\r\nX-Slow: {'y' * 40}\r\n".encode()]
    raw, took = send_slowly(quick_port, drip, pause=0.1)  # each byte well within 0.5 s of the last
    assert status_of(raw) == 408 and took < 3, raw


def test_a_connection_that_sends_nothing_is_closed_quietly(quick_port):
    raw, took = send_slowly(quick_port, [])
    assert raw == b"" and took < 3


def test_a_body_that_ends_short_of_its_length_is_a_400(port, upstream):  # noqa: F811
    asked = len(upstream.requests)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(head(port, 100) + b'{"model": "tiny"}')
        s.shutdown(socket.SHUT_WR)
        raw = b""
        while data := s.recv(65536):
            raw += data
    assert status_of(raw) == 400 and b"17 of its 100 bytes" in raw, raw
    assert len(upstream.requests) == asked


@pytest.fixture(scope="module")
def port(root, upstream):  # noqa: F811
    server, thread, port = start(root, upstream.url, key=KEY)
    yield port
    stop(server, thread)


# -- a GET another site's page could cause is refused --------------------------------------


@pytest.mark.parametrize("headers", [
    {},
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},  # another port of 127.0.0.1 is the same site, not the same origin
    {"Referer": "http://evil.example/page"},
    {"Sec-Fetch-Site": "cross-site", "Referer": "http://127.0.0.1/"},
], ids=["nothing", "cross-site", "same-site", "foreign referer", "cross-site with a referer"])
def test_a_get_without_an_origin_that_another_site_could_cause_is_refused(port, upstream, headers):  # noqa: F811
    asked = len(upstream.requests)
    doc = problem(ask(port, "GET", "/v1/models", headers=headers))
    assert doc["status"] == 403 and "site" in doc["detail"], doc
    assert len(upstream.requests) == asked


@pytest.mark.parametrize("headers", [PAGE, {"Sec-Fetch-Site": "none"}, {"Referer": "http://127.0.0.1:{port}/index.html"}],
                         ids=["same-origin", "typed in the address bar", "its own page's referer"])
def test_a_get_from_this_sites_page_goes_through(port, headers):  # noqa: F811
    headers = {k: v.format(port=port) for k, v in headers.items()}
    assert ask(port, "GET", "/v1/models", headers=headers)[0] == 200


def test_a_post_from_another_sites_page_without_an_origin_is_refused(port, upstream):  # noqa: F811
    asked = len(upstream.requests)
    assert problem(ask(port, "POST", "/v1/chat/completions", chat(), {"Sec-Fetch-Site": "cross-site"}))["status"] == 403
    assert len(upstream.requests) == asked
    upstream.go.set()
    assert ask(port, "POST", "/v1/chat/completions", chat())[0] == 200  # a script (no browser) sends no Origin


# -- obs-fold and odd Content-Lengths ------------------------------------------------------


def raw_request(port: int, lines: list[str], body: bytes = b"") -> bytes:
    """The answer to a request written as it is, in Latin-1: how a server reads header bytes."""
    return send_slowly(port, ["\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body])[0]


@pytest.mark.parametrize("fold", [" evil: 1", "\tmore", "Badline"], ids=["space", "tab", "not a header"])
def test_a_folded_or_malformed_header_line_is_a_400_never_forwarded(port, upstream, fold):  # noqa: F811
    asked = len(upstream.requests)
    body = chat()
    raw = raw_request(port, ["POST /v1/chat/completions HTTP/1.1", f"Host: 127.0.0.1:{port}", "Content-Type: application/json",
                             fold, f"Content-Length: {len(body)}"], body)
    assert status_of(raw) == 400 and b"obs-fold" in raw, raw
    assert len(upstream.requests) == asked


def test_a_folded_header_from_upstream_reaches_the_page_unfolded(port):  # noqa: F811
    status, headers, _, raw = ask(port, "POST", "/v1/chat/completions", say(429, ["{}"], {"Retry-After": "5\r\n 6"}))
    assert status == 429 and headers["retry-after"] == "5 6" and b"\r\n 6" not in raw


@pytest.mark.parametrize("length", ["\u00b2", "\u00b9", "2\u00b3", "+5", "5_0", "5 ", "-1", "0x5"])
def test_a_content_length_that_is_not_ascii_digits_is_a_400(port, upstream, length):  # noqa: F811
    asked = len(upstream.requests)
    raw = raw_request(port, ["POST /v1/chat/completions HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Content-Length: {length}"], b"{}")
    assert status_of(raw) == 400 and b"Content-Length" in raw, raw
    assert len(upstream.requests) == asked


def test_two_content_lengths_are_a_400_and_5000_digits_a_413(port, upstream):  # noqa: F811
    asked = len(upstream.requests)
    lines = ["POST /v1/chat/completions HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    assert status_of(raw_request(port, [*lines, "Content-Length: 2", "Content-Length: 20"], b"{}")) == 400
    assert status_of(raw_request(port, [*lines, "Content-Length: " + "9" * 5000], b"{}")) == 413
    assert len(upstream.requests) == asked


# -- nosniff on every response --------------------------------------------------------------


def test_every_response_says_nosniff(port):  # noqa: F811
    answers = [ask(port, "GET", path, headers=PAGE) for path in ("/index.html", "/nowhere", "/v1/models", "/v1/nowhere", "/%00")]
    answers += [ask(port, "GET", "/index.html", headers={"Range": "bytes=0-3"}), ask(port, "POST", "/v1/chat/completions", say(401, ["{}"]))]
    assert sorted({a[0] for a in answers}) == [200, 206, 400, 401, 404]
    for status, headers, _, _ in answers:
        assert headers.get("x-content-type-options") == "nosniff", status
