"""Channels: where an agent sends messages besides its event stream (a console, a toast, a chat).

    agent = Agent(model, tools=[report], channels=[console_channel(name="console", write=print)])

    @tool
    async def report(text: str, ctx) -> str:
        '''Report to the team.'''
        await ctx.channels.find_one("console").emit(text, title="Report")
        return "reported"

A channel is any object with a ``name`` (letters, digits, ``_``, ``.``, ``-``) and an
``out(message)``, sync or async, that delivers a :class:`Message`; an Agent's channel names are
unique. In a tool or a hook, ``ctx.channels.find_one(name)`` is that channel (an unknown name is
``AerixError(kind="options")`` naming the known ones) and ``await ….emit(body, title=None,
key=None)`` sends it a message and returns the :class:`Message`. What ``out`` raises, ``emit``
raises as it is (uncaught in a tool, it is the call's error result).

An emit is an effect, recorded once in the run's store (the effects table, like an effect
tool's result), in this order:

    the key recorded? → already sent: not sent again  →  out(message)  →  record the key

so a resumed run (after a crash, a reload, or a call that runs again after an approval) never
sends a recorded message again, and a failed ``out`` records nothing (the call may try again). The
key is ``key=`` as given (so it can make a message once-only beyond one run, e.g.
``"report:2024-05-01"``), or ``<run id>:emit:<channel>:<sha256 of [call id, n, title, body]>``,
``n`` counting identical messages in one execution of the call: the same message from two calls,
or twice from one, is sent twice. Not guaranteed: a crash after ``out`` delivered and before the
record, the unknown outcome an effect tool has, sends it again on resume; a channel whose
destination drops repeated ``message.key`` closes that gap. A store that fails during an emit
raises ``AerixError(kind="store")`` (failing the record, after ``out`` delivered). Without a
store (and in an ``as_tool`` sub-run of a run without one) nothing is recorded: every emit is
sent, and the key's run id is ``memory``; a sub-run of a durable run records its emits in that
run's store, its run id ``<parent run id>/<calling call id>`` (``subagents.py``).

In the page a channel may be a JavaScript object ``{name, out(message)}`` (``out`` gets the
message as a plain object), and a JS tool sends with ``await ctx.emit(channel, body, {title,
key})``: see ``aerix.page``.

``run(prompt, source="sms")`` names the channel the request came in on; a durable run keeps it,
and ``ctx.channels.source`` is that channel (``None`` without one).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .errors import AerixError

if TYPE_CHECKING:
    from .loop import Book

__all__ = ["Channel", "Channels", "ConsoleChannel", "Emitter", "Message", "check_channels", "console_channel"]

NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")  # no ':' : the name is a segment of the emit key


@dataclass(frozen=True)
class Message:
    """What a channel's ``out`` gets: the channel's name, the body, the title (or ``None``) and
    the message's effect key (a channel may pass it on as an idempotency key)."""

    channel: str
    body: str
    title: str | None
    key: str

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "body": self.body, "title": self.title, "key": self.key}


class Channel(Protocol):
    """A destination for messages: a ``name``, and ``out(message)`` (its result may be awaited)."""

    name: str

    def out(self, message: Message) -> Any: ...


class ConsoleChannel:
    """The development channel: each message written as its title line, then its body."""

    def __init__(self, name: str, write: Callable[[str], Any]) -> None:
        self.name = name
        self.write = write

    def __repr__(self) -> str:
        return f"console_channel(name={self.name!r})"

    def out(self, message: Message) -> Any:
        line = f"[{message.channel}]" if message.title is None else f"[{message.channel}] {message.title}"
        return self.write(f"{line}\n{message.body}")


def console_channel(name: str = "console", write: Callable[[str], Any] = print) -> ConsoleChannel:
    """A channel that writes each message with ``write`` (``print`` by default; an async one is
    awaited): ``[<name>] <title>``, a newline, the body."""
    if not callable(write):
        raise AerixError("options", f"console_channel {name!r}: write must be a function, got {type(write).__name__}")
    return ConsoleChannel(name, write)


