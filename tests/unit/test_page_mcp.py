"""JavaScript's ``ai.mcpTools(url, options)`` on its Python side (aerix.page_mcp), on CPython
against the real MCP server of test_mcp (tests/unit/mcp_server.py, PyPI's `mcp` SDK): the tools
listed as plain data (what crosses to JavaScript and the worker), that data in an agent's
``tools`` of ``create_agent`` (what ``ai.agent({tools})`` calls) running the MCP tools by
reference (nested input, the tool's error, a timeout, taint), renamed, and refused when it is
not what ``mcpTools`` gave; ``close()`` (``mcp_close_js``) ending the listing's session with one
DELETE, seen by ``Cut`` (test_mcp_resume.py's recording TCP proxy) directly and through the
proxy's ``/mcp/NAME``, after which the tools' calls are error results. The JavaScript side is tests/js/mcp-tools.test.mjs; the page, both
modes, tests/e2e/test_mcp_page.py."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import calls, final

if sys.platform == "emscripten":
    pytest.skip("a real MCP server needs a subprocess and sockets: Pyodide has neither", allow_module_level=True)
pytest.importorskip("mcp", reason="the MCP server of these tests needs PyPI's mcp (pip install -e '.[test]')")

from test_mcp import Server
from test_mcp_resume import Cut

from aerix import AerixError
from aerix.page import PageAgent, create_agent
from aerix.page_mcp import mcp_close_js, mcp_tools_js
from aerix.testing import ScriptedModel

listing = mcp_tools_js.__wrapped__  # as JavaScript calls them, less the conversion CPython lacks
close = mcp_close_js.__wrapped__
run = PageAgent.run.__wrapped__


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server("sse", tmp_path_factory.mktemp("mcp-page"))
    yield running
    running.stop()


async def listed(url: str, options: dict) -> list[dict]:
    """The tools of one listing, as ``ai.mcpTools`` gives them (the array, less its close())."""
    return (await listing(url, options))["tools"]


async def views(page: PageAgent, prompt: str) -> list[dict]:
    return [ev async for ev in run(page, prompt)]


def results(events: list[dict]) -> list[str]:
    return [e["text"] for e in events if e["type"] == "result"]


async def test_the_tools_are_listed_as_plain_data_naming_each_by_reference(server):
    got = await listing(server.url, {"prefix": "docs_", "tools": ["add", "getWeatherNow"]})
    assert sorted(got) == ["session", "tools"] and isinstance(got["session"], str) and got["session"]
    docs = got["tools"]
    assert [{k: v for k, v in d.items() if k != "mcp"} for d in docs] == [
        {"name": "docs_add", "description": "Add two integers."},
        {"name": "docs_get_weather_now", "description": "The weather in a city now."},
    ]
    ids = [d["mcp"]["aerixMcp"] for d in docs]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 2
    json.dumps(got)  # plain data: it crosses to JavaScript and the worker as it is
    await close(got["session"])


async def test_an_agent_runs_them_nested_input_an_error_and_taint(server):
    docs = await listed(server.url, {})
    order = {"items": [{"sku": "A-1", "qty": 2}], "ship_to": {"city": "Lyon", "lines": ["1 rue X"]}}
    script = [calls(("place_order", order)), calls(("fail", {"reason": "no stock"})), final("ordered")]
    page = create_agent(ScriptedModel(script), {"tools": docs})
    assert page.agent.tool_named("place_order").input_schema()["required"] == ["items", "ship_to"]  # the server's schema
    events = await views(page, "Order")
    assert json.loads(results(events)[0]) == {"count": 2, "skus": ["A-1"], "city": "Lyon", "note": None}
    assert results(events)[1] == "error: Error executing tool fail: cannot do it: no stock"
    assert [e["source"] for e in events if e["type"] == "taint"] == ["place_order"]  # results come from outside
    assert events[-1]["type"] == "final"


async def test_timeout_s_and_trust_in_javascripts_names(server):
    (server.marks / "hang.cancelled").unlink(missing_ok=True)
    docs = await listed(server.url, {"timeoutS": 1, "tools": ["hang"], "trust": {"taint": False}})
    page = create_agent(ScriptedModel([calls(("hang", {})), final("gave up")]), {"tools": docs})
    events = await views(page, "wait")
    assert results(events) == ["error: timed out after 1 s"] and not [e for e in events if e["type"] == "taint"]
    assert await server.mark("hang.cancelled")
    guarded = await listed(server.url, {"tools": ["add"], "trust": {"taint": True, "guardWhenTainted": True}, "timeoutS": None})
    made = create_agent(ScriptedModel([]), {"tools": guarded}).agent.tool_named("add")
    assert made.trust["guard_when_tainted"] is True and made.timeout_s is None  # timeoutS: null, no limit


async def test_a_description_renamed_in_javascript_is_the_tools_name(server):
    (add,) = await listed(server.url, {"tools": ["add"]})
    page = create_agent(ScriptedModel([calls(("sum", {"a": 2, "b": 3})), final("5")]), {"tools": [{**add, "name": "sum", "description": "Sum two integers."}]})
    assert page.agent.tool_named("sum").description == "Sum two integers."
    assert results(await views(page, "2 + 3?")) == ["5"]
    assert create_agent(ScriptedModel([]), {"tools": [add]}).agent.tool_named("add").description == "Add two integers."  # the kept one unchanged


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"timeout": 5}, "unknown mcpTools option(s) ['timeout']; known: ['headers', 'prefix', 'timeoutS', 'tools', 'trust']"),
        ({"tools": lambda t: True}, "tools must be a list of the MCP tool names to keep (to keep by a rule, filter the array"),
        ({"trust": {"guard": True}}, "unknown trust key(s) ['guard']"),
        ({"tools": ["sub"]}, "offers no tool named 'sub'"),
        ({"prefix": "Docs"}, "prefix must be lower-case letters"),
    ],
)
async def test_bad_options_are_refused_naming_what_is_wrong(server, options, words):
    with pytest.raises(AerixError) as e:
        await listed(server.url, options)
    assert e.value.kind == "options" and words in e.value.message


@pytest.mark.parametrize(
    ("tool", "words"),
    [
        ({"name": "x", "description": "X.", "mcp": {"aerixMcp": "never-listed"}}, "no MCP tool {'aerixMcp': 'never-listed'} here: give an agent what ai.mcpTools() of the same boot() gave"),
        ({"name": "x", "description": "X.", "mcp": "add"}, "no MCP tool 'add' here"),
        ({"name": "x", "description": "X.", "mcp": {"aerixMcp": "any"}, "input": {}}, "is an MCP tool (mcpTools): unknown key(s) ['input']"),
    ],
)
def test_a_tool_that_is_not_what_mcp_tools_gave_is_refused(tool, words):
    with pytest.raises(AerixError) as e:
        create_agent(ScriptedModel([]), {"tools": [tool]})
    assert e.value.kind == "options" and words in e.value.message


async def test_a_bad_name_given_in_javascript_is_refused(server):
    (add,) = await listed(server.url, {"tools": ["add"]})
    with pytest.raises(AerixError) as e:
        create_agent(ScriptedModel([]), {"tools": [{**add, "name": "Add Numbers"}]})
    assert e.value.kind == "options" and "MCP tool 'add': a name must match" in e.value.message


def session_ids(cut: Cut, method: str) -> list[str]:
    return [h["mcp-session-id"] for m, h, _ in cut.requests if m == method and "mcp-session-id" in h]


async def test_close_ends_the_listings_session_with_one_delete_and_its_tools_then_fail(server):
    import httpx

    async with Cut(server) as cut:
        got = await listing(cut.url, {"tools": ["add"]})
        script = [calls(("add", {"a": 1, "b": 2})), final("no")]
        before = create_agent(ScriptedModel(script), {"tools": got["tools"]})  # an agent built while it was open
        (session_id,) = set(session_ids(cut, "POST"))
        assert await close(got["session"]) is None
        await close(got["session"])  # a second close sends nothing
        after = create_agent(ScriptedModel([calls(("sum", {"a": 1, "b": 2})), final("no")]), {"tools": [{**got["tools"][0], "name": "sum"}]})
        ran = [results(await views(before, "add")), results(await views(after, "add"))]
    assert session_ids(cut, "DELETE") == [session_id] and cut.methods()[-1] == "DELETE"  # once; no new session after it
    ended = f"error: MCP server {cut.url}: tools/call: the session was ended (aclose)"
    assert ran == [[ended], [ended]]
    async with httpx.AsyncClient() as client:  # the server has forgotten it
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        answer = await client.post(server.url, json=body, headers={"mcp-session-id": session_id, "accept": "application/json, text/event-stream"})
    assert answer.status_code == 404


async def test_close_through_the_proxy_sends_the_delete_upstream(server, tmp_path):
    # the page's path: /mcp/NAME on its own origin; a browser's DELETE carries Origin and Sec-Fetch-Site
    from aerix.serve import serve

    async with Cut(server) as cut:
        site, thread = serve(tmp_path, 0, mcp={"docs": cut.url})
        url = f"http://127.0.0.1:{site.server_address[1]}/mcp/docs"
        try:
            got = await listing(url, {"tools": ["add"], "headers": {"Sec-Fetch-Site": "same-origin"}})
            await close(got["session"])
            await close(got["session"])
            events = await views(create_agent(ScriptedModel([calls(("add", {"a": 1, "b": 2})), final("no")]), {"tools": got["tools"]}), "add")
        finally:
            site.shutdown()
            site.server_close()
            thread.join(5)
    assert session_ids(cut, "DELETE") == sorted(set(session_ids(cut, "POST")))
    assert len(session_ids(cut, "DELETE")) == 1 and cut.methods()[-1] == "DELETE"
    assert results(events) == [f"error: MCP server {url}: tools/call: the session was ended (aclose)"]


async def test_close_ends_only_its_own_listings_session(server):
    one, two = await listing(server.url, {"tools": ["add"]}), await listing(server.url, {"tools": ["add"]})
    await close(one["session"])
    page = create_agent(ScriptedModel([calls(("add", {"a": 2, "b": 3})), final("5")]), {"tools": two["tools"]})
    assert results(await views(page, "2 + 3?")) == ["5"]
    await close(two["session"])


@pytest.mark.parametrize("session", ["never-listed", None, {"aerixMcp": "x"}])
async def test_close_of_a_session_never_listed_is_refused(session):
    with pytest.raises(AerixError) as e:
        await close(session)
    assert e.value.kind == "options" and f"no MCP session {session!r} here: close what ai.mcpTools() of the same boot() gave" in e.value.message
