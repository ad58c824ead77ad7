"""What a run holds between its phases: the conversation and the loop's state.

With the conversation, :class:`LoopState` is exactly what a durable run's checkpoint holds
(``durable.py`` writes and restores it); :class:`Pending` is the accepted turn whose final or
calls are not finished, built from the ``turn``, ``call`` and ``result`` events;
:class:`Measured` is the engine's own count of the conversation, which compaction sizes the
next prompt from (``compaction.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .events import Call, Result, Turn
from .turn import neutralise, results_message
from .turn_format import TurnFormat

__all__ = ["CallsSeen", "Conversation", "LoopState", "Measured", "Pending", "utf8_size"]


@dataclass(frozen=True)
class Measured:
    """The engine's count of the conversation at its latest generation: the first ``messages``
    messages came to ``tokens`` prompt tokens (``usage.prompt_tokens``), ``bytes_per_token``
    bytes of their text (UTF-8) per token: the rate at which what came after is estimated."""

    messages: int
    tokens: int
    bytes_per_token: float

    def to_list(self) -> list[Any]:
        return [self.messages, self.tokens, self.bytes_per_token]


@dataclass
class Conversation:
    """The messages the model is sent, append-only, and the count that names the next call.

    A user message (a prompt, results, a note) has its chat-template control tokens broken
    (``turn.neutralise``), so no text from outside can forge a turn; an assistant turn is kept
    exactly as generated. ``taint`` is where content from outside first came in
    (``{"source": tool, "at": call id}``), or ``None``: it stays until ``Agent.reset()``.
    ``measured``: the engine's latest count of it, or ``None`` before one. The one change that is
    not an append is compaction (:meth:`compact`), after which it is append-only again; a
    handoff replaces the system message (``handoffs.py``). ``agent``: the name of the handoff
    target the conversation was handed to, whose system message it starts with (``None``: the
    Agent's own); kept only when set."""

    messages: list[dict[str, str]]
    calls_made: int = 0
    taint: dict[str, str] | None = None
    measured: Measured | None = None
    agent: str | None = None

    def add(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content if role == "assistant" else neutralise(content)})

    def new_call_id(self) -> str:
        self.calls_made += 1
        return f"call_{self.calls_made}"

    def measure(self, sent: int, prompt_tokens: int) -> None:
        """The engine counted the first ``sent`` messages as ``prompt_tokens`` (0: it did not say)."""
        if prompt_tokens > 0:
            size = sum(utf8_size(m["content"]) for m in self.messages[:sent])
            # the template's own tokens make the rate lower than the text's; beyond these bounds
            # the count is not of prose or JSON, and an estimate from it would mislead
            self.measured = Measured(sent, prompt_tokens, min(max(size / prompt_tokens, 0.5), 8.0))

    def compact(self, cut: int, summary: str) -> None:
        """Replace messages ``1 .. cut-1`` (everything between the system message and
        ``messages[cut]``) with one user message ``summary``. The engine's count no longer
        holds; its bytes per token still do."""
        self.messages[1:cut] = [{"role": "user", "content": neutralise(summary)}]
        if self.measured is not None:
            self.measured = Measured(0, 0, self.measured.bytes_per_token)

    def copy(self) -> Conversation:
        return Conversation([dict(m) for m in self.messages], self.calls_made, None if self.taint is None else dict(self.taint), self.measured, self.agent)

    def to_dict(self) -> dict[str, Any]:
        """As a checkpoint holds it: ``messages``, ``calls_made``, ``taint``, ``measured``, and
        ``agent`` when set."""
        measured = None if self.measured is None else self.measured.to_list()
        agent = {} if self.agent is None else {"agent": self.agent}
        return {"messages": [dict(m) for m in self.messages], "calls_made": self.calls_made, "taint": self.taint, "measured": measured, **agent}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Conversation:
        """From :meth:`to_dict` (a checkpoint); ``measured`` and ``agent`` are optional (older checkpoints)."""
        m: Any = data.get("measured")
        numbers = isinstance(m, list) and len(m) == 3 and all(isinstance(n, (int, float)) and not isinstance(n, bool) and n >= 0 for n in m)
        measured = Measured(int(m[0]), int(m[1]), float(m[2])) if numbers and m[2] > 0 else None  # only a help: one that does not read is dropped
        agent = data.get("agent")
        return cls([dict(x) for x in data["messages"]], data["calls_made"], data.get("taint"), measured, agent if isinstance(agent, str) else None)


