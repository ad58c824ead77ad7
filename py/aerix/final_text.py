"""The answer as it is written: the ``final`` string of a turn, decoded while the turn streams.

:class:`FinalText` reads the raw JSON of a turn chunk by chunk and gives back, for each chunk,
the characters of the top-level ``"final"`` string it completes: escapes, ``\\uXXXX`` and surrogate
pairs are decoded even when a chunk ends in the middle of one, and a key named ``final`` deeper
in the turn (a tool's input) is not the answer. Joined, the pieces are exactly what
``json.loads`` gives for ``final``. The loop turns them into ``final_delta {text}`` events.

:func:`answer_reader` is what the loop feeds a generation's text to: this reader for a text
answer, :class:`aerix.partial_output.PartialOutput` (``output_delta`` events) for a structured one.
"""

from __future__ import annotations

import re
from typing import Callable

from .events import Event, FinalDelta
from .output import Output
from .partial_output import PartialOutput

__all__ = ["FinalText", "answer_reader"]

_SPECIAL = re.compile(r'["\\]')  # what ends a run of plain characters inside a string
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def answer_reader(output: Output | None) -> Callable[[str], Event | None]:
    """For each piece of a generation's text, the event of the answer it adds to, if any:
    ``final_delta`` pieces of a text answer, ``output_delta`` partial objects of a structured one."""
    if output is not None:
        return PartialOutput().feed
    reader = FinalText()

    def feed(chunk: str) -> Event | None:
        text = reader.feed(chunk)
        return FinalDelta(text) if text else None

    return feed


class FinalText:
    """An incremental reader of a turn's ``final`` string (see the module docstring)."""

    def __init__(self) -> None:
        self.depth = 0
        self.expect_key = False  # at depth 1: the next string is a key
        self.key: str | None = None  # the last key read at depth 1
        self.in_string = False
        self.is_key = False
        self.answering = False  # inside the final string
        self.escape: str | None = None  # None, "\\" after a backslash, or "u<hex so far>"
        self.high: str | None = None  # a high surrogate waiting for its low half
        self._key_chars: list[str] = []

    def feed(self, chunk: str) -> str:
        """The characters of the final string that ``chunk`` completes ("" if none)."""
        out: list[str] = []
        i, end = 0, len(chunk)
        while i < end:
            if self.in_string and self.escape is None:
                # a run of plain characters, taken whole: json.loads copies them as they are
                found = _SPECIAL.search(chunk, i)
                stop = found.start() if found else end
                if stop > i:
                    self._flush_high(out)
                    self._put(chunk[i:stop], out)
                    i = stop
                    continue
            ch = chunk[i]
            i += 1
            if self.in_string:
                self._string_char(ch, out)
            else:
                self._structure_char(ch)
        return "".join(out)

    def _structure_char(self, ch: str) -> None:
        if ch == '"':
            self.in_string = True
            self.is_key = self.depth == 1 and self.expect_key
            self.answering = self.depth == 1 and not self.is_key and self.key == "final"
            self._key_chars = []
        elif ch in "{[":
            self.depth += 1
            self.expect_key = ch == "{" and self.depth == 1
        elif ch in "}]":
            self.depth -= 1
        elif ch == ":" and self.depth == 1:
            self.expect_key = False
        elif ch == "," and self.depth == 1:
            self.expect_key = True
            self.key = None

    def _string_char(self, ch: str, out: list[str]) -> None:
        if self.escape is not None:
            self._escaped(ch, out)
        elif ch == "\\":
            self.escape = "\\"
        elif ch == '"':
            self._flush_high(out)
            self.in_string = False
            if self.is_key:
                self.key = "".join(self._key_chars)
            self.answering = False
        else:
            self._flush_high(out)
            self._put(ch, out)

    def _escaped(self, ch: str, out: list[str]) -> None:
        assert self.escape is not None
        if self.escape == "\\":
            if ch == "u":
                self.escape = "u"
                return
            self.escape = None
            self._emit(_SIMPLE.get(ch, ch), out)
            return
        self.escape += ch
        if len(self.escape) < 5:
            return
        try:
            code = int(self.escape[1:], 16)
        except ValueError:  # not JSON: the parser will refuse the turn; show what was written
            code = None
        self.escape = None
        if code is None:
            return
        self._emit(chr(code), out)

    def _emit(self, ch: str, out: list[str]) -> None:
        """One character from an escape: a high surrogate waits for the low half of the next
        escape, as json.loads pairs them (characters written as they are are never paired)."""
        if "\ud800" <= ch <= "\udbff":
            self._flush_high(out)
            self.high = ch
            return
        if self.high is not None:
            pair = self.high + ch
            self.high = None
            if "\udc00" <= ch <= "\udfff":
                ch = pair.encode("utf-16", "surrogatepass").decode("utf-16")
                self._put(ch, out)
                return
            self._put(pair[0], out)
        self._put(ch, out)

    def _flush_high(self, out: list[str]) -> None:
        if self.high is not None:
            self._put(self.high, out)
            self.high = None

    def _put(self, ch: str, out: list[str]) -> None:
        if self.answering:
            out.append(ch)
        elif self.is_key:
            self._key_chars.append(ch)
