"""Kinds of parameter value: how a tool declares one (JSON Schema), how a value is drawn, and
the ways a person names it in a request.

A kind is written in a tool spec as ``name:kind[:arg...]`` (see :mod:`build.general.domains`).
``Value.said`` is what the request says, ``Value.input`` what the call passes: "seventeen
percent" → ``17``, "March 4, 2026" → ``"2026-03-04"``, "'Blue Harbor'" → ``"Blue Harbor"``,
"2 pears and 3 figs" → ``[{"name": "pears", "quantity": 2}, ...]``. Training learns to read
the value the tool's doc asks for out of however it was said.
"""

from __future__ import annotations

import random
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from build.model.corpus import synthetic_word
from build.model.worlds import TRAIN

from . import lists

__all__ = ["Kind", "KINDS", "Value", "errand", "switched", "spoken", "join_words", "plural", "big_numbers", "unit_words", "units_apart", "UNIT_WORDS",
           "conversions_whole", "said_whole", "MORE_UNIT_WORDS", "sums_more", "sums_said_more", "zero_division", "SUMS_FROM_SEED"]

# Numbers as people write large ones: "$250,000", "250k", "1.5 million euros", "12,400" (run C read
# "$200,000" as 200). On for the corpora from run D's seed (corpus.generate); off, values are drawn
# exactly as runs A-C had them.
_BIG = {"on": False}


@contextmanager
def switched(switch: dict[str, bool], on: bool) -> Iterator[None]:
    """``switch["on"]`` set to ``on`` inside the ``with`` block: how a seed turns its additions on."""
    before, switch["on"] = switch["on"], on
    try:
        yield
    finally:
        switch["on"] = before


def big_numbers(on: bool) -> AbstractContextManager[None]:
    return switched(_BIG, on)


# Units as people say them: "5 miles to kilometers" for an enum of "mi", "km" (run D's misses on the
# demo copied one unit into both fields). On for the corpora from run E's seed; off, enums are said
# by their values as runs A-D had them.
_UNITS = {"on": False}
UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "mm": ("millimeters", "millimetres"), "cm": ("centimeters", "centimetres"), "m": ("meters", "metres"),
    "km": ("kilometers", "kilometres", "kms"), "in": ("inches",), "ft": ("feet", "foot"), "mi": ("miles",),
    "ml": ("milliliters", "millilitres"), "l": ("liters", "litres"), "cup": ("cups",), "gallon": ("gallons",), "pint": ("pints",),
    "yd": ("yards",), "KB": ("kilobytes",), "MB": ("megabytes",), "GB": ("gigabytes", "gigs"), "TB": ("terabytes",),
    "kmh": ("km/h", "kilometers per hour"), "mph": ("miles per hour",), "ms": ("meters per second", "m/s"), "knots": ("knots",),
    "kg": ("kilograms", "kilos"), "lb": ("pounds", "lbs"), "g": ("grams",), "oz": ("ounces",), "st": ("stone",),
    "celsius": ("degrees C", "°C", "centigrade"), "fahrenheit": ("°F", "degrees F"), "kelvin": ("K",),
}


def units_apart() -> bool:
    """Whether a conversion's two units are drawn apart (with :func:`unit_words`)."""
    return _UNITS["on"]


def unit_words(on: bool) -> AbstractContextManager[None]:
    return switched(_UNITS, on)


