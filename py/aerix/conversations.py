"""Conversations from outside a run: the one a durable Agent keeps under its ``conversation_id``,
and an exported one given back to ``Agent.load``.

    agent = Agent(model=model, store=store, conversation_id="chat-1")
    await agent.reopen()                   # after a reload: the conversation as the store has it
    await agent.ask("And tomorrow?")       # continues it (each run also reads it, if not yet read)
    saved = agent.messages                 # an export: plain {role, content} dicts
    await other.load(saved)                # checked, then this agent's conversation

**Kept conversations.** The store keeps, through its state methods (``Store.put_state``, under
the key ``conversation:<agent name>/<conversation id>``, which no agent name can take), a small
record: the conversation as it was when its latest run started, and that run's id. The
conversation now is that run's latest checkpoint (so a run that crashed keeps what it had done,
and a compacted conversation stays compacted), or the record's own messages when the run has
none. A turn whose calls the run did not finish gets ``cancelled`` results, so the conversation
goes on whole; the run itself can still be resumed. Every run that starts from the agent's
conversation writes the record first; the conversation follows the run started last.

**Loading.** ``load`` checks the messages (a list of ``{role, content}`` strings, the first this
agent's system message, then ``user`` and ``assistant`` only, not ending in calls without their
results) and raises ``AerixError(kind="options")`` naming what is wrong. Text from outside has
its chat-template control tokens broken, as every prompt does. An export does not carry its
taint: a loaded conversation that holds tool calls, or a compaction's summary or digest (which
may stand for tool results, a tainted page among them), counts as tainted (``source``
``"load"``). A kept conversation keeps its taint (in its record and its run's checkpoint).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from .compaction import COMPACTED_HEAD, SUMMARY_ASK, reply_object
from .durable.book import use_store
from .durable.record import RunRecord
from .errors import AerixError
from .handoffs import active_agent
from .state import Conversation, Pending
from .turn import neutralise, results_message
from .turn_format import TurnFormat

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["KeptConversation", "VERSION", "conversation_from", "transcript"]

VERSION = 1
_ID = re.compile(r"^[^\x00-\x1f]{1,200}$")
_CALL_ID = re.compile(r"\bcall_(\d+)\b")


class KeptConversation:
    """One agent's conversation ``conversation_id`` in ``store``; ``loaded`` once this Agent has
    read it, written it or started afresh (``reset``), so a run does not read it again."""

    def __init__(self, store: Any, agent: str, conversation_id: Any) -> None:
        if store is None:
            raise AerixError("options", "conversation_id keeps the conversation in a store: give the Agent store=...")
        if not isinstance(conversation_id, str) or not _ID.fullmatch(conversation_id):
            raise AerixError("options", f"conversation_id must be a string of 1 to 200 characters, no control characters, got {conversation_id!r}")
        self.store, self.id = store, conversation_id
        self.key = f"conversation:{agent}/{conversation_id}"
        self.loaded = False

    def __repr__(self) -> str:
        return f"KeptConversation({self.id!r})"

    async def read(self, home: Agent) -> Conversation:
        """The conversation as the store has it (only ``home``'s system message if it has none
        yet); it is ``home``'s, or a handoff target's that ``home`` reaches (``handoffs.py``)."""
        record = await use_store("get_state", lambda: self.store.get_state(self.key), (dict, type(None)))
        if record is None:
            conversation = Conversation([{"role": "system", "content": home.system}])
        else:
            conversation = await self._latest(record, home.turn_format)
            if conversation.agent is not None and active_agent(home, conversation) is None:
                raise AerixError("options", f"conversation {self.id!r} was handed to the agent {conversation.agent!r}, which the handoffs of {home.name!r} do not reach (or it has other instructions or tools)")
            if active_agent(home, conversation) is None:
                raise AerixError("options", f"conversation {self.id!r} was kept by an agent with other instructions or tools (or turn format); continue it with the same ones")
        self.loaded = True
        return conversation

    async def write(self, conversation: Conversation, run_id: str | None) -> None:
        """Keep ``conversation`` as it is when run ``run_id`` starts (``None``: no run, a load)."""
        record = {"version": VERSION, **conversation.to_dict(), "run_id": run_id}
        await use_store("put_state", lambda: self.store.put_state(self.key, record))
        self.loaded = True

    async def _latest(self, record: dict[str, Any], turn_format: TurnFormat) -> Conversation:
        why = _unreadable(record)
        if why is not None:
            raise AerixError("store", f"conversation {self.id!r} does not read: {why}")
        run_id = record.get("run_id")
        data = None if run_id is None else await use_store("get_run", lambda: self.store.get_run(run_id), (dict, type(None)))
        try:
            checkpoint = None if data is None else RunRecord.from_dict(data).checkpoint
        except AerixError:
            checkpoint = None  # a corrupt run (listed as such by runs()): the conversation before it
        if checkpoint is None:
            return Conversation.from_dict(record)
        conversation = Conversation.from_dict(checkpoint)
        pending = checkpoint.get("pending")
        if pending is not None and pending.get("final") is None:
            _close(conversation, Pending.from_dict(pending), turn_format)
        return conversation


def _close(conversation: Conversation, pending: Pending, turn_format: TurnFormat) -> None:
    """Feed back the results of a turn its run did not finish: those it had, ``cancelled`` for the rest."""
    done = [(r.id, r.tool, r.text) for r in pending.results]
    left = [(c.id, c.tool, "cancelled: the run stopped before this call ran (resuming the run still can)") for c in pending.calls_left]
    conversation.add("user", results_message(done + left, pending.note, turn_format))


def _unreadable(record: dict[str, Any]) -> str | None:
    if record.get("version") != VERSION:
        return f"version {record.get('version')!r} (this aerix reads version {VERSION})"
    if not isinstance(record.get("run_id"), (str, type(None))) or not isinstance(record.get("calls_made"), int):
        return "it needs 'run_id' (a string or null) and 'calls_made'"
    taint = record.get("taint")
    if taint is not None and not (isinstance(taint, dict) and all(isinstance(taint.get(k), str) for k in ("source", "at"))):
        return "its 'taint' is not null or {source, at}"
    return _bad_messages(record.get("messages"))


def _bad_messages(messages: Any) -> str | None:
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            return f"message {i} is a {type(m).__name__}, not a {{role, content}} object"
        extra = sorted(set(m) - {"role", "content"})
        if extra:
            return f"message {i} has unknown key(s) {extra}; a message is {{role, content}}"
        if not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            return f"message {i} needs 'role' and 'content' strings"
        expected = ("system",) if i == 0 else ("user", "assistant")
        if m["role"] not in expected:
            return f"message {i} has role {m['role']!r}; " + ("the first is the system message" if i == 0 else "after the system message come 'user' and 'assistant'")
    return None


def conversation_from(messages: Any, system: str) -> Conversation:
    """An exported conversation (``Agent.messages``) as this agent's, checked; ``AerixError(kind="options")``
    naming what is wrong."""
    why = _bad_messages(messages)
    if why is None and messages[0]["content"] != system:
        why = "message 0 is not this agent's system message (it was exported by an agent with other instructions or tools)"
    if why is None and messages[-1]["role"] == "assistant" and isinstance(_calls_of(messages[-1]["content"]), list):
        why = f"message {len(messages) - 1} is a turn of calls with no results after it (the conversation was exported mid-run)"
    if why is not None:
        raise AerixError("options", f"cannot load the conversation: {why}")
    conversation = Conversation([dict(messages[0])])
    for m in messages[1:]:
        conversation.messages.append({"role": m["role"], "content": neutralise(m["content"])})
    ids = [int(n) for m in messages[1:] for n in _CALL_ID.findall(m["content"])]
    conversation.calls_made = max(ids, default=0)  # new calls get new ids
    replies = [m for m in messages if m["role"] == "assistant"]
    compacted = any(m["role"] == "user" and m["content"].startswith(COMPACTED_HEAD) for m in messages[1:])
    if compacted or any(isinstance(_calls_of(m["content"]), list) for m in replies):
        conversation.taint = {"source": "load", "at": "load"}
    return conversation


def _calls_of(text: str) -> Any:
    return reply_object(text).get("calls")


def transcript(messages: list[dict[str, str]]) -> list[dict[str, Any]]:
    """A conversation as a person reads it (a chat UI after a reload): the user's prompts and the
    final answers, ``{role, text}`` (an answer that is an object also as ``output``). Left out: the
    system message, the turns that call tools and the results that answer them, the loop's notes to
    the model, and a compaction's summary (and its request), which stand for earlier turns."""
    out: list[dict[str, Any]] = []
    for m in messages[1:]:
        content = m["content"]
        if m["role"] == "assistant":
            turn = reply_object(content)
            if "final" in turn:
                final = turn["final"]
                out.append({"role": "assistant", "text": final} if isinstance(final, str) else {"role": "assistant", "text": json.dumps(final, ensure_ascii=False), "output": final})
            continue
        if content == SUMMARY_ASK or content.startswith((COMPACTED_HEAD, _NOTE)) or "results" in reply_object(content):
            continue
        out.append({"role": "user", "text": content})
    return out


_NOTE = "Your last turn was "  # turn.refused_note and turn.cut_note
