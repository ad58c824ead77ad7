"""Secrets kept out of everything shown: the API key, credential headers, a base URL's userinfo and query.

    secrets = Secrets(api_key, base_url, headers)
    secrets.redact("could not reach http://user:pw@host/v1")   # 'could not reach http://[redacted]@host/v1'
    shown_url("http://host/v1?key=abc")                        # 'http://host/v1?key=[redacted]'

The rules, each with a test in ``tests/unit/test_openai_hardening.py``:

- The key: surrounding whitespace is stripped (a key read from a file or an environment
  variable often ends in a newline); a key with a space, a control character or a non-ASCII
  character inside cannot be an HTTP header value, so it is refused (``AerixError("options")``)
  with the problem named and the key not shown (:func:`clean_api_key`).
- Wherever a URL is shown (errors, reprs), its userinfo, every query value and any fragment
  are ``[redacted]`` (:func:`shown_url`); the request itself still carries them.
- Every error the client yields is passed through :meth:`Secrets.error`: the key, the values
  of credential headers (``Authorization``, ``api-key``, ...) and the URL's password are
  replaced wherever they appear, at any length (a network library quoting the request, a server
  echoing the key); query values and a bare userinfo name are replaced when 6 characters or
  longer, so that ``?v=1`` does not blank every ``1``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from ...errors import AerixError
from .stream import StreamError

__all__ = ["REDACTED", "Secrets", "clean_api_key", "shown_url"]

REDACTED = "[redacted]"
_SHORTEST_LOOSE = 6  # query values and a bare user name shorter than this are shown in free text
_CREDENTIAL_HEADERS = ("auth", "key", "token", "secret", "cookie", "password")


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


class Secrets:
    """What must never be shown of one client's settings, and the means to blank it out."""

    def __init__(self, api_key: str | None, base_url: str, headers: dict[str, str] | None = None) -> None:
        strict = [api_key or ""]
        credentials = [str(v).strip() for k, v in (headers or {}).items() if any(w in str(k).lower() for w in _CREDENTIAL_HEADERS)]
        # a credential header's whole value, and its token after a scheme ("Bearer sk-...")
        strict += credentials + [v.split(None, 1)[1] for v in credentials if len(v.split(None, 1)) == 2]
        _, userinfo, _, query, fragment = _parts(base_url)
        name, colon, password = userinfo.partition(":")
        strict += [userinfo, password, fragment] if colon else [fragment]
        loose = [] if colon else [name]
        for field_name, eq, value in (item.partition("=") for item in query.split("&")):
            loose.append(value if eq else field_name)
        found = {s for s in strict if s} | {s for s in loose if len(s) >= _SHORTEST_LOOSE}
        found |= {unquote(s) for s in found if unquote(s)}
        self._secrets = sorted(found, key=len, reverse=True)  # the longest first: a password inside the userinfo

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

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
        if not self._secrets:
            return error
        code = self.redact(error.code) if isinstance(error.code, str) else error.code
        return StreamError(self.redact(error.message), code=code, problem=self.redact_value(error.problem))
