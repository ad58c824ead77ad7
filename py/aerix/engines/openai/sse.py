"""Server-sent events framing: the ``text/event-stream`` rules of the HTML standard, fed network chunks.

    decoder = SSEDecoder()
    async for chunk in body:
        for event in decoder.feed(chunk):
            print(event.event, event.data)
    decoder.close()   # an event without its closing blank line is dropped, as the standard says

Network chunks split anywhere: inside a UTF-8 character, between the CR and LF of a line
break, inside a field name. Lines end with CRLF, LF or CR; ``data:`` lines of one event are
joined with ``\\n``; ``:`` starts a comment (a keep-alive); a leading BOM is dropped; ``id``
and ``retry`` are read and not acted on (nothing here reconnects).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "ServerSentEvent"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ServerSentEvent:
    """One dispatched event: its ``data`` (lines joined with ``\\n``), ``event`` type and last ``id``."""

    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Turns byte chunks into events; keeps what is unfinished for the next chunk."""

    def __init__(self) -> None:
        self._text = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line = ""  # text after the last line break
        self._after_cr = False  # the last chunk ended with CR: a LF starting the next one belongs to it
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[ServerSentEvent]:
        """The events this chunk completes, in order."""
        return self._lines(self._text.decode(chunk))

    def close(self) -> list[ServerSentEvent]:
        """The end of the body. An unterminated line or event is dropped: it may be cut short."""
        self._lines(self._text.decode(b"", final=True))
        self._line, self._data, self._event = "", [], ""
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
        buffer = self._line + text
        events: list[ServerSentEvent] = []
        start = 0
        for match in _LINE_BREAK.finditer(buffer):
            if match.group() == "\r" and match.end() == len(buffer):
                self._after_cr = True  # maybe half of a CRLF whose LF is in the next chunk
            event = self._line_done(buffer[start : match.start()])
            if event is not None:
                events.append(event)
            start = match.end()
        self._line = buffer[start:]
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
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        return None  # "retry" and unknown fields are ignored

    def _dispatch(self) -> ServerSentEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return ServerSentEvent("\n".join(data), event or "message", self._id)
