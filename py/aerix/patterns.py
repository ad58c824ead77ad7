"""A JSON Schema ``pattern``: the regular expressions the engine's grammar can hold.

    pattern_problem("^[A-Z]{3}-[0-9]{2}$")    # None: fine
    pattern_problem("^\\d+$")                  # "\\d is not supported (write [0-9])"

llama.cpp's JSON-Schema-to-grammar converter (in the wasm engine, and in llama.cpp's server)
turns a string's ``pattern`` into grammar rules; what it cannot read makes the whole request
fail, and some of what it reads it reads differently from a regex engine. So a pattern is
checked when it is given, and only this subset, which the converter, Python's ``re`` and
pydantic's Rust ``regex`` read the same way, is accepted:

- anchored: it starts with ``^`` and ends with ``$``, and neither stands anywhere else;
- no ``|`` at the top (``^a|b$`` is ``(^a)|(b$)`` to a regex engine, ``^(a|b)$`` to the
  converter): write ``^(a|b)$``;
- atoms: a literal character, ``.``, a group ``(...)`` or ``(?:...)`` (not empty, ``|``
  inside, no empty choice), a class ``[...]`` or ``[^...]`` of characters and ranges
  (``\\[`` and ``\\]`` escaped; no nested ``[``, no ``&&``/``--``/``~~``), an escaped
  metacharacter ``\\^ \\$ \\. \\[ \\] \\( \\) \\| \\{ \\} \\* \\+ \\?``;
- each atom at most one quantifier: ``* + ?``, ``{n}``, ``{n,}``, ``{n,m}`` with n <= m <=
  :data:`MAX_REPEAT` (the grammar spells each repetition out);
- never ``"``, a backslash other than those escapes, or a control character: the grammar
  writes the JSON text of the string, where these would be escapes, not themselves;
- no ``\\d``, ``\\w``, ``\\s``, back-references, look-arounds, flags or named groups.

What the grammar still cannot enforce: ``.`` and a negated class ``[^...]`` also let through
``"`` and ``\\`` as raw JSON text; such a reply is not JSON, and is refused and written again.
"""

from __future__ import annotations

__all__ = ["MAX_REPEAT", "pattern_problem"]

MAX_REPEAT = 1000
_META = set("^$.[](){}|*+?")
_QUANTIFIERS = set("*+?{")
_CLASS_ESCAPES = {"d": "[0-9]", "w": "[A-Za-z0-9_]", "s": "[ ]", "D": "[^0-9]", "W": "[^A-Za-z0-9_]", "S": "[^ ]"}


class _Bad(Exception):
    pass


def pattern_problem(pattern: str) -> str | None:
    """Why the grammar cannot hold ``pattern``, or ``None`` when it can."""
    if not (len(pattern) >= 2 and pattern[0] == "^" and pattern[-1] == "$" and pattern[-2:] != "\\$"):
        return "must start with ^ and end with $ (the engine's grammar holds only anchored patterns)"
    reader = _Reader(pattern[1:-1])
    try:
        reader.choices(top=True)
        if reader.at < len(reader.text):
            raise _Bad(f"unbalanced ) at {reader.pos()}")
    except _Bad as e:
        return str(e)
    return None