# From run F's seed: a conversion said whole, as people say one ("88.3 meter in cm", "how many feet
# is 45.19 m": run E took the unit next to its target for the source, tasks.py), and units in the
# singular too. Off, requests are drawn as runs A-E had them.
_WHOLE = {"on": False}
MORE_UNIT_WORDS: dict[str, tuple[str, ...]] = {
    "mm": ("millimeter",), "cm": ("centimeter", "centimetre"), "m": ("meter", "metre"), "km": ("kilometer", "kilometre"),
    "in": ("inch",), "ft": ("foot",), "mi": ("mile",), "yd": ("yard",), "ml": ("milliliter",), "l": ("liter", "litre"),
    "gallon": ("US gallons",), "kg": ("kilogram", "kilo"), "lb": ("pound",), "g": ("gram",), "oz": ("ounce",),
    "celsius": ("degrees Celsius", "Celsius"), "fahrenheit": ("degrees Fahrenheit", "Fahrenheit"), "kelvin": ("kelvins",),
    "GB": ("gigabyte",), "MB": ("megabyte",),
    # from run G's seed (domains.FIELDS' one-letter scales)
    "C": ("Celsius", "degrees Celsius", "°C", "degrees C"), "F": ("Fahrenheit", "degrees Fahrenheit", "°F", "degrees F"), "K": ("kelvin", "kelvins"),
}


def conversions_whole() -> bool:
    """Whether a conversion may be asked for whole ("12 kg in pounds"), with :func:`said_whole`."""
    return _WHOLE["on"]


def said_whole(on: bool) -> AbstractContextManager[None]:
    return switched(_WHOLE, on)


@dataclass(frozen=True)
class Value:
    input: Any  # what the call passes
    said: str  # how the request names it (already inside its mention, "in Lisbon")
    short: str  # how a final or a list names it ("Lisbon")


