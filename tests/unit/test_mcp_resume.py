"""A broken MCP event stream resumed, and a session ended, against the real server of
test_mcp.py (tests/unit/mcp_server.py, PyPI's `mcp` SDK): in `resume` mode its events have ids
(the SDK's EventStore) and a `retry:` of RETRY_MS; in `sse` mode they have none. Between aerix and
the server, `Cut`, a TCP proxy in the test, cuts the connection of the POST that calls `steps`
just after the event carrying its progress notification (both ways, so the server sees it go
too), then lets `steps` answer; it records every request (method, headers, time)."""

from __future__ import annotations

import asyncio
import re
import time

import pytest
from helpers import calls, collect, final

from test_mcp import Server  # (skips where test_mcp skips: no subprocess, no mcp)

from aerix import Agent, mcp_tools
from aerix.testing import ScriptedModel

RETRY_S = 1.2  # mcp_server.py's RETRY_MS: more than aerix's own wait (1 s) when the server gives none
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@pytest.fixture(scope="module", params=["resume", "sse"])
def server(request, tmp_path_factory):
    running = Server(request.param, tmp_path_factory.mktemp(f"mcp-{request.param}"))
    running.mode = request.param
    yield running
    running.stop()


class Cut:
    """A TCP proxy to ``server``: ``url`` is the server's endpoint through it."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.requests: list[tuple[str, dict[str, str], float]] = []  # (method, headers in lower case, when)
        self.cut_at: float | None = None
        self.progress_id: str | None = None  # the SSE id of the event cut after
        self.connections: set[asyncio.Task] = set()

    async def __aenter__(self) -> Cut:
        (self.server.marks / "steps.go").unlink(missing_ok=True)
        self.listener = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.listener.sockets[0].getsockname()[1]}/mcp"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.listener.close()
        for task in self.connections:
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        await self.listener.wait_closed()

    def methods(self) -> list[str]:
        return [method for method, _, _ in self.requests]

    async def _connection(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self.connections.add(task)
        task.add_done_callback(self.connections.discard)
        up_r, up_w = await asyncio.open_connection("127.0.0.1", self.server.port)
        request = bytearray()

        async def forward_request() -> None:
            try:
                while chunk := await client_r.read(1 << 16):
                    if b"\r\n\r\n" not in request and b"\r\n\r\n" in request + chunk:
                        self._record(bytes(request + chunk))
                    request.extend(chunk)
                    up_w.write(chunk)
                    await up_w.drain()
            except OSError:
                pass
            finally:
                up_w.close()

        async def forward_answer() -> None:
            held = bytearray()  # the answer of the POST to cut, until its progress event is whole
            try:
                while chunk := await up_r.read(1 << 16):
                    if not (request.startswith(b"POST") and b'"name": "steps"' in request):
                        client_w.write(chunk)
                        await client_w.drain()
                        continue
                    held.extend(chunk)
                    at = held.find(b"notifications/progress")
                    end = _EVENT_END.search(held, at) if at >= 0 else None
                    if end is not None:
                        client_w.write(held[: end.end()])  # the event whole; then the connection goes, mid-body
                        await client_w.drain()
                        self.cut_at = time.monotonic()
                        ids = re.findall(rb"^id: ?(\S+)", held[: end.end()], re.M)
                        self.progress_id = ids[-1].decode() if ids else None
                        (self.server.marks / "steps.go").write_text("")
                        return
            except OSError:
                pass
            finally:
                client_w.close()
                up_w.close()

        await asyncio.gather(forward_request(), forward_answer())

    def _record(self, head: bytes) -> None:
        lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        self.requests.append((lines[0].split(" ")[0], {k.lower(): v for k, v in headers.items()}, time.monotonic()))


def results(events):
    return [e.text for e in events if e.type == "result"]


async def run_steps(url: str, headers: dict[str, str] | None = None) -> list[str]:
    agent = Agent(model=ScriptedModel([calls(("steps", {})), final("done")]), tools=await mcp_tools(url, headers=headers, tools=["steps"], timeout_s=20))
    events = await collect(agent.run("go"))
    assert events[-1].type == "final"
    return results(events)


async def test_a_stream_cut_after_its_progress_is_resumed_with_last_event_id_after_the_servers_retry(server):
    async with Cut(server) as cut:
        (text,) = await run_steps(cut.url)
    posts = [(h, t) for m, h, t in cut.requests if m == "POST"]
    gets = [(h, t) for m, h, t in cut.requests if m == "GET"]
    assert cut.cut_at is not None
    if server.mode == "sse":  # no event ids: nothing to resume from, the call fails as it names
        assert text.startswith(f"error: MCP server {cut.url}: tools/call: the answer broke off: RemoteProtocolError") and gets == []
        return
    assert text == "all steps done"
    (headers, when), *_ = gets
    assert cut.progress_id and headers["last-event-id"] == cut.progress_id
    assert headers["mcp-session-id"] == posts[-1][0]["mcp-session-id"] and headers["accept"] == "text/event-stream"
    assert when - cut.cut_at >= RETRY_S  # the server's retry: honoured (aerix's own wait is 1 s)


async def test_through_the_proxy_a_cut_upstream_stream_is_resumed_the_same_way(server, tmp_path):
    # the page's path: aerix serve's /mcp/NAME (the page's fetch would be its client); the proxy
    # ends the page's stream cleanly when the upstream breaks, and forwards the GET and
    # Last-Event-ID. It takes a GET from a same-origin page only: the browser sends Sec-Fetch-Site.
    from aerix.serve import serve

    async with Cut(server) as cut:
        site, thread = serve(tmp_path, 0, mcp={"demo": cut.url})
        url = f"http://127.0.0.1:{site.server_address[1]}/mcp/demo"
        try:
            (text,) = await run_steps(url, {"Sec-Fetch-Site": "same-origin"})
        finally:
            site.shutdown()
            site.server_close()
            thread.join(5)
    if server.mode == "sse":
        assert text == f"error: MCP server {url}: tools/call: the server ended its event stream before answering" and "GET" not in cut.methods()
        return
    assert text == "all steps done"
    assert cut.progress_id and [h["last-event-id"] for m, h, _ in cut.requests if m == "GET"] == [cut.progress_id]


async def test_a_stream_the_server_closes_before_answering_is_polled_again(server):
    # the spec's polling: the server closes the stream after an event id, the client comes back with GET
    tools = await mcp_tools(server.url, tools=["polled"], timeout_s=20)
    events = await collect(Agent(model=ScriptedModel([calls(("polled", {})), final("done")]), tools=tools).run("go"))
    assert results(events) == ["polled done"]  # in sse mode the server has no stream to close: answered at once
    await tools.aclose()


async def test_aclose_ends_the_session_on_the_server_once(server):
    import httpx

    async with Cut(server) as cut:
        async with await mcp_tools(cut.url, tools=["add"]) as tools:
            session_id = tools.session.session_id
        await tools.aclose()
        events = await collect(Agent(model=ScriptedModel([calls(("add", {"a": 1, "b": 2})), final("no")]), tools=tools).run("add"))
    deletes = [h for m, h, _ in cut.requests if m == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["mcp-session-id"] == session_id
    assert results(events) == [f"error: MCP server {cut.url}: tools/call: the session was ended (aclose)"]
    async with httpx.AsyncClient() as client:  # the server has forgotten it
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        answer = await client.post(server.url, json=body, headers={"mcp-session-id": session_id, "accept": "application/json, text/event-stream"})
    assert answer.status_code == 404
