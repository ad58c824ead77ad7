"""The sizes compaction works with: how many tokens the next prompt, or a part of it, takes.

The engine's own count of the conversation at its latest generation (``Conversation.measured``:
``usage.prompt_tokens``) is the ground; what came after it is estimated at the bytes per token
that count shows, less 20 % (so the estimate errs toward more tokens); before the engine's first
count, at 2 bytes a token (more tokens than prose or JSON take in common tokenizers).
"""

from __future__ import annotations

import math

from .state import Conversation, utf8_size

__all__ = ["BYTES_PER_TOKEN", "estimate", "prompt_tokens"]

BYTES_PER_TOKEN = 2.0  # before the engine's first count: fewer than prose or JSON take in common tokenizers
_MARGIN = 0.8  # what the engine has not counted yet is taken at 80 % of its measured bytes per token
_PER_MESSAGE = 8  # the chat template's own tokens around a message
_MAX_BYTES_PER_TOKEN = 8  # the most bytes of text a token is taken to hold (state.Conversation.measure's bound too)


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
