"""Compaction: a conversation that outgrows the engine's context goes on, its oldest turns
replaced by one summary message.

    agent = Agent(model=model, limits=Limits(context_tokens=4096))       # compaction="model"
    agent = Agent(model=model, limits=Limits(context_tokens=4096), compaction=Compaction(method="digest", keep_turns=3))

The loop's compact phase (between limits and generate) sizes the next prompt: the engine's own
count of the conversation at its latest generation (``usage.prompt_tokens``), plus what came
after at the bytes per token that count shows, less 20 % (before the engine's first count, 2
bytes per token). When the prompt would leave less than ``Limits.max_tokens`` of
``Limits.context_tokens``, the conversation is compacted at a turn boundary:

- **kept verbatim**: the system message, and the last ``keep_turns`` turns (a turn is one reply
  of the model with what followed it: its calls' results, a note, the next prompt), with the
  prompt that led to the first of them unless that would part a call from its result. Fewer
  turns when those leave no room, the last one at least; for the model's summary, more when its
  request would not fit otherwise.
- **replaced** by one user message: every older message, an earlier summary included. With
  ``method="model"`` the model writes the summary in one generation under
  :data:`SUMMARY_SCHEMA`, asked after the conversation's own first messages (so the engine
  reuses its cache) with every message it replaces in its input, the user's included; it counts
  in the run's tokens and timeout (its ``usage`` event comes before ``compact``), not in its
  turns. With ``method="digest"``, or when the summary fails, is cut (it stopped at its cap, or
  ran past it: the engine counted more tokens than the cap or, counting none, its text is
  longer than the cap at 8 bytes a token) or does not read, a deterministic digest
  (:func:`digest`): every user message verbatim, calls, results and answers shortened or, when
  even that does not fit, left out (then the ``compact`` event says ``method: "digest"`` and
  why, in ``note``).

From there the conversation is append-only again, so the engine's prefix cache works after one
generation. When no cut can make room the run ends ``context``; before the engine has counted
anything, the generation goes ahead instead (the estimate may be wrong: the engine decides).
"""

from __future__ import annotations

import json
import math
import re
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncGenerator, Iterable, Literal

from .errors import AerixError, describe
from .events import Compacted, End, Event, Usage
from .state import Conversation, utf8_size
from .streams import Stream, usage_of
from .turn import nests_too_deep

if TYPE_CHECKING:
    from .limits import Limits
    from .loop import Loop

__all__ = ["BYTES_PER_TOKEN", "COMPACTED_HEAD", "Compaction", "SUMMARY_ASK", "SUMMARY_SCHEMA", "compact", "digest", "estimate", "prompt_tokens", "reply_object"]

BYTES_PER_TOKEN = 2.0  # before the engine's first count: fewer than prose or JSON take in common tokenizers
_MARGIN = 0.8  # what the engine has not counted yet is taken at 80 % of its measured bytes per token
_PER_MESSAGE = 8  # the chat template's own tokens around a message
_MAX_BYTES_PER_TOKEN = 8  # the most bytes of text a token is taken to hold (state.Conversation.measure's bound too)
_DETAIL = (400, 100, 0)  # a digest's characters per input, result and answer (0: none): the first that fits

SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
    "additionalProperties": False,
}
"""The constraint of the summary generation: one JSON object ``{"summary": text}``."""

SUMMARY_ASK = (
    "Summarize the conversation so far, to stand in for it: what the user asked (the latest request in their "
    'words), what you did and found that still matters, your answers, what is open. Answer {"summary": "..."}.'
)
"""The user message that asks for the summary, after the messages it replaces."""

# the start of the message that stands for the compacted turns (conversations.transcript skips it)
COMPACTED_HEAD = _HEAD = "Earlier in this conversation (compacted to make room): "
_SUMMARY_HEAD = _HEAD + "your summary of it.\n\n"
_DIGEST_HEAD = _HEAD + 'a digest, a JSON object a line ("length": the characters before it was shortened).\n\n'
_NOTE = re.compile(r"Your last turn was (refused \(.*\)\. Answer with one JSON object that follows the turn contract|cut off at \d+ tokens before it ended\. Write a shorter turn)\.", re.S)

Method = Literal["model", "digest"]


