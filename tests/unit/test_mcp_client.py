"""aerix.mcp and aerix.mcp_client over MockTransport, no server: what a real one rarely does on
demand (a JSON-RPC error, a forgotten session, pages of tools, a protocol version aerix does not
speak, a request of its own on the stream, a resumption refused or fruitless, the session's end)
and the pure parts (names, schemas, result values,
the options refused). Runs on CPython and inside Pyodide."""

from __future__ import annotations

import json
import sys

import pytest

from aerix import AerixError, mcp_tools
from aerix.engines.openai.transports import MockTransport, Request, Response, replay
from aerix.mcp import McpToolError, _schema, result_value, tool_name
from aerix.mcp_client import PROTOCOL_VERSION, RESUME_ATTEMPTS, McpFailure, McpSession

URL = "http://mcp.test/mcp?key=s3cret"
ADD = {"name": "add", "description": "Add.", "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}


def answer(id, result=None, error=None, *, stream=False, session=None, before=()):
    message = {"jsonrpc": "2.0", "id": id, **({"error": error} if error else {"result": result})}
    headers = {"mcp-session-id": session} if session else {}
    if stream:
        frames = "".join(f"event: message\ndata: {json.dumps(m)}\n\n" for m in [*before, message])
        return replay(frames, headers=headers, chunk=7)
    return replay(json.dumps(message), content_type="application/json", headers=headers)


class Fake:
    """A scripted server: `methods` maps a method to a function (params, request) -> Response."""

    def __init__(self, **methods):
        self.methods = {"initialize": lambda p, r, id: answer(id, {"protocolVersion": PROTOCOL_VERSION, "capabilities": {"tools": {}}, "serverInfo": {"name": "fake"}}, session="s1"), **methods}
        self.seen: list[tuple[str, dict]] = []
        self.transport = MockTransport(self.handle)

    def handle(self, request: Request) -> Response:
        if request.method != "POST":  # GET (a resumption), DELETE (the session's end)
            self.seen.append((request.method, dict(request.headers)))
            return self.methods[request.method](request)
        body = request.json()
        self.seen.append((body.get("method", "reply"), dict(request.headers)))
        if "id" not in body or "method" not in body:
            return Response(202)
        return self.methods[body["method"]](body.get("params"), request, body["id"])


async def test_a_session_id_and_the_agreed_version_go_with_every_request_after_initialize():
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [ADD]}, stream=True)})
    tools = await mcp_tools(URL, headers={"Authorization": "Bearer k"}, transport=fake.transport)
    assert [t.name for t in tools] == ["add"]
    assert [m for m, _ in fake.seen] == ["initialize", "notifications/initialized", "tools/list"]
    assert "mcp-session-id" not in fake.seen[0][1] and fake.seen[0][1]["accept"] == "application/json, text/event-stream"
    for _, headers in fake.seen[1:]:
        assert headers["mcp-session-id"] == "s1" and headers["mcp-protocol-version"] == PROTOCOL_VERSION
    assert all(h["Authorization"] == "Bearer k" for _, h in fake.seen)


async def test_tools_are_listed_page_after_page():
    pages = {None: ({"tools": [ADD], "nextCursor": "p2"}), "p2": {"tools": [{**ADD, "name": "sub"}]}}
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, pages[(p or {}).get("cursor")])})
    assert [t.name for t in await mcp_tools(URL, transport=fake.transport)] == ["add", "sub"]


async def test_a_json_rpc_error_while_listing_is_an_engine_error_naming_it_and_hiding_the_key():
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, error={"code": -32601, "message": "Method not found"})})
    with pytest.raises(AerixError) as e:
        await mcp_tools(URL, transport=fake.transport)
    assert e.value.kind == "engine"
    assert e.value.message == "MCP server http://mcp.test/mcp?key=[redacted]: tools/list: JSON-RPC error -32601: Method not found"


async def test_a_forgotten_session_starts_again_once():
    lists = []

    def tools_list(p, request, id):
        lists.append(request.headers["mcp-session-id"])
        if len(lists) == 1:
            return replay('{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}', status=404, content_type="application/json")
        return answer(id, {"tools": [ADD]})

    fake = Fake(**{"tools/list": tools_list})
    assert len(await mcp_tools(URL, transport=fake.transport)) == 1
    assert [m for m, _ in fake.seen].count("initialize") == 2 and len(lists) == 2


async def test_a_protocol_version_aerix_does_not_speak_is_refused():
    fake = Fake(initialize=lambda p, r, id: answer(id, {"protocolVersion": "2099-01-01", "capabilities": {}}))
    with pytest.raises(AerixError) as e:
        await mcp_tools(URL, transport=fake.transport)
    assert e.value.kind == "engine" and "'2099-01-01'" in e.value.message


