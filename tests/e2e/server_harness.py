"""A real OpenAI-compatible server for the tests, and a proxy in front of it that records.

- :class:`LlamaServer`: llama.cpp's ``llama-server`` (built by ``python -m build.llama_server``) on a
  generated GGUF model, on a free port of 127.0.0.1, started and stopped by the tests.
- :class:`RecordingProxy`: forwards every request to it unchanged and streams each response
  back chunk by chunk, recording what the server received (the body, parsed) and what it sent;
  when the client goes away mid-stream it closes the upstream connection, as a browser or
  httpx closing its socket would, so the server sees the disconnect.
"""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from build import llama_server
from build.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "build" / "site" / "models"


class LlamaServer:
    """``llama-server`` on one model: one slot (so turn 2 finds turn 1 in its cache), 4096 tokens
    of context, one thread (two threads spin against each other on 2 shared cores: ~4 tokens/s
    instead of ~5,000), metrics on (to count decodes)."""

    def __init__(self, model: Path, log: Path, alias: str = "tiny", extra: tuple[str, ...] = ()) -> None:
        binary = llama_server.find()
        if binary is None:
            raise RuntimeError("llama-server is not built: run `make llama-server` (make test-e2e does)")
        self.binary = binary
        self.alias = alias
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "--alias", alias,
                "-np", "1", "-c", "4096", "-t", "1", "--no-webui", "--metrics", *extra]
        self._log = open(log, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._wait_healthy()

    def _wait_healthy(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"llama-server did not become healthy in {seconds} s:\n{self.log()[-3000:]}")

    def version(self) -> str:
        out = subprocess.run([str(self.binary), "--version"], capture_output=True, text=True, timeout=30)
        return (out.stdout + out.stderr).strip().splitlines()[0]

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def metric(self, name: str) -> float:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as r:
            text = r.read().decode()
        match = re.search(rf"^llamacpp:{name} (\S+)$", text, re.M)
        assert match, f"no metric {name}"
        return float(match.group(1))

    def idle(self, seconds: float = 10) -> bool:
        """Whether the slot stops processing within ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"{self.url}/slots", timeout=5) as r:
                if not any(slot.get("is_processing") for slot in json.load(r)):
                    return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._log.close()


@dataclass
class Exchange:
    """One request through the proxy: what the server received and what it sent back."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    response: bytearray = field(default_factory=bytearray)
    finished: bool = False  # the server's whole body reached the client
    client_left: bool = False  # the client closed its connection before the body ended

    def frames(self) -> list[dict[str, Any]]:
        """The JSON ``data:`` frames of the server's stream."""
        out = []
        for line in self.response.decode(errors="replace").splitlines():
            if line.startswith("data: ") and line[6:].strip() != "[DONE]":
                out.append(json.loads(line[6:]))
        return out

    def finish_reason(self) -> str | None:
        reasons = [c["finish_reason"] for f in self.frames() for c in f.get("choices", []) if c.get("finish_reason")]
        return reasons[-1] if reasons else None

    def content(self) -> str:
        return "".join(c["delta"].get("content") or "" for f in self.frames() for c in f.get("choices", []) if "delta" in c)

    def usage(self) -> dict[str, Any] | None:
        usages = [f["usage"] for f in self.frames() if f.get("usage")]
        return usages[-1] if usages else None


class RecordingProxy:
    def __init__(self, upstream_port: int) -> None:
        self.exchanges: list[Exchange] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.forward()

            def do_POST(self) -> None:
                self.forward()

            def do_OPTIONS(self) -> None:
                self.forward()

            def forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                exchange = Exchange(self.command, self.path, dict(self.headers.items()), body)
                with proxy.lock:
                    proxy.exchanges.append(exchange)
                skip = {"host", "connection", "content-length", "accept-encoding", "keep-alive"}
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=300)
                try:
                    upstream.request(self.command, self.path, body=raw or None, headers=headers)
                    response = upstream.getresponse()
                    exchange.status = response.status
                    self.send_response(response.status, response.reason)
                    for k, v in response.getheaders():
                        if k.lower() not in {"transfer-encoding", "connection", "content-length", "keep-alive"}:
                            self.send_header(k, v)
                    self.send_header("Connection", "close")
                    self.close_connection = True
                    if self.command == "OPTIONS" or response.status in (204, 304):
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        exchange.finished = True
                        return
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    while True:
                        data = response.read1(65536)
                        if not data:
                            break
                        exchange.response += data
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                    exchange.finished = True
                except (BrokenPipeError, ConnectionResetError):
                    exchange.client_left = True
                finally:
                    upstream.close()  # the server sees its client go

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, name="recording-proxy", daemon=True)
        self.thread.start()

    def completions(self, since: int = 0) -> list[Exchange]:
        """The ``/chat/completions`` POSTs from exchange ``since`` on."""
        with self.lock:
            return [e for e in self.exchanges[since:] if e.method == "POST" and e.path.endswith("/chat/completions")]

    def mark(self) -> int:
        with self.lock:
            return len(self.exchanges)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
