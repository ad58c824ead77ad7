"""Servers that push back: which answers are sent again, and how long to wait first.

    model = OpenAIModel(url, "m", retries=3, backoff_s=0.5, max_backoff_s=8.0)   # the defaults
    client = ChatClient(url, "m", backoff=Backoff(retries=3))                     # the client alone

A ``429 Too Many Requests`` or ``503 Service Unavailable`` says "not now", and only as the
response's status, before any text has streamed: the client (``ChatClient._send``) reads the
answer, waits, and sends the same request again. The rules, each with a test in
``tests/unit/test_openai_backoff.py``:

- Only 429 and 503 are sent again; any other status (400, 500, ...) ends at once.
- At most ``retries`` more requests (``retries=0``: none); then the server's last error is the
  ending, its message followed by ``(gave up after N retries)`` and its problem document kept.
- The wait before a retry is the server's ``Retry-After`` when it sent one (seconds, or an HTTP
  date; a date gone by is 0), else full jitter: a uniform draw in
  ``[0, min(max_backoff_s, backoff_s * 2**n)]`` before retry ``n + 1``, from ``rng``. A
  ``Retry-After`` that is neither ASCII digits nor an ASCII date (``"²"``, ``"+5"``, ``"5_0"``,
  ``"٣"``) is ignored as if none came, never a crash; so many digits that no integer holds them
  are a wait too long to take.
- No wait is longer than ``max_backoff_s`` or outlasts the run (``time_left_s``): when the next
  one would, nothing waits and the server's error ends the request at once, the message saying
  why. A ``Retry-After`` is never shortened: asking again sooner than the server said only earns
  another 429.
- The wait ends at once when the run's signal aborts (the request ends ``cancelled``).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from datetime import timezone
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable

from ...errors import AerixError

__all__ = ["Backoff", "Attempts", "PUSHBACK", "retry_after_s"]

PUSHBACK = frozenset({429, 503})  # the statuses that are sent again


@dataclass(frozen=True, kw_only=True)
class Backoff:
    """How a client answers a server that pushes back (429, 503).

    ``retries``: the most requests sent again (0: off). ``backoff_s``: the first wait's cap,
    doubled at each retry up to ``max_backoff_s``, which is also the longest wait taken at all.
    ``rng`` (a ``random.Random``; seed it for repeatable waits), ``sleep`` (``asyncio.sleep``)
    and ``clock`` (``time.monotonic``, what the run's time left is measured on) are there for tests.
    """

    retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, repr=False, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.retries, int) or isinstance(self.retries, bool) or self.retries < 0:
            raise AerixError("options", f"retries must be a whole number >= 0, got {self.retries!r}")
        for name in ("backoff_s", "max_backoff_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
                raise AerixError("options", f"{name} must be a number of seconds >= 0, got {value!r}")

    def jitter(self, retry: int) -> float:
        """The wait before retry ``retry + 1`` when the server named none: full jitter."""
        cap = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(retry, 64))
        return self.rng.random() * cap


class Attempts:
    """One request's retries: how many were made, and the deadline they must keep."""

    def __init__(self, policy: Backoff, time_left_s: float | None) -> None:
        self.policy = policy
        self.made = 0
        self.deadline = None if time_left_s is None else policy.clock() + time_left_s

    def next_wait(self, retry_after: str | None) -> tuple[float | None, str]:
        """``(seconds, "")`` to wait before sending again, or ``(None, why)``: no retry, and the
        words that go after the server's error."""
        policy, made = self.policy, self.made
        tried = f"gave up after {made} {'retry' if made == 1 else 'retries'}" if made else "not retried"
        if made >= policy.retries:
            return None, tried if made else ""
        asked = retry_after_s(retry_after)
        wait = policy.jitter(made) if asked is None else asked
        if asked is not None and asked > policy.max_backoff_s:
            return None, f"{tried}: the server asked to wait {asked:g} s, longer than max_backoff_s ({policy.max_backoff_s:g} s)"
        left = None if self.deadline is None else self.deadline - policy.clock()
        if left is not None and (left <= 0 or wait > left):
            what = f"the server asked to wait {asked:g} s" if asked is not None else f"the next wait is {wait:.2f} s"
            return None, f"{tried}: {what}, and the run's timeout leaves {max(left, 0.0):.2f} s"
        self.made += 1
        return wait, ""


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """A ``Retry-After`` header in seconds from ``now`` (``time.time()``): delta-seconds (ASCII
    digits), or an HTTP date (a date gone by is 0). ``None`` when it is missing or unreadable."""
    if value is None:
        return None
    text = value.strip(" \t")  # the header's optional whitespace
    if not text.isascii():  # str.isdigit() and the date parser take "²" and "٣" as digits
        return None
    if text.isdigit():
        return float(text)  # not int(): 5,000 digits exceed its limit; float() says inf
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; one that says "-0000" is read as GMT too
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