async def test_the_servers_ping_on_the_stream_is_answered_and_its_notifications_skipped():
    ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
    progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    fake = Fake(**{"tools/call": lambda p, r, id: answer(id, {"content": [{"type": "text", "text": "2"}]}, stream=True, before=[progress, ping])})
    session = McpSession(URL, transport=fake.transport)
    assert await session.request("tools/call", {"name": "add", "arguments": {"a": 1}}) == {"content": [{"type": "text", "text": "2"}]}
    replies = [json.loads(r.body) for r in fake.transport.requests if "method" not in json.loads(r.body)]
    assert replies == [{"jsonrpc": "2.0", "id": "srv-1", "result": {}}]


async def test_a_stream_that_ends_without_the_answer_and_an_http_error_are_failures():
    fake = Fake(**{"tools/list": lambda p, r, id: replay("event: message\ndata: {}\n\n"), "tools/call": lambda p, r, id: replay("no", status=401, content_type="text/plain")})
    session = McpSession("http://mcp.test/mcp", transport=fake.transport)
    with pytest.raises(McpFailure, match="ended its event stream before answering"):
        await session.request("tools/list", {})
    with pytest.raises(McpFailure, match=r"tools/call: 401 Unauthorized: no \(check the headers"):
        await session.request("tools/call", {})


async def test_a_request_past_its_timeout_fails_naming_it():
    fake = Fake(**{"tools/list": lambda p, r, id: replay("", hang=True)})
    with pytest.raises(AerixError, match=r"tools/list got no answer within 0.2 s"):
        await mcp_tools("http://mcp.test/mcp", transport=fake.transport, timeout_s=0.2)


# -- a broken stream resumed (GET with Last-Event-ID), the session ended (DELETE) -------------

PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}}


def broken(p, r, id):
    """A call's stream: a priming event (an id, retry: 10 ms), the progress (id e2), then the connection breaks."""
    frames = f"id: e1\nretry: 10\ndata:\n\nid: e2\nevent: message\ndata: {json.dumps(PROGRESS)}\n\n"
    return replay(frames, chunk=9, fail=ConnectionResetError("reset by peer"))


async def test_a_broken_stream_is_resumed_with_get_and_the_last_event_id():
    def get(request):
        return replay(f"id: e3\nevent: message\ndata: {json.dumps({'jsonrpc': '2.0', 'id': 2, 'result': {'content': []}})}\n\n")

    fake = Fake(**{"tools/call": broken, "GET": get})
    session = McpSession(URL, transport=fake.transport)
    assert await session.request("tools/call", {"name": "steps", "arguments": {}}) == {"content": []}
    method, headers = fake.seen[-1]
    assert method == "GET" and headers["last-event-id"] == "e2" and headers["accept"] == "text/event-stream"
    assert headers["mcp-session-id"] == "s1" and headers["mcp-protocol-version"] == PROTOCOL_VERSION


async def test_a_broken_stream_without_event_ids_fails_as_it_did_without_a_get():
    fake = Fake(**{"tools/call": lambda p, r, id: replay(f"event: message\ndata: {json.dumps(PROGRESS)}\n\n", fail=ConnectionResetError("reset by peer"))})
    with pytest.raises(McpFailure, match=r"^MCP server http://mcp.test/mcp\?key=\[redacted\]: tools/call: the answer broke off: ConnectionResetError: reset by peer$"):
        await McpSession(URL, transport=fake.transport).request("tools/call", {})
    assert "GET" not in [m for m, _ in fake.seen]


async def test_a_resumption_the_server_refuses_fails_at_once_naming_its_answer():
    fake = Fake(**{"tools/call": broken, "GET": lambda r: replay("", status=405, content_type="text/plain")})
    with pytest.raises(McpFailure, match=r"tools/call: the stream broke before the answer; reconnecting with Last-Event-ID 'e2': 405 Method Not Allowed$"):
        await McpSession(URL, transport=fake.transport).request("tools/call", {})
    assert [m for m, _ in fake.seen].count("GET") == 1


async def test_reconnections_that_bring_no_message_are_given_up_after_a_few():
    gets = []

    def get(request):
        gets.append(request.headers["last-event-id"])
        return replay(f"id: p{len(gets)}\ndata:\n\n")  # a priming event only, then the end

    fake = Fake(**{"tools/call": broken, "GET": get})
    with pytest.raises(McpFailure, match=rf"tools/call: the answer broke off: ConnectionResetError: reset by peer; {RESUME_ATTEMPTS} reconnections with Last-Event-ID brought nothing more \(the last: the server ended its event stream before answering\)$"):
        await McpSession(URL, transport=fake.transport).request("tools/call", {})
    assert gets == ["e2", "p1", "p2"]  # RESUME_ATTEMPTS of them, each from the last id the server gave


