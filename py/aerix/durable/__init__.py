"""Durable runs, in one place: the record a store keeps, the checkpoints the loop writes into
it, effects recorded once, approvals, and the lifecycle (start, resume, approve, recover,
interrupt) that ``Agent`` delegates to.

The package: ``record.py`` (the record), ``book.py`` (what the loop writes), ``lifecycle.py``
(what ``Agent`` delegates). A run record is plain JSON data (it crosses into IndexedDB unchanged):

    version      the record format, 1; a record of another version, or one that does not read
                 as a record (or that the store could not decode: ``{"id", "corrupt"}``), is
                 listed with status ``corrupt`` (and ``error`` saying why)
    revision     how many times it was saved (a record without one: 0); a save is refused unless
                 the store still holds the revision it was read at (``book.save_record``)
    agent        the name of the Agent that started it (None in records from before): another
                 Agent name may not resume or answer it
    id, status, prompt, idempotency_key, created_at, updated_at,
    invoker      who started the run (``Invoker.to_dict()``), or None; an invoker's idempotency
                 keys are kept as ``<kind>:<id>/<key>`` (``lifecycle.scoped_key``), so another
                 invoker's same key is another run
    concurrency_key, source   as given to ``start``/``run`` (or None)
    conversation_id   the kept conversation the run continues (``Agent(conversation_id=...)``), or None
    checkpoint   {messages, calls_made, taint, measured, generations, refused_in_row, tokens,
                 elapsed_s, pending, calls_seen}: the conversation and the loop's state after its
                 last generation, tool result or compaction (None: not started); ``pending`` is
                 ``state.Pending.to_dict()``, ``measured`` the engine's count (``state.Measured``),
                 ``calls_seen`` ``state.CallsSeen.to_dict()`` (the repeat guard's memory; a
                 checkpoint without it reads as a run with none); while an ``as_tool`` call
                 runs, also ``subruns`` {call id: its sub-run's checkpoint} (``subagents.py``);
                 after a handoff, ``agent``: the name of the target the run goes on under
                 (``handoffs.py``; absent: the Agent itself)
    ending       the ending event as a dict, once the run has ended
    approvals    approval id -> {id, call_id, title, body, created_at, timeout_s, decision};
                 decision {approved, reason, approver, answered_at}: an answer after
                 ``created_at + timeout_s`` is recorded as ``approval timed out``, a denial

Statuses: ``queued`` (created, not started), ``running``, ``waiting`` (an approval is pending),
``interrupted`` (its page went away mid-run), and the ended ``completed`` (a final answer),
``failed`` (ended turns, retries, error, timeout, tokens or loop) and ``cancelled`` (aborted).

A store that fails (raises) inside a run ends the run ``error`` with ``store failed: ...``; the
record keeps its last checkpoint, so once the store works again ``recover`` offers the run. Outside
a run, and for a record that cannot be read, the failure is ``AerixError(kind="store")``.
"""

from __future__ import annotations

from ..tools import Decision
from .book import Durable, default_effect_key, use_store
from .lifecycle import Runs
from .record import ENDED, VERSION, RunRecord, RunStatus, status_of_ending

__all__ = ["ENDED", "VERSION", "Decision", "Durable", "RunRecord", "RunStatus", "Runs", "default_effect_key", "status_of_ending", "use_store"]