class _Reader:
    """A recursive-descent reading of the subset; ``at`` is the next character's index."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def pos(self) -> int:
        """Where ``at`` is in the whole pattern, counted from 1 (after its ``^``)."""
        return self.at + 2

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def choices(self, top: bool = False) -> None:
        """Choices separated by ``|``, up to a ``)`` or the end."""
        while True:
            start = self.at
            self.sequence()
            empty = self.at == start
            if self.peek() == "|":
                if top:
                    raise _Bad("| at the top of the pattern: write ^(a|b)$ so that both choices are anchored")
                if empty:
                    raise _Bad(f"an empty choice at {self.pos()} (use ? for an optional part)")
                self.at += 1
                continue
            if empty and not top:
                raise _Bad(f"an empty choice at {self.pos()} (use ? for an optional part)")
            return

    def sequence(self) -> None:
        while self.peek() not in ("", "|", ")"):
            c = self.peek()
            self.atom()
            if self.peek() in _QUANTIFIERS:
                if not c.isascii():  # the converter would repeat the character's last UTF-8 byte only
                    raise _Bad(f"a quantifier after {c!r} at {self.pos()}: put the character in a group, ({c})")
                self.quantifier()
                if self.peek() in _QUANTIFIERS:
                    raise _Bad(f"a quantifier after a quantifier at {self.pos()} (lazy and possessive forms are not supported)")

    def atom(self) -> None:
        c = self.peek()
        if c == "(":
            self.group()
        elif c == "[":
            self.klass()
        elif c == "\\":
            self.escape(in_class=False)
        elif c in ("^", "$"):
            raise _Bad(f"{c} may stand only at the pattern's {'start' if c == '^' else 'end'} (escape it: \\{c})")
        elif c in _QUANTIFIERS:
            raise _Bad(f"{c} at {self.pos()} repeats nothing")
        elif c in ("]", "}"):
            raise _Bad(f"an unescaped {c} at {self.pos()} (write \\{c})")
        else:
            self.literal(c)
            self.at += 1

    def literal(self, c: str) -> None:
        if c == '"':
            raise _Bad('" cannot stand in a pattern: the grammar would write it unescaped into the JSON text')
        if ord(c) < 0x20 or c == "\x7f":
            raise _Bad(f"control character {c!r} cannot stand in a pattern (JSON writes it as an escape)")

    def group(self) -> None:
        self.at += 1
        if self.peek() == "?":
            if self.text[self.at : self.at + 2] != "?:":
                raise _Bad(f"(? at {self.pos() - 1}: look-arounds, flags and named groups are not supported; only (?:...)")
            self.at += 2
        if self.peek() == ")":
            raise _Bad(f"an empty group at {self.pos() - 1}")
        self.choices()
        if self.peek() != ")":
            raise _Bad("unbalanced (: a group is not closed")
        self.at += 1

    def klass(self) -> None:
        self.at += 1
        if self.peek() == "^":
            self.at += 1
        first = self.at
        if self.peek() in ("]", ""):
            raise _Bad("an empty class [] (write \\] for a literal ])")
        while self.peek() != "]":
            low = self.class_char(first)
            if self.peek() == "-" and self.text[self.at + 1 : self.at + 2] not in ("]", ""):
                self.at += 1
                high = self.class_char(first)
                if high < low:
                    raise _Bad(f"the range {low}-{high} runs backwards")
        self.at += 1

    def class_char(self, first: int) -> str:
        """One character of a class (a literal or an escape); ``-`` only first or last."""
        c = self.peek()
        if c == "":
            raise _Bad("unbalanced [: a class is not closed")
        if c == "[" or self.text[self.at : self.at + 2] in ("&&", "--", "~~", "||"):
            raise _Bad(f"{c!r} at {self.pos()} inside a class: nested classes and set operations are not supported (escape [ as \\[)")
        if c == "\\":
            return self.escape(in_class=True)
        if c == "-" and self.at != first and self.text[self.at + 1 : self.at + 2] != "]":
            raise _Bad(f"- at {self.pos()} inside a class: a literal - stands first or last")
        self.literal(c)
        self.at += 1
        return c

    def escape(self, in_class: bool) -> str:
        """An escape at ``at``; returns the character it stands for."""
        c = self.text[self.at + 1 : self.at + 2]
        allowed = ("[", "]") if in_class else _META
        if c in _CLASS_ESCAPES:
            raise _Bad(f"\\{c} is not supported by the engine's grammar (write {_CLASS_ESCAPES[c]})")
        if c == "" or c not in allowed:
            which = "\\[ and \\]" if in_class else "an escaped metacharacter (\\. \\( \\[ ...)"
            raise _Bad(f"the escape \\{c} is not supported{' inside a class' if in_class else ''}: only {which}")
        self.at += 2
        return c

    def quantifier(self) -> None:
        if self.peek() != "{":
            self.at += 1
            return
        end = self.text.find("}", self.at)
        body = self.text[self.at + 1 : end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if end < 0 or not low.isdigit() or not (high.isdigit() or high == "") or not low.isascii() or not high.isascii():
            raise _Bad(f"{{ at {self.pos()} is not a repetition {{n}}, {{n,}} or {{n,m}} (write \\{{ for a literal {{)")
        counts = [int(low)] + ([int(high)] if high else [])
        if max(counts) > MAX_REPEAT:
            raise _Bad(f"a repetition above {MAX_REPEAT} (the grammar spells each one out)")
        if comma and high and int(high) < int(low):
            raise _Bad(f"the repetition {{{body}}} has its maximum below its minimum")
        self.at = end + 1
