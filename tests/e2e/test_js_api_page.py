"""Python's agent API in the page, both modes (issue 28, point 1; docs/page.md#agents-as-tools-state-runs-one-at-a-time):

(1) `agent.asTool(name, description)` in another agent's `tools`: the boss calls it, the helper
    answers from its own conversation, and its answer is the call's result; an agent reference
    that no `ai.agent()` of this boot made, and an unknown asTool option, are `options` errors;
(2) `agent.state`: `get/set/delete/load/tainted` and `collection(name).list/get/upsert/remove/
    tainted` as promises of plain objects, in memory and in IndexedDB (`durable: true`), read back
    by another agent of the same name; `get` before `load` rejects as in Python; a note the run's
    state tool kept is what `collection("notes").list()` gives;
(3) `concurrencyKey`: of two durable agents' runs with one key, the second is refused `busy` while
    the first executes; `start(p, {concurrencyKey})` and `getRun` show the key; a misspelt option
    is refused;
(4) `engine: {baseUrl, model, retries, backoffS, maxBackoffS}` boots; an unknown engine option
    rejects `boot` with an `options` error naming it;
(5) JS tools with `parallel: true` (issue 31, part 4): two that each wait for the other finish,
    their results in the turn's order.

The generations come from an OpenAI-compatible server of test_state_page.py's kind that answers
from a script (the same calls at every run): the in-page engine's models answer at random or as
trained for the demo's tools only.
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from conftest import open_page
from test_state_page import ScriptedServer, calls, final, turn_by_script



# The first turn by the prompt (the helper's prompt is the task the boss gave it), each later one by
# the tool whose result came last.
FIRST = {
    "Umbrella for Lisbon?": calls("research", {"task": "Weather in Lisbon?"}),
    "Weather in Lisbon?": final("Lisbon is sunny"),
    "Keep a note": calls("state_notes_upsert", {"id": "n1", "text": "buy milk"}),
    "Do the work": calls("work", {}),
    "Ping and pong": json.dumps({"thought": "both", "calls": [{"tool": "ping", "input": {}}, {"tool": "pong", "input": {}}]}),
}
AFTER = {"research": final("It is sunny."), "state_notes_upsert": final("Kept."), "work": final("Worked."), "pong": final("Both.")}


def scripted_turn(body: dict) -> str:
    return turn_by_script(body, FIRST, AFTER)


@pytest.fixture(scope="module")
def scripted():
    server = ScriptedServer(scripted_turn)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def page(browser, site, scripted, mode):
    """One page per mode, booted on the scripted server with the OpenAI path's retry settings."""
    context, page, traffic = open_page(browser, site)
    page.evaluate(
        """async ({ baseUrl, worker }) => {
      const { boot } = await import("/aerix.mjs");
      window.ai = await boot({ engine: { baseUrl, model: "scripted", retries: 0, backoffS: 0.1, maxBackoffS: 1 }, worker });
    }""",
        {"baseUrl": f"{scripted.url}/v1", "worker": mode == "worker"},
    )
    yield page
    context.close()
    elsewhere = {f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in traffic.foreign}
    assert elsewhere <= {scripted.url} and traffic.failed == [], (traffic.foreign, traffic.failed)


ERROR = "(e) => ({ name: e.name, kind: e.kind ?? null, message: e.message })"

AS_TOOL = f"""async () => {{
  const error = {ERROR};
  const helper = window.ai.agent({{ name: "researcher", instructions: "You research." }});
  const boss = window.ai.agent({{ name: "boss", tools: [helper.asTool("research", "Researches a question.")] }});
  const events = [];
  for await (const ev of boss.run("Umbrella for Lisbon?")) if (["call", "result", "final", "end"].includes(ev.type)) events.push(ev);
  let foreign = null;
  try {{
    const other = window.ai.agent({{ tools: [{{ name: "x", description: "y", agent: {{ aerixAgent: "never-made" }} }}] }});
    await other.ready;
  }} catch (e) {{ foreign = error(e); }}
  let badOption = null;
  try {{ helper.asTool("research", "Researches.", {{ effect: true }}); }} catch (e) {{ badOption = error(e); }}
  await helper.ready;
  return {{ events, foreign, badOption, helperMessages: helper.messages.length }};
}}"""


