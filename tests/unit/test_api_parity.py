"""The same API on both sides (issue 28): the public names of Python's agent API listed against
JavaScript's, so that a gap cannot come back unnoticed.

Python's names are read by introspection: ``Agent``'s public methods, properties and attributes,
its constructor's parameters, ``run``'s and ``start``'s keywords, ``Limits``' fields,
``AgentState`` and ``Collection``'s methods, ``OpenAIModel``'s parameters. JavaScript's are read
from the code, never parsed from source: ``tests/js/api-names.mjs`` imports the facade's modules
(web/runtime.mjs, remote.mjs, worker.mjs, handle.mjs), builds an agent handle of each mode over a
fake of Python's ``PageAgent`` (tests/js/fake-runtime.mjs) and prints its names, and the option
lists the handles check ``run``/``start``/``asTool`` options (and ``ai.mcpTools``') against (an unknown one is refused,
so a list cannot be shorter than what the code takes; tests/js/handle.test.mjs checks each name
reaches Python). The JS agent options and the OpenAI path's engine options are handed on to
Python as given, so their one declaration is Python's: ``page_options.AGENT_OPTIONS`` and
``page.SERVER_OPTIONS`` (which refuse any other name).

A name on one side only must be in an allow-list below, with the reason. JavaScript's names are
Python's in camelCase.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import IN_PYODIDE

from aerix import Agent, Limits, OpenAIModel, mcp_tools
from aerix.agent_state import AgentState, Collection
from aerix.page import SERVER_OPTIONS, _COLLECTION_METHODS, _STATE_METHODS
from aerix.page_mcp import MCP_NAMES
from aerix.page_options import _LIMIT_NAMES, AGENT_OPTIONS
from aerix.testing import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]

# -- what one side has and the other has not, and why ---------------------------------------

PYTHON_ONLY_AGENT = {
    # the configuration an Agent was built with, read back: JavaScript holds the options object it passed
    "tools", "limits", "compaction", "hooks", "generation", "name", "tool_policy", "on_tainted", "channels",
    "model", "instructions", "constrain", "store", "output", "turn_format",
    "artifact_store", "clock", "draining", "tracer",  # the artifacts' store in use, the clock tests give, drain()'s flag, the Tracer made of the `tracer` option
    # Python values with no JavaScript form: ContextKey values (a JS tool closes over its values), Tool objects
    "context", "provide", "tool_named", "tool_names",
    # the turn schema of one invoker's run, for servers that narrow tools per caller; JS reads `schema`
    "schema_for",
    # the page calls it itself when it goes away (runtime.mjs, on pagehide)
    "interrupt",
    # records an approval's answer for a worker process to continue the run (aerix.worker); a page is its own executor: approve
    "answer",
    # handoffs (aerix.handoffs): JS passes `handoffs` and `description` as options and holds them; the
    # agent a conversation was handed to is the last `handoff` event's `target`; the tool map is derived
    "handoffs", "description", "named", "active", "handoff_tools",
}
JS_ONLY_AGENT = {
    "ready",  # worker mode builds the agent in the background; Python's constructor returns it built
    "python",  # the PyProxy of the Python agent (null in worker mode)
    "transcript",  # Python: aerix.conversations.transcript(agent.messages)
    "traces",  # the spans `tracer: {keep: true}` keeps; Python passes a SpanCollector exporter of its own and reads it
}
PYTHON_ONLY_PARAMETERS = {
    "model",  # boot() gives every agent its engine
    "clock",  # a test's clock
    "context",  # ContextKey values: a JS tool closes over its values
}
JS_ONLY_OPTIONS = {
    "durable",  # runs and state in this browser's IndexedDB: the store is made for you
}
PYTHON_ONLY_STATE = {
    "loaded",  # the sync check that the state is loaded: JavaScript's calls are async, `get` rejects instead
    "write", "applied",  # the item-level write and the effect records the state tools use
}
PYTHON_ONLY_COLLECTION = {"put", "drop", "check"}  # the state tools' primitives (effect-marked writes, the model's check)
PYTHON_ONLY_ENGINE = {"transport", "rng", "sleep", "clock"}  # the page's fetch is the transport; the rest are for tests
PYTHON_ONLY_MCP = {"url", "transport"}  # url is mcpTools' first argument; the page's fetch is the transport


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


def snake(name: str) -> str:
    return re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), name)


def keywords(fn) -> set[str]:
    return {n for n in inspect.signature(fn).parameters if n not in ("self", "prompt")}


@pytest.fixture(scope="module")
def js():
    if IN_PYODIDE:
        pytest.skip("Node runs tests/js/api-names.mjs; Pyodide has no subprocess")
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node (the JavaScript side's names come from tests/js/api-names.mjs)")
    done = subprocess.run([node, str(ROOT / "tests/js/api-names.mjs")], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def python_agent_names() -> set[str]:
    members = {n for n in dir(Agent) if not n.startswith("_")}
    attributes = {n for n in vars(Agent(model=ScriptedModel([]))) if not n.startswith("_")}
    return members | attributes


def test_both_modes_give_the_same_handle(js):
    assert js["page"] == js["worker"]
    assert js["state"] == js["workerState"] and js["collection"] == js["workerCollection"]


def test_the_agent_handle_has_every_public_name_of_agent(js):
    python, handle = python_agent_names(), {snake(n) for n in js["page"]}
    assert python - handle - PYTHON_ONLY_AGENT == set(), "a Python Agent name has no JS counterpart: add it to the handle (runtime.mjs and remote.mjs) or to PYTHON_ONLY_AGENT, saying why"
    assert handle - python - {snake(n) for n in JS_ONLY_AGENT} == set(), "a JS handle name has no Python counterpart: add it to Agent or to JS_ONLY_AGENT, saying why"
    assert not PYTHON_ONLY_AGENT & handle and not {snake(n) for n in JS_ONLY_AGENT} & python, "an allow-listed name exists on both sides now: take it off the list"
    assert {"asTool", "state", "start", "run", "getRun"} <= set(js["page"])


def test_the_agent_options_are_the_constructors_parameters():
    python, options = keywords(Agent.__init__), {snake(n) for n in AGENT_OPTIONS}
    assert python - options == PYTHON_ONLY_PARAMETERS
    assert options - python == {snake(n) for n in JS_ONLY_OPTIONS}
    assert all(n == camel(snake(n)) for n in AGENT_OPTIONS), "JS names are Python's in camelCase"


def test_the_run_and_start_options_are_python_keywords(js):
    assert {snake(n) for n in js["run"]} == keywords(Agent.run)
    assert {snake(n) for n in js["start"]} == keywords(Agent.start)
    assert {snake(n) for n in js["asTool"]} == keywords(Agent.as_tool) - {"name", "description"}


def test_every_limit_has_its_camel_case_name():
    for field in dataclasses.fields(Limits):
        assert _LIMIT_NAMES.get(camel(field.name), camel(field.name)) == field.name, f"Limits.{field.name}: page_options._LIMIT_NAMES lacks {camel(field.name)!r}"
    assert set(_LIMIT_NAMES.values()) <= {f.name for f in dataclasses.fields(Limits)}


def test_agent_state_has_the_same_methods(js):
    state = {n for n in dir(AgentState) if not n.startswith("_")}
    assert set(js["state"]) == state - PYTHON_ONLY_STATE
    assert set(js["state"]) - {"collection"} == _STATE_METHODS  # what page.state_call lets through
    collection = {n for n in dir(Collection) if not n.startswith("_")}
    assert set(js["collection"]) == collection - PYTHON_ONLY_COLLECTION == _COLLECTION_METHODS


def test_the_engine_options_are_openai_models_parameters():
    python = {n for n in inspect.signature(OpenAIModel).parameters}
    assert set(SERVER_OPTIONS.values()) == python - PYTHON_ONLY_ENGINE
    assert all(js == camel(py) for js, py in SERVER_OPTIONS.items()), "JS names are Python's in camelCase"


def test_the_mcp_tools_options_are_mcp_tools_keywords(js):
    python = keywords(mcp_tools) - PYTHON_ONLY_MCP
    assert {snake(n) for n in js["mcpTools"]} == python, "ai.mcpTools' options (handle.mjs's MCP_OPTIONS) are mcp_tools' keywords"
    assert set(MCP_NAMES) == set(js["mcpTools"]) and set(MCP_NAMES.values()) == python  # what page_mcp lets through
    assert all(j == camel(p) for j, p in MCP_NAMES.items()), "JS names are Python's in camelCase"
