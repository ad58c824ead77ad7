"""The demo's MCP server (build/demo_mcp.py, PyPI's `mcp` SDK over Streamable HTTP, started here in
a subprocess on a free loopback port, as `make demo` starts it) seen through aerix.mcp_tools, as the
demo page sees it through the proxy: its two tools listed with their nested inputs, and each called
by an Agent (ScriptedModel) with the answers its made-up data gives, a wrong title or branch an
error result the run goes on after."""

from __future__ import annotations

import json
import sys

import pytest
from helpers import calls, collect, final

if sys.platform == "emscripten":
    pytest.skip("a real MCP server needs a subprocess and sockets: Pyodide has neither", allow_module_level=True)
pytest.importorskip("mcp", reason="the demo's MCP server needs PyPI's mcp (pip install -e '.[test]')")

from aerix import Agent, mcp_tools
from aerix.testing import ScriptedModel
from build.demo_mcp import McpServer


@pytest.fixture(scope="module")
def library():
    server = McpServer()
    yield server
    server.stop()


def results(events):
    return [(e.text, e.error) for e in events if e.type == "result"]


async def test_the_library_lists_two_tools_with_nested_input(library):
    tools = {t.name: t for t in await mcp_tools(library.url)}
    assert list(tools) == ["lookup_book", "library_hours"]
    assert tools["lookup_book"].description.startswith("Find a book in the town library's catalogue")
    book = tools["lookup_book"].input_schema()
    assert book["required"] == ["book"]
    inner = book["properties"]["book"]  # the server's Book model, its $ref inlined
    assert inner["required"] == ["title"] and set(inner["properties"]) == {"title", "author"}
    hours = tools["library_hours"].input_schema()
    assert hours["required"] == ["branch"] and set(hours["properties"]) == {"branch", "day"}
    assert all(t.trust["taint"] is True for t in tools.values())  # results come from outside


async def test_an_agent_looks_up_a_book_and_the_hours_and_reads_made_up_but_fixed_answers(library):
    script = [
        calls(("lookup_book", {"book": {"title": "invisible  CITIES", "author": "Calvino"}})),
        calls(("library_hours", {"branch": "Harbour", "day": "sunday"}), ("library_hours", {"branch": "hillside"})),
        calls(("lookup_book", {"book": {"title": "Dune"}}), ("library_hours", {"branch": "moon"})),
        final("Shelf F CAL; the harbour branch is closed on Sundays."),
    ]
    agent = Agent(model=ScriptedModel(script), tools=await mcp_tools(library.url))
    events = await collect(agent.run("Is Invisible Cities in, and when is the harbour branch open on Sunday?"))
    got = results(events)
    assert json.loads(got[0][0]) == {"title": "invisible  CITIES", "author": "Italo Calvino", "shelf": "F CAL", "copies": 2, "in": 1}
    assert got[1] == ("Harbour, Sunday closed", False)
    assert got[2][0].startswith("Hillside: Monday closed; Tuesday 13:00-19:00;") and got[2][0].endswith("Sunday closed")
    assert got[3][1] and "no book 'Dune'" in got[3][0] and "Invisible Cities" in got[3][0]
    assert got[4][1] and "no branch 'moon'" in got[4][0] and "central, harbour, hillside" in got[4][0]
    assert events[-1].type == "final"


async def test_a_book_is_checked_against_its_author(library):
    agent = Agent(model=ScriptedModel([calls(("lookup_book", {"book": {"title": "The Book of Tea", "author": "Le Guin"}})), final("no")]), tools=await mcp_tools(library.url))
    [(text, error)] = results(await collect(agent.run("The Book of Tea by Le Guin?")))
    assert error and "no book 'The Book of Tea' by Le Guin" in text


async def test_through_the_proxy_make_demo_sets_up_the_page_lists_it_at_mcp_library(library, tmp_path):
    from aerix.serve import serve
    from build.demo import MCP_NAME

    (tmp_path / "index.html").write_text("<!doctype html>")
    site, _ = serve(tmp_path, 0, mcp={MCP_NAME: library.url})
    try:
        tools = await mcp_tools(f"http://127.0.0.1:{site.server_address[1]}/mcp/library")
        agent = Agent(model=ScriptedModel([calls(("library_hours", {"branch": "central", "day": "Saturday"})), final("10 to 5")]), tools=tools)
        assert results(await collect(agent.run("Central on Saturday?"))) == [("Central, Saturday 10:00-17:00", False)]
    finally:
        site.shutdown()
        site.server_close()