def test_as_tool_runs_one_agent_as_another_agents_tool(page, scripted):
    out = page.evaluate(AS_TOOL)
    events = out["events"]
    assert [(e["type"], e.get("tool")) for e in events] == [("call", "research"), ("result", "research"), ("final", None)], events
    assert events[0]["input"] == {"task": "Weather in Lisbon?"}
    assert events[1]["text"] == "Lisbon is sunny" and events[1]["error"] is False and events[2]["text"] == "It is sunny."
    helper_asked = [b for b in scripted.bodies if b["messages"][-1]["content"] == "Weather in Lisbon?"]
    assert helper_asked and helper_asked[-1]["messages"][0]["content"].startswith("You research."), "the helper answered under its own system message"
    assert out["helperMessages"] == 1, "the sub-run leaves the helper's own conversation as it was"
    assert out["foreign"]["name"] == "AerixError" and out["foreign"]["kind"] == "options" and "no agent 'never-made' here" in out["foreign"]["message"], out
    assert out["badOption"] == {"name": "AerixError", "kind": "options", "message": 'unknown asTool("research") option(s) ["effect"]; known: ["parallel","trust"]'}


STATE = f"""async () => {{
  const error = {ERROR};
  const notes = {{ id: {{ type: "string", required: true }}, text: {{ type: "string", required: true }} }};
  const out = {{}};
  const memory = window.ai.agent({{ name: "mem", state: {{ notes }} }});
  out.memory = [await memory.state.get("theme", "light"), await memory.state.set("theme", {{ dark: true }}) ?? null, await memory.state.get("theme")];
  const durable = window.ai.agent({{ name: "planner", state: {{ notes }}, stateTools: true, durable: true }});
  try {{ await durable.state.get("theme"); }} catch (e) {{ out.notLoaded = error(e); }}
  await durable.state.load();
  out.fresh = await durable.state.get("theme", "none");
  await durable.state.set("theme", "dark");
  const kept = durable.state.collection("notes");
  out.upserted = await kept.upsert({{ id: "n0", text: "call Ana" }});
  out.events = [];
  for await (const ev of durable.run("Keep a note")) out.events.push(ev.type);
  out.listed = await kept.list();
  out.got = await kept.get("n1");
  out.missing = (await kept.get("n9")) ?? "none";
  out.removed = [await kept.remove("n0"), await kept.remove("n0")];
  out.tainted = (await kept.tainted("n1")) ?? "none";
  const again = window.ai.agent({{ name: "planner", state: {{ notes }}, durable: true }});
  await again.state.load();
  out.again = {{ theme: await again.state.get("theme"), notes: await again.state.collection("notes").list() }};
  await durable.state.delete("theme");
  out.deleted = await durable.state.get("theme", "gone");
  try {{ await durable.state.collection("todos").list(); }} catch (e) {{ out.noCollection = error(e); }}
  try {{ await kept.upsert({{ id: "n2" }}); }} catch (e) {{ out.badDoc = error(e); }}
  return out;
}}"""


def test_agent_state_reads_and_writes_as_in_python(page):
    out = page.evaluate(STATE)
    assert out["memory"] == ["light", None, {"dark": True}]
    assert out["notLoaded"]["kind"] == "options" and "is not loaded: await agent.state.load() first" in out["notLoaded"]["message"], out
    assert out["fresh"] == "none"
    assert out["upserted"] == {"id": "n0", "text": "call Ana"}
    assert out["events"][-1] == "final" and "call" in out["events"], out["events"]
    assert out["listed"] == [{"id": "n0", "text": "call Ana"}, {"id": "n1", "text": "buy milk"}]  # in the order first upserted
    assert out["got"] == {"id": "n1", "text": "buy milk"} and out["missing"] == "none"
    assert out["removed"] == [True, False] and out["tainted"] == "none"
    assert out["again"] == {"theme": "dark", "notes": [{"id": "n1", "text": "buy milk"}]}, "another agent of the name reads what IndexedDB keeps"
    assert out["deleted"] == "gone"
    assert out["noCollection"]["kind"] == "options" and "no state collection 'todos'" in out["noCollection"]["message"]
    assert out["badDoc"]["kind"] == "options" and "the document fails the model" in out["badDoc"]["message"]


