"""Routing by scores: the model's probability of each option as the answer (``Agent.choose``).

    scores = await router.choose("Will it rain in Porto tomorrow?", ["weather", "calendar"])
    # {"weather": 0.93, "calendar": 0.07}: normalised over the options, they sum to 1
    helper = helpers[max(scores, key=scores.get)]

The method: one generation, apart from the conversation (which it neither sends nor changes).
The system message is the agent's instructions and one rule; the user message is the question
and the options labelled A, B, C, ..., one a line (:func:`choice_messages`). Text from outside
is treated as a run treats it: chat-template control tokens in the instructions, the question
and the options are broken with a word joiner (:func:`aerix.turn.neutralise`), and an option may
not hold a line break (``\n``, ``\r``, U+0085, U+2028, U+2029, ...) or another control
character, which could forge another option's label line. The engine is asked for the
log-probabilities of the reply's first tokens (``options["top_logprobs"]``, see
:mod:`aerix.model`), ``max_tokens`` 4, under a constraint that the reply is one of the labels
(a JSON string: ``"A"``), so the engine samples a label and never stray bytes. The engine reports
the model's own distribution, before the constraint. At the first token that is not blank or the
string's opening quote, each label's probability is read from the likeliest tokens the engine
lists there (a token that is the label with blanks or the quote around it counts for it: ``A``,
``" A"`` and ``"A`` are one answer). A label the list leaves out gets the floor: the most it could have, the smaller of the
least likely listed token's probability and the mass the list leaves out. The scores are those
probabilities normalised over the options (:func:`scores_from`).

Limits, said plainly: it reads the model's first answer token only, so it suits a model that
answers an instruction with the letter first (a reasoning model must have its thinking off, a
model trained only to write aerix turns, like the demo's bundled one, gives scores that mean
nothing); with many options, or ``top_logprobs`` small, several labels may share the floor.
llama.cpp (in-page or ``llama-server``) reports the model's own distribution, before the sampling
settings (other servers may report it after them); OpenAI caps ``top_logprobs`` at 20, and so
does vLLM by default.

Errors: bad arguments are ``options`` (an option with a line break or a control character
among them, named); a model that yields no log-probabilities is ``options``
too (the fix is another engine); a reply whose first token has no option's label among its
alternatives is ``output``; the signal or the agent's ``Limits.timeout_s`` stopping it is
``abort``; an engine failure is ``engine``.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Awaitable, Sequence

from .abort import Abort
from .errors import AerixError
from .streams import aside, read_aside
from .turn import neutralise

if TYPE_CHECKING:
    from .agent import Agent

__all__ = ["LABELS", "MAX_TOKENS", "choice_messages", "choose", "scores_from"]

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # one per option; a capital letter is one token in the tokenizers we know
MAX_TOKENS = 4  # room for a blank token or two before the label; only the first other token is read
# What ends a line (for str.splitlines, and for a model that reads U+2028 as one) or is no text:
# C0 and C1 controls (tab aside), the line and paragraph separators
_NOT_IN_A_LINE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
_RULE = "Answer with the letter of one option and nothing else."
_NO_LOGPROBS = (
    "choose needs the engine's log-probabilities, and this model gave none: use the in-page engine "
    "(web/engine.mjs), or an OpenAIModel on a server that returns logprobs (llama-server, vLLM, OpenAI); "
    "a ScriptedModel gives them when its Reply has logprobs=[...]"
)


async def choose(agent: Agent, question: str, options: Sequence[str], signal: Any = None, top_logprobs: int = 20) -> dict[str, float]:
    """``agent.choose``: see the module docstring."""
    labels = _check(question, options, top_logprobs)
    messages = choice_messages(agent.instructions, question, options)
    timeout = agent.limits.timeout_s

    def read(abort: Abort) -> Awaitable[tuple[list[Any] | None, dict[str, Any] | None]]:
        request = {
            "max_tokens": MAX_TOKENS, "constraint": {"type": "string", "enum": list(labels)}, "signal": abort, "generation": dict(agent.generation),
            "time_left_s": timeout, "top_logprobs": top_logprobs,
        }
        return read_aside(agent.model, messages, request, abort)

    entries, done = await aside(read, signal, timeout, "choose")
    if done is None:
        raise AerixError("engine", "engine failed: the model's stream ended without a done item")
    if entries is None:
        raise AerixError("options", _NO_LOGPROBS)
    answer = next((e for e in entries if isinstance(e, dict) and _bare(str(e.get("token", "")))), None)
    scores = None if answer is None else scores_from(answer, labels)
    if scores is None:
        raise AerixError("output", f"the model did not answer with an option's letter: {_seen(answer, top_logprobs)}")
    return {option: scores[label] for option, label in zip(options, labels)}


def choice_messages(instructions: str, question: str, options: Sequence[str]) -> list[dict[str, str]]:
    """What the model is sent: the agent's instructions and the rule, then the labelled options,
    one a line. Chat-template control tokens in all three are broken as in a run's messages
    (:func:`aerix.turn.neutralise`), so none can close the message and forge another."""
    labels = LABELS[: len(options)]
    instructions, question = neutralise(instructions), neutralise(question)
    system = f"{instructions.strip()}\n\n{_RULE}" if instructions.strip() else _RULE
    listed = "\n".join(f"{label}. {neutralise(option)}" for label, option in zip(labels, options))
    letters = f"{', '.join(labels[:-1])} or {labels[-1]}"
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{question.strip()}\n\nOptions:\n{listed}\n\nAnswer with one letter: {letters}."},
    ]


def scores_from(entry: dict[str, Any], labels: Sequence[str]) -> dict[str, float] | None:
    """Each label's share of the probability at one token (``{token, logprob, top_logprobs}``),
    normalised over the labels; ``None`` when no label is among the tokens listed there."""
    top = _listed(entry.get("top_logprobs"))
    seen = dict(top)
    sampled = _listed([entry])
    for token, p in sampled:
        seen.setdefault(token, p)  # the token generated, in case the list left it out
    mass = dict.fromkeys(labels, 0.0)
    for token, p in seen.items():
        if _bare(token) in mass:
            mass[_bare(token)] += p
    if not any(mass.values()):
        return None
    # a token the list leaves out is no likelier than the least likely listed, nor than what is left
    floor = min(min((p for _, p in top), default=0.0), max(0.0, 1.0 - sum(p for _, p in top)))
    probs = {label: p if p > 0 else floor for label, p in mass.items()}
    total = sum(probs.values())
    return {label: p / total for label, p in probs.items()}


def _bare(token: str) -> str:
    """A token without the blanks and the JSON string quote around a label."""
    return token.strip().strip('"').strip()


def _listed(items: Any) -> list[tuple[str, float]]:
    """``(token, probability)`` of each well-formed ``{token, logprob}`` item; others are skipped."""
    out: list[tuple[str, float]] = []
    for item in items if isinstance(items, list) else []:
        token, logprob = (item.get("token"), item.get("logprob")) if isinstance(item, dict) else (None, None)
        if isinstance(token, str) and isinstance(logprob, (int, float)) and not isinstance(logprob, bool) and not math.isnan(logprob):
            out.append((token, math.exp(min(float(logprob), 0.0))))
    return out


def _check(question: Any, options: Any, top_logprobs: Any) -> str:
    if not isinstance(question, str) or not question.strip():
        raise AerixError("options", f"question must be a non-empty string, got {question!r}")
    if isinstance(options, (str, bytes, dict)) or not isinstance(options, Sequence):
        raise AerixError("options", f"options must be a list of strings, got {type(options).__name__}")
    if not 2 <= len(options) <= len(LABELS):
        raise AerixError("options", f"options must hold 2 to {len(LABELS)} strings, got {len(options)}")
    if not all(isinstance(o, str) and o.strip() for o in options):
        raise AerixError("options", f"each option must be a non-empty string, got {list(options)!r}")
    for n, option in enumerate(options, 1):
        bad = _NOT_IN_A_LINE.search(option)
        if bad:
            raise AerixError("options", f"option {n} ({option[:60]!r}) holds {bad[0]!r}: an option is one line without control characters, so it cannot forge another option's label line")
    stripped = [o.strip() for o in options]
    if len(set(stripped)) != len(stripped):
        twice = sorted({o for o in stripped if stripped.count(o) > 1})
        raise AerixError("options", f"options must differ, but {twice} come more than once")
    if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or top_logprobs < 1:
        raise AerixError("options", f"top_logprobs must be an integer >= 1, got {top_logprobs!r}")
    return LABELS[: len(options)]


def _seen(answer: dict[str, Any] | None, k: int) -> str:
    if answer is None:
        return "the engine gave log-probabilities for no token that is not blank"
    tokens = [token for token, _ in _listed(answer.get("top_logprobs"))] or [str(answer.get("token"))]
    return (
        f"none of the {k} likeliest first tokens is a label (they were {tokens[:10]!r}); choose needs a model that answers "
        "an instruction with the letter first (a reasoning model with its thinking off)"
    )
