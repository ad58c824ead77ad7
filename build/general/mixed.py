"""Requests for more calls than one tool and one list, for run P's seed (:data:`MIXED_FROM_SEED`).
Run O's BFCL misses that no earlier seed had a request like (build/general/README.md, "Results that
end in parentheses, requests for more than two calls"):

- **two fields' values crossed** (:func:`crossed`, ``CROSSED_SHARE`` of the parallel requests where
  a tool has two required fields that can vary): "the population of two cities in two years" is four
  calls, each city with each year. Run O made two, pairing them;
- **three tools** (:func:`more_than_two`, ``THREE_SHARE`` of the multiple requests of a family of
  three tools or more): one call each, in the request's order. Every earlier multiple request was
  two tools, and run O stopped after one or two;
- **one tool for a list, and another** (``TWO_ONE_SHARE`` of them): "the weather in A and B, and
  book a table for two": a call for each value of the list, then the other tool's call.

Switched on by :func:`mixed` (corpus.generate); off, nothing is drawn, so the seeds before make their
corpora as they did. Seed 15 only has the list beside another tool (:data:`TWO_ONE_SEEDS`): run P, trained
on it, called one tool for two values beside another where BFCL asked one call of each; seed 16 (run Q's)
has the other two shapes, and the multiple requests that would have been that shape are two tools.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

from . import phrasing as ph
from .families import Family, Param
from .tasks import _FRAMES, PAIRS, PARALLEL_KINDS, Call, Task, _clause, _distinct, _head, _input, _joined, _listing, _phrase, _two_varying, _values
from .values import Value, spoken, switched

__all__ = ["MIXED_FROM_SEED", "TWO_ONE_SEEDS", "CROSSED_SHARE", "THREE_SHARE", "TWO_ONE_SHARE", "THREE_FRAMES", "CROSS_TAILS", "mixed", "on", "crossed", "more_than_two"]

MIXED_FROM_SEED = 15
CROSSED_SHARE = 0.25
THREE_SHARE = 0.15
TWO_ONE_SHARE = 0.2
TWO_ONE_SEEDS = frozenset({15})
THREE_FRAMES = (
    "{X1}, {x2}, and {x3}.", "{X1}; {x2}; {x3}.", "First {x1}, then {x2}, and finally {x3}.", "Three things: {x1}, {x2}, and {x3}.",
    "Can you {x1}, {x2} and {x3}?", "{X1}. Also {x2}. And {x3}.", "Please {x1}, then {x2}, then {x3}.",
    "I need three things: {x1}; {x2}; and {x3}.", "{X1}, {x2}, plus {x3}.", "Could you {x1}? Then {x2}, and {x3} too.",
    "{X1}. After that {x2}, and last {x3}.", "Do these: {x1}, {x2}, {x3}.",
)
# half the crossed requests say so after their lists ({n}: the number of calls, in words)
CROSS_TAILS = (", every combination", " (all {n} combinations)", ", each with each", ", for all {n} combinations", ", each one for both")
_MIXED = {"on": False}
_TWO_ONE = {"on": False}


@contextmanager
def mixed(on: bool, two_one: bool = True) -> Iterator[None]:
    """The shapes on (``two_one``: the list beside another tool too); off, none of them."""
    with switched(_MIXED, on), switched(_TWO_ONE, on and two_one):
        yield


def on() -> bool:
    return _MIXED["on"]


def _name(v: Value) -> str:
    return v.short or v.said


def _partners(a: Param, b: Param) -> bool:
    return PAIRS.get(a.base) == b.base or PAIRS.get(b.base) == a.base


def crossed(rng: random.Random, family: Family, val: bool) -> Task | None:
    """Two fields' values crossed: a call for each value of the one with each of the other's."""
    options = _two_varying(family)
    if not options:
        return None
    spec = rng.choice(options)
    named = _values(rng, spec)
    first, second = [p for p, _ in named if p.required and p.kind in PARALLEL_KINDS][:2]
    if _partners(first, second):  # a conversion's two units: crossed, some calls would convert a unit to itself
        return None
    a = _distinct(rng, first, named, rng.choice((2, 2, 3)))
    b = _distinct(rng, second, named, 2)
    if len(a) < 2 or len(b) < 2:
        return None
    lists = {first: _joined(rng, a), second: _joined(rng, b)}
    kind, head, other = _head(rng, spec, val, family.reworded)
    x = _phrase(rng, head, [(p, lists.get(p, v)) for p, v in named])
    if rng.random() < 0.5:
        x += rng.choice(CROSS_TAILS).replace("{n}", spoken(len(a) * len(b)))
    frame = rng.choice(ph.frames(_FRAMES[kind], val))
    base = _input(named)
    calls = [Call(spec.name, {**base, first.name: va.input, second.name: vb.input}, [Value(None, "", f"{_name(va)}, {_name(vb)}")])
             for va in a for vb in b]
    return Task("parallel", ph.fill(ph.dress(rng, frame), x=x), calls, frame=frame, head=other)


def more_than_two(rng: random.Random, family: Family, val: bool) -> Task | None:
    """Three tools, one call each; or one tool for each value of a list, and another tool once."""
    r = rng.random()
    if r < THREE_SHARE and len(family.tools) >= 3:
        clauses = [_clause(rng, family, spec, val) for spec in rng.sample(family.tools, 3)]
        frame = rng.choice(ph.frames(THREE_FRAMES, val))
        prompt = ph.fill(ph.dress(rng, frame), x1=clauses[0][0], x2=clauses[1][0], x3=clauses[2][0])
        return Task("multiple", prompt, [c[1] for c in clauses], frame=frame, head=next((c[2] for c in clauses if c[2]), ""))
    if r >= THREE_SHARE + TWO_ONE_SHARE or not _TWO_ONE["on"]:
        return None
    listing = _listing(rng, family, (2, 2, 3))
    if listing is None:
        return None
    spec, varying, named, values = listing
    joined = _joined(rng, values)
    listed = _phrase(rng, spec.do, [(p, joined if p is varying else v) for p, v in named])
    base = _input(named)
    many = [Call(spec.name, {**base, varying.name: v.input}, [v]) for v in values]
    part, call, head = _clause(rng, family, rng.choice([t for t in family.tools if t is not spec]), val)
    frame = rng.choice(ph.frames(ph.MULTI_FRAMES, val))
    if rng.random() < 0.5:
        return Task("multiple", ph.fill(ph.dress(rng, frame), x1=listed, x2=part), many + [call], frame=frame, head=head)
    return Task("multiple", ph.fill(ph.dress(rng, frame), x1=part, x2=listed), [call] + many, frame=frame, head=head)