@dataclass(frozen=True, kw_only=True)
class Compaction:
    """How a conversation is compacted once it outgrows ``Limits.context_tokens``.

    - ``method``: ``"model"`` (the model summarises; the digest stands in when that fails) or
      ``"digest"`` (deterministic, no generation).
    - ``keep_turns``: the last turns kept verbatim (fewer when they leave no room).
    - ``summary_tokens``: the cap of the summary generation; ``None``: ``Limits.max_tokens``, at
      most a quarter of ``context_tokens``.

    ``Agent(compaction=...)`` also takes ``"model"``, ``"digest"`` (the defaults otherwise), a
    dict of these fields, or ``None`` (never compact). The default is ``"model"``.
    """

    method: Method = "model"
    keep_turns: int = 2
    summary_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.method not in ("model", "digest"):
            raise AerixError("options", f"Compaction.method must be 'model' or 'digest', got {self.method!r}")
        for name, optional in (("keep_turns", False), ("summary_tokens", True)):
            value = getattr(self, name)
            if not (value is None and optional) and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise AerixError("options", f"Compaction.{name} must be an integer >= 1{' or None' if optional else ''}, got {value!r}")

    @classmethod
    def of(cls, value: Any) -> Compaction | None:
        """A ``Compaction`` from itself, ``"model"``, ``"digest"``, a dict of its fields, or ``None``."""
        if value is None or isinstance(value, cls):
            return value
        if value in ("model", "digest"):
            return cls(method=value)
        if not isinstance(value, dict):
            raise AerixError("options", f"compaction must be 'model', 'digest', None, a Compaction or a dict, got {value!r}")
        from .limits import _known_keys

        return cls(**_known_keys("Compaction", cls, value))

    def summary_cap(self, limits: Limits) -> int:
        assert limits.context_tokens is not None
        return self.summary_tokens or max(1, min(limits.max_tokens, limits.context_tokens // 4))


# -- sizes -------------------------------------------------------------------------------------


def estimate(messages: list[dict[str, str]], bytes_per_token: float = BYTES_PER_TOKEN) -> int:
    """Tokens ``messages`` take in a prompt, estimated at ``bytes_per_token``."""
    return sum(math.ceil(utf8_size(m["content"]) / bytes_per_token) + _PER_MESSAGE for m in messages)


def prompt_tokens(conversation: Conversation) -> int:
    """The next prompt's tokens: the engine's latest count, and an estimate of what came after."""
    m = conversation.measured
    if m is None:
        return estimate(conversation.messages)
    return m.tokens + estimate(conversation.messages[m.messages :], _rate(conversation))


def _span(conversation: Conversation, start: int, end: int) -> int:
    """The tokens of ``messages[start:end]`` in a prompt: what the engine counted at its measured
    bytes per token, what came after as :func:`prompt_tokens` estimates it."""
    m, messages = conversation.measured, conversation.messages
    split = start if m is None else min(max(m.messages, start), end)
    counted = 0 if m is None else estimate(messages[start:split], m.bytes_per_token)
    return counted + estimate(messages[split:end], _rate(conversation))


def _prefix_tokens(conversation: Conversation, cut: int) -> int:
    """The tokens of the first ``cut`` messages: the engine's count less what it counted after
    them (at its measured rate: a central estimate, for the summary request, whose failure
    only costs the digest), or an estimate past the count."""
    m, messages = conversation.measured, conversation.messages
    if m is None or m.messages == 0:
        return estimate(messages[:cut], _rate(conversation))
    if cut <= m.messages:
        return max(0, m.tokens - estimate(messages[cut : m.messages], m.bytes_per_token))
    return m.tokens + estimate(messages[m.messages : cut], _rate(conversation))


def _rate(conversation: Conversation) -> float:
    m = conversation.measured
    return BYTES_PER_TOKEN if m is None else m.bytes_per_token * _MARGIN


# -- the phase ---------------------------------------------------------------------------------


async def compact(loop: Loop) -> AsyncGenerator[Event, None]:
    """The compact phase: nothing while the next prompt leaves room; else compact (the summary's
    ``usage``, then ``compact``), checkpoint, or stop ``context``."""
    how, limits, conv = loop.agent.compaction, loop.limits, loop.conversation
    window = limits.context_tokens
    if how is None or window is None:
        return
    before = prompt_tokens(conv)
    if before + limits.max_tokens <= window:
        return
    fixed = _span(conv, 0, 1) + limits.max_tokens  # the system message and the reply
    made: tuple[int, str] | None = None  # the cut and the summary message
    method: Method = "model"
    note = None
    if how.method == "model":
        plan = _summary_plan(conv, how, limits, fixed)
        if isinstance(plan, str):
            note = plan
        else:
            cut, cap = plan
            async with aclosing(_summarize(loop, conv.messages[:cut], cap)) as steps:
                async for step in steps:
                    if isinstance(step, Usage):
                        yield step
                    else:
                        summary, note = step
                        made = None if summary is None else (cut, _SUMMARY_HEAD + summary)
            if loop.stop is not None:
                return
    if made is None:
        cuts = _cuts(conv.messages, range(how.keep_turns, 0, -1))
        method, made = "digest", _digest_that_fits(conv, cuts, window - fixed)
    if made is None:
        if conv.measured is not None:  # the engine's count, not a guess, says it cannot fit
            loop.stop = End("context", _no_room(before, limits))
        return
    cut, text = made
    dropped = sum(1 for m in conv.messages[1:cut] if m["role"] == "assistant")
    after = fixed - limits.max_tokens + estimate([_head(text)], _rate(conv)) + _span(conv, cut, len(conv.messages))
    conv.compact(cut, text)
    await loop.checkpoint()
    yield Compacted(dropped, before, after, method, note)


def _no_room(before: int, limits: Limits) -> str:
    return (
        f"the conversation does not fit in the context: its prompt takes about {before} tokens and the reply "
        f"{limits.max_tokens} of {limits.context_tokens}, and compaction cannot make room (the last turn alone is too long)"
    )


def _summary_plan(conv: Conversation, how: Compaction, limits: Limits, fixed: int) -> tuple[int, int] | str:
    """Where to cut for the model's summary, and its cap: keeping ``keep_turns`` turns, else
    fewer, else more, the first cut where the summary fits both in its request (the messages
    before the cut and the ask) and in the compacted prompt, at a quarter of its cap at least;
    or why no cut does."""
    window, cap, rate = limits.context_tokens, how.summary_cap(limits), _rate(conv)
    assert window is not None
    replies = sum(1 for m in conv.messages if m["role"] == "assistant")
    order = [*range(how.keep_turns, 0, -1), *range(how.keep_turns + 1, replies)]
    head, ask = estimate([_head(_SUMMARY_HEAD)], rate), estimate([_ask()], rate)
    for cut in _cuts(conv.messages, order):
        in_prompt = window - fixed - head - _span(conv, cut, len(conv.messages))
        in_request = window - _prefix_tokens(conv, cut) - ask
        room = min(cap, in_prompt, in_request)
        if room >= max(1, cap // 4):
            return cut, room
    return "no cut leaves room for the summary in both its request and the compacted prompt"


def _cuts(messages: list[dict[str, str]], keeps: Iterable[int]) -> list[int]:
    """Where the kept part starts when it keeps ``k`` turns, for each ``k`` of ``keeps`` that
    drops at least one turn. A cut goes back over the user messages before the first kept reply
    (its prompt) while it does not part a reply from the results or note that answer it."""
    replies = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    out = []
    for k in (k for k in keeps if 1 <= k < len(replies)):
        cut = replies[-k]
        while cut - 1 > replies[-k - 1] and _may_cut_before(messages, cut - 1):
            cut -= 1
        out.append(cut)
    return out


def _may_cut_before(messages: list[dict[str, str]], i: int) -> bool:
    before = messages[i - 1]
    return before["role"] != "assistant" or "final" in reply_object(before["content"])


def reply_object(text: str) -> dict[str, Any]:
    """An assistant message as a turn's JSON object, or ``{}`` when it does not read as one."""
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and "\n" in body:
        body = body[body.index("\n") + 1 : -3]
    if nests_too_deep(body):
        return {}
    try:
        data = json.loads(body)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _head(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _ask() -> dict[str, str]:
    return {"role": "user", "content": SUMMARY_ASK}


# -- the model's summary -----------------------------------------------------------------------


async def _summarize(loop: Loop, messages: list[dict[str, str]], cap: int) -> AsyncGenerator[Usage | tuple[str | None, str | None], None]:
    """Ask the model for the summary of ``messages``: its ``usage``, then ``(summary, None)`` or
    ``(None, why not)``; nothing more when the run was halted (``loop.stop`` says why)."""
    agent, limits = loop.agent, loop.limits
    time_left = None if limits.timeout_s is None else limits.timeout_s - loop.elapsed()
    constraint = SUMMARY_SCHEMA if agent.constrain else None
    options = {"max_tokens": cap, "constraint": constraint, "signal": loop.signal, "generation": dict(agent.generation), "time_left_s": time_left}
    parts: list[str] = []
    stream = Stream(agent.model, [*messages, _ask()], options, loop.halted)
    why: str | None = None
    try:
        async with aclosing(stream.texts()) as texts:
            parts += [piece async for piece in texts]
        why = stream.breach
    except Exception as e:
        why = f"the summary generation failed: {e.message if isinstance(e, AerixError) else describe(e)}"
    loop.stop = loop.halted(" during a compaction")
    done = stream.done
    if done is not None:
        yield loop.count_usage(done)
    if loop.stop is None:
        yield _read_summary("".join(parts), done, cap) if why is None else (None, why)


def _read_summary(text: str, done: Any, cap: int) -> tuple[str | None, str | None]:
    if done is None:
        return None, "the summary generation ended without a done item"
    if done.get("finish_reason") == "length":
        return None, f"the summary was cut at {cap} tokens"
    over = _over_cap(text, done, cap)
    if over is not None:  # an engine that ignored max_tokens: kept, it would not fit where it goes
        return None, f"the summary was cut at {cap} tokens: {over}"
    data = reply_object(text)
    summary = data.get("summary", data.get("final"))
    if not isinstance(summary, str) or not summary.strip():
        return None, 'the summary did not read as {"summary": text}'
    return summary.strip(), None


def _over_cap(text: str, done: dict[str, Any], cap: int) -> str | None:
    """Why a summary that ended on its own is over its cap, or ``None``: the engine counted more
    tokens than the cap, or (an engine that counts none) it is longer than the cap at
    ``_MAX_BYTES_PER_TOKEN`` bytes a token, more than any token holds."""
    usage = usage_of(done)
    counted = 0 if usage is None else usage.completion_tokens
    if counted > cap:
        return f"the engine counted {counted} (it did not stop at max_tokens)"
    size = utf8_size(text)
    if counted == 0 and size > cap * _MAX_BYTES_PER_TOKEN:
        return f"its {size} bytes are more than {cap} tokens hold"
    return None


# -- the digest --------------------------------------------------------------------------------


def _digest_that_fits(conv: Conversation, cuts: list[int], room: int) -> tuple[int, str] | None:
    """The first cut and digest, most kept and most detail first, that fit in ``room`` tokens."""
    for cut in cuts:
        kept = _span(conv, cut, len(conv.messages))
        for detail in _DETAIL:
            text = _DIGEST_HEAD + digest(conv.messages[1:cut], detail)
            if kept + estimate([_head(text)], _rate(conv)) <= room:
                return cut, text
    return None


def digest(messages: list[dict[str, str]], detail: int) -> str:
    """The messages (those after the system message) as JSON lines: ``{"user": text}`` for every
    user message, verbatim; ``{"call": tool, "input": ...}``, ``{"id", "tool", "result"}`` and
    ``{"answer": text}`` cut to ``detail`` characters (``"length"``: how many there were), or
    left out at ``detail`` 0; an earlier digest's lines cut the same way, an earlier summary as
    ``{"summary": text}``; a refused turn and its note left out."""
    entries: list[dict[str, Any]] = []
    reply: dict[str, Any] = {}
    said: list[dict[str, Any]] = []  # the latest reply's entries, kept unless a note refuses it
    for i, m in enumerate(messages):
        text = m["content"]
        if m["role"] == "assistant":
            entries += said
            reply = reply_object(text)
            calls, final = reply.get("calls"), reply.get("final")
            if isinstance(calls, list):
                said = [{"call": c.get("tool"), "input": c.get("input", {})} for c in calls if isinstance(c, dict)]
            else:
                said = [] if final is None else [{"answer": final if isinstance(final, str) else json.dumps(final, ensure_ascii=False)}]
            continue
        results = _results(text) if isinstance(reply.get("calls"), list) else None
        reply = {}
        if _NOTE.fullmatch(text):
            said = []
            continue
        entries += said
        said = []
        if i == 0 and text.startswith(_DIGEST_HEAD):  # an earlier compaction's message comes first
            entries += _entries(text[len(_DIGEST_HEAD) :])
        elif i == 0 and text.startswith(_SUMMARY_HEAD):
            entries.append({"summary": text[len(_SUMMARY_HEAD) :]})
        elif results is not None:
            entries += [{"id": r.get("id"), "tool": r.get("tool"), "result": str(r.get("result"))} for r in results]
        else:
            entries.append({"user": text})
    kept = (_cut(e, detail) for e in entries + said)
    return "\n".join(json.dumps(e, ensure_ascii=False) for e in kept if e is not None)


def _entries(body: str) -> list[dict[str, Any]]:
    """An earlier digest's entries (a line that does not read is kept as a user's, to lose nothing)."""
    out = []
    for line in body.split("\n"):
        entry = reply_object(line)
        out.append(entry if entry else {"user": line})
    return out


def _cut(entry: dict[str, Any], detail: int) -> dict[str, Any] | None:
    """``entry`` with its result, answer or input cut to ``detail`` characters; at 0, only the
    user's messages and summaries stay."""
    if "user" in entry or "summary" in entry:
        return entry
    if detail == 0:
        return None
    out = dict(entry)
    if "input" in out and not isinstance(out["input"], str):
        shown = json.dumps(out["input"], ensure_ascii=False)
        if len(shown) > detail:
            out["input"] = shown[:detail] + "…"
    for key in ("result", "answer"):
        text = out.get(key)
        if isinstance(text, str) and len(text) > detail:
            out.setdefault("length", len(text))
            out[key] = text[:detail] + "…"
    return out


def _results(text: str) -> list[dict[str, Any]] | None:
    data = reply_object(text)
    results = data.get("results")
    if set(data) != {"results"} or not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
        return None
    return results
