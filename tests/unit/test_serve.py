"""aerix.serve (and build/serve.py over it): only files under its root, never a folder listing, a clean 4xx for a malformed
path, and the Content-Security-Policy on every response (issue 17, items 11 and 19)."""

from __future__ import annotations

import base64
import hashlib
import http.client
import re
import sys
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("the site server runs on CPython: Pyodide has no sockets for it, nor build/", allow_module_level=True)

from build import serve as server

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "web" / "index.html", REPO / "web" / "embed.html", REPO / "bench" / "boot.html"]
INLINE = "\n  window.ran = true;\n"
PAGE = f'<!doctype html><head><meta charset="utf-8"><script src="./app.js"></script></head><script type="module">{INLINE}</script>'


class Site:
    """The server over a temporary root, asked with http.client (a raw path goes out as written)."""

    def __init__(self, root: Path) -> None:
        self.httpd, self.thread = server.serve(root, 0)
        self.port = self.httpd.server_address[1]

    def get(self, path: str, headers: dict[str, str] | None = None) -> tuple[http.client.HTTPResponse, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest("GET", path, skip_accept_encoding=True)
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            conn.endheaders()
            response = conn.getresponse()
            return response, response.read()
        finally:
            conn.close()

    def status(self, path: str) -> int:
        return self.get(path)[0].status

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A root with a file, a page with an inline script, a folder with an index.html and one
    without, a symlink within the root and two leading out of it."""
    top = tmp_path_factory.mktemp("serve")
    root, outside = top / "site", top / "outside"
    (root / "docs").mkdir(parents=True)
    (root / "empty").mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "a.txt").write_text("hello")
    (root / "page.html").write_text(PAGE)
    (root / "docs" / "index.html").write_text("<!doctype html><title>docs</title>")
    (root / "alias.txt").symlink_to(root / "a.txt")
    (root / "secret.txt").symlink_to(outside / "secret.txt")
    (root / "out").symlink_to(outside)
    return root


@pytest.fixture(scope="module")
def site(root):
    site = Site(root)
    yield site
    site.close()


# -- item 19: what the server answers ------------------------------------------------------------


@pytest.mark.parametrize("path", ["/secret.txt", "/out/secret.txt", "/out/", "/../outside/secret.txt", "/%2e%2e/outside/secret.txt", "/docs/..%2f..%2foutside/secret.txt"])
def test_nothing_outside_the_root_is_served_not_even_through_a_symlink(site, path):
    response, body = site.get(path)
    assert response.status == 404 and b"secret" not in body


def test_a_symlink_that_stays_in_the_root_is_followed(site):
    assert site.get("/alias.txt")[1] == b"hello"


def test_a_symlinked_root_is_served(root):
    (root.parent / "link").symlink_to(root)
    site = Site(root.parent / "link")
    try:
        assert site.get("/a.txt")[1] == b"hello" and site.status("/secret.txt") == 404
    finally:
        site.close()


def test_a_folder_is_never_listed(site):
    for path in ("/", "/empty/", "/empty"):  # the root has no index.html either
        response, body = site.get(path)
        assert response.status == 404, path
        assert b"a.txt" not in body and b"Directory listing" not in body, path


def test_a_folder_with_an_index_html_serves_it(site):
    response, body = site.get("/docs/")
    assert response.status == 200 and body == b"<!doctype html><title>docs</title>"
    response, _ = site.get("/docs")
    assert response.status == 301 and response.getheader("Location") == "/docs/"


@pytest.mark.parametrize("path", ["/%00", "/a.txt%00", "/a.txt%00.html", "/docs/%00/", "/%ff", "/%c3%28.txt", "a.txt"])
def test_a_malformed_path_gets_a_400_and_no_traceback(site, path, capsys):
    assert site.status(path) == 400
    assert site.status("/a.txt") == 200  # and the server goes on
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception" not in err, err


def test_a_file_asked_as_a_folder_is_a_404(site):
    assert site.status("/a.txt/") == 404


def test_a_range_is_answered_206(site):
    response, body = site.get("/a.txt", {"Range": "bytes=1-3"})
    assert (response.status, body, response.getheader("Content-Range")) == (206, b"ell", "bytes 1-3/5")


# -- item 11: the Content-Security-Policy --------------------------------------------------------


def directives(policy: str) -> dict[str, list[str]]:
    parts = [d.split() for d in policy.split(";")]
    return {name: sources for name, *sources in parts}


def test_every_response_carries_the_csp_and_cross_origin_isolation(site):
    for path in ("/a.txt", "/page.html", "/docs/", "/nowhere", "/%00"):
        response, _ = site.get(path)
        assert response.getheader("Content-Security-Policy"), path
        for name, value in server.HEADERS.items():
            assert response.getheader(name) == value, (path, name)


def test_an_inline_script_is_allowed_by_its_hash_and_nothing_else_is(site):
    digest = base64.b64encode(hashlib.sha256(INLINE.encode()).digest()).decode()
    page = directives(site.get("/page.html")[0].getheader("Content-Security-Policy"))
    assert page["script-src"] == ["'self'", "'wasm-unsafe-eval'", f"'sha256-{digest}'"]
    other = directives(site.get("/a.txt")[0].getheader("Content-Security-Policy"))
    assert other["script-src"] == ["'self'", "'wasm-unsafe-eval'"]
    # the browser hashes the text after HTML's newline normalisation
    assert server.policy(PAGE.replace("\n", "\r\n").encode()) == server.policy(PAGE.encode())


def test_the_policy_allows_the_pages_own_origin_and_loopback_servers_only():
    policy = directives(server.policy())
    assert policy["default-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'", "http://127.0.0.1:*", "http://localhost:*"]
    assert policy["frame-ancestors"] == ["'self'"] and policy["object-src"] == ["'none'"]
    allowed = {"'self'", "'none'", "'wasm-unsafe-eval'", "blob:", "data:", "http://127.0.0.1:*", "http://localhost:*"}
    assert {s for sources in policy.values() for s in sources} <= allowed  # no 'unsafe-eval', no 'unsafe-inline', no CDN


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_each_page_carries_the_policy_in_a_meta_first_thing(page):
    """A copy of the site served by another server keeps the policy (all of it but frame-ancestors,
    which a meta cannot carry). Changed an inline script? Its hash is in the page's meta too."""
    text = page.read_text()
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', text)
    assert meta, f"{page.name} has no CSP meta"
    assert meta.group(1) == server.policy(text.encode(), meta=True)
    assert "frame-ancestors" not in meta.group(1)
    first = re.search(r"<(script|link|style)\b", text)
    assert first is None or meta.start() < first.start(), "the meta must come before what it governs"
