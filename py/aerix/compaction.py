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
  turns when those leave no room: the last one, then the last one without the prompt before
  it, then (at a run's start) the new prompt alone; for the model's summary, more when its
  request would not fit otherwise.
- **replaced** by one user message: every older message, an earlier summary included. With
  ``method="model"`` the model writes the summary in one generation under
  :data:`SUMMARY_SCHEMA`, asked after the conversation's own first messages (so the engine
  reuses its cache) with every message it replaces in its input, the user's included; it counts
  in the run's tokens and timeout (its ``usage`` event comes before ``compact``), not in its
  turns. With ``method="digest"``, or when the summary fails, is cut (it stopped at its cap, or
  ran past it: the engine counted more tokens than the cap or, counting none, its text is
  longer than the cap at 8 bytes a token) or does not read, a deterministic digest
  (:mod:`aerix.digest`): the user's messages verbatim, calls, results and answers shortened or,
  when even that does not fit, left out; when the user's messages alone do not fit, the oldest
  of them are left out, as few as fit, and a first line says how many (then the ``compact``
  event says ``method: "digest"`` and, when the summary failed, why, in ``note``).

From there the conversation is append-only again, so the engine's prefix cache works after one
generation. Nothing one message brings can make a chat too long for good: a prompt with no
room in the context is refused before it is added (:func:`check_prompt_room`, an ``options``
error naming the sizes), and a tool result is cut to the room there is (:func:`fit_result`,
with the note ``result_chars`` adds), so compaction can always keep the last turn. When it
still cannot (a reply far past ``max_tokens``, a system message that leaves no room) the run
ends ``context``, its message naming what takes the room; before the engine has counted
anything, the generation goes ahead instead (the estimate may be wrong: the engine decides).
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncGenerator, Iterable, Literal

from .errors import AerixError, describe
from .events import Compacted, End, Event, Result, Usage
from .digest import COMPACTED_HEAD, DIGEST_HEAD, SUMMARY_HEAD, digest, droppable, reply_object
from .sizes import _MAX_BYTES_PER_TOKEN, BYTES_PER_TOKEN, _prefix_tokens, _rate, _span, estimate, prompt_tokens
from .state import Conversation, utf8_size
from .streams import Stream, usage_of
from .turn import cut_result, neutralise, results_message

if TYPE_CHECKING:
    from .limits import Limits
    from .loop import Loop

__all__ = ["BYTES_PER_TOKEN", "COMPACTED_HEAD", "Compaction", "SUMMARY_ASK", "SUMMARY_SCHEMA", "check_prompt_room", "compact", "digest", "estimate", "fit_result", "prompt_tokens", "reply_object"]

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

_SUMMARY_HEAD, _DIGEST_HEAD = SUMMARY_HEAD, DIGEST_HEAD  # the names the tests know

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
        cuts = _digest_cuts(conv.messages, how.keep_turns)
        method, made = "digest", _digest_that_fits(conv, cuts, window - fixed)
    if made is None:
        if conv.measured is not None:  # the engine's count, not a guess, says it cannot fit
            loop.stop = End("context", _no_room(conv, max(cuts, default=1), limits))
        return
    cut, text = made
    dropped = sum(1 for m in conv.messages[1:cut] if m["role"] == "assistant")
    after = fixed - limits.max_tokens + estimate([_head(text)], _rate(conv)) + _span(conv, cut, len(conv.messages))
    conv.compact(cut, text)
    await loop.checkpoint()
    yield Compacted(dropped, before, after, method, note)


def _no_room(conv: Conversation, cut: int, limits: Limits) -> str:
    """Why no compaction makes room, truthfully: what compaction must keep whole (from ``cut``:
    the last turn), part by part, against what the system message, the least compaction's
    message and the reply leave for it."""
    window, messages = limits.context_tokens, conv.messages
    system, head = _span(conv, 0, 1), _least_head(conv, cut)
    parts = [(_kind(messages, i), _span(conv, i, i + 1)) for i in range(cut, len(messages))]
    left = (window or 0) - system - head - limits.max_tokens
    largest = max(parts, key=lambda p: p[1], default=None)
    if left <= 0 or largest is None:
        culprit = "the system message, the least a compaction leaves of the earlier turns and the reply take all of it"
    else:
        culprit = f"{largest[0]} takes about {largest[1]} tokens"
    kept = ", ".join(f"{what} about {n}" for what, n in parts)
    return (
        f"the conversation does not fit in the context ({window} tokens): {culprit}. Compaction keeps the last turn whole ({kept}), "
        f"and the system message (about {system}), the least a compaction leaves of the turns before it ({head}) and the reply "
        f"(max_tokens {limits.max_tokens}) leave {max(left, 0)} for it"
    )


def _kind(messages: list[dict[str, str]], i: int) -> str:
    m = messages[i]
    if m["role"] == "assistant":
        return "the model's reply"
    if i == 1 and m["content"].startswith(COMPACTED_HEAD):
        return "an earlier compaction's message"
    before = messages[i - 1] if i > 0 else {"role": "user", "content": ""}
    if before["role"] == "assistant" and isinstance(reply_object(before["content"]).get("calls"), list):
        return "the tool results"
    if before["role"] == "assistant" and "final" not in reply_object(before["content"]):
        return "the note on a refused turn"
    return "the prompt"


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


def _digest_cuts(messages: list[dict[str, str]], keep_turns: int) -> list[int]:
    """The digest's cuts, most kept first: :func:`_cuts` from ``keep_turns`` down to 1, then
    the last reply without its prompt, then (when the conversation ends in a message the loop
    may cut before, a prompt) that message alone. Each replaces at least one message."""
    replies = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    tight = [replies[-1]] if replies else []
    last = len(messages) - 1
    alone = [last] if messages[last]["role"] == "user" and _may_cut_before(messages, last) else []
    return sorted({c for c in [*_cuts(messages, range(keep_turns, 0, -1)), *tight, *alone] if c >= 2})


