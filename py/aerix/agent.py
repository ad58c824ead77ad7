"""The Agent: a model, instructions and tools, and the conversation so far.

``run`` and ``ask`` drive the loop (``loop.py``) over the conversation; with a store every run
is durable and the lifecycle (``start``, ``resume``, ``approve``, ``recover``, ``interrupt``)
lives in ``durable.py``. This module checks what the developer gives and delegates.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, Callable, Sequence

from .agent_state import AgentState, state_tools as tools_for_state
from .artifacts import Artifact, ArtifactMemory, File, RunArtifacts, attachments_note, check_attachments, list_artifacts, not_found, read_artifact
from .durable import RunRecord, Runs
from .channels import Channel, check_channels
from .choose import choose as choose_among
from .compaction import Compaction, check_prompt_room
from .conversations import KeptConversation
from .errors import AerixError
from .events import End, Event, Final, Interrupted, Waiting
from .limits import Hooks, Limits, check_generation
from .loop import Loop, Memory
from .state import Conversation, LoopState
from .stores import Store, check_store
from .handoffs import active_agent, check_description, load_conversation, set_handoffs
from .tools import ContextKey, Tool, check_tools
from .trust import Invoker, ToolPolicy, TrustFlag, check_agent_trust, policy_refusal
from .output import Output
from .prefill import prefill as prefill_prompt
from .tracing import check_tracer, traced
from .turn import turn_schema
from .turn_format import TurnFormat

__all__ = ["Agent", "Answer"]

_CLEAN_UP_TICKS = 20  # event-loop turns a new run waits for an abandoned run's clean-up


@dataclass(frozen=True)
class Answer:
    """What ``Agent.ask`` returns: the final text, its thought, every event of the run, and
    with ``Agent(output=...)`` the answer as that model's instance (or the schema's JSON)."""

    text: str
    thought: str | None
    events: list[Event] = field(repr=False)
    output: Any = None


class Agent:
    """An agent: a model, instructions and tools, and the conversation so far.

    >>> agent = Agent(model=ScriptedModel(['{"thought": "", "final": "hi"}']))
    >>> (await agent.ask("hello")).text
    'hi'

    With ``store=`` (see :mod:`aerix.stores`) every run is durable: ``start``, ``resume``,
    ``approve`` and ``runs`` work on the runs kept there. ``name`` names the agent in
    permissions (``tool:<name>:<tool>``); ``tool_policy`` decides which tools an invoker may use;
    ``on_tainted`` what a guarded tool does once the conversation is tainted (see
    :mod:`aerix.trust`). ``channels`` are where tools send messages, each once per run
    (``ctx.channels.find_one(name).emit(body)``, see :mod:`aerix.channels`). ``compaction``:
    how the conversation is compacted once it outgrows ``Limits.context_tokens`` (``"model"``,
    ``"digest"``, a :class:`~aerix.compaction.Compaction`, or ``None``: never; see
    :mod:`aerix.compaction`). ``conversation_id`` (with a store): the conversation is kept there
    under this id, and a new Agent with the same id continues it (:mod:`aerix.conversations`).
    ``turn_format``: how a turn is written (a :class:`~aerix.turn_format.TurnFormat` or a dict).
    ``handoffs``: Agents the model may hand the conversation to (a ``handoff_<name>`` tool each,
    described by the target's ``description``; the run, and the next until ``reset()``, goes on
    under the target: :mod:`aerix.handoffs`). ``tracer``: traces its runs (:mod:`aerix.tracing`).
    """

    tools: tuple[Tool, ...]  # these six: made by the handoffs setter (handoffs.set_handoffs)
    system: str
    schema: dict[str, Any] | None
    handoff_tools: dict[str, Agent]  # tool name -> target
    _by_name: dict[str, Tool]
    _schemas: dict[frozenset[str], dict[str, Any]]  # turn schemas of narrowed tool sets

    def __init__(
        self,
        model: Any,
        instructions: str = "",
        tools: Sequence[Tool] = (),
        limits: Limits | dict[str, Any] | None = None,
        generation: dict[str, Any] | None = None,
        constrain: bool = True,
        hooks: Hooks | dict[str, Any] | None = None,
        *,
        store: Any = None,
        clock: Callable[[], float] | None = None,
        name: str | None = None,
        tool_policy: ToolPolicy | None = None,
        on_tainted: str = "approve",
        state: dict[str, Any] | None = None,
        state_tools: bool = False,
        context: dict[ContextKey, Any] | None = None,
        channels: Sequence[Channel] = (),
        output: Any = None,
        compaction: Compaction | str | dict[str, Any] | None = "model",
        conversation_id: str | None = None,
        turn_format: TurnFormat | dict[str, Any] | None = None,
        handoffs: Sequence[Agent] = (),
        description: str | None = None,
        tracer: Any = None,
    ) -> None:
        if not callable(getattr(model, "chat", None)):
            raise AerixError("options", f"model must have a chat(messages, options) method, got {type(model).__name__}")
        if not isinstance(instructions, str):
            raise AerixError("options", f"instructions must be a string, got {type(instructions).__name__}")
        check_tools(tools)
        self.limits = Limits.of(limits)
        self.compaction = Compaction.of(compaction)
        self.hooks = Hooks.of(hooks)
        self.generation = check_generation(generation)
        if not isinstance(constrain, bool):
            raise AerixError("options", f"constrain must be True or False, got {constrain!r}")
        if store is not None:
            check_store(store)  # every method, and save_run/put_effect with revision and holder
        if clock is not None and not callable(clock):
            raise AerixError("options", "clock must be a function returning seconds")
        self.named, name = name is not None, "agent" if name is None else name  # a handoff target needs a name
        check_agent_trust(name, tool_policy, on_tainted)
        self.name, self.tool_policy, self.on_tainted = name, tool_policy, on_tainted
        self.state = AgentState(name, state, store)  # agent.state and ctx.state (agent_state.py)
        self._own_tools = check_tools([*tools, *tools_for_state(self.state, state_tools)])
        self.description = check_description(description)
        self.context: dict[ContextKey, Any] = {}
        for key, value in (context or {}).items():
            self.provide(key, value)
        self.channels = check_channels(channels)  # name -> channel (channels.py)
        self.model, self.instructions, self.constrain, self.store = model, instructions, constrain, store
        self.artifact_store: Any = store if store is not None else ArtifactMemory()  # artifacts.py; bounded, in memory without a store
        self.clock, self.tracer = clock or time.time, check_tracer(tracer)
        self.output = Output.of(output)
        self.turn_format = TurnFormat.of(turn_format)
        self._runs = Runs(self, store) if store is not None else None
        self._running = False
        self._events: weakref.ref[Any] | None = None  # the event stream of the run going now
        self.draining = False
        self._conversation = Conversation([])
        self._kept: KeptConversation | None = None
        self.handoffs = handoffs
        if conversation_id is not None:
            self._kept = KeptConversation(store, name, conversation_id)  # conversations.py

    def __repr__(self) -> str:
        return f"Agent(tools={[t.name for t in self.tools]}, limits={self.limits!r}, constrain={self.constrain})"

    @property
    def messages(self) -> list[dict[str, str]]:
        """The conversation so far: exactly what the model was sent, plus its accepted replies."""
        return [dict(m) for m in self._conversation.messages]

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(self._by_name)

    def tool_named(self, name: str) -> Tool:
        return self._by_name[name]

    @property
    def handoffs(self) -> tuple[Agent, ...]:
        """The agents this one may hand the conversation to (:mod:`aerix.handoffs`); set them
        after the targets exist (to close a cycle), before this agent's first run."""
        return tuple(self.handoff_tools.values())

    @handoffs.setter
    def handoffs(self, targets: Sequence[Agent]) -> None:
        set_handoffs(self, targets)  # the tools, the system message, the turn schema, the conversation

    @property
    def active(self) -> Agent:
        """The agent the conversation is with: this one, or the handoff target it was handed to."""
        return active_agent(self, self._conversation) or self

    def as_tool(self, name: str, description: str, trust: dict[str, TrustFlag] | None = None, parallel: bool = False) -> Tool:
        """This agent as a tool for another: input ``{"task": str}``, result its final answer;
        ``trust`` and ``parallel`` as ``tool(...)`` takes them. Taint, durability and approvals
        cross between the two runs (see :mod:`aerix.subagents`)."""
        from .subagents import agent_tool

        return agent_tool(self, name, description, trust, parallel)

    def provide(self, key: ContextKey, value: Any) -> None:
        """Give tools and hooks ``value`` under ``key`` (``ctx.get(key)``), by reference: it is
        never stored, so a resumed run sees what the Agent that resumes it provides."""
        if not isinstance(key, ContextKey):
            raise AerixError("options", f"context keys are aerix.ContextKey objects, got {type(key).__name__}")
        self.context[key] = value

    async def schema_for(self, invoker: Invoker | None) -> dict[str, Any] | None:
        """The turn schema of a run by ``invoker``: only the tools the policy lets it use (the
        system message still lists every tool, so the conversation stays byte-stable). The
        policy is asked as before a call (``trust.policy_refusal``): awaited, and one that
        raises leaves the tool out."""
        if self.schema is None or self.tool_policy is None:
            return self.schema
        policy = self.tool_policy
        allowed = frozenset([t.name for t in self.tools if await policy_refusal(policy, self.name, t.name, invoker) is None])
        if allowed == self.tool_names:
            return self.schema
        if allowed not in self._schemas:
            self._schemas[allowed] = turn_schema([t for t in self.tools if t.name in allowed], self.output, self.turn_format)
        return self._schemas[allowed]

    def reset(self) -> None:
        """Forget the conversation (the system message stays: this agent's, after a handoff), and
        without a store the artifacts kept in memory (:mod:`aerix.artifacts`). A kept conversation
        (``conversation_id``) is forgotten in the store when the next run starts from this one."""
        self._claim_check("reset")
        self._conversation = Conversation([{"role": "system", "content": self.system}])
        if isinstance(self.artifact_store, ArtifactMemory):
            self.artifact_store.clear()  # the conversation that named them is gone
        if self._kept is not None:
            self._kept.loaded = True  # the next run starts from here, not from the store's

    async def load(self, messages: Sequence[dict[str, str]]) -> None:
        """Make ``messages`` (an export of :attr:`messages`) the conversation, checked: a
        ``{role, content}`` list that starts with this agent's system message (or a handoff
        target's it reaches: the conversation goes on with that one); anything else is
        ``AerixError(kind="options")`` naming what is wrong. With ``conversation_id`` it is kept
        in the store at once. See :mod:`aerix.conversations`."""
        self._claim_check("load")
        conversation = load_conversation(self, messages)
        if self._kept is not None:
            await self._kept.write(conversation, None)
        self._conversation = conversation

    async def reopen(self) -> list[dict[str, str]]:
        """Read the conversation kept under ``conversation_id`` (after a reload: a run does it
        too, when it starts) and return it, as :attr:`messages`."""
        if self._kept is None:
            raise AerixError("options", "reopen reads a kept conversation: give the Agent store=... and conversation_id=...")
        self._claim_check("reopen")
        self._conversation = await self._kept.read(self)
        return self.messages

    def run(
        self,
        prompt: str,
        signal: Any = None,
        *,
        run_id: str | None = None,
        idempotency_key: str | None = None,
        invoker: Invoker | dict[str, Any] | None = None,
        concurrency_key: str | None = None,
        attachments: Sequence[Any] | None = None,
        source: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """Continue the conversation with ``prompt``; an async iterator of events ending in one ending.

        ``invoker``: who starts the run (tools and hooks see it as ``ctx.invoker``). With a store
        the run is durable (``run_id``, ``idempotency_key`` and ``concurrency_key`` as in
        :meth:`start`). ``attachments``: files, ``(data, media_type, filename)`` tuples or dicts,
        kept as the run's first artifacts and listed to the model after the prompt
        (:mod:`aerix.artifacts`). ``source``: the channel the request came in on (``ctx.channels.source``).
        A prompt with no room in ``context_tokens`` is refused, ``options`` (:mod:`aerix.compaction`)."""
        _check_prompt(prompt)
        if source is not None and source not in self.channels:
            known = ", ".join(repr(n) for n in self.channels) or "none"
            raise AerixError("options", f"source {source!r} is not one of this agent's channels (known: {known})")
        files = check_attachments(attachments)
        prompt = attachments_note(prompt, files)
        who = Invoker.of(invoker)
        self._claim_check("run", abandoned_ok=True)
        if self._kept is None or self._kept.loaded:  # else once the run has read it (durable/lifecycle.py)
            check_prompt_room(self._conversation, prompt, self.active)  # the limits of the agent it goes to
        if self._runs is None:
            if run_id is not None or idempotency_key is not None or concurrency_key is not None:
                raise AerixError("options", "run_id, idempotency_key and concurrency_key need a durable run: give the Agent a store")
            return self._watch(self._run_in_memory(prompt, signal, who, files, source), prompt)
        _check_key(concurrency_key)
        return self._watch(self._runs.start_and_resume(prompt, signal, run_id, idempotency_key, who, concurrency_key, files, source), prompt)

    async def ask(self, prompt: str, signal: Any = None, *, invoker: Invoker | dict[str, Any] | None = None, attachments: Sequence[Any] | None = None) -> Answer:
        """Run to the ending. A final returns an :class:`Answer`; any other ending raises
        ``AerixError(kind="end")`` with its ``reason`` and ``events``."""
        return await _answer(self.run(prompt, signal, invoker=invoker, attachments=attachments), self)

    async def choose(self, question: str, options: Sequence[str], signal: Any = None, *, top_logprobs: int = 20) -> dict[str, float]:
        """The model's probability of each option as the answer to ``question``, from the
        engine's log-probabilities, normalised over the options (they sum to 1), e.g. to route a
        request to one of several agents. One generation apart from the conversation, which
        stays as it was; ``signal`` and ``Limits.timeout_s`` stop it. An engine without
        log-probabilities is an ``options`` error. See :mod:`aerix.choose` for the method."""
        return await choose_among(self, question, options, signal, top_logprobs)

    async def prefill(self, signal: Any = None) -> dict[str, int] | None:
        """The engine reads this agent's prompt so far now (call it while the person types), so the
        next run reads only its new message; its ``usage`` or ``None``. See :mod:`aerix.prefill`."""
        return await prefill_prompt(self, signal)

    async def artifact(self, artifact_id: str) -> tuple[Artifact, bytes]:
        """An artifact of any of this agent's runs and its bytes; a missing one is
        ``AerixError(kind="options", reason="artifact_not_found")``."""
        found = await read_artifact(self.artifact_store, artifact_id)
        if found is None:
            raise not_found(artifact_id, f"in {self.store!r}" if self.store is not None else "kept by this agent (without a store: its latest runs', since reset)")
        return found

    async def artifacts(self, run_id: str) -> list[Artifact]:
        """The artifacts of run ``run_id``, in put order (its attachments first)."""
        return await list_artifacts(self.artifact_store, run_id)

    async def drain(self) -> None:
        """Take no new run (each is ``busy`` from now on); the run going now stops at its next
        checkpoint (a durable one ``interrupted``, to resume later; one kept in memory ends
        ``abort``). Returns when no run is going."""
        self.draining = True
        while self._running:
            await asyncio.sleep(0.01)

    async def _run_in_memory(self, prompt: str, signal: Any, invoker: Invoker | None, files: list[File], source: str | None) -> AsyncGenerator[Event, None]:
        await self._claim()
        try:
            artifacts = RunArtifacts(self.artifact_store)  # the attachments first, then the prompt that lists them
            for made in await artifacts.attach(files):
                yield made
            self._conversation.add("user", prompt)
            async with aclosing(Loop(self, self._conversation, LoopState(), signal, Memory(), invoker, artifacts, source).events()) as events:
                async for ev in events:
                    yield ev
        finally:
            self._release()

    # -- durable runs (durable.py) ---------------------------------------------------------

    async def start(
        self,
        prompt: str,
        run_id: str | None = None,
        idempotency_key: str | None = None,
        *,
        invoker: Invoker | dict[str, Any] | None = None,
        concurrency_key: str | None = None,
    ) -> RunRecord:
        """Create a durable run (``queued``) or, for a known ``idempotency_key`` (of this
        invoker) or ``run_id``, find the existing one. ``resume`` runs it. Of the runs that share
        a ``concurrency_key`` at most one executes at a time in the store; another is refused
        ``busy`` (try it again later)."""
        _check_prompt(prompt)
        _check_key(concurrency_key)
        check_prompt_room(self._conversation, prompt, self.active)  # the limits of the agent it goes to
        return await self._durable().start(prompt, run_id, idempotency_key, Invoker.of(invoker), concurrency_key)

    def resume(self, run_id: str, signal: Any = None) -> AsyncGenerator[Event, None]:
        """Continue a durable run from its latest checkpoint; a run already ended yields its ending."""
        runs = self._durable()
        self._claim_check("resume", abandoned_ok=True)
        return self._watch(runs.resume(run_id, signal))

    def approve(
        self, run_id: str, approval_id: str, approved: bool, reason: str | None = None, signal: Any = None, *, approver: Invoker | dict[str, Any] | None = None
    ) -> AsyncGenerator[Event, None]:
        """Answer an approval (once; ``approver`` is recorded with the answer) and resume the
        run: the waiting call runs again from its start. An answer after the approval's
        deadline is recorded as ``approval timed out``: the call is denied."""
        runs = self._durable()
        who = Invoker.of(approver)
        self._claim_check("approve", abandoned_ok=True)
        if not isinstance(approved, bool):
            raise AerixError("options", f"approved must be True or False, got {approved!r}")
        return self._watch(runs.answer_and_resume(run_id, approval_id, approved, reason, signal, who))

    async def answer(self, run_id: str, approval_id: str, approved: bool, reason: str | None = None, *, approver: Invoker | dict[str, Any] | None = None) -> RunRecord:
        """Answer an approval as ``approve`` does, without continuing the run: it stays ``waiting``
        with its answer until an executor resumes it (``resume``, or a worker: :mod:`aerix.worker`)."""
        if not isinstance(approved, bool):
            raise AerixError("options", f"approved must be True or False, got {approved!r}")
        return await self._durable().answer(run_id, approval_id, approved, reason, Invoker.of(approver))

    async def get_run(self, run_id: str) -> RunRecord | None:
        return await self._durable().get(run_id)

    async def runs(self) -> list[RunRecord]:
        """Every run in the store, oldest first."""
        return await self._durable().all()

    async def recover(self) -> list[RunRecord]:
        """At start-up: runs left ``running`` by a page or process that went away are marked
        ``interrupted``; returns the runs that can be resumed (interrupted and waiting)."""
        return await self._durable().recover()

    async def interrupt(self) -> None:
        """Mark the run going now ``interrupted`` (a page calls this when it is hidden or unloaded)."""
        if self._runs is not None:
            await self._runs.interrupt()

    # -- small things --------------------------------------------------------------------

    def _claim_check(self, what: str, abandoned_ok: bool = False) -> None:
        """Raise ``busy`` while draining or a run is going. With ``abandoned_ok``, a run whose event stream its consumer dropped
        (``break`` out of ``async for``) does not count: its clean-up is scheduled, and the new run waits for it (:meth:`_claim`)."""
        if self.draining and what != "reset":
            raise AerixError("busy", f"cannot {what}: this agent is draining and takes no new run")
        abandoned = self._events is not None and self._events() is None
        if self._running and not (abandoned_ok and abandoned):
            raise AerixError("busy", f"cannot {what}: this agent is already running; wait for its ending or abort it")

    def _watch(self, events: AsyncGenerator[Event, None], prompt: str | None = None) -> AsyncGenerator[Event, None]:
        self._events = weakref.ref(events := traced(self, events, prompt))  # the same events without a tracer
        return events

    async def _claim(self) -> None:
        for _ in range(_CLEAN_UP_TICKS):  # let an abandoned run's scheduled clean-up finish
            if not self._running:
                break
            await asyncio.sleep(0)
        self._claim_check("run")
        self._running = True

    def _release(self) -> None:
        self._running = False

    def _durable(self) -> Runs:
        if self._runs is None:
            raise AerixError("options", "durable runs need a store: Agent(..., store=MemoryStore()) or another aerix.stores store")
        return self._runs


async def _answer(stream: AsyncGenerator[Event, None], agent: Agent) -> Answer:
    async with aclosing(stream) as s:
        events: list[Event] = [ev async for ev in s]
    last = events[-1]
    if isinstance(last, Final):
        output = agent.active.output  # the answer's agent's: a handoff target's, after a handoff
        value = None if output is None or last.output is None else output.revive(last.output)
        return Answer(last.text, last.thought, events, value)
    if isinstance(last, Waiting):
        raise AerixError("end", f"the run is waiting for approval {last.approval_id}: {last.title}", reason="waiting", events=events)
    if isinstance(last, Interrupted):
        raise AerixError("end", f"the run was interrupted: {last.message}", reason="interrupted", events=events)
    assert isinstance(last, End)
    raise AerixError("end", f"the run ended without an answer ({last.reason}): {last.message}", reason=last.reason, events=events)


def _check_key(key: Any) -> None:
    if key is not None and (not isinstance(key, str) or not key):
        raise AerixError("options", f"concurrency_key must be a non-empty string or None, got {key!r}")


def _check_prompt(prompt: Any) -> None:
    if not isinstance(prompt, str) or not prompt.strip():
        raise AerixError("options", f"prompt must be a non-empty string, got {prompt!r}")