def utf8_size(text: str) -> int:
    """The bytes of ``text`` in UTF-8 (a lone surrogate counts its three bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass
class Pending:
    """An accepted turn whose final or calls are not finished: its ``turn`` event, its final
    text (``None`` for calls), the results so far, in call order, and the ``note`` its results
    message carries (the calls the turn dropped, ``TurnFormat.duplicate_calls``)."""

    turn: Turn
    final: str | None
    results: list[Result] = field(default_factory=list)
    output: Any = None  # with structured output: the final answer as plain JSON
    note: str | None = None

    @property
    def calls_left(self) -> tuple[Call, ...]:
        return self.turn.calls[len(self.results) :]

    def results_message(self, turn_format: TurnFormat | None = None) -> str:
        return results_message([(r.id, r.tool, r.text) for r in self.results], self.note, turn_format)

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn.turn,
            "thought": self.turn.thought,
            "final": self.final,
            "calls": [{"id": c.id, "tool": c.tool, "input": c.input} for c in self.turn.calls],
            "results": [[r.id, r.tool, r.text, r.error] for r in self.results],
            **({} if self.output is None else {"output": self.output}),
            **({} if self.note is None else {"note": self.note}),
            **({"dropped": list(self.turn.dropped)} if self.turn.dropped else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pending:
        calls = tuple(Call(c["id"], c["tool"], c["input"]) for c in data["calls"])
        results = [Result(i, t, text, error) for i, t, text, error in data["results"]]
        turn = Turn(data["turn"], data["thought"], calls, tuple(data.get("dropped", ())))
        return cls(turn, data["final"], results, data.get("output"), data.get("note"))


@dataclass
class CallsSeen:
    """The run's calls as the repeat guard sees them (``calls.py``, ``Limits.repeat_calls``):
    the key of the latest call and how many calls in a row had it, and for each key whose call
    succeeded, that call's id and result text as the model saw it."""

    answered: dict[str, tuple[str, str]] = field(default_factory=dict)
    last: str | None = None
    in_row: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"answered": {k: list(v) for k, v in self.answered.items()}, "last": self.last, "in_row": self.in_row}

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> CallsSeen:
        if data is None:  # a checkpoint written before the guard
            return cls()
        return cls({k: (i, text) for k, (i, text) in data["answered"].items()}, data["last"], data["in_row"])


@dataclass
class LoopState:
    """The loop's counters, the calls seen and the pending turn: with the conversation, what a
    checkpoint holds. ``subruns``: call id -> the checkpoint of the ``as_tool`` sub-run that call
    has going (``subagents.py``), kept while the call runs, each replaced whole, never changed in
    place; a checkpoint holds it only when not empty."""

    generations: int = 0
    refused_in_row: int = 0
    tokens: int = 0
    elapsed_s: float = 0.0
    pending: Pending | None = None
    seen: CallsSeen = field(default_factory=CallsSeen)
    subruns: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "generations": self.generations,
            "refused_in_row": self.refused_in_row,
            "tokens": self.tokens,
            "elapsed_s": self.elapsed_s,
            "pending": None if self.pending is None else self.pending.to_dict(),
            "calls_seen": self.seen.to_dict(),
            **({"subruns": dict(self.subruns)} if self.subruns else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LoopState:
        pending = None if data["pending"] is None else Pending.from_dict(data["pending"])
        subruns = dict(data.get("subruns") or {})
        return cls(data["generations"], data["refused_in_row"], data["tokens"], data["elapsed_s"], pending, CallsSeen.from_dict(data.get("calls_seen")), subruns)