def check_channels(channels: Any) -> dict[str, Channel]:
    """An Agent's ``channels=``, by name; a bad one is ``AerixError(kind="options")``."""
    if not isinstance(channels, (list, tuple)):
        raise AerixError("options", f"channels must be a list of channels, got {type(channels).__name__}")
    by_name: dict[str, Channel] = {}
    for channel in channels:
        name = getattr(channel, "name", None)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise AerixError("options", f"a channel's name must be letters, digits, '_', '.' or '-' (1 to 64), got {name!r}")
        if not callable(getattr(channel, "out", None)):
            raise AerixError("options", f"channel {name!r} needs an out(message) method")
        if name in by_name:
            raise AerixError("options", f"two channels are named {name!r}; channel names must be unique")
        by_name[name] = channel
    return by_name


class Channels:
    """``ctx.channels``: the Agent's channels, as one execution of one call sees them."""

    def __init__(self, channels: dict[str, Channel], book: Book, call_id: str | None = None, source: str | None = None) -> None:
        self._channels = channels
        self.book = book
        self.call_id = call_id
        self._source = source  # the channel the run came in on (``run(prompt, source=...)``), if any
        self._sent: Counter[str] = Counter()  # identical messages so far in this execution

    def __repr__(self) -> str:
        return f"Channels({list(self._channels)})"

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._channels)

    def for_call(self, call_id: str) -> Channels:
        """The channels for one execution of a call (its emit keys count from there)."""
        return Channels(self._channels, self.book, call_id, self._source)

    @property
    def source(self) -> Emitter | None:
        """The channel the run came in on (``run(prompt, source="console")``), or ``None``: where
        an answer to the person who asked goes."""
        return None if self._source is None else self.find_one(self._source)

    def find_one(self, name: str) -> Emitter:
        """The channel named ``name``; ``AerixError(kind="options")`` naming the known ones if none is."""
        channel = self._channels.get(name) if isinstance(name, str) else None
        if channel is None:
            known = ", ".join(repr(n) for n in self._channels) or "none"
            raise AerixError("options", f"no channel named {name!r} (known: {known}); give the Agent channels=[...]")
        return Emitter(name, channel, self)

    def key_for(self, channel: str, title: str | None, body: str) -> str:
        """The default emit key: the run, the channel, and a digest of the call and the message."""
        same = json.dumps([channel, title, body], ensure_ascii=False)
        self._sent[same] += 1
        digest = hashlib.sha256(json.dumps([self.call_id, self._sent[same], title, body], ensure_ascii=False).encode()).hexdigest()
        return f"{self.book.run_id or 'memory'}:emit:{channel}:{digest}"


class Emitter:
    """One channel as a tool reaches it: ``await emit(body, title=None, key=None)``."""

    def __init__(self, name: str, channel: Channel, channels: Channels) -> None:
        self.name = name
        self.channel = channel
        self._channels = channels

    def __repr__(self) -> str:
        return f"Emitter({self.name!r})"

    async def emit(self, body: str, title: str | None = None, key: str | None = None) -> Message:
        """Send ``body`` (with ``title``) through the channel, once per key in a durable run."""
        if not isinstance(body, str):
            raise AerixError("options", f"emit to {self.name!r}: body must be a string, got {type(body).__name__}")
        if title is not None and not isinstance(title, str):
            raise AerixError("options", f"emit to {self.name!r}: title must be a string or None, got {type(title).__name__}")
        if key is not None and (not isinstance(key, str) or not key):
            raise AerixError("options", f"emit to {self.name!r}: key must be a non-empty string or None, got {key!r}")
        message = Message(self.name, body, title, key or self._channels.key_for(self.name, title, body))
        book = self._channels.book
        if await book.recorded_effect(message.key) is not None:
            return message  # sent before this run was resumed (or this call ran again)
        delivered = self.channel.out(message)
        if inspect.isawaitable(delivered):
            await delivered
        await book.record_effect(message.key, "sent")
        return message