async def test_aclose_ends_the_session_with_one_delete_and_later_calls_fail():
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [ADD]}), "DELETE": lambda r: Response(405)})
    async with await mcp_tools(URL, transport=fake.transport) as tools:
        assert [t.name for t in tools] == ["add"] and tools.session.session_id == "s1"
    await tools.aclose()
    deletes = [h for m, h in fake.seen if m == "DELETE"]
    assert len(deletes) == 1 and deletes[0]["mcp-session-id"] == "s1" and deletes[0]["mcp-protocol-version"] == PROTOCOL_VERSION
    with pytest.raises(McpFailure, match=r"tools/call: the session was ended \(aclose\)$"):
        await tools.session.request("tools/call", {"name": "add", "arguments": {"a": 1}})
    assert [m for m, _ in fake.seen].count("initialize") == 1  # not started again


async def test_a_listing_that_fails_ends_the_session_it_started():
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [ADD]}), "DELETE": lambda r: Response(200)})
    with pytest.raises(AerixError, match="offers no tool named 'sub'"):
        await mcp_tools(URL, transport=fake.transport, tools=["sub"])
    assert [m for m, _ in fake.seen][-1] == "DELETE"


# -- names, schemas, results, options -------------------------------------------------------


def test_mcp_names_become_aerix_names():
    assert tool_name("", "getWeatherNow") == "get_weather_now"
    assert tool_name("gh_", "repos.list-issues") == "gh_repos_list_issues"
    with pytest.raises(AerixError, match="give a prefix="):
        tool_name("", "2fa")
    assert tool_name("t_", "2fa") == "t_2fa"


async def test_two_mcp_tools_of_one_aerix_name_are_refused_when_listed():
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [{**ADD, "name": "get-x"}, {**ADD, "name": "get_x"}]})})
    with pytest.raises(AerixError) as e:
        await mcp_tools(URL, transport=fake.transport)
    assert e.value.kind == "options" and "'get-x' and 'get_x' are both named 'get_x'" in e.value.message


async def test_a_schema_aerix_cannot_take_names_the_tool():
    bad = {**ADD, "inputSchema": {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}]}}}}
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [bad]})})
    with pytest.raises(AerixError) as e:
        await mcp_tools(URL, transport=fake.transport)
    assert e.value.kind == "options" and "tool 'add'" in e.value.message and "leave it out with tools=" in e.value.message


def test_annotation_keywords_are_dropped_and_draft7_definitions_read():
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
              "properties": {"format": {"type": "string", "format": "uri"}, "p": {"$ref": "#/definitions/P"}},
              "definitions": {"P": {"type": "object", "properties": {"x": {"type": "number", "readOnly": True}}}}}
    assert _schema(schema) == {"type": "object", "additionalProperties": False,
                               "properties": {"format": {"type": "string"}, "p": {"$ref": "#/$defs/P"}},
                               "$defs": {"P": {"type": "object", "properties": {"x": {"type": "number"}}}}}
    assert _schema({}) == {"type": "object"}


def test_a_results_content_becomes_its_value():
    assert result_value({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "structuredContent": {"x": 1}}) == "a\nb"
    assert result_value({"content": [], "structuredContent": {"x": 1}}) == {"x": 1}
    blocks = [{"type": "image", "data": "AAAA", "mimeType": "image/png"}, {"type": "resource", "resource": {"uri": "file:///a", "text": "hello"}},
              {"type": "resource_link", "name": "b", "uri": "file:///b"}]
    assert result_value({"content": blocks}) == "[image image/png, 3 bytes]\nhello\n[link b: file:///b]"
    with pytest.raises(McpToolError, match="^bad city$"):
        result_value({"content": [{"type": "text", "text": "bad city"}], "isError": True})


@pytest.mark.parametrize(("kwargs", "named"), [
    ({"url": "ftp://x"}, "url must be"), pytest.param({"url": "/mcp/docs"}, "url must be", marks=pytest.mark.skipif(sys.platform == "emscripten", reason="in the page a path on its origin is a URL")), ({"headers": {"a": 1}}, "headers"),
    ({"timeout_s": 0}, "timeout_s"), ({"prefix": "Bad-"}, "prefix"), ({"tools": "add"}, "tools must be"), ({"transport": object()}, "transport"),
    ({"trust": {"taint": "yes"}}, "trust"),
])
async def test_bad_options_are_refused_naming_them(kwargs, named):
    fake = Fake(**{"tools/list": lambda p, r, id: answer(id, {"tools": [ADD]})})
    args = {"url": "http://mcp.test/mcp", "transport": fake.transport, **kwargs}
    with pytest.raises(AerixError) as e:
        await mcp_tools(**args)
    assert e.value.kind == "options" and named in e.value.message