CONCURRENCY = f"""async () => {{
  const error = {ERROR};
  let open, entered;
  const gate = new Promise((resolve) => (open = resolve));
  const inWork = new Promise((resolve) => (entered = resolve));
  const work = {{ name: "work", description: "Does the work.", input: {{}}, run: async () => (entered(), await gate, "done") }};
  const make = () => window.ai.agent({{ name: "clerk", tools: [work], durable: true, limits: {{ turns: 3 }} }});
  const [a, b, c] = [make(), make(), make()];
  const types = async (agent, prompt, options) => {{
    const seen = [];
    for await (const ev of agent.run(prompt, options)) seen.push(ev.type);
    return seen;
  }};
  const first = types(a, "Do the work", {{ runId: "r1", concurrencyKey: "inbox" }});
  await inWork;  // r1 executes, holding the key
  let busy = null;
  try {{ await types(b, "Do the work", {{ runId: "r2", concurrencyKey: "inbox" }}); }} catch (e) {{ busy = error(e); }}
  open();
  const done = await first;
  const started = await c.start("Do the work", {{ runId: "r3", concurrencyKey: "inbox" }});
  const got = await c.getRun("r3");
  const none = await c.getRun("r-none");
  let typo = null;
  try {{ a.run("x", {{ concurrency_key: "inbox" }}); }} catch (e) {{ typo = error(e); }}
  return {{ busy, done, started: [started.id, started.status, started.concurrencyKey], got: got.concurrencyKey, none, typo }};
}}"""


def test_runs_that_share_a_concurrency_key_execute_one_at_a_time(page):
    out = page.evaluate(CONCURRENCY)
    assert out["busy"]["name"] == "AerixError" and out["busy"]["kind"] == "busy" and "inbox" in out["busy"]["message"], out
    assert out["done"][-1] == "final"
    assert out["started"] == ["r3", "queued", "inbox"] and out["got"] == "inbox" and out["none"] is None
    assert out["typo"]["kind"] == "options" and 'unknown run option(s) ["concurrency_key"]' in out["typo"]["message"]


PARALLEL = """async () => {
  // ping waits for pong and pong for ping: they finish only if they run together
  let pinged, ponged;
  const a = new Promise((resolve) => (pinged = resolve));
  const b = new Promise((resolve) => (ponged = resolve));
  const tools = [
    { name: "ping", description: "Ping.", input: {}, parallel: true, run: async () => (pinged(), await b, "ping done") },
    { name: "pong", description: "Pong.", input: {}, parallel: true, run: async () => (ponged(), await a, "pong done") },
  ];
  const agent = window.ai.agent({ name: "pair", tools });
  const events = [];
  const run = (async () => { for await (const ev of agent.run("Ping and pong")) events.push(ev); })();
  const stuck = new Promise((resolve) => setTimeout(() => resolve("stuck"), 20000));
  const how = await Promise.race([run.then(() => "done"), stuck]);
  return { how, events: events.filter((e) => ["call", "result", "final", "end"].includes(e.type)).map((e) => [e.type, e.tool ?? null, e.text ?? null]) };
}"""


def test_parallel_js_tools_of_one_turn_run_together(page):
    """docs/python.md#parallel-calls: JS tools with `parallel: true` run together, results in the turn's order."""
    out = page.evaluate(PARALLEL)
    assert out["how"] == "done", out
    assert out["events"] == [
        ["call", "ping", None],
        ["result", "ping", "ping done"],
        ["call", "pong", None],
        ["result", "pong", "pong done"],
        ["final", None, "Both."],
    ], out


def test_an_unknown_engine_option_rejects_boot_naming_it(page, scripted, mode):
    error = page.evaluate(
        """async ({ baseUrl, worker }) => {
      const { boot } = await import("/aerix.mjs");
      try { const ai = await boot({ engine: { baseUrl, model: "scripted", nCtx: 2048 }, worker }); ai.terminate?.(); return null; }
      catch (e) { return { name: e.name, kind: e.kind ?? null, message: e.message }; }
    }""",
        {"baseUrl": f"{scripted.url}/v1", "worker": mode == "worker"},
    )
    assert error is not None and error["name"] == "AerixError" and error["kind"] == "options", error
    assert error["message"].startswith("unknown engine option(s) ['nCtx'] for an OpenAI-compatible server (baseUrl); known: ['baseUrl', 'model'"), error
