"""A run's spans, built from its events as they pass (``tracing.traced`` calls :class:`RunTrace`).

Where each span starts and ends, from the events alone (the loop yields no timing):

    invoke_agent   from the first ask for an event to the stop (``final``, ``end``, ``waiting``,
                   ``interrupted``); a sub-run's from its calling tool span's start to its stop
    chat           from when the run went on after its previous event was taken (limits,
                   compaction and the request itself included) to the ``turn`` or ``retry``
                   that reads it (or ``compact`` for a summary, or the stop it failed with);
                   it opens with the generation's first event (``text``, ``usage``)
    execute_tool   from when the run went on after the turn (or the call before it) to the
                   call's ``result``; the calls of a group that runs together
                   (``parallel=True`` tools, one after another in the turn) share the group's start

A consumer that is slow to take an event delays the run itself (it waits at each event), so the
durations are the run's as the consumer saw it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from .errors import describe
from .events import Call, Compacted, End, Event, Final, FinalDelta, Handoff, Interrupted, OutputDelta, Result, Retry, SubagentEvent, Text, Turn, Usage, Waiting
from .tracing import AttributeValue, Span, Tracer

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["RunSpans", "RunTrace", "model_attributes"]

_PROVIDERS = {"OpenAIModel": "openai", "JsModel": "llama.cpp", "ScriptedModel": "aerix.scripted"}
_STOPS = (Final, End, Waiting, Interrupted)


def model_attributes(model: Any) -> dict[str, AttributeValue]:
    """``gen_ai.provider.name`` (a model's ``provider`` string, else by its class: ``openai`` for
    an OpenAI-compatible server, ``llama.cpp`` for the page's engine) and ``gen_ai.request.model``
    (its ``model`` string, where it has one)."""
    provider = getattr(model, "provider", None)
    out: dict[str, AttributeValue] = {"gen_ai.provider.name": provider if isinstance(provider, str) else _PROVIDERS.get(type(model).__name__, "_OTHER")}
    name = getattr(model, "model", None)
    if isinstance(name, str) and name:
        out["gen_ai.request.model"] = name
    return out


def _messages(role: str, text: str, finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message], ensure_ascii=False)


class RunTrace:
    """The trace of one run: its spans, and the runs (the top one, its sub-runs) events reach."""

    def __init__(self, tracer: Tracer, agent: Agent, prompt: str | None) -> None:
        self.tracer, self.trace_id = tracer, tracer.new_id(32)
        self.spans: list[Span] = []
        self.top = RunSpans(self, agent, agent.name, None, tracer.clock(), prompt)
        self.path: list[RunSpans] = [self.top]  # the runs the latest event went through
        self.stopped = False

    def open(self, name: str, parent: Span | None, kind: Literal["internal", "client"], start: int, attributes: dict[str, AttributeValue]) -> Span:
        span = Span(name, self.trace_id, self.tracer.new_id(16), None if parent is None else parent.span_id, kind, start, attributes=attributes)
        self.spans.append(span)
        self.tracer.started(span)
        return span

    def end(self, span: Span, status: Literal["unset", "ok", "error"] = "unset", message: str = "") -> None:
        if span.end_ns is None:
            span.end_ns = max(span.start_ns, self.tracer.clock())
            span.status, span.status_message = status, message
            self.tracer.ended(span)

    def asked(self) -> None:
        """The consumer asked for the next event: the runs the last one came from go on now."""
        now = self.tracer.clock()
        for run in self.path:
            run.resumed = now

    def on(self, ev: Event) -> None:
        self.path = []
        self.top.on(ev)
        self.stopped = self.stopped or isinstance(ev, _STOPS)

    def close(self, raised: BaseException | None) -> list[Span]:
        """The run's events are over: end what is still open; the trace's spans."""
        if not self.stopped:
            why = "the caller stopped reading the run's events" if raised is None or isinstance(raised, GeneratorExit) else f"the run raised {describe(raised)}"
            self.top.abandon(why)
        return self.spans


class RunSpans:
    """The spans of one run (``agent``'s, the active one: a handoff switches it) inside a trace."""

    def __init__(self, trace: RunTrace, agent: Agent | None, name: str, parent: Span | None, start: int, prompt: str | None) -> None:
        self.trace, self.agent, self.resumed, self.stopped = trace, agent, start, False
        self.content = trace.tracer.content
        attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
        if agent is not None:
            attributes.update(model_attributes(agent.model))
            if agent.description:
                attributes["gen_ai.agent.description"] = agent.description
            kept = getattr(agent, "_kept", None)
            if kept is not None:
                attributes["gen_ai.conversation.id"] = kept.id
            if self.content and agent.instructions:
                attributes["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": agent.instructions}], ensure_ascii=False)
        if self.content and prompt is not None:
            attributes["gen_ai.input.messages"] = _messages("user", prompt)
        self.span = trace.open(f"invoke_agent {name}", parent, "internal", start, attributes)
        self.tokens = {"gen_ai.usage.input_tokens": 0, "gen_ai.usage.output_tokens": 0, "gen_ai.usage.cache_read.input_tokens": 0}
        self.chat: Span | None = None
        self.text: list[str] = []
        self.calls: dict[str, Call] = {}  # the latest turn's calls, by id
        self.group: dict[str, int] = {}  # call id -> its group (calls that run together share one)
        self.group_start: dict[int, int] = {}
        self.tools: dict[str, Span] = {}
        self.subruns: dict[str, RunSpans] = {}

    def on(self, ev: Event) -> None:
        self.trace.path.append(self)
        if isinstance(ev, SubagentEvent):
            self.subrun(ev)
        elif isinstance(ev, (Text, FinalDelta, OutputDelta)):
            self.open_chat()
            if isinstance(ev, Text):
                self.text.append(ev.text)
        elif isinstance(ev, Usage):
            self.count(ev)
        elif isinstance(ev, Compacted) and self.chat is not None:
            self.chat.attributes["aerix.compaction"] = True  # the generation wrote the summary
            self.close_chat("stop")
        elif isinstance(ev, Retry):
            self.open_chat()
            assert self.chat is not None
            self.chat.attributes["aerix.turn.refused"] = True
            if self.content:
                self.chat.attributes["aerix.turn.refused_reason"] = ev.reason
            self.close_chat("length" if ev.reason.startswith("cut") else "stop")
        elif isinstance(ev, Turn):
            self.turn(ev)
        elif isinstance(ev, Call):
            self.tool_span(ev.id, ev.tool)
        elif isinstance(ev, Result):
            self.result(ev)
        elif isinstance(ev, Handoff):
            self.handoff(ev)
        elif isinstance(ev, _STOPS):
            self.stop(ev)

    # -- generations -----------------------------------------------------------------------

    def open_chat(self) -> None:
        if self.chat is not None:
            return
        attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": "chat", "gen_ai.output.type": "json"}
        if self.agent is not None:
            attributes.update(model_attributes(self.agent.model))
            if self.agent.limits.max_tokens is not None:
                attributes["gen_ai.request.max_tokens"] = self.agent.limits.max_tokens
            for key in ("temperature", "top_p", "seed"):
                value = self.agent.generation.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    attributes[f"gen_ai.request.{key}"] = value
        model = attributes.get("gen_ai.request.model")
        self.chat = self.trace.open(f"chat {model}" if model else "chat", self.span, "client", self.resumed, attributes)
        self.text = []

    def count(self, usage: Usage) -> None:
        self.open_chat()
        assert self.chat is not None
        counts = (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens)
        for (key, total), n in zip(self.tokens.items(), counts):
            self.chat.attributes[key] = n
            self.tokens[key] = total + n

    def close_chat(self, finish: str, status: Literal["unset", "error"] = "unset", message: str = "") -> None:
        if self.chat is None:
            return
        self.chat.attributes["gen_ai.response.finish_reasons"] = [finish]
        if self.content and self.text:
            self.chat.attributes["gen_ai.output.messages"] = _messages("assistant", "".join(self.text), finish)
        if status == "error":
            self.chat.attributes["error.type"] = "engine"
        self.trace.end(self.chat, status, message)
        self.chat = None

    def turn(self, turn: Turn) -> None:
        self.close_chat("tool_calls" if turn.calls else "stop")
        self.calls = {c.id: c for c in turn.calls}
        group, previous = -1, None
        for call in turn.calls:
            if previous is None or not (self.parallel(previous) and self.parallel(call)):
                group += 1
            self.group[call.id], previous = group, call

    def parallel(self, call: Call) -> bool:
        return self.agent is not None and call.tool in self.agent.tool_names and self.agent.tool_named(call.tool).parallel

    # -- calls -----------------------------------------------------------------------------

    def tool_span(self, call_id: str, tool: str) -> Span:
        span = self.tools.get(call_id)
        if span is not None:
            return span
        group = self.group.get(call_id, -1 - len(self.tools))  # a call of a turn not seen (a resumed run): alone
        start = self.group_start.setdefault(group, self.resumed)
        attributes: dict[str, AttributeValue] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "gen_ai.tool.call.id": call_id, "gen_ai.tool.type": "function"}
        if self.agent is not None and tool in self.agent.tool_names:
            attributes["gen_ai.tool.description"] = self.agent.tool_named(tool).description
        call = self.calls.get(call_id)
        if self.content and call is not None:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(call.input, ensure_ascii=False)
        span = self.tools[call_id] = self.trace.open(f"execute_tool {tool}", self.span, "internal", start, attributes)
        return span

    def result(self, result: Result) -> None:
        span = self.tool_span(result.id, result.tool)
        if self.content:
            span.attributes["gen_ai.tool.call.result"] = result.text
        if result.repeat_of is not None:
            span.attributes["aerix.call.repeat_of"] = result.repeat_of
        sub = self.subruns.get(result.id)
        if sub is not None and not sub.stopped:
            sub.abandon("the calling run stopped the call before the sub-run's ending")
        if result.error:
            span.attributes["error.type"] = "tool_error"
        self.trace.end(span, "error" if result.error else "unset", (result.text if self.content else "the call failed") if result.error else "")

    def subrun(self, ev: SubagentEvent) -> None:
        sub = self.subruns.get(ev.call_id)
        if sub is None or sub.stopped:  # a durable call that runs again after an approval starts it anew
            span = self.tool_span(ev.call_id, ev.tool)
            call = self.calls.get(ev.call_id)
            task = call.input.get("task") if call is not None else None
            sub = self.subruns[ev.call_id] = RunSpans(self.trace, self.sub_agent(ev.tool), ev.agent, span, span.start_ns, task if isinstance(task, str) else None)
        sub.on(ev.event)

    def sub_agent(self, tool: str) -> Agent | None:
        from .subagents import agent_of

        if self.agent is None or tool not in self.agent.tool_names:
            return None
        return agent_of.get(self.agent.tool_named(tool))

    def handoff(self, ev: Handoff) -> None:
        self.span.attributes["aerix.handoff.target"] = ev.target
        if self.agent is not None:
            self.agent = next((a for a in self.agent.handoffs if a.name == ev.target), self.agent)

    # -- the stop --------------------------------------------------------------------------

    def stop(self, ev: Final | End | Waiting | Interrupted) -> None:
        self.stopped = True
        attributes = self.span.attributes
        attributes.update({k: v for k, v in self.tokens.items() if v or k != "gen_ai.usage.cache_read.input_tokens"})
        if isinstance(ev, End):
            if self.chat is None and ev.message.startswith("engine failed"):
                self.open_chat()  # the request failed before its first event
            self.close_chat("error", "error", ev.message)
            attributes["aerix.run.end_reason"] = attributes["error.type"] = ev.reason
            self.close_open(ev.message)
            self.trace.end(self.span, "error", ev.message)
            return
        self.close_chat("stop")
        attributes["aerix.run.end_reason"] = "final" if isinstance(ev, Final) else ev.type
        if isinstance(ev, Final) and self.content:
            attributes["gen_ai.output.messages"] = _messages("assistant", ev.text, "stop")
        self.close_open("the run stopped")
        self.trace.end(self.span)

    def close_open(self, why: str) -> None:
        for span in self.tools.values():
            self.trace.end(span, "error", why)
        for sub in self.subruns.values():
            if not sub.stopped:
                sub.abandon(why)

    def abandon(self, why: str) -> None:
        """End every span still open with an error: the run's events stopped before its stop."""
        self.stopped = True
        self.close_chat("error", "error", why)
        self.close_open(why)
        self.trace.end(self.span, "error", why)
