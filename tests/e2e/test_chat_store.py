"""The chat store (web/chat.mjs, issue 20 point 6) under the demo, on the bundled model: after a
run the store's state is what its events say (messages, calls with their results, usage sums,
the ending), the answer streamed into it piece by piece from `final_delta` events, and the page
shows that state; a second prompt goes on in the same conversation; a waiting approval is pending
in the state until it is answered; stop() ends a run `abort` and the next one answers.

The bundled model is driven greedily (temperature 0, as the demo does), so its calls are the same
at every run: they are asserted first, so a retrained model that answers otherwise fails here
with what it did."""

from __future__ import annotations

from conftest import demo as demo_path

READY = "() => window.demo && window.demo.ready"
DONE = "() => window.demo.transcript.length > 0 && !window.demo.running"
STATE = "window.demo.chat.getState()"
# every answer the store held while the run went on (subscribed before the run starts)
WATCH = "() => { window.answers = []; window.demo.chat.subscribe((s) => window.answers.push(s.answer)); }"


def demo(fresh_page, mode):
    page, _ = fresh_page(demo_path(mode))
    page.wait_for_function(READY, timeout=180_000)
    return page


def ask(page, prompt: str) -> list[dict]:
    page.fill("#prompt", prompt)
    page.click("#run")
    page.wait_for_function(DONE, timeout=180_000)
    return page.evaluate("window.demo.transcript")


def expected_calls(events: list[dict]) -> list[dict]:
    calls = {e["id"]: {"id": e["id"], "tool": e["tool"], "input": e["input"]} for e in events if e["type"] == "call"}
    for e in events:
        if e["type"] == "result":
            calls[e["id"]].update(result=e["text"], error=e["error"])
    return list(calls.values())


def usage(events: list[dict]) -> dict:
    keys = ("promptTokens", "completionTokens", "cachedTokens")
    return {k: sum(e[k] for e in events if e["type"] == "usage") for k in keys}


def test_after_a_demo_run_the_store_holds_what_its_events_say_and_the_answer_streamed(fresh_page, mode):
    page = demo(fresh_page, mode)
    page.evaluate(WATCH)
    prompt = "Do I need an umbrella in Lisbon today?"
    events = ask(page, prompt)
    final = events[-1]
    assert final["type"] == "final", events
    assert [e["tool"] for e in events if e["type"] == "call"] == ["weather"], "the bundled model's first turn was not one weather call"
    state = page.evaluate(STATE)
    assert state["messages"] == [{"role": "user", "text": prompt}, {"role": "assistant", "text": final["text"]}]
    calls = expected_calls(events)
    assert state["calls"] == calls and all("result" in c for c in calls)
    assert state["usage"] == usage(events) and state["usage"]["promptTokens"] > 0
    assert state["ending"] == final
    assert (state["status"], state["answer"], state["approvals"], state["error"]) == ("idle", "", [], None)
    assert state["thought"] == final["thought"]

    # the answer streamed: final_delta texts join into the final's text, and the store held
    # longer and longer prefixes of it before the final came
    deltas = [e["text"] for e in events if e["type"] == "final_delta"]
    assert "".join(deltas) == final["text"] and len(deltas) > 1
    answers = [a for a in dict.fromkeys(page.evaluate("window.answers")) if a]
    assert len(answers) == len(deltas) and answers[-1] == final["text"], answers
    assert all(final["text"].startswith(a) for a in answers)

    # the page shows that state: the prompt, each call with its result, the answer, the usage
    assert page.locator("#log .card.prompt pre").all_text_contents() == [prompt]
    assert page.locator("#log .card.call").count() == len(calls) == page.locator("#log .card.result").count()
    assert page.locator("#log .card.result pre").all_text_contents() == [c["result"] for c in calls]
    assert page.locator("#log .card.final pre").all_text_contents() == [final["text"]]
    assert page.locator("#log .card.final.streaming").count() == 0
    assert f"prompt {state['usage']['promptTokens']} tokens" in page.inner_text("#log .usage")

    # a second prompt goes on in the same conversation: messages and usage add up, calls are the run's
    more = ask(page, "What time is it in Nairobi?")
    assert more[-1]["type"] == "final", more
    after = page.evaluate(STATE)
    assert [m["role"] for m in after["messages"]] == ["user", "assistant", "user", "assistant"]
    assert after["messages"][:2] == state["messages"] and after["messages"][3]["text"] == more[-1]["text"]
    assert after["calls"] == expected_calls(more)
    assert after["usage"] == usage(events + more)
    assert after["ending"] == more[-1]
    assert page.locator("#log .card.final pre").all_text_contents() == [final["text"], more[-1]["text"]]


def test_an_approval_is_pending_in_the_store_until_answered_and_stop_aborts_a_run(fresh_page, mode):
    page = demo(fresh_page, mode)
    page.check("#approve")
    events = ask(page, "Do I need an umbrella in Lisbon today?")
    waiting = events[-1]
    assert waiting["type"] == "waiting", events
    state = page.evaluate(STATE)
    assert state["status"] == "waiting" and state["ending"] is None
    pending = {k: waiting[k] for k in ("runId", "approvalId", "title", "body")}
    assert state["approvals"] == [pending]
    assert [c["tool"] for c in state["calls"]] == ["weather"] and "result" not in state["calls"][0], "the call waits, not run"
    assert state["messages"] == [{"role": "user", "text": "Do I need an umbrella in Lisbon today?", "runId": waiting["runId"]}]

    page.locator(f'.card.waiting[data-approval="{waiting["approvalId"]}"] button.approve').click()
    page.wait_for_function("() => !window.demo.running && window.demo.transcript.at(-1).type === 'final'", timeout=180_000)
    state = page.evaluate(STATE)
    assert state["approvals"] == [] and state["status"] == "idle"
    assert page.locator(".card.waiting").count() == 0
    assert state["calls"][0]["result"] == next(e["text"] for e in page.evaluate("window.demo.transcript") if e["type"] == "result")
    assert state["messages"][-1]["role"] == "assistant" and state["messages"][-1]["runId"] == waiting["runId"]

    # stop() before the first generation ends: `end abort`, idle; the next prompt answers
    page.uncheck("#approve")
    stopped = page.evaluate("async () => { const s = window.demo.chat; const done = s.send('What time is it in Nairobi?'); s.stop(); return await done; }")
    assert stopped["ending"]["type"] == "end" and stopped["ending"]["reason"] == "abort", stopped["ending"]
    assert stopped["status"] == "idle" and stopped["messages"][-1]["role"] == "user"
    answered = page.evaluate("window.demo.chat.send('What time is it in Nairobi?')")
    assert answered["ending"]["type"] == "final" and answered["messages"][-1]["role"] == "assistant"
