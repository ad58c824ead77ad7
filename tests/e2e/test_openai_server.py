"""An aerix agent on a real OpenAI-compatible server, from CPython (httpx) and from the page (fetch).

The server is llama.cpp's llama-server on the generated tiny model, on a free port of
127.0.0.1, behind a proxy that records what it received and sent (server_harness.py).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from urllib.parse import urlsplit

import pytest
from conftest import demo
from server_harness import MODELS, ROOT, LlamaServer, RecordingProxy

from aerix import Abort, Agent, OpenAIModel, evals, tool

weather = tool(
    name="weather",
    description="Today's forecast for a city.",
    input={"city": {"type": "string", "description": "City name", "required": True}},
    run=lambda input, ctx: f"Sunny in {input['city']}",
)
ENDINGS = ("final", "end")
LIMITS = {"turns": 6, "retries": 3, "max_tokens": 160}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    llama = LlamaServer(MODELS / "tiny.gguf", tmp_path_factory.mktemp("llama") / "server.log")
    proxy = RecordingProxy(llama.port)
    yield llama, proxy
    proxy.stop()
    llama.stop()


def run(agent, prompt, signal=None, abort_on_text=False):
    """The run's events. In a thread of its own: Playwright's sync API, once a browser is open,
    keeps an event loop running in this one, and asyncio.run refuses to start inside it."""

    async def go():
        events = []
        async for ev in agent.run(prompt, signal):
            events.append(ev)
            if abort_on_text and ev.type == "text":
                signal.abort()
        return events

    out: dict = {}

    def target():
        try:
            out["events"] = asyncio.run(go())
        except BaseException as e:  # handed to the test's thread
            out["error"] = e

    thread = threading.Thread(target=target, name="cpython-agent")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["events"]


def one_ending(events):
    return [e.type in ENDINGS for e in events].count(True) == 1 and events[-1].type in ENDINGS


def check_schema_sent(exchanges, schema):
    assert exchanges, "no generation reached the server"
    for ex in exchanges:
        fmt = ex.body["response_format"]
        assert fmt == {"type": "json_schema", "json_schema": {"name": "turn", "schema": schema, "strict": True}}
        assert ex.body["stream"] is True and ex.body["stream_options"] == {"include_usage": True}
        assert "tools" not in ex.body


# -- from CPython, over httpx ------------------------------------------------------------------


def test_cpython_every_generation_sends_the_turn_schema_and_gets_what_the_server_streamed(server):
    llama, proxy = server
    mark = proxy.mark()
    agent = Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), tools=[weather], limits=LIMITS, generation={"temperature": 0.8, "seed": 11})
    runs = [run(agent, p) for p in ("Umbrella for Lisbon?", "What about Oslo?", "And Rome?")]
    exchanges = proxy.completions(mark)
    check_schema_sent(exchanges, agent.schema)
    generations = [e for events in runs for e in events if e.type == "usage"]
    assert len(generations) == len(exchanges) >= 3
    for events in runs:
        assert one_ending(events)
        for e in events:
            if e.type == "retry":  # under the grammar only a cut turn may be refused
                assert e.reason.startswith("cut:"), e.reason
    # The text the agent kept is exactly what the server sent, and so are the counts.
    accepted = [m["content"] for m in agent.messages if m["role"] == "assistant"]
    streamed = [ex.content() for ex in exchanges if ex.finish_reason() == "stop"]
    assert accepted == streamed
    for usage, ex in zip(generations, exchanges):
        sent = ex.usage()
        assert (usage.prompt_tokens, usage.completion_tokens) == (sent["prompt_tokens"], sent["completion_tokens"])
        assert usage.cached_tokens == sent["prompt_tokens_details"]["cached_tokens"]
        assert ex.body["temperature"] == 0.8 and ex.body["seed"] == 11 and ex.body["max_tokens"] == 160


def test_cpython_evals_score_cases_on_the_server_each_on_a_fresh_agent(server):
    """aerix.evals against a real OpenAI-compatible server: each case a fresh agent (its first
    request holds the system message and its own prompt only), each scored from its own events,
    its tokens those the server reported for its requests. The tiny model is noise: what passes
    is not asserted, only that the report says what the server did."""
    llama, proxy = server
    cases = [evals.Case(p, name=n, calls=[evals.call("weather", evals.subset({"city": c}))])
             for n, p, c in (("lisbon", "Umbrella for Lisbon?", "Lisbon"), ("oslo", "Weather in Oslo?", "Oslo"))]
    made = []

    def factory(case):
        made.append(Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), tools=[weather], limits=LIMITS, generation={"seed": 3}))
        return made[-1]

    mark = proxy.mark()
    out: dict = {}
    thread = threading.Thread(target=lambda: out.setdefault("report", asyncio.run(evals.run(cases, factory))))
    thread.start()
    thread.join()
    report = out["report"]
    exchanges = proxy.completions(mark)
    check_schema_sent(exchanges, made[0].schema)
    assert len(made) == 2 and made[0] is not made[1]
    assert [r.case.name for r in report.results] == ["lisbon", "oslo"]
    firsts = [ex for ex in exchanges if [m["role"] for m in ex.body["messages"]] == ["system", "user"]]
    assert [ex.body["messages"][1]["content"] for ex in firsts] == ["Umbrella for Lisbon?", "Weather in Oslo?"]
    for r in report.results:
        assert r.outcome.ending.partition(":")[0] in ENDINGS and one_ending(list(r.outcome.events))  # "end:turns"
        assert r.passed == (not r.reasons)
    sent = [ex.usage() for ex in exchanges]
    assert report.tokens.prompt == sum(u["prompt_tokens"] for u in sent) > 0
    assert report.tokens.completion == sum(u["completion_tokens"] for u in sent) > 0
    data = json.loads(report.to_json())
    assert data["totals"]["passed"] == report.passed and len(data["cases"]) == 2


def test_cpython_a_cut_turn_is_retried(server):
    llama, proxy = server
    mark = proxy.mark()
    agent = Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), tools=[weather], limits={"turns": 3, "retries": 2, "max_tokens": 8})
    events = run(agent, "Umbrella for Lisbon?")
    exchanges = proxy.completions(mark)
    retries = [e for e in events if e.type == "retry"]
    assert retries and all(e.reason.startswith("cut: the turn reached max_tokens (8)") for e in retries)
    assert [ex.finish_reason() for ex in exchanges[: len(retries)]] == ["length"] * len(retries)
    assert len(exchanges) == len(retries) + (0 if events[-1].type == "end" and events[-1].reason == "retries" else 1)
    assert one_ending(events)


def test_cpython_cached_tokens_are_reported_on_turn_2(server):
    llama, proxy = server
    agent = Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), limits=LIMITS, generation={"seed": 3})
    first = run(agent, "Hello there.")
    second = run(agent, "And again.")
    usage = [e for e in second if e.type == "usage"]
    # turn 2 starts with the system message, turn 1 and its reply: the one slot still holds them
    assert usage[0].cached_tokens > 0 and usage[0].cached_tokens < usage[0].prompt_tokens
    assert one_ending(first) and one_ending(second)


def test_cpython_abort_ends_abort_stops_the_server_and_it_stays_usable(server):
    llama, proxy = server
    mark = proxy.mark()
    decoded = llama.metric("n_decode_total")
    # No grammar and no end-of-sequence: left alone this would decode 3,000 tokens.
    runaway = Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), constrain=False, limits={"max_tokens": 3000}, generation={"ignore_eos": True})
    signal = Abort()
    events = run(runaway, "Write a very long thought.", signal, abort_on_text=True)
    assert events[-1].type == "end" and events[-1].reason == "abort" and one_ending(events)
    assert llama.idle(), "the server kept generating after the abort"
    (aborted,) = proxy.completions(mark)
    assert aborted.client_left and not aborted.finished
    assert llama.metric("n_decode_total") - decoded < 1500, "the server was not stopped by the closed stream"
    assert "cancel task" in llama.log()
    # the same server, at once, for the next run
    after = run(Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), limits=LIMITS), "Now answer briefly.")
    assert one_ending(after) and [e for e in after if e.type == "usage"]
    assert not (after[-1].type == "end" and after[-1].reason == "error"), after[-1]


def test_cpython_a_server_error_ends_the_run_error_with_the_servers_words(server):
    llama, proxy = server
    agent = Agent(model=OpenAIModel(f"{proxy.url}/v1", "tiny"), limits=LIMITS)
    events = run(agent, "rain " * 5000)  # longer than the 4,096-token context
    assert events[-1].type == "end" and events[-1].reason == "error"
    assert "400" in events[-1].message and "context size" in events[-1].message


def test_cpython_an_unreachable_server_ends_error(server):
    llama, proxy = server
    from server_harness import free_port

    agent = Agent(model=OpenAIModel(f"http://127.0.0.1:{free_port()}/v1", "tiny"))
    events = run(agent, "Hello?")
    assert events[-1].type == "end" and events[-1].reason == "error" and "could not reach" in events[-1].message


def test_the_cli_streams_events_from_the_server(server):
    llama, proxy = server
    mark = proxy.mark()
    out = subprocess.run(
        [sys.executable, "-m", "aerix", "run", "--base-url", f"{proxy.url}/v1", "--model", "tiny", "--json", "--seed", "5",
         "--max-tokens", "160", "Umbrella for Lisbon?"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == (0 if events[-1]["type"] == "final" else 1), out.stderr
    assert {"text", "usage"} <= {e["type"] for e in events} and events[-1]["type"] in ENDINGS
    exchanges = proxy.completions(mark)
    assert len(exchanges) == sum(e["type"] == "usage" for e in events)
    assert all(ex.body["response_format"]["json_schema"]["name"] == "turn" and ex.body["seed"] == 5 for ex in exchanges)
    human = subprocess.run(
        [sys.executable, "-m", "aerix", "run", "--base-url", f"{proxy.url}/v1", "--model", "tiny", "Hello."],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert "· usage:" in human.stdout and human.stdout.splitlines()[-1].startswith(("final:", "end "))


# -- from the page, over fetch ------------------------------------------------------------------

BOOT = """async ({ baseUrl, worker }) => {
  const { boot } = await import("/aerix.mjs");
  window.ai = await boot({ engine: { baseUrl, model: "tiny" }, worker });
  return { timings: window.ai.timings, engine: window.ai.engine };
}"""

TOOL = """{
  name: "weather",
  description: "Today's forecast for a city.",
  input: { city: { type: "string", description: "City name", required: true } },
  run: async ({ city }) => `Sunny in ${city}`,
}"""

RUN = (
    """async ({ prompts, limits, generation, constrain, abortOnText }) => {
  const agent = window.ai.agent({ tools: [%s], limits, generation, constrain });
  const runs = [];
  for (const prompt of prompts) {
    const controller = new AbortController();
    const events = [];
    for await (const ev of agent.run(prompt, { signal: controller.signal })) {
      events.push(ev);
      if (abortOnText && ev.type === "text") controller.abort();
    }
    runs.push(events);
  }
  return { runs, schema: agent.schema, messages: agent.messages };
}"""
    % TOOL
)


@pytest.fixture(scope="module")
def server_page(browser, site, server, mode):
    llama, proxy = server
    context = browser.new_context()
    page = context.new_page()
    requests, failed = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})"))
    page.set_default_timeout(120_000)
    page.goto(site + "/embed.html")
    booted = page.evaluate(BOOT, {"baseUrl": f"{proxy.url}/v1", "worker": mode == "worker"})
    yield page, booted, requests, failed
    context.close()
    origins = {f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" for u in requests if not u.startswith(("data:", "blob:"))}
    assert origins <= {site, proxy.url}, f"requests left the page's origin and the server's: {origins}"


def page_run(page, prompts, limits=None, generation=None, constrain=True, abort_on_text=False):
    return page.evaluate(RUN, {"prompts": prompts, "limits": limits or {"turns": 6, "retries": 3, "maxTokens": 160},
                               "generation": generation or {"temperature": 0.8}, "constrain": constrain, "abortOnText": abort_on_text})


def test_the_page_boots_on_the_server_without_the_in_page_engine(server_page, server):
    page, booted, requests, failed = server_page
    llama, proxy = server
    assert booted["engine"] == {"kind": "openai", "baseUrl": f"{proxy.url}/v1", "model": "tiny", "models": ["tiny"]}
    assert not [u for u in requests if "/wllama/" in u or u.endswith(".gguf")], "the in-page engine was loaded"
    assert f"{proxy.url}/v1/models" in requests


def test_the_page_sends_the_schema_on_every_generation_and_reports_cached_tokens(server_page, server):
    page, *_ = server_page
    llama, proxy = server
    mark = proxy.mark()
    out = page_run(page, ["Umbrella for Lisbon?", "What about Oslo?", "And Rome?"])
    exchanges = proxy.completions(mark)
    check_schema_sent(exchanges, out["schema"])
    assert all(ex.headers.get("Origin") for ex in exchanges), "not the page's fetch"
    usage = [e for events in out["runs"] for e in events if e["type"] == "usage"]
    assert len(usage) == len(exchanges) >= 3
    for events in out["runs"]:
        assert [e["type"] in ENDINGS for e in events].count(True) == 1 and events[-1]["type"] in ENDINGS
        assert all(e["reason"].startswith("cut:") for e in events if e["type"] == "retry")
    second_run_first_usage = next(e for e in out["runs"][1] if e["type"] == "usage")
    assert second_run_first_usage["cachedTokens"] > 0
    assert [m["content"] for m in out["messages"] if m["role"] == "assistant"] == [ex.content() for ex in exchanges if ex.finish_reason() == "stop"]


def test_the_page_retries_a_cut_turn(server_page, server):
    page, *_ = server_page
    llama, proxy = server
    mark = proxy.mark()
    out = page_run(page, ["Umbrella for Lisbon?"], limits={"turns": 3, "retries": 2, "maxTokens": 8})
    retries = [e for e in out["runs"][0] if e["type"] == "retry"]
    assert retries and all(e["reason"].startswith("cut:") for e in retries)
    assert [ex.finish_reason() for ex in proxy.completions(mark)[: len(retries)]] == ["length"] * len(retries)


def test_the_page_abort_ends_abort_stops_the_server_and_the_next_run_works(server_page, server):
    page, *_ = server_page
    llama, proxy = server
    mark = proxy.mark()
    decoded = llama.metric("n_decode_total")
    out = page_run(page, ["Write a very long thought."], limits={"maxTokens": 3000}, generation={"ignore_eos": True}, constrain=False, abort_on_text=True)
    events = out["runs"][0]
    assert events[-1]["type"] == "end" and events[-1]["reason"] == "abort"
    assert llama.idle(), "the server kept generating after the abort"
    (aborted,) = proxy.completions(mark)
    assert aborted.client_left and not aborted.finished
    assert llama.metric("n_decode_total") - decoded < 1500
    after = page_run(page, ["Now answer briefly."])["runs"][0]
    assert after[-1]["type"] in ENDINGS and any(e["type"] == "usage" for e in after)
    assert not (after[-1]["type"] == "end" and after[-1]["reason"] == "error"), after[-1]


def test_python_in_the_page_gets_the_server_model(server_page):
    page, *_ = server_page
    out = page.evaluate(
        """async () => window.ai.runPython(`
from aerix import Agent
from aerix.engines.js import page_model
model = page_model()
agent = Agent(model=model, limits={"max_tokens": 160})
events = [ev.type async for ev in agent.run("Hello")]
repr(model) + " " + events[-1]
`)"""
    )
    assert out.startswith("OpenAIModel(base_url='http://127.0.0.1:") and out.endswith((" final", " end"))


def test_boot_fails_clearly_when_the_server_is_not_there(browser, site):
    from server_harness import free_port

    context = browser.new_context()
    page = context.new_page()
    page.goto(site + "/embed.html")
    try:
        error = page.evaluate(
            """async (baseUrl) => {
          const { boot } = await import("/aerix.mjs");
          try { await boot({ engine: { baseUrl, model: "tiny" } }); return null; } catch (e) { return e.message; }
        }""",
            f"http://127.0.0.1:{free_port()}/v1",
        )
    finally:
        context.close()
    assert error and error.startswith("could not reach the server at http://127.0.0.1:")


def test_the_demo_runs_on_the_server(browser, site, server, mode):
    llama, proxy = server
    mark = proxy.mark()
    context = browser.new_context()
    page = context.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{site}{demo(mode, f'baseUrl={proxy.url}/v1&serverModel=tiny')}")
        page.wait_for_function("() => window.demo && (window.demo.ready || window.demo.error)")
        assert page.evaluate("window.demo.error") is None
        assert "on the server" in page.inner_text("#model")
        page.fill("#prompt", "Umbrella for Lisbon?")
        page.click("#run")
        page.wait_for_function("() => window.demo.transcript.length > 0 && !window.demo.running")
        transcript = page.evaluate("window.demo.transcript")
    finally:
        context.close()
    # Every generation the demo showed came from the server, under the schema. (Its ending is
    # not asserted: the demo's durable IndexedDB store sometimes fails to save a run on this path.)
    exchanges = proxy.completions(mark)
    assert exchanges and len(exchanges) == sum(e["type"] == "usage" for e in transcript)
    assert all(ex.body["response_format"]["json_schema"]["name"] == "turn" for ex in exchanges)
    assert not [u for u in requests if "/wllama/" in u or u.endswith(".gguf")]