def _may_cut_before(messages: list[dict[str, str]], i: int) -> bool:
    before = messages[i - 1]
    return before["role"] != "assistant" or "final" in reply_object(before["content"])


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


# -- the digest (digest.py writes it) ----------------------------------------------------------


def _digest_that_fits(conv: Conversation, cuts: list[int], room: int) -> tuple[int, str] | None:
    """The first cut and digest that fit in ``room`` tokens: every user message kept, most
    kept turns and most detail first; else, most kept turns first, the fewest of the oldest
    user messages dropped."""
    rate, end = _rate(conv), len(conv.messages)

    def fits(cut: int, text: str) -> bool:
        return _span(conv, cut, end) + estimate([_head(text)], rate) <= room

    for cut in cuts:
        for detail in _DETAIL:
            text = DIGEST_HEAD + digest(conv.messages[1:cut], detail)
            if fits(cut, text):
                return cut, text
    for cut in cuts:  # dropping a line shrinks the digest (its note grows a digit at most): bisect
        low, high = 1, droppable(conv.messages[1:cut])
        if high == 0 or not fits(cut, DIGEST_HEAD + digest(conv.messages[1:cut], 0, high)):
            continue
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if fits(cut, DIGEST_HEAD + digest(conv.messages[1:cut], 0, mid)) else (mid + 1, high)
        return cut, DIGEST_HEAD + digest(conv.messages[1:cut], 0, low)
    return None


def _least_head(conv: Conversation, cut: int) -> int:
    """The tokens of the smallest compaction's message for ``messages[1:cut]``: a digest that
    drops every line it can (none when there is nothing to replace)."""
    if cut < 2:
        return 0
    replaced = conv.messages[1:cut]
    return estimate([_head(DIGEST_HEAD + digest(replaced, 0, droppable(replaced)))], _rate(conv))


# -- what is refused or cut so that it fits ----------------------------------------------------


def check_prompt_room(conv: Conversation, prompt: str, agent: Any) -> None:
    """Refuse ``prompt`` (``AerixError(kind="options")``, naming the sizes) as the next prompt of
    ``conv`` for ``agent`` (the agent it goes to: its limits and compaction) when it is what cannot fit: the conversation with it does not fit in
    ``context_tokens``, and it does not either with only the system message, the least a
    compaction leaves of the conversation before it (a digest that drops every line it can) and
    the reply, as the compact phase sizes them, though those leave some room. Before the
    engine's first count, at 8 bytes a token (the fewest tokens it can take: only a prompt sure
    not to fit is refused; the engine decides the rest)."""
    limits, how = agent.limits, agent.compaction
    window = limits.context_tokens
    if how is None or window is None:
        return
    sure = conv.measured is not None
    rate = _rate(conv) if sure else float(_MAX_BYTES_PER_TOKEN)
    need = estimate([{"content": neutralise(prompt)}], rate)
    if sure and prompt_tokens(conv) + need + limits.max_tokens <= window:
        return
    system = _span(conv, 0, 1) if sure else estimate(conv.messages[:1], rate)
    head = _least_head(conv, len(conv.messages)) if sure else 0
    room = window - limits.max_tokens - system - head
    if need <= room or room <= 0:  # no room for any prompt: the run ends `context` and says why
        return
    about = f"about {need} tokens" if sure else f"at least {need} tokens (at {_MAX_BYTES_PER_TOKEN} bytes a token, the most a token holds)"
    besides = f", about {head} for the least a compaction leaves of the conversation" if head else ""
    raise AerixError(
        "options",
        f"the prompt is too long for the context: it takes {about} and {room} tokens are left for it "
        f"(Limits.context_tokens {window}, less {limits.max_tokens} for the reply, about {system} for the system message{besides}); "
        "shorten it or send it in parts, or raise context_tokens",
    )


def fit_result(loop: Loop, result: Result, chars: int | None) -> Result:
    """``result`` cut to ``chars`` characters (``Limits.result_chars``; ``None``: not), and
    further to what fits: the system message, the least compaction's message, the turn's reply,
    its results so far and this one, and the reply, in ``context_tokens``, as the compact phase
    sizes them (so compaction can always make room for the turn); the note
    (:func:`~aerix.turn.cut_result`) names the result's whole length. The fit only on the
    engine's count (before it, the engine decides)."""
    text = result.text
    cut = text if chars is None or len(text) <= chars else cut_result(text, chars)
    how, limits, conv, pending = loop.agent.compaction, loop.limits, loop.conversation, loop.state.pending
    window = limits.context_tokens
    if how is not None and window is not None and conv.measured is not None and pending is not None:
        reply = max(i for i, m in enumerate(conv.messages) if m["role"] == "assistant")
        fixed = _span(conv, 0, 1) + _least_head(conv, reply) + _span(conv, reply, len(conv.messages)) + limits.max_tokens
        done = [(r.id, r.tool, r.text) for r in pending.results]

        def fits(shown: str) -> bool:
            message = neutralise(results_message([*done, (result.id, result.tool, shown)], pending.note, loop.agent.turn_format))
            return fixed + estimate([{"content": message}], _rate(conv)) <= window

        if not fits(cut):
            low, high = 0, min(len(text), chars or len(text)) - 1  # the most characters that fit, by bisection
            while low < high:
                mid = (low + high + 1) // 2
                low, high = (mid, high) if fits(cut_result(text, mid)) else (low, mid - 1)
            cut = cut_result(text, low)
    return result if cut == text else Result(result.id, result.tool, cut, result.error, result.repeat_of)
