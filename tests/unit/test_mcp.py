"""aerix.mcp_tools against a real MCP server (tests/unit/mcp_server.py, PyPI's `mcp` SDK over
Streamable HTTP, started here in a subprocess on a free loopback port), in both of its answer
modes (a JSON body, an event stream): listing, a call with nested input, a tool that raises, a
tool that hangs past the timeout, the server killed mid-call, a server that is not there, and
the taint of results, with ScriptedModel driving the Agent."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import sys
import time

import pytest
from helpers import calls, collect, final, kinds

if sys.platform == "emscripten":
    pytest.skip("a real MCP server needs a subprocess and sockets: Pyodide has neither", allow_module_level=True)
pytest.importorskip("mcp", reason="the MCP server of these tests needs PyPI's mcp (pip install -e '.[test]')")

from aerix import AerixError, Agent, mcp_tools, tool
from build.demo_mcp import start_listening
from build.ports import free_port
from aerix.stores import MemoryStore
from aerix.testing import ScriptedModel

SERVER = pathlib.Path(__file__).with_name("mcp_server.py")


class Server:
    """The test server in a subprocess: its URL, its marks folder, and how to kill it."""

    def __init__(self, mode: str, marks: pathlib.Path) -> None:
        self.marks = marks
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.process = start_listening([sys.executable, str(SERVER), str(self.port), mode, str(marks)], self.port, "MCP test server")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.process.stderr.close()

    async def mark(self, name: str, within: float = 10.0) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if (self.marks / name).exists():
                return True
            await asyncio.sleep(0.05)
        return False


@pytest.fixture(scope="module", params=["sse", "json"])
def server(request, tmp_path_factory):
    running = Server(request.param, tmp_path_factory.mktemp(f"mcp-{request.param}"))
    yield running
    running.stop()


@pytest.fixture
def own_server(tmp_path):
    running = Server("sse", tmp_path)
    yield running
    running.stop()


def results(events):
    return [e.text for e in events if e.type == "result"]


def sender(sent):
    return tool(name="send_message", description="Send a message.", input={"to": {"type": "string", "required": True}},
                run=lambda i: sent.append(i["to"]) or f"sent to {i['to']}", trust={"guard_when_tainted": True})


# -- listing ----------------------------------------------------------------------------------


async def test_the_servers_tools_are_listed_with_their_descriptions_and_schemas(server):
    tools = {t.name: t for t in await mcp_tools(server.url)}
    assert list(tools) == ["add", "place_order", "get_weather_now", "fail", "hang", "seen_headers", "steps", "polled"]  # getWeatherNow made an aerix name
    assert tools["add"].description == "Add two integers."
    assert tools["get_weather_now"].description == "The weather in a city now."
    order = tools["place_order"].input_schema()
    assert order["required"] == ["items", "ship_to"]
    item = order["properties"]["items"]["items"]  # the server's $ref to its Item definition, inlined
    assert item["required"] == ["sku", "qty"] and item["properties"]["qty"]["minimum"] == 1
    assert item["properties"]["sku"]["description"] == "The article number."
    assert order["properties"]["ship_to"]["properties"]["lines"]["type"] == "array"
    assert order["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert all(t.trust["taint"] is True for t in tools.values())  # results come from outside


async def test_a_prefix_and_a_filter_choose_and_name_the_tools(server):
    tools = await mcp_tools(server.url, prefix="calc_", tools=["add", "fail"])
    assert [t.name for t in tools] == ["calc_add", "calc_fail"]
    tools = await mcp_tools(server.url, tools=lambda t: "order" in t["description"])
    assert [t.name for t in tools] == ["place_order"]
    with pytest.raises(AerixError) as e:
        await mcp_tools(server.url, tools=["add", "sub"])
    assert e.value.kind == "options" and "'sub'" in e.value.message and "add, place_order" in e.value.message


# -- calls ------------------------------------------------------------------------------------


async def test_an_agent_calls_a_tool_with_nested_input_and_reads_its_result(server):
    order = {"items": [{"sku": "A-1", "qty": 2}, {"sku": "B-7", "qty": 1}], "ship_to": {"city": "Lyon", "lines": ["1 rue X"]}}
    script = [calls(("place_order", order)), calls(("place_order", {**order, "items": [{"sku": "A-1", "qty": 0}]})), final("ordered")]
    agent = Agent(model=ScriptedModel(script), tools=await mcp_tools(server.url))
    events = await collect(agent.run("Order two A-1 and a B-7 to Lyon"))
    assert json.loads(results(events)[0]) == {"count": 3, "skus": ["A-1", "B-7"], "city": "Lyon", "note": None}
    assert results(events)[1].startswith("error: invalid input for place_order: items[0].qty:")  # checked here, never sent
    assert events[-1].type == "final" and events[-1].text == "ordered"


async def test_a_tool_that_raises_is_an_error_result_and_the_run_goes_on(server):
    agent = Agent(model=ScriptedModel([calls(("fail", {"reason": "no stock"})), calls(("add", {"a": 2, "b": 3})), final("5")]), tools=await mcp_tools(server.url))
    events = await collect(agent.run("try"))
    assert results(events) == ["error: Error executing tool fail: cannot do it: no stock", "5"]  # the isError content, as the server wrote it
    assert [e.error for e in events if e.type == "result"] == [True, False]
    assert events[-1].type == "final"


async def test_a_call_that_hangs_times_out_and_the_server_is_told(server):
    (server.marks / "hang.cancelled").unlink(missing_ok=True)
    agent = Agent(model=ScriptedModel([calls(("hang", {})), final("gave up")]), tools=await mcp_tools(server.url, timeout_s=1))
    started = time.monotonic()
    events = await collect(agent.run("wait"))
    assert results(events) == ["error: timed out after 1 s"] and events[-1].type == "final"
    assert time.monotonic() - started < 5
    assert await server.mark("hang.cancelled"), "the server's call was not cancelled by notifications/cancelled"


async def test_a_server_killed_mid_call_is_an_error_result(own_server):
    agent = Agent(model=ScriptedModel([calls(("hang", {})), final("it went away")]), tools=await mcp_tools(own_server.url))
    run = asyncio.ensure_future(collect(agent.run("wait")))
    assert await own_server.mark("hang.started")
    own_server.stop()
    events = await asyncio.wait_for(run, 10)
    (text,) = results(events)
    assert text.startswith(f"error: MCP server {own_server.url}: tools/call: ") and "broke off" in text
    assert events[-1].type == "final"
    # and once it is gone, calls say it cannot be reached, and listing raises
    agent = Agent(model=ScriptedModel([calls(("add", {"a": 1, "b": 1})), final("no")]), tools=agent.tools)
    events = await collect(agent.run("add"))
    assert "cannot reach it" in results(events)[0]
    with pytest.raises(AerixError) as e:
        await mcp_tools(own_server.url)
    assert e.value.kind == "engine" and "cannot reach it" in e.value.message


async def test_a_url_that_is_no_mcp_endpoint_is_an_engine_error(server):
    with pytest.raises(AerixError) as e:
        await mcp_tools(server.url.replace("/mcp", "/nope"), timeout_s=5)
    assert e.value.kind == "engine" and "404" in e.value.message


# -- taint ------------------------------------------------------------------------------------


async def test_an_mcp_result_taints_the_run_and_a_guarded_tool_waits_for_approval(server):
    sent = []
    script = [calls(("get_weather_now", {"city": "Oslo"})), calls(("send_message", {"to": "eve@example.org"})), final("done")]
    agent = Agent(model=ScriptedModel(script), tools=[*await mcp_tools(server.url), sender(sent)], store=MemoryStore())
    events = await collect(agent.run("Weather in Oslo?"))
    assert kinds(events)[:4] == ["turn", "call", "taint", "result"]
    taint = next(e for e in events if e.type == "taint")
    assert taint.source == "get_weather_now"
    waiting = events[-1]
    assert waiting.type == "waiting" and "send_message" in waiting.title and sent == []
    more = await collect(agent.approve(waiting.run_id, waiting.approval_id, True))
    assert sent == ["eve@example.org"] and more[-1].type == "final"


async def test_trust_given_replaces_the_taint(server):
    sent = []
    script = [calls(("get_weather_now", {"city": "Oslo"})), calls(("send_message", {"to": "ana@example.org"})), final("done")]
    tools = await mcp_tools(server.url, trust={"taint": False})
    events = await collect(Agent(model=ScriptedModel(script), tools=[*tools, sender(sent)]).run("Weather?"))
    assert "taint" not in kinds(events) and sent == ["ana@example.org"]


# -- through the proxy (python -m aerix serve --proxy-mcp NAME=URL) ---------------------------


@pytest.fixture
def proxy(server, tmp_path):
    from aerix.proxy import Upstream
    from aerix.serve import serve

    site, thread = serve(tmp_path, 0, mcp={"demo": Upstream(server.url, key="sk-mcp-0123456789")})
    yield f"http://127.0.0.1:{site.server_address[1]}"
    site.shutdown()
    site.server_close()
    thread.join(5)


async def test_the_proxy_forwards_an_mcp_server_with_its_key_and_the_agent_uses_it(proxy):
    tools = {t.name: t for t in await mcp_tools(f"{proxy}/mcp/demo", headers={"Cookie": "session=page"})}
    assert "place_order" in tools and tools["add"].description == "Add two integers."
    order = {"items": [{"sku": "A-1", "qty": 2}], "ship_to": {"city": "Lyon", "lines": []}}
    script = [calls(("place_order", order)), calls(("seen_headers", {})), calls(("hang", {})), final("ok")]
    tools = await mcp_tools(f"{proxy}/mcp/demo", headers={"Cookie": "session=page"}, timeout_s=1)
    events = await collect(Agent(model=ScriptedModel(script), tools=tools).run("order"))
    placed, seen, hung = results(events)
    assert json.loads(placed)["count"] == 2  # the session id went both ways: the server takes no call without it
    assert json.loads(seen) == {"authorization": "Bearer [redacted]", "cookie": None}  # added upstream, redacted back; the page's cookie dropped
    assert hung == "error: timed out after 1 s" and events[-1].type == "final"


async def test_the_proxy_refuses_other_names_and_other_sites_pages(proxy):
    with pytest.raises(AerixError) as e:
        await mcp_tools(f"{proxy}/mcp/other")
    assert e.value.kind == "engine" and "404" in e.value.message and "/mcp/demo" in e.value.message
    with pytest.raises(AerixError) as e:
        await mcp_tools(f"{proxy}/mcp/demo", headers={"Origin": "http://evil.example"})
    assert e.value.kind == "engine" and "403" in e.value.message and "another origin" in e.value.message


def test_proxy_mcp_options_are_read_with_their_keys_and_bad_ones_refused():
    from aerix.proxy_mcp import parse

    read = parse(["docs=http://127.0.0.1:9/mcp", "web-search=https://mcp.example/mcp"], {"AERIX_MCP_WEB_SEARCH_KEY": "k-1"})
    assert {n: (u.url, u.key) for n, u in read.items()} == {"docs": ("http://127.0.0.1:9/mcp", None), "web-search": ("https://mcp.example/mcp", "k-1")}
    for bad, said in [(["docs"], "NAME=URL"), (["Docs=http://x/mcp"], "lower-case"), (["a=ftp://x"], "http(s) URL"), (["a=http://x/mcp?key=1"], "no user, query"), (["a=http://x", "a=http://y"], "twice")]:
        with pytest.raises(AerixError, match=re.escape(said)):
            parse(bad, {})


def test_the_command_line_takes_proxy_mcp(tmp_path, capsys):
    from aerix.cli import main as cli_main
    from aerix.cli import parser

    args = parser().parse_args(["serve", "--root", str(tmp_path), "--proxy-mcp", "docs=http://127.0.0.1:9/mcp", "--proxy-mcp", "web=http://127.0.0.1:8/mcp"])
    assert args.proxy_mcp == ["docs=http://127.0.0.1:9/mcp", "web=http://127.0.0.1:8/mcp"]
    assert cli_main(["serve", "--root", str(tmp_path), "--proxy-mcp", "docs"]) == 2
    assert "--proxy-mcp takes NAME=URL" in capsys.readouterr().err
