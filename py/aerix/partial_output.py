"""The structured answer as it is written: the ``final`` value of a turn, parsed while it streams.

With ``Agent(output=...)`` the loop feeds each piece of a generation's text to a
:class:`PartialOutput`, which reads the raw JSON of the turn and keeps the value of its
top-level ``"final"`` key parsed so far; after a piece that changed it, ``feed`` gives back an
``output_delta {output}`` event with a copy of the whole partial value (not a diff). The rules,
which make each partial value valid JSON and an extension of the one before:

- a string, number, ``true``, ``false`` or ``null`` appears only once it is complete (a string
  at its closing quote, escapes and surrogate pairs decoded as ``json.loads`` does; a number at
  the character after it), with its key or as an array element, never cut;
- an object or an array appears as soon as it opens, and holds what of it is there so far: an
  object its keys whose values have appeared, an array its elements in order, each nested
  object or array again partial. So a key once there stays, with the same value (a scalar) or
  one that grew (an object or array), and the last partial value is the answer as written.

Only the final is checked against the schema: a partial object may lack required keys. A turn
that is not JSON stops the deltas for that generation (the loop refuses it: ``retry``); a key
named ``final`` deeper in the turn (a tool's input) is not the answer; text around the JSON (a
Markdown fence) is skipped.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .events import OutputDelta
from .turn import MAX_DEPTH

__all__ = ["PartialOutput"]

_SPECIAL = re.compile(r'["\\]')  # what ends a run of plain characters inside a string
_SCALAR = frozenset("0123456789+-.eEtrufalsn")  # the characters of a number or a literal
_SPACE = frozenset(" \t\r\n")


class _Broken(Exception):
    """The turn is not JSON: no more deltas for this generation."""


class _Frame:
    """An object or array being read: ``value`` is what of it is kept (``None`` outside the answer)."""

    def __init__(self, value: dict[str, Any] | list[Any] | None, is_object: bool) -> None:
        self.value = value
        self.is_object = is_object
        self.state = "key" if is_object else "value"  # key, colon, value, comma
        self.key: str | None = None


class PartialOutput:
    """An incremental reader of a turn's ``final`` value (see the module docstring)."""

    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.done = False  # the turn's object closed, or its JSON broke
        self.token: list[str] | None = None  # the raw text of the string or scalar being read
        self.in_string = False
        self.escape = False
        self.is_key = False
        self.value: Any = None  # the partial final
        self.changed = False

    def feed(self, chunk: str) -> OutputDelta | None:
        """An ``output_delta`` with the partial final, if ``chunk`` changed it; else ``None``."""
        try:
            self._read(chunk)
        except _Broken:
            self.done, self.token, self.stack = True, None, []
        if not self.changed:
            return None
        self.changed = False
        return OutputDelta(_copy(self.value))

    def _read(self, chunk: str) -> None:
        i, end = 0, len(chunk)
        while i < end and not self.done:
            if self.in_string:
                i = self._string(chunk, i)
                continue
            ch = chunk[i]
            if self.token is not None:  # a number or a literal
                if ch in _SCALAR:
                    self.token.append(ch)
                    i += 1
                    continue
                self._scalar_ends()
            self._structure(ch)
            i += 1

    def _string(self, chunk: str, i: int) -> int:
        """Read string characters from ``i``; where the next unread character is."""
        assert self.token is not None
        if self.escape:
            self.token.append(chunk[i])
            self.escape = False
            return i + 1
        found = _SPECIAL.search(chunk, i)
        stop = found.start() if found else len(chunk)
        self.token.append(chunk[i:stop])
        if found is None:
            return stop
        if chunk[stop] == "\\":
            self.token.append("\\")
            self.escape = True
            return stop + 1
        self.in_string = False
        text = _load('"' + "".join(self.token) + '"')
        self.token = None
        if self.is_key:
            self.stack[-1].key, self.stack[-1].state = text, "colon"
        else:
            self._put(text)
        return stop + 1

    def _scalar_ends(self) -> None:
        assert self.token is not None
        value = _load("".join(self.token))
        self.token = None
        if isinstance(value, float) and not math.isfinite(value):  # 1e999: the turn is refused
            raise _Broken
        self._put(value)

    def _structure(self, ch: str) -> None:
        """One character between values: a bracket, a colon, a comma, or a value's first."""
        if ch in _SPACE:
            return
        if not self.stack:
            if ch == "{":  # anything before the turn's object (a fence) is skipped
                self.stack.append(_Frame(None, True))
            return
        frame = self.stack[-1]
        if frame.state == "comma" and ch == ",":
            frame.state = "key" if frame.is_object else "value"
        elif frame.state == "colon" and ch == ":":
            frame.state = "value"
        elif ch == ("}" if frame.is_object else "]") and frame.state in ("comma", "key" if frame.is_object else "value"):
            self._close()
        elif frame.state == "key" and ch == '"':
            self._start_string(is_key=True)
        elif frame.state == "value":
            self._value_starts(ch)
        else:
            raise _Broken

    def _value_starts(self, ch: str) -> None:
        if ch == '"':
            self._start_string(is_key=False)
        elif ch in "{[":
            if len(self.stack) >= MAX_DEPTH:
                raise _Broken
            kept = self._put({} if ch == "{" else [])
            self.stack.append(_Frame(kept, ch == "{"))
        elif ch in _SCALAR:
            self.token = [ch]
        else:
            raise _Broken

    def _start_string(self, is_key: bool) -> None:
        self.in_string, self.is_key, self.escape, self.token = True, is_key, False, []

    def _put(self, value: Any) -> Any:
        """A value that appeared in the frame on top: kept when it is the final or inside it;
        gives back what the new value's own frame keeps (``None`` outside the answer)."""
        frame = self.stack[-1]
        frame.state = "comma"
        if frame.value is None:
            if len(self.stack) == 1 and frame.key == "final":
                self.value, self.changed = value, True
                return value
            return None
        if isinstance(frame.value, dict):
            assert frame.key is not None
            frame.value[frame.key] = value
        else:
            frame.value.append(value)
        self.changed = True
        return value

    def _close(self) -> None:
        self.stack.pop()
        if not self.stack:
            self.done = True


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _Broken from None


def _copy(value: Any) -> Any:
    """A copy of the partial value: the reader goes on changing its own."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
