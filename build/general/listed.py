"""Numbers listed as people jot them down, for the parallel requests of run O's seed
(:data:`LISTED_FROM_SEED`). Two of run M's BFCL parallel misses:

- a list of short numbers written without a space after its commas (of the form "4,9 and 12"): run M
  read two of them as one number and made up a third. :func:`tight` writes :data:`TIGHT_SHARE` of a parallel request's list of
  short numbers so (never an item of three digits or more after the first, which would read as a
  thousands separator: "5,100");
- two numbers a call, the pairs listed after their labels named once (of the form "for a and b: 2 and
  7, 6 and 9"): run M paired the first two, then each of the others with the second.
  :func:`pairs_listed` words :data:`PAIRS_SHARE` of the paired requests (tasks._paired) whose two
  varying fields are numbers so.

Both switched on by :func:`listed` (corpus.generate); off, nothing is drawn, so the seeds before make
their corpora as they did.
"""

from __future__ import annotations

import random
import re
from contextlib import AbstractContextManager

from .families import Param
from .values import Value, switched

__all__ = ["LISTED_FROM_SEED", "TIGHT_SHARE", "PAIRS_SHARE", "PAIR_FORMS", "listed", "tight", "pairs_listed"]

LISTED_FROM_SEED = 14
TIGHT_SHARE = 0.6
PAIRS_SHARE = 0.5
_LISTED = {"on": False}
_SHORT = re.compile(r"-?\d{1,2}(\.\d+)?")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
# {a} and {b}: the two labels; {pairs}: "2 and 7, 6 and 9" (each pair "x and y" or "x, y")
PAIR_FORMS = ("for {a} and {b}: {pairs}", "with {a} and {b} of {pairs}", "({a}, {b}) = {pairs}", "where {a} and {b} are {pairs}",
              "for these {a} and {b} values: {pairs}")


def listed(on: bool) -> AbstractContextManager[None]:
    return switched(_LISTED, on)


def tight(rng: random.Random, values: list[Value]) -> str | None:
    """The values as one list with no space after its commas, their unit said once ("16,17,18 sides",
    "1,5 and 10 years"), :data:`TIGHT_SHARE` of the time where every value is a number said in
    digits with a unit, the same for all ("1 day", "5 days"), and each after the first short; else
    None (nothing drawn). Numbers said without a unit are never listed so."""
    parts = [v.said.split(" ", 1) for v in values]
    units = {p[1] if len(p) > 1 else "" for p in parts}
    if not _LISTED["on"] or len({u.rstrip("s") for u in units}) != 1 or units == {""} or not _NUMBER.fullmatch(parts[0][0]) \
            or not all(_SHORT.fullmatch(p[0]) for p in parts[1:]):
        return None
    if rng.random() >= TIGHT_SHARE:
        return None
    unit = max((p[1] for p in parts if len(p) > 1), key=len, default="")  # "days", not "day"
    numbers = [p[0] for p in parts]
    glue = rng.choice((" and ", ",", ", and ", " & ") if len(numbers) > 2 else (" and ", ",", " & "))
    return ",".join(numbers[:-1]) + glue + numbers[-1] + (" " + unit if unit else "")


def pairs_listed(rng: random.Random, varying: list[Param], rows: list[list[tuple[Param, Value]]]) -> str | None:
    """The varying values of a paired request's rows as pairs after their labels ("for a and b: 2 and
    7, 6 and 9"), :data:`PAIRS_SHARE` of the time where the two varying fields are numbers said in
    digits (a unit may follow each: "3 cm and 4 cm"); else None (nothing drawn)."""
    if not _LISTED["on"] or len(varying) != 2 or any(p.kind not in ("int", "num") for p in varying):
        return None
    pairs = [[v for p, v in row if p in varying] for row in rows]
    if any(not _NUMBER.match(v.said) for pair in pairs for v in pair) or rng.random() >= PAIRS_SHARE:
        return None
    glue = rng.choice((" and ", ", "))
    said = [glue.join(v.said for v in pair) for pair in pairs]
    last = (", ", " and ", ", and ") if len(said) > 2 else (", ", " and ")
    joined = ", ".join(said[:-1]) + rng.choice(last) + said[-1] if glue == " and " else \
        "; ".join(said[:-1]) + rng.choice(("; ", " and ")) + said[-1]
    if rng.random() < 0.3:
        joined = " and ".join(f"({s.replace(' and ', ', ')})" for s in said)
    form = rng.choice(PAIR_FORMS)
    return form.format(a=varying[0].label, b=varying[1].label, pairs=joined)