_ONES = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spoken(n: int) -> str:
    """An integer 0..9999 in English words."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else "-" + _ONES[n % 10])
    if n < 1000:
        rest = n % 100
        return f"{_ONES[n // 100]} hundred" + ("" if rest == 0 else " and " + spoken(rest))
    rest = n % 1000
    return f"{spoken(n // 1000)} thousand" + ("" if rest == 0 else (" and " if rest < 100 else " ") + spoken(rest))


_IRREGULAR = {"person": "people", "child": "children", "foot": "feet", "inch": "inches", "box": "boxes", "match": "matches",
              "class": "classes", "bus": "buses", "series": "series", "batch": "batches", "glass": "glasses"}


def plural(noun: str, n: float = 2) -> str:
    if n == 1:
        return noun
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")


def join_words(rng: random.Random, items: list[str]) -> str:
    if len(items) == 1:
        return items[0]
    glue = rng.choice((" and ", ", and ", " & ", " and ")) if len(items) > 2 else rng.choice((" and ", " & ", " and "))
    return ", ".join(items[:-1]) + (glue if len(items) > 2 else glue.lstrip(",")) + items[-1]


def number_text(rng: random.Random, v: int | float, words: float = 0.25) -> str:
    if isinstance(v, int) and 0 <= v <= (10**9 if _BIG["on"] else 9999):
        r = rng.random()
        if r < words and v <= 999:
            return spoken(v)
        if r < words + (0.4 if _BIG["on"] else 0.1) and v >= 1000:
            return f"{v:,}"
    return str(v)


def _big_money(rng: random.Random, cur: str, sym: str | None) -> Value:
    """A large amount, said with separators, "k" or "million"."""
    word = lists.CURRENCY_WORDS.get(cur, cur)
    if rng.random() < 0.6:
        k = rng.randint(10, 990)
        v = k * 1000
        forms = [f"{v:,} {word}", f"{k}k {cur}", f"{k},000 {word}"] + ([f"{sym}{v:,}", f"{sym}{k}k", f"{sym}{v:,}"] if sym else [])
    else:
        m = rng.choice((1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 12, 25))
        v = int(m * 1_000_000)
        forms = [f"{m} million {word}", f"{v:,} {cur}", f"{m}M {cur}"] + ([f"{sym}{m} million", f"{sym}{v:,}", f"{sym}{m}M"] if sym else [])
    return Value(v, rng.choice(forms), f"{v:,} {cur}")


def draw_number(rng: random.Random, lo: float, hi: float, integer: bool) -> int | float:
    if integer:
        return rng.randint(int(lo), int(hi))
    v = round(rng.uniform(lo, hi), rng.choice((0, 1, 1, 2)))
    if not lo <= v <= hi:  # rounded past a bound: the bound itself
        v = lo if v < lo else hi
    return int(v) if v == int(v) and rng.random() < 0.5 else v


def quoted(rng: random.Random, text: str, share: float = 0.35) -> str:
    if rng.random() >= share:
        return text
    return rng.choice(("'{}'", '"{}"', "“{}”", "'{}'")).format(text)


def a_name(rng: random.Random, pool: tuple[str, ...]) -> str:
    """A name from a list, or a made-up one (a name is copied whether the model knows it or not)."""
    r = rng.random()
    if r < 0.3:
        return f"{synthetic_word(rng)} {rng.choice(pool).split()[-1].capitalize()}" if rng.random() < 0.5 else synthetic_word(rng)
    return rng.choice(pool)


def city(rng: random.Random) -> str:
    return synthetic_word(rng) if rng.random() < 0.3 else rng.choice(TRAIN.cities)


def person(rng: random.Random) -> str:
    first = rng.choice(lists.FIRST) if rng.random() < 0.8 else synthetic_word(rng)
    return first if rng.random() < 0.25 else f"{first} {rng.choice(lists.LAST)}"


def date(rng: random.Random) -> Value:
    y, m, d = rng.randint(2024, 2028), rng.randint(1, 12), rng.randint(1, 28)
    iso = f"{y:04d}-{m:02d}-{d:02d}"
    month = lists.MONTHS[m - 1]
    th = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(d, "th")
    said = rng.choice((iso, f"{month} {d}, {y}", f"{d} {month} {y}", f"{month[:3]} {d} {y}", f"the {d}{th} of {month} {y}",
                       f"{d}/{m}/{y}" if d > 12 else iso, f"{month} {d}{th}, {y}"))
    return Value(iso, said, said)


def clock(rng: random.Random) -> Value:
    h, m = rng.randint(0, 23), rng.choice((0, 0, 15, 30, 45, 5, 10, 20, 40, 50))
    hhmm = f"{h:02d}:{m:02d}"
    h12 = h % 12 or 12
    ampm = "am" if h < 12 else "pm"
    said = rng.choice((hhmm, f"{h12}:{m:02d} {ampm}", f"{h12}:{m:02d}{ampm}", f"{h12}{ampm}" if m == 0 else hhmm,
                       f"{h12} o'clock" if m == 0 and 8 <= h <= 19 and h != 12 else hhmm))
    return Value(hhmm, said, said)


@dataclass(frozen=True)
class Kind:
    """One kind of value: its schema given the spec's args, a draw, and mention templates
    (``{v}`` where the value goes; ``noun`` is the spec's label)."""

    schema: Callable[[list[str]], dict[str, Any]]
    draw: Callable[[random.Random, list[str]], Value]
    mentions: tuple[str, ...]


def _num_schema(integer: bool) -> Callable[[list[str]], dict[str, Any]]:
    def schema(args: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "integer" if integer else "number"}
        if args and args[0] not in ("", "-"):
            out["minimum"] = float(args[0]) if not integer else int(float(args[0]))
        if len(args) > 1 and args[1] not in ("", "-"):
            out["maximum"] = float(args[1]) if not integer else int(float(args[1]))
        return out
    return schema


def _int_draw(rng: random.Random, args: list[str]) -> Value:
    lo, hi, noun = int(args[0]), int(args[1]), args[2] if len(args) > 2 else ""
    v = int(draw_number(rng, lo, hi, True))
    if _BIG["on"]:  # a year without a separator; no noun, no "s" (runs A-C's corpora had "2022 s")
        text = str(v) if lo >= 1900 and hi <= 2100 else number_text(rng, v)
        unit = plural(noun, v) if noun else ""
        return Value(v, f"{text} {unit}".strip(), f"{v} {unit}".strip())
    text = number_text(rng, v)
    return Value(v, f"{text} {plural(noun, v)}".strip(), f"{v} {plural(noun, v)}".strip())


def _num_draw(rng: random.Random, args: list[str]) -> Value:
    lo, hi, unit = float(args[0]), float(args[1]), args[2] if len(args) > 2 else ""
    v = draw_number(rng, lo, hi, False)
    forms = lists.UNIT_WORDS.get(unit, (unit,))
    word = forms[0] if rng.random() < 0.5 else rng.choice(forms)
    glue = "" if word in ("%", "°C", "°F") or (word.isalpha() is False and len(word) <= 2 and rng.random() < 0.5) else " "
    text = number_text(rng, v, 0.15)
    return Value(v, f"{text}{glue}{word}".strip(), f"{v} {forms[0]}".strip())


def _money(rng: random.Random, args: list[str]) -> Value:
    v = draw_number(rng, 1, 5000, rng.random() < 0.5)
    cur = args[0] if args else "USD"
    sym = {"USD": "$", "EUR": "€", "GBP": "£"}.get(cur)
    if _BIG["on"] and rng.random() < 0.3:
        return _big_money(rng, cur, sym)
    forms = [f"{v} {cur}", f"{v} {lists.CURRENCY_WORDS.get(cur, cur)}"] + ([f"{sym}{v}"] * 2 if sym else [])
    return Value(v, rng.choice(forms), f"{v} {cur}")


def _pct(rng: random.Random, args: list[str]) -> Value:
    v = draw_number(rng, 0.5, 60, rng.random() < 0.7)
    text = number_text(rng, v, 0.2)
    return Value(v, rng.choice((f"{v}%", f"{text} percent", f"{v} per cent", f"{v}%")), f"{v}%")


def _frac(rng: random.Random, args: list[str]) -> Value:
    """A rate said in percent and passed as a decimal ("4.5%" -> 0.045): run K's seed on (families.FRACTION_FROM_SEED)."""
    v = _pct(rng, args)
    return Value(round(v.input / 100, 6), v.said, v.short)


def _enum_draw(rng: random.Random, args: list[str]) -> Value:
    v = rng.choice(args[0].split(","))
    shown = v.replace("_", " ")
    if _UNITS["on"] and (v in UNIT_WORDS or (_WHOLE["on"] and v in MORE_UNIT_WORDS)) and rng.random() < 0.6:
        said = rng.choice(UNIT_WORDS.get(v, ()) + (MORE_UNIT_WORDS.get(v, ()) if _WHOLE["on"] else ()))
        return Value(v, said, said)
    return Value(v, shown, shown)


# an arithmetic expression as said ("67 plus 2.9") and as a calculator takes it ("67 + 2.9")
_OPS = {"+": ("plus", "+", "added to"), "-": ("minus", "-", "take away", "less"), "*": ("times", "x", "*", "multiplied by"),
        "/": ("divided by", "/", "over")}


# From run G's seed: sums said with "and" ("48.9 and 28", "the sum of 9 and 522") and divisions by
# zero, which a calculator answers with an error (tasks._error): run F's misses. Off, expressions are
# drawn as runs E and F had them.
SUMS_FROM_SEED = 7
_SUMS = {"on": False}


def sums_more() -> bool:
    return _SUMS["on"]


def sums_said_more(on: bool) -> AbstractContextManager[None]:
    return switched(_SUMS, on)


def zero_division(rng: random.Random) -> Value:
    """A division by zero as said ("81 over 0", "563 / 0") and as a calculator takes it."""
    a = _operand(rng)
    said = f"{number_text(rng, a, 0.2)} {rng.choice(_OPS['/'])} {rng.choice(('0', '0', 'zero'))}"
    return Value(f"{a} / 0", said, said)


def _operand(rng: random.Random) -> int | float:
    return draw_number(rng, 1, rng.choice((20, 100, 1000, 5000)), rng.random() < 0.7)


def _expr(rng: random.Random, args: list[str]) -> Value:
    r = rng.random()
    if r < 0.2:  # a percentage of a number
        pct, of = draw_number(rng, 1, 60, True), _operand(rng)
        said = rng.choice((f"{pct}% of {number_text(rng, of, 0)}", f"{pct} percent of {of}"))
        return Value(f"{of} * {pct} / 100", said, said)
    a, b, op = _operand(rng), _operand(rng), rng.choice("+-*/")
    word = rng.choice(_OPS[op])
    if _SUMS["on"] and op == "+" and r >= 0.4 and rng.random() < 0.4:
        x, y = number_text(rng, a, 0.2), number_text(rng, b, 0.2)
        said = rng.choice((f"{x} and {y}", f"the sum of {x} and {y}", f"{x} and {y} together", f"{x} and {y} added up"))
        return Value(f"{a} + {b}", said, said)
    if r < 0.4:  # three numbers: "(a + b) * c" as "a plus b, times c"
        c, op2 = _operand(rng), rng.choice("*/")
        said = f"{a} {word} {b}, {rng.choice(('then', 'all'))} {rng.choice(_OPS[op2][:1] + _OPS[op2][3:])} {c}"
        return Value(f"({a} {op} {b}) {op2} {c}", said, said)
    said = f"{number_text(rng, a, 0.2)} {word} {number_text(rng, b, 0.2)}"
    return Value(f"{a} {op} {b}", said, said)


# a memo in the user's own words (run F's add_memo, post_status): an errand, or a fact to keep
_MEMO_DO = ("call", "email", "pay", "book", "pick up", "buy", "return", "renew", "water", "charge", "fix", "cancel", "bring",
            "collect", "plan", "check on", "text", "thank", "clean", "order", "send", "visit", "drop off", "sort out")
_MEMO_WHAT = ("the plumber", "the dentist", "mum", "the landlord", "the car insurance", "the library books", "the parcel",
              "the plants", "the gym membership", "milk and eggs", "the electricity bill", "the kids", "the spare key",
              "the birthday cake", "the team", "the tickets", "the laptop", "the garage", "the printer ink", "the rent",
              "the bike", "the passport photos", "grandpa", "the vet", "the neighbours", "the contract", "the bank")
_MEMO_WHEN = ("", "", "", "on Friday", "by Thursday", "at noon", "next week", "tomorrow morning", "before 6 pm", "after lunch",
              "this weekend", "on the 14th", "tonight", "first thing Monday")
_MEMO_FACTS = ("the gate code is {n}", "the locker number is {n}", "the parking spot is B{m}", "my seat is {m}C",
               "the wifi password is {w}{n}", "{p}'s birthday is on May {d}", "the meeting room is {m}", "table for {d} at {p}'s",
               "the spare key is under the {w}", "{p} owes me {m} dollars", "the boiler was serviced in {w}")


def errand(memo: str) -> bool:
    """Whether a memo is an errand ("call the plumber") rather than a fact to keep."""
    return memo.startswith(tuple(d + " " for d in _MEMO_DO))


def _memo(rng: random.Random, args: list[str]) -> Value:
    if rng.random() < 0.75:
        v = " ".join(x for x in (rng.choice(_MEMO_DO), rng.choice(_MEMO_WHAT), rng.choice(_MEMO_WHEN)) if x)
    else:
        v = rng.choice(_MEMO_FACTS).format(n=rng.randint(1000, 9999), m=rng.randint(2, 99), d=rng.randint(2, 9),
                                           w=rng.choice(("mat", "pot", "June", "blue", "stone", "March")), p=person(rng).split()[0])
    said = rng.choice((v, v, f'"{v}"', f"'{v}'"))
    return Value(v, said, v)


def _text(pool_name: str | None, rng: random.Random, args: list[str]) -> Value:
    pool = lists.POOLS[args[0]]
    v = a_name(rng, pool)
    return Value(v, quoted(rng, v), v)


def _string_list(rng: random.Random, args: list[str]) -> Value:
    pool = lists.POOLS[args[0]]
    vs = rng.sample(pool, rng.randint(2, 4))
    return Value(vs, join_words(rng, vs), join_words(rng, vs))


def _number_list(rng: random.Random, args: list[str]) -> Value:
    integer = rng.random() < 0.6
    vs = [draw_number(rng, 0, 500, integer) for _ in range(rng.randint(3, 6))]
    said = join_words(rng, [str(v) for v in vs]) if rng.random() < 0.6 else ", ".join(str(v) for v in vs)
    return Value(vs, said, ", ".join(str(v) for v in vs))


def _range(rng: random.Random, args: list[str]) -> Value:
    unit = args[0] if args else ""
    lo = draw_number(rng, 0, 200, True)
    hi = lo + draw_number(rng, 1, 300, True)
    word = plural(unit) if unit else ""
    said = rng.choice((f"between {lo} and {hi} {word}", f"from {lo} to {hi} {word}", f"{lo}-{hi} {word}")).strip()
    return Value({"min": lo, "max": hi}, said, f"{lo} to {hi} {word}".strip())


def _place(rng: random.Random, args: list[str]) -> Value:
    c, country = city(rng), rng.choice(lists.COUNTRIES)
    said = rng.choice((f"{c}, {country}", f"{c} in {country}", f"{c} ({country})"))
    return Value({"city": c, "country": country}, said, f"{c}, {country}")


def _dims(rng: random.Random, args: list[str]) -> Value:
    unit = args[0] if args else "cm"
    w, h = draw_number(rng, 1, 300, True), draw_number(rng, 1, 300, True)
    said = rng.choice((f"{w} by {h} {unit}", f"{w}x{h} {unit}", f"{w} {unit} wide and {h} {unit} high"))
    return Value({"width": w, "height": h}, said, f"{w} x {h} {unit}")


def _items(rng: random.Random, args: list[str]) -> Value:
    pool = lists.POOLS[args[0]]
    names = rng.sample(pool, rng.randint(1, 3))
    qty = [rng.randint(1, 12) for _ in names]
    parts = [f"{number_text(rng, q, 0.3)} {n if n.endswith('s') else plural(n)}" if q > 1 else f"one {n}" for q, n in zip(qty, names)]
    return Value([{"name": n, "quantity": q} for n, q in zip(names, qty)], join_words(rng, parts), join_words(rng, parts))


def _people(rng: random.Random, args: list[str]) -> Value:
    out, parts = [], []
    for _ in range(rng.randint(1, 3)):
        name = person(rng)
        if rng.random() < 0.5:
            email = f"{name.split()[0].lower()}@{rng.choice(lists.MAIL_HOSTS)}"
            out.append({"name": name, "email": email})
            parts.append(rng.choice((f"{name} ({email})", f"{name} <{email}>", f"{name} at {email}")))
        else:
            out.append({"name": name})
            parts.append(name)
    return Value(out, join_words(rng, parts), join_words(rng, [p["name"] for p in out]))


def _code(rng: random.Random, args: list[str]) -> Value:
    pattern = args[0]
    v = "".join(str(rng.randint(0, 9)) if ch == "#" else rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") if ch == "@" else ch for ch in pattern)
    return Value(v, quoted(rng, v, 0.2), v)


def _email(rng: random.Random, args: list[str]) -> Value:
    v = f"{person(rng).split()[0].lower()}.{rng.choice(lists.LAST).lower()}@{rng.choice(lists.MAIL_HOSTS)}"
    return Value(v, v, v)


def _path(rng: random.Random, args: list[str]) -> Value:
    folder = rng.choice(("/home/ana", "/srv/data", "~/docs", "C:/Users/tom", "/var/log", "reports", "./build"))
    name = f"{rng.choice(lists.POOLS['filewords'])}{rng.choice(('', '_v2', '-final', '_2026'))}.{rng.choice(('txt', 'csv', 'json', 'md', 'pdf', 'log'))}"
    v = f"{folder}/{name}" if rng.random() < 0.6 else name
    return Value(v, quoted(rng, v, 0.3), v)


def _bool(rng: random.Random, args: list[str]) -> Value:
    return Value(True, args[0].replace("_", " "), args[0].replace("_", " "))


def _place_name(rng: random.Random, args: list[str]) -> Value:
    v = city(rng)
    return Value(v, v, v)


def _person(rng: random.Random, args: list[str]) -> Value:
    v = person(rng)
    return Value(v, v, v)


S = {"type": "string"}
KINDS: dict[str, Kind] = {
    "place": Kind(lambda a: dict(S), _place_name, ("in {v}", "for {v}", "in {v}", "at {v}")),
    "person": Kind(lambda a: dict(S), _person, ("for {v}", "{v}", "for {v}")),
    "int": Kind(_num_schema(True), _int_draw, ("{v}", "for {v}", "with {v}")),
    "num": Kind(_num_schema(False), _num_draw, ("{v}", "of {v}", "for {v}")),
    "money": Kind(lambda a: {"type": "number", "minimum": 0}, _money, ("{v}", "of {v}", "for {v}")),
    "pct": Kind(lambda a: {"type": "number", "minimum": 0, "maximum": 100}, _pct, ("at {v}", "of {v}", "with {v}")),
    "frac": Kind(lambda a: {"type": "number", "minimum": 0, "maximum": 1}, _frac, ("at {v}", "of {v}", "with {v}")),
    "date": Kind(lambda a: {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"}, lambda r, a: date(r), ("on {v}", "for {v}", "dated {v}")),
    "time": Kind(lambda a: {"type": "string", "pattern": "^[0-9]{2}:[0-9]{2}$"}, lambda r, a: clock(r), ("at {v}", "for {v}")),
    "enum": Kind(lambda a: {"type": "string", "enum": a[0].split(",")}, _enum_draw, ("{v} {noun}", "with {noun} {v}", "({noun}: {v})", "{v}")),
    "bool": Kind(lambda a: {"type": "boolean", "default": False}, _bool, ("{v}", "and {v}", "{v}")),
    "text": Kind(lambda a: dict(S), lambda r, a: _text(None, r, a), ("{noun} {v}", "the {noun} {v}", "{v}", "called {v}", "named {v}")),
    "list": Kind(lambda a: {"type": "array", "items": dict(S), "minItems": 1}, _string_list, ("with {v}", "for {v}", "{noun}: {v}")),
    "nums": Kind(lambda a: {"type": "array", "items": {"type": "number"}, "minItems": 1}, _number_list, ("of {v}", "for {v}", "{noun} {v}")),
    "range": Kind(lambda a: {"type": "object", "properties": {"min": {"type": "number"}, "max": {"type": "number"}}, "required": ["min", "max"]},
                  _range, ("{v}", "{noun} {v}")),
    "loc": Kind(lambda a: {"type": "object", "properties": {"city": dict(S), "country": dict(S)}, "required": ["city"]},
                _place, ("in {v}", "for {v}", "at {v}")),
    "dims": Kind(lambda a: {"type": "object", "properties": {"width": {"type": "number", "minimum": 0}, "height": {"type": "number", "minimum": 0}},
                            "required": ["width", "height"]}, _dims, ("of {v}", "measuring {v}", "{v}")),
    "items": Kind(lambda a: {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
        "name": dict(S), "quantity": {"type": "integer", "minimum": 1, "default": 1}}, "required": ["name"]}}, _items, ("{v}", "for {v}", "with {v}")),
    "people": Kind(lambda a: {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
        "name": dict(S), "email": dict(S)}, "required": ["name"]}}, _people, ("with {v}", "for {v}", "inviting {v}")),
    "code": Kind(lambda a: dict(S), _code, ("{noun} {v}", "{v}", "number {v}", "with {noun} {v}")),
    "email": Kind(lambda a: dict(S), _email, ("to {v}", "for {v}", "{v}")),
    "path": Kind(lambda a: dict(S), _path, ("{v}", "the file {v}", "at {v}")),
    "expr": Kind(lambda a: dict(S), _expr, ("{v}", "of {v}", "for {v}")),
    "memo": Kind(lambda a: dict(S), _memo, (": {v}", ": {v}", "saying {v}", "- {v}", "that reads {v}", "with the text {v}")),
}
