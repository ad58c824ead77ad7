"""Secrets kept out of everything shown: the API key, credential headers, a base URL's query.

    secrets = Secrets(api_key, base_url, headers)
    secrets.redact("the server said: bad key sk-abc...")      # 'the server said: bad key [redacted]'
    shown_url("http://host/v1?key=abc")                        # 'http://host/v1?key=[redacted]'

The rules, each with a test in ``tests/unit/test_openai_hardening.py`` or ``test_openai_secrets.py``:

- The key: surrounding whitespace is stripped (a key read from a file or an environment
  variable often ends in a newline); a key with a space, a control character or a non-ASCII
  character inside cannot be an HTTP header value, so it is refused (``AerixError("options")``)
  with the problem named and the key not shown (:func:`clean_api_key`).
- Wherever a URL is shown (errors, reprs), its userinfo, every query value and any fragment
  are ``[redacted]`` (:func:`shown_url`); the request itself still carries them. (The client
  refuses a ``base_url`` with userinfo: it would go as a Basic ``Authorization`` header.)
- A secret is found in every form a server may echo it in: as it is, JSON-escaped (``\\/``,
  ``\\"``, ``\\u00XX`` for any of its characters, either case) and percent-encoded (``%XX``, either
  case), each character in any of these forms.
- Every error the client yields is passed through :meth:`Secrets.error`, and every text the
  client cuts to a length is redacted *before* the cut (:meth:`Secrets.shorten`), so no cut
  leaves a secret's first characters behind: the key, the values of credential headers (``Authorization``, ``api-key``,
  ``Cookie``, ...; the token after a scheme, a Basic token's ``user:password`` and password) and
  the URL's fragment are replaced wherever they appear, at any length (a network library
  quoting the request, a server echoing the key); query values and a bare userinfo name are
  replaced when 6 characters or longer, so that ``?v=1`` does not blank every ``1``.
- The model's text and tool-call arguments (:meth:`Secrets.stream`, :class:`ShownStream`): a
  server that echoes a header into the content must not put the key into the events, the
  conversation or a stored record. The key, credential header tokens and credential-named query
  values (``key``, ``token``, ``sig``, ...) of 8 characters or more are ``[redacted]`` there, even
  split across chunks: an end of a chunk that could begin one waits for the next chunk (at most
  the secret's length less one), and at the end of the stream such an unfinished beginning of 4
  characters or more is ``[redacted]``, a shorter one shown.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any, Iterable, Sequence
from urllib.parse import unquote

from ...errors import AerixError
from .stream import ContentDelta, Logprobs, StreamError, StreamEvent, ToolCallDelta, ToolCallEnd, ToolCallStart

__all__ = ["REDACTED", "SecretForms", "Secrets", "ShownStream", "TextRedactor", "clean_api_key", "has_userinfo", "shown_url"]

REDACTED = "[redacted]"
_SHORTEST_LOOSE = 6  # query values and a bare user name shorter than this are shown in free text
_SHORTEST_IN_TEXT = 8  # a secret shorter than this is not looked for in the model's text
_UNFINISHED = 4  # an unfinished secret this long (as written) where a text is cut or ends is redacted
_CREDENTIAL_WORDS = ("auth", "key", "token", "secret", "cookie", "password", "sig")


def clean_api_key(key: Any) -> str | None:
    """The key, stripped; ``None`` when there is none. Refuses a key no HTTP header can carry."""
    if key is None:
        return None
    if not isinstance(key, str):
        raise AerixError("options", f"api_key must be a string, got {type(key).__name__}")
    key = key.strip()
    for position, ch in enumerate(key):
        if not "!" <= ch <= "~":
            raise AerixError(
                "options",
                f"api_key has {_character(ch)} at position {position + 1} of {len(key)} (the key is not shown): "
                "a key is printable ASCII without spaces",
            )
    return key or None


def _character(ch: str) -> str:
    names = {"\n": "a line break", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
    if ch in names:
        return names[ch]
    return "a non-ASCII character" if ord(ch) > 0x7F else f"a control character (U+{ord(ch):04X})"


def _parts(url: str) -> tuple[str, str, str, str, str]:
    """``(scheme://, userinfo, rest, query, fragment)``, cut by hand: never raises on a bad URL.
    The userinfo ends at the last ``@`` before the query, so a raw ``/`` in a password is not shown."""
    rest, _, fragment = url.partition("#")
    rest, _, query = rest.partition("?")
    head, sep, tail = rest.partition("://")
    if not sep:
        head, tail = "", rest
    userinfo, at, tail = tail.rpartition("@")
    return head + sep, userinfo if at else "", tail, query, fragment


def has_userinfo(url: str) -> bool:
    """Whether ``url`` carries a user name or password (``http://user:pass@host``)."""
    return bool(_parts(url)[1])


def shown_url(url: str) -> str:
    """``url`` as it may be shown: userinfo, query values and fragment ``[redacted]``."""
    start, userinfo, tail, query, fragment = _parts(url)
    shown = start + (f"{REDACTED}@" if userinfo else "") + tail
    if "?" in url.partition("#")[0]:
        items = (item.partition("=") for item in query.split("&"))
        shown += "?" + "&".join(f"{name}={REDACTED}" if eq else (REDACTED if name else "") for name, eq, _ in items)
    if "#" in url:
        shown += f"#{REDACTED}"
    return shown


# -- every form of a secret -----------------------------------------------------------------


def _char_forms(ch: str) -> tuple[str, ...]:
    """How one character of a secret may be written: itself, JSON-escaped, percent-encoded."""
    units = ch.encode("utf-16-be", "surrogatepass")
    escaped = "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
    percent = "".join(f"%{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
    forms = {ch, escaped, escaped.upper().replace("\\U", "\\u"), percent, percent.upper()}
    if ch in '/"\\':
        forms.add("\\" + ch)
    if ch == " ":
        forms.add("+")
    return tuple(sorted(forms, key=len, reverse=True))


def _begins(text: str, start: int, chars: Sequence[tuple[str, ...]]) -> bool:
    """Whether all of ``text[start:]`` could be how a secret begins (each character in one of its
    forms, ``chars``), the secret unfinished: a search over (position, characters matched)."""
    todo, seen = [(start, 0)], set()
    while todo:
        i, k = todo.pop()
        if i == len(text):
            if k < len(chars):
                return True
            continue
        if k == len(chars) or (i, k) in seen:
            continue
        seen.add((i, k))
        for form in chars[k]:
            if text.startswith(form, i):
                todo.append((i + len(form), k + 1))
            elif len(text) - i < len(form) and form.startswith(text[i:]):
                return True  # the text ends inside this character's form
    return False


class SecretForms:
    """A set of secrets, found in any of their forms: ``sub`` blanks them out; ``unfinished`` measures
    an end that could begin one; ``cut`` blanks out such an end of a text that was cut short."""

    def __init__(self, secrets: Iterable[str]) -> None:
        ordered = sorted({s for s in secrets if s}, key=len, reverse=True)  # the longest first: a token inside a header
        self._each = []
        for secret in ordered:
            chars = [_char_forms(ch) for ch in secret]
            self._each.append((secret, chars, frozenset(f[0] for f in chars[0]), sum(len(f[0]) for f in chars)))
        self.longest = max((longest for _, _, _, longest in self._each), default=0)  # the longest written form
        alternatives = ("".join(f"(?:{'|'.join(map(re.escape, forms))})" for forms in chars) for _, chars, _, _ in self._each)
        self._pattern = re.compile("|".join(alternatives)) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def sub(self, text: str) -> str:
        return self._pattern.sub(REDACTED, text) if self._pattern is not None else text

    def unfinished(self, text: str) -> int:
        """How long the longest end of ``text`` is that could begin a secret (0: none)."""
        best = 0
        for secret, chars, starts, longest in self._each:
            for i in range(max(0, len(text) - longest + 1), len(text) - best):  # the earliest start: the longest end
                if text[i] not in starts:
                    continue
                if secret.startswith(text[i:]) or (("\\" in text[i:] or "%" in text[i:]) and _begins(text, i, chars)):
                    best = len(text) - i  # written as it is (the quick test), or with escapes
                    break
        return best

    def cut(self, text: str) -> str:
        """``text`` that ends where more was cut off: an unfinished secret at its end redacted."""
        keep = self.unfinished(text)
        return text[: len(text) - keep] + REDACTED if keep >= _UNFINISHED else text


class TextRedactor:
    """Secrets blanked out of a text that comes in pieces, even where a piece ends inside one.

    ``feed`` gives what may be shown now; an end that could begin a secret is held for the next
    piece. ``close`` gives what was held (``[redacted]`` when it is 4 characters or more).
    """

    def __init__(self, forms: SecretForms) -> None:
        self._forms = forms
        self.held = ""

    def feed(self, piece: str) -> str:
        if not self._forms:
            return piece
        text = self._forms.sub(self.held + piece)
        keep = self._forms.unfinished(text)
        self.held = text[len(text) - keep :]
        return text[: len(text) - keep]

    def close(self) -> str:
        held, self.held = self.held, ""
        return self._forms.cut(held) if held else ""


def _credentials(name: str, value: str) -> list[str]:
    """The secret parts of a credential header's value: a cookie's values, the token after a
    scheme (``Bearer sk-...``), a Basic token's ``user:password`` and password; else all of it."""
    if "cookie" in name.lower():
        return [part.partition("=")[2].strip() for part in value.split(";")]
    scheme, _, token = value.partition(" ")
    token = token.strip()
    if not token:
        return [value]
    found = [token]
    if scheme.lower() == "basic":
        try:
            pair = base64.b64decode(token, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return found
        found += [pair, pair.partition(":")[2]]
    return found


class Secrets:
    """What must never be shown of one client's settings, and the means to blank it out."""

    def __init__(self, api_key: str | None, base_url: str, headers: dict[str, str] | None = None) -> None:
        strict, in_text = [api_key or ""], [api_key or ""]
        for name, value in (headers or {}).items():
            if any(word in str(name).lower() for word in _CREDENTIAL_WORDS):
                parts = _credentials(str(name), str(value).strip())
                strict += [str(value).strip(), *parts]
                in_text += parts
        _, userinfo, _, query, fragment = _parts(base_url)
        name, colon, password = userinfo.partition(":")
        strict += [userinfo, password, fragment] if colon else [fragment]
        in_text += [password] if colon else []
        loose = [] if colon else [name]
        for field_name, eq, value in (item.partition("=") for item in query.split("&")):
            loose.append(value if eq else field_name)
            if eq and any(word in unquote(field_name).lower() for word in _CREDENTIAL_WORDS):
                in_text.append(value)
        found = {s for s in strict if s} | {s for s in loose if len(s) >= _SHORTEST_LOOSE}
        in_text = [s for s in in_text if len(s) >= _SHORTEST_IN_TEXT]
        self._all = SecretForms(found | {unquote(s) for s in found})
        self._in_text = SecretForms([*in_text, *(unquote(s) for s in in_text)])

    def redact(self, text: str, *, cut: bool = False) -> str:
        """``text`` with every secret ``[redacted]``; ``cut``: the text was cut short, so an
        unfinished secret at its end is redacted too."""
        text = self._all.sub(text)
        return self._all.cut(text) if cut else text

    def shorten(self, text: str, length: int) -> str:
        """``text`` redacted, then cut to ``length`` characters, so that no secret's beginning is left
        at the cut. Only what can be shown is looked at: a 16 MiB frame costs what its start costs."""
        window = text[: length + self._all.longest]
        return self.redact(window, cut=len(window) < len(text))[:length]

    def redact_value(self, value: Any) -> Any:
        """Strings inside dicts and lists redacted (a problem document), the rest as it is."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact_value(v) for v in value]
        return value

    def error(self, error: StreamError) -> StreamError:
        """``error`` with every secret blanked from its message, code and problem document."""
        if not self._all:
            return error
        code = self.redact(error.code) if isinstance(error.code, str) else error.code
        return StreamError(self.redact(error.message), code=code, problem=self.redact_value(error.problem))

    def stream(self) -> TextRedactor:
        """A redactor for one stream of the model's text."""
        return TextRedactor(self._in_text)


class ShownStream:
    """One stream's events as they may be shown: the secrets out of the model's text and each
    call's arguments (held across chunks, released before the next other event), and out of errors."""

    def __init__(self, secrets: Secrets) -> None:
        self._secrets = secrets
        self._text = secrets.stream()
        self._args: dict[str, TextRedactor] = {}

    def __call__(self, ev: StreamEvent) -> list[StreamEvent]:
        if isinstance(ev, ContentDelta):
            shown = self._text.feed(ev.content)
            return [ContentDelta(shown)] if shown else []
        if isinstance(ev, ToolCallDelta):
            shown = self._args.setdefault(ev.id, self._secrets.stream()).feed(ev.args)
            return [ToolCallDelta(ev.id, shown)] if shown else []
        if isinstance(ev, Logprobs):
            return [ev]  # its text's chunk may still be held: it goes out with the next text
        out: list[StreamEvent] = []
        if not isinstance(ev, ToolCallEnd):  # the text goes out before a call starts, and at the end
            text = self._text.close()
            out += [ContentDelta(text)] if text else []
        ending = [] if isinstance(ev, ToolCallStart) else [ev.id] if isinstance(ev, ToolCallEnd) else list(self._args)
        for call_id in ending:
            held = self._args.pop(call_id, None)
            args = held.close() if held is not None else ""
            out += [ToolCallDelta(call_id, args)] if args else []
        if isinstance(ev, ToolCallStart):
            ev = ToolCallStart(ev.id, self._secrets.redact(ev.name))
        return [*out, self._secrets.error(ev) if isinstance(ev, StreamError) else ev]
