"""Server-sent events framing: the ``text/event-stream`` rules of the HTML standard, fed network chunks.

    decoder = SSEDecoder()
    async for chunk in body:
        for event in decoder.feed(chunk):
            print(event.event, event.data)
    decoder.close()   # an event without its closing blank line is dropped, as the standard says

Network chunks split anywhere: inside a UTF-8 character, between the CR and LF of a line
break, inside a field name. Lines end with CRLF, LF or CR; ``data:`` lines of one event are
joined with ``\\n``; ``:`` starts a comment (a keep-alive); a leading BOM is dropped. ``id`` and
``retry`` are read for a client that reconnects (MCP's resumption): ``last_id``, the id of the
last event dispatched (one without data too, as the standard's last event ID string), and
``retry``, the reconnection time in milliseconds the server last gave (``None`` before one).

Framing costs work linear in the body, however it is chunked: an unfinished line waits as a
list of pieces, joined once when its line break comes, and only new text is searched for line
breaks. A line, or one event's data, longer than ``max_chars`` (``MAX_CHARS``, 16 MiB of ASCII)
raises :class:`FrameTooLong`: no real server sends one that long, and memory is not given away to one.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["MAX_CHARS", "FrameTooLong", "SSEDecoder", "ServerSentEvent"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
MAX_CHARS = 16 * 1024 * 1024  # characters in one line, or in one event's data


class FrameTooLong(ValueError):
    """A line, or one event's data, is longer than the decoder's ``max_chars``; the message names the cap."""

    def __init__(self, what: str, max_chars: int) -> None:
        mib, rest = divmod(max_chars, 1024 * 1024)
        size = f"{max_chars} characters" if rest else f"{mib} MiB ({max_chars} characters)"
        super().__init__(f"the server sent {what} longer than the cap of {size}")
        self.max_chars = max_chars


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event: its ``data`` (lines joined with ``\\n``), ``event`` type and last ``id``."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Turns byte chunks into events; keeps what is unfinished for the next chunk."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self.max_chars = max_chars
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pieces: list[str] = []  # the line not yet ended, as it came
        self._pieces_size = 0
        self._after_cr = False  # the last chunk ended with CR: a LF starting the next one belongs to it
        self._started = False
        self._data: list[str] = []
        self._data_size = 0
        self._event = ""
        self._id: str | None = None  # the standard's last event ID buffer
        self.last_id: str | None = None
        self.retry: int | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events this chunk completes, in order. Raises :class:`FrameTooLong` past the cap."""
        return self._lines(self._text.decode(chunk))

    def close(self) -> list[ServerSentEvent]:
        """The end of the body. An unterminated line or event is dropped: it may be cut short."""
        self._text.decode(b"", final=True)
        self._pieces, self._pieces_size, self._data, self._data_size, self._event = [], 0, [], 0, ""
        return []

    def _lines(self, text: str) -> list[ServerSentEvent]:
        if not text:
            return []
        if not self._started:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = False
        events: list[ServerSentEvent] = []
        start = 0
        for match in _LINE_BREAK.finditer(text):  # the new text only: what came before holds no break
            if match.group() == "\r" and match.end() == len(text):
                self._after_cr = True  # maybe half of a CRLF whose LF is in the next chunk
            line = text[start : match.start()]
            if self._pieces:
                line = "".join([*self._pieces, line])
                self._pieces, self._pieces_size = [], 0
            if len(line) > self.max_chars:
                raise FrameTooLong("a line", self.max_chars)
            event = self._line_done(line)
            if event is not None:
                events.append(event)
            start = match.end()
        if start < len(text):
            self._pieces.append(text[start:])
            self._pieces_size += len(text) - start
            if self._pieces_size > self.max_chars:
                raise FrameTooLong("a line", self.max_chars)
        return events

    def _line_done(self, line: str) -> ServerSentEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._data_size += len(value) + 1
            if self._data_size > self.max_chars + 1:
                raise FrameTooLong("an event", self.max_chars)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry = int(value)
        return None  # unknown fields are ignored

    def _dispatch(self) -> ServerSentEvent | None:
        data, event = self._data, self._event
        self._data, self._data_size, self._event = [], 0, ""
        self.last_id = self._id
        if not data:
            return None
        return ServerSentEvent("\n".join(data), event or "message", self._id)
