"""A key-holding proxy (issue 21, point 7): `aerix.serve.serve(..., proxy=URL, key=...)` serves the
site and forwards /v1/models and /v1/chat/completions to the compiled llama-server, which here
demands an API key (`--api-key`). The page boots with `engine: {baseUrl: "/v1", model}` and no key,
runs an agent in both modes, and the key reaches neither the page nor anything it received."""

from __future__ import annotations

import pytest
from conftest import SITE, Traffic
from server_harness import MODELS, LlamaServer

from aerix.serve import serve

KEY = "sk-e2e-proxy-0123456789abcdef"


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    llama = LlamaServer(MODELS / "tiny.gguf", tmp_path_factory.mktemp("llama") / "server.log", extra=("--api-key", KEY))
    server, thread = serve(str(SITE), 0, proxy=f"{llama.url}/v1", key=KEY)
    yield f"http://127.0.0.1:{server.server_address[1]}", llama
    server.shutdown()
    server.server_close()
    llama.stop()


RUN = """async (worker) => {
  const { boot } = await import("/aerix.mjs");
  const ai = await boot({ engine: { baseUrl: "/v1", model: "tiny" }, worker });
  const agent = ai.agent({ limits: { maxTokens: 64, turns: 2 }, generation: { temperature: 0.8 } });
  const events = [];
  for await (const ev of agent.run("Hello")) events.push(ev);
  return { engine: ai.engine, events, messages: agent.messages };
}"""


def test_the_page_runs_on_a_server_through_the_proxy_and_never_sees_the_key(browser, proxied, worker):
    origin, llama = proxied
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(120_000)
    traffic = Traffic(origin)
    bodies: list[str] = []
    page.on("request", traffic.on_request)
    page.on("requestfailed", traffic.on_failed)
    page.on("response", traffic.on_response)

    def keep(response):
        try:
            bodies.append(response.text() + "\n" + "\n".join(f"{k}: {v}" for k, v in response.all_headers().items()))
        except Exception:  # noqa: BLE001 - a body that is gone (a redirect, a stream cut) has nothing to check
            pass

    page.on("response", keep)
    try:
        page.goto(f"{origin}/embed.html")
        out = page.evaluate(RUN, worker)
        seen = page.evaluate("() => JSON.stringify({ storage: { ...localStorage }, title: document.title })")
    finally:
        context.close()
    assert out["engine"]["kind"] == "openai" and out["engine"]["baseUrl"] == f"{origin}/v1" and out["engine"]["models"] == ["tiny"]
    events = out["events"]
    assert events[-1]["type"] in ("final", "end") and not (events[-1]["type"] == "end" and events[-1]["reason"] == "error"), events[-1]
    assert any(e["type"] == "usage" for e in events), "no generation went through"
    assert traffic.foreign == [] and traffic.failed == [], (traffic.foreign, traffic.failed)
    assert any("/v1/chat/completions" in u for u in traffic.urls), "the page did not go through the proxy"
    # the key: in no response the page got (bodies and headers), its events, its state
    assert bodies and not any(KEY in b for b in bodies)
    assert KEY not in str(out) and KEY not in seen
    # and the server did require it: without the proxy's key it refuses
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{llama.url}/v1/models", timeout=10)
    refused.value.close()
    assert refused.value.code == 401
