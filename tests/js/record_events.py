"""Record the events tests/js/chat.test.mjs feeds the chat store's reducer: real runs of the aerix
loop on CPython (ScriptedModel, MemoryStore), each event as the page sees it (`event_view`:
camelCase keys), written to tests/js/events.json.

    .venv/bin/python tests/js/record_events.py           # write tests/js/events.json
    .venv/bin/python tests/js/record_events.py --check   # exit 1 if the events' shape changed

`make test-js` runs the check first: the runs' events, as types and keys in order, must be those
recorded, so a change to the event vocabulary fails there until the recording (and the reducer)
follow it. Values (token counts that follow the system message, texts) may drift: the JS tests
read them from the recording.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aerix import Abort, Agent, Hooks, Limits, tool
from aerix.compaction import SUMMARY_SCHEMA
from aerix.page import event_view
from aerix.stores import MemoryStore
from aerix.testing import Reply, ScriptedModel

HERE = Path(__file__).resolve().parent
OUT = HERE / "events.json"


def calls(*pairs: tuple[str, dict[str, Any]], thought: str = "use tools") -> str:
    return json.dumps({"thought": thought, "calls": [{"tool": t, "input": i} for t, i in pairs]})


def final(text: str, thought: str = "done") -> str:
    return json.dumps({"thought": thought, "final": text})


async def weather(input: dict[str, Any], ctx: Any) -> str:
    await ctx.artifacts.put(f"city,rain\n{input['city']},80\n", "text/csv", "rain.csv")
    return f"Rain in {input['city']}, 80%"


def broken(input: dict[str, Any], ctx: Any) -> str:
    raise ValueError("no such unit")


async def ask_first(input: dict[str, Any], ctx: Any) -> str:
    decision = await ctx.approve(f"Save the note {input['text']!r}?", body=json.dumps(input))
    return f"note saved: {input['text']}" if decision.approved else f"not saved: {decision.reason}"


WEATHER = tool(name="weather", description="Weather.", input={"city": {"type": "string", "required": True}}, run=weather, trust={"taint": True})
CONVERT = tool(name="convert", description="Convert.", input={"value": {"type": "number", "required": True}}, run=broken)
NOTE = tool(name="save_note", description="Save a note.", input={"text": {"type": "string", "required": True}}, run=ask_first)


async def views(stream: Any, abort: Abort | None = None, abort_after_deltas: int | None = None) -> list[dict[str, Any]]:
    out, deltas = [], 0
    async for ev in stream:
        out.append(event_view(ev))
        if ev.type == "final_delta":
            deltas += 1
            if abort is not None and deltas == abort_after_deltas:
                abort.abort("the user pressed stop")
    return out


async def record() -> dict[str, Any]:
    runs: dict[str, Any] = {}

    # Two turns of calls (a tainting tool that keeps a file, a tool that fails), then an answer
    # streamed three characters at a time, escapes included; then a second prompt in the same
    # conversation answered at once.
    model = ScriptedModel(
        [
            calls(("weather", {"city": "Lisbon"}), ("convert", {"value": 3}), thought="look it up"),
            calls(("weather", {"city": "Porto"}), thought="and Porto"),
            Reply(final('Take an umbrella: "rain" in Lisbon\nand Porto \u2614.', thought="rain both"), chunk=3),
            Reply(final("Yes, in both."), chunk=5),
        ]
    )
    agent = Agent(model=model, tools=[WEATHER, CONVERT], store=MemoryStore())
    runs["tools"] = await views(agent.run("Umbrella for Lisbon and Porto?", run_id="r-tools"))
    runs["again"] = await views(agent.run("Both?", run_id="r-again"))

    # A turn cut by max_tokens after part of its answer streamed, retried, then answered.
    model = ScriptedModel([Reply('{"thought": "long", "final": "A very long ans', finish_reason="length", chunk=4), Reply(final("Short."), chunk=2)])
    runs["retry"] = await views(Agent(model=model, tools=[WEATHER]).run("Say something."))

    # A durable run that waits for an approval, then the approval and the rest of the run.
    store = MemoryStore()
    script = [calls(("save_note", {"text": "call Anna"})), Reply(final("Saved."), chunk=2)]
    runs["waiting"] = await views(Agent(model=ScriptedModel(script), tools=[NOTE], store=store).run("Remind me to call Anna.", run_id="r-note"))
    waiting = runs["waiting"][-1]
    later = Agent(model=ScriptedModel(script[1:]), tools=[NOTE], store=store)
    runs["approved"] = await views(later.approve(waiting["runId"], waiting["approvalId"], True))

    # A run whose tools wait for a before_call hook's approval (the demo's "ask me" box), denied.
    store = MemoryStore()

    async def gate(call: Any, ctx: Any) -> Any:
        decision = await ctx.approve(f"Run {call.tool}?", json.dumps(call.input))
        return None if decision.approved else {"deny": decision.reason or "you said no"}

    script = [calls(("weather", {"city": "Oslo"})), final("I did not look.")]
    runs["gated"] = await views(Agent(model=ScriptedModel(script), tools=[WEATHER], store=store, hooks=Hooks(before_call=gate)).run("Oslo?", run_id="r-gate"))
    waiting = runs["gated"][-1]
    later = Agent(model=ScriptedModel(script[1:]), tools=[WEATHER], store=store, hooks=Hooks(before_call=gate))
    runs["denied"] = await views(later.approve(waiting["runId"], waiting["approvalId"], False, "not now"))

    # Stop pressed while the answer streams.
    abort = Abort()
    model = ScriptedModel([Reply(final("One two three four five six seven."), chunk=2)])
    runs["abort"] = await views(Agent(model=model, tools=[WEATHER]).run("Count.", signal=abort), abort, abort_after_deltas=3)

    # The engine fails.
    runs["error"] = await views(Agent(model=ScriptedModel([RuntimeError("the engine went away")]), tools=[WEATHER]).run("Hello?"))

    # Structured output: no final_delta; the answer object streams as output_delta events.
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "rain": {"type": "boolean"}}, "required": ["city", "rain"]}
    model = ScriptedModel([Reply(json.dumps({"thought": "known", "final": {"city": "Lisbon", "rain": True}}), chunk=4)])
    runs["output"] = await views(Agent(model=model, tools=[WEATHER], output=schema).run("Rain in Lisbon?"))

    # Structured output, nested: an answer that fails the schema streams whole and is refused
    # (retry), then the next one streams from nothing.
    hours = {"type": "array", "items": {"type": "object", "properties": {"at": {"type": "string"}, "mm": {"type": "number"}}, "required": ["at", "mm"]}}
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "hours": hours}, "required": ["city", "hours"]}
    bad = {"city": "Porto", "hours": [{"at": "9:00", "mm": "lots"}]}
    good = {"city": "Porto", "hours": [{"at": "9:00", "mm": 2.5}, {"at": "10:00", "mm": 0}]}
    model = ScriptedModel([Reply(json.dumps({"thought": "by the hour", "final": answer}), chunk=6) for answer in (bad, good)])
    runs["output_retry"] = await views(Agent(model=model, output=schema, constrain=False).run("Rain by the hour in Porto?"))

    # A chat that outgrows its context (Limits.context_tokens): before a generation the model
    # summarises the oldest turns, its summary's usage first, then `compact`.
    def chatting(messages: list[dict[str, str]], options: dict[str, Any]) -> str:
        if options["constraint"] == SUMMARY_SCHEMA:
            return json.dumps({"summary": "The user asked about the rain in several cities; it rains in all of them."})
        return final(f"It rains in {messages[-1]['content']}")

    room = len(Agent(model=ScriptedModel([]), tools=[WEATHER]).system) + 1000  # the fake counts a character as a token
    agent = Agent(model=ScriptedModel(chatting), tools=[WEATHER], limits=Limits(max_tokens=100, context_tokens=room))
    for city in ("Lisbon", "Porto", "Coimbra", "Braga", "Faro", "Evora", "Aveiro", "Viseu", "Leiria", "Tomar", "Sintra", "Cascais"):
        events = await views(agent.run(city))
        if any(e["type"] == "compact" for e in events):
            runs["compact"] = events
            break
    assert "compact" in runs, "no run compacted: make the context smaller"

    # An agent as a tool: the forecaster's run (a tainting tool that keeps a file, then its
    # answer) comes nested in `subagent` events under the call; its taint reaches the parent.
    forecaster = Agent(model=ScriptedModel([calls(("weather", {"city": "Lisbon"})), Reply(final("Rain in Lisbon."), chunk=4)]), name="forecaster", tools=[WEATHER])
    model = ScriptedModel([calls(("forecast", {"task": "Will it rain in Lisbon?"}), thought="ask the forecaster"), Reply(final("Take an umbrella."), chunk=5)])
    runs["subagent"] = await views(Agent(model=model, tools=[forecaster.as_tool("forecast", "Forecasts the weather.")]).run("Umbrella?"))

    # A durable run whose sub-agent waits for an approval (the parent waits), then the approval:
    # the call again, and the sub-run's events from where it stood.
    store = MemoryStore()
    noter = Agent(model=ScriptedModel([calls(("save_note", {"text": "call Anna"})), final("Saved it.")]), name="noter", tools=[NOTE])
    script = [calls(("notes", {"task": "Save: call Anna"})), Reply(final("Noted."), chunk=2)]
    parent = Agent(model=ScriptedModel(script), tools=[noter.as_tool("notes", "Keeps notes.")], store=store)
    runs["subagent_waiting"] = await views(parent.run("Remind me to call Anna.", run_id="r-sub"))
    waiting = runs["subagent_waiting"][-1]
    runs["subagent_approved"] = await views(parent.approve(waiting["runId"], waiting["approvalId"], True))
    return runs


def shape_of(event: dict[str, Any]) -> str:
    """An event as `type: key, key, ...`; a `subagent` event's inner event after ` › `."""
    inner = f" › {shape_of(event['event'])}" if event["type"] == "subagent" else ""
    return f"{event['type']}: {', '.join(sorted(event))}{inner}"


def shape(runs: dict[str, Any]) -> dict[str, list[str]]:
    """Each run's events as their shapes, in order."""
    return {name: [shape_of(e) for e in events] for name, events in runs.items()}


def main() -> int:
    runs = asyncio.run(record())
    if "--check" in sys.argv:
        now, kept = shape(runs), shape(json.loads(OUT.read_text()))
        if now != kept:
            for name in sorted(set(now) | set(kept)):
                if now.get(name) != kept.get(name):
                    print(f"run {name!r}: the loop yields\n  {now.get(name)}\nbut {OUT.name} holds\n  {kept.get(name)}", file=sys.stderr)
            print(f"run `.venv/bin/python tests/js/record_events.py` and check the reducer (web/chat.mjs)", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(json.dumps(runs, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
