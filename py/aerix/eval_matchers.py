"""Matchers of :mod:`aerix.evals`: what an expected answer or a call's input is compared with.

    exact(value)                    equal, as JSON values are (``True`` is not ``1``)
    subset({"city": "Lisbon"})      a dict holding these keys with these values (nested dicts
                                    are subsets too; a value may be a matcher of its own)
    contains("rain", "Lisbon")      a text holding each part (any other value: its JSON text)
    satisfies(fn)                   ``fn(value)``: fails when it returns ``False`` or raises (an
                                    ``assert`` in it gives its message as the reason)

A matcher is called with the value and returns ``None`` when it matches, else the reason it does
not, one line. A plain value where a matcher is expected is ``exact(value)``; a function is
``satisfies(fn)``. By name, for cases kept as data: ``matcher("contains", "rain")``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import AerixError, describe

__all__ = ["Matcher", "contains", "exact", "matcher", "matcher_of", "satisfies", "short", "subset"]

_SHORT = 60  # characters of a value a reason quotes


@dataclass(frozen=True)
class Matcher:
    """A named test of one value: ``matcher(value)`` is ``None`` when it matches, else why not."""

    name: str
    test: Callable[[Any], str | None] = field(repr=False, compare=False)

    def __call__(self, value: Any) -> str | None:
        return self.test(value)

    def __repr__(self) -> str:
        return self.name


def short(value: Any, limit: int = _SHORT) -> str:
    """``repr(value)``, cut to ``limit`` characters with an ellipsis."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: a bool is not a number, 1 and 1.0 are one number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def exact(value: Any) -> Matcher:
    """Equal to ``value``, as JSON values are."""

    def test(got: Any) -> str | None:
        return None if _same(got, value) else f"expected {short(value)}, got {short(got)}"

    return Matcher(f"exact({short(value)})", test)


def subset(expected: dict[str, Any]) -> Matcher:
    """A dict that holds each key of ``expected`` with its value: a matcher there is applied, a
    dict is a subset again, anything else is exact. Other keys may be there too."""
    if not isinstance(expected, dict):
        raise AerixError("options", f"subset takes a dict of the keys to expect, got {type(expected).__name__}")
    parts = _parts(expected)
    return Matcher(f"subset({short(expected)})", lambda got: _subset(parts, got, ""))


def _parts(expected: dict[str, Any]) -> dict[str, Any]:
    """Each value as a matcher, a dict as its parts again (a subset of its own)."""
    return {k: _parts(v) if isinstance(v, dict) else matcher_of(v, f"subset key {k!r}") for k, v in expected.items()}


def _subset(expected: dict[str, Any], got: Any, path: str) -> str | None:
    if not isinstance(got, dict):
        return f"{path or 'value'}: expected a dict, got {short(got)}"
    for key, want in expected.items():
        where = f"{path}.{key}" if path else str(key)
        if key not in got:
            return f"{where}: missing"
        why = _subset(want, got[key], where) if isinstance(want, dict) else want(got[key])
        if why is not None:
            return why if isinstance(want, dict) else f"{where}: {why}"
    return None


def contains(*parts: str, ignore_case: bool = False) -> Matcher:
    """A text that holds each of ``parts`` (any other value is tested as its JSON text)."""
    if not parts or not all(isinstance(p, str) and p for p in parts):
        raise AerixError("options", f"contains takes one or more non-empty strings, got {parts!r}")
    fold: Callable[[str], str] = str.casefold if ignore_case else str

    def test(got: Any) -> str | None:
        text = got if isinstance(got, str) else json.dumps(got, ensure_ascii=False, default=repr)
        missing = [p for p in parts if fold(p) not in fold(text)]
        return None if not missing else f"{short(missing[0])} not in {short(text)}"

    args = ", ".join(repr(p) for p in parts) + (", ignore_case=True" if ignore_case else "")
    return Matcher(f"contains({args})", test)


def satisfies(fn: Callable[[Any], Any], name: str | None = None) -> Matcher:
    """``fn(value)`` holds: it fails when ``fn`` returns ``False`` or raises (the exception is
    the reason, so ``assert`` inside ``fn`` explains itself); any other return passes."""
    if not callable(fn) or fn in _FACTORIES:
        raise AerixError("options", f"satisfies takes a function of the value, got {fn!r}")
    label = name or str(getattr(fn, "__name__", "check"))

    def test(got: Any) -> str | None:
        why = verdict(fn, got)
        return None if why is None else f"{label}: {why}"

    return Matcher(label, test)


def verdict(fn: Callable[[Any], Any], value: Any) -> str | None:
    """What ``satisfies`` and a case's own checks make of ``fn(value)``: ``None`` when it holds,
    else the reason (an assertion's message, the exception, or ``returned False``)."""
    try:
        ok = fn(value)
    except Exception as e:  # the user's check failed: that is the case's reason, not our crash
        text = (str(e).strip().splitlines() or [""])[0]  # pytest's rewritten asserts add lines
        return text if isinstance(e, AssertionError) and text else f"raised {describe(e)}"
    return "returned False" if ok is False else None


_FACTORIES: tuple[Callable[..., Matcher], ...] = (exact, subset, contains, satisfies)
_BY_NAME: dict[str, Callable[[Any], Matcher]] = {"exact": exact, "subset": subset, "contains": lambda v: contains(*([v] if isinstance(v, str) else v))}


def matcher(name: str, value: Any) -> Matcher:
    """A matcher by its name (cases kept as data): ``exact``, ``subset`` or ``contains`` (a
    string or a list of strings). ``satisfies`` needs a function, so it is not named here."""
    if name not in _BY_NAME:
        raise AerixError("options", f"unknown matcher {name!r} (known: {', '.join(_BY_NAME)}; satisfies takes a function: use evals.satisfies)")
    return _BY_NAME[name](value)


def matcher_of(value: Any, what: str) -> Matcher:
    """``value`` as a matcher: itself, a function as ``satisfies``, a plain value as ``exact``.
    ``what`` names the place in an error (``answer``, ``weather's input``)."""
    if isinstance(value, Matcher):
        return value
    if value in _FACTORIES:  # contains instead of contains("..."): it would match anything
        raise AerixError("options", f"{what}: {value.__name__} is a matcher factory: call it, e.g. {value.__name__}(...)")
    if callable(value):
        return satisfies(value)
    return exact(value)
