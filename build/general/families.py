"""Tool families: sets of related tools drawn from a domain's specs (:mod:`build.general.domains`),
each with its own names, descriptions and parameter spellings, as real aerix tools.

    families = make_families(seed=7)          # hundreds, deterministic from the seed
    tools = aerix_tools(families[0], Runtime())

A family takes one to four tools of a domain (sometimes one more from another domain), a naming
style (``get_forecast``; a module prefix as BFCL's dotted names become, ``weather_get_forecast``;
a camelCase name lowered as aerix spells it, ``getforecast``), snake or camelCase parameters,
and its own wording of each description. A tool's result is made from its input (the same input,
the same result), as JSON or as a line of text; ``Runtime.fail`` makes a named tool raise.
"""

from __future__ import annotations

import json
import random
import re
import zlib
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from aerix import tool
from aerix.tools import Tool

from . import lists
from .domains import (DOMAINS, EXTRA, EXTRA_FROM_SEED, FIELDS, FIELDS_FROM_SEED, HELD_OUT, MORE, MORE_FROM_SEED, NOTES, NOTES_FROM_SEED,
                      RATES, RATES_FROM_SEED, KEEP, KEEP_FROM_SEED)
from .values import KINDS, switched

__all__ = ["Param", "ToolSpec", "Family", "Runtime", "make_families", "aerix_tools", "result_for", "PER_DOMAIN", "VAL_FAMILY_SHARE",
           "REWORD_FROM_SEED", "REWORD_SHARE", "TOOLBOX_FROM_SEED", "TOOLBOXES", "TOOLBOX_MEMO_SHARE", "SHORT_FROM_SEED", "KEEPERS",
           "TOOLBOX_CALC_FROM_SEED", "TOOLBOX_CALC_SHARE", "EXAMPLES_FROM_SEED", "EXAMPLE_SHARE", "EXAMPLE_WORDS",
           "PAREN_FROM_SEED", "PAREN_SHARE", "QUALIFIERS", "parenthesized", "result_text"]

PER_DOMAIN = 14  # families drawn from each domain
VAL_FAMILY_SHARE = 0.08  # of the other domains' families, the share held out (a hash of the family id)
# from this seed on (run D's corpus), REWORD_SHARE of requests are worded by other heads than the
# tool's description (build.general.heads) and a description may be a noun phrase ("The weather
# forecast for a city."); the seeds before make their corpora as runs A-C had them
REWORD_FROM_SEED = 4
REWORD_SHARE = 0.5


@dataclass(frozen=True)
class Param:
    name: str  # the field name the tool declares
    base: str  # the spec's name (snake case): what mentions and labels come from
    kind: str
    args: tuple[str, ...]
    required: bool
    default: Any = None
    has_default: bool = False

    @property
    def noun(self) -> str:
        return self.args[-1] if self.kind in ("text", "code", "enum", "list", "nums", "range", "int") and self.args else ""

    @property
    def label(self) -> str:
        return self.base.replace("_", " ")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    base: str
    domain: str
    do: str  # what it does, imperative ("get the weather forecast")
    obj: str  # what it gives, a noun phrase ("the weather forecast"), or ""
    description: str
    params: tuple[Param, ...]
    returns: tuple[tuple[str, str, tuple[str, ...]], ...]
    schema: dict[str, Any] = field(compare=False, hash=False, default_factory=dict)


@dataclass(frozen=True)
class Family:
    id: str
    domain: str
    split: str  # "train" or "val_family"
    tools: tuple[ToolSpec, ...]
    text_results: bool  # results as a line of text rather than JSON
    reworded: float = 0.0  # the share of requests worded by heads other than the description's

    def tool(self, name: str) -> ToolSpec:
        return next(t for t in self.tools if t.name == name)


def _param(spec: str, camel: bool) -> Param:
    name, kind, *args = spec.split(":")
    required = "?" not in name
    base, _, default_text = name.replace("?", "").partition("=")
    default: Any = None
    if default_text:
        default = {"true": True, "false": False}.get(default_text, default_text)
        if kind in ("int", "num"):
            default = int(default_text) if kind == "int" else float(default_text)
    if kind == "bool" and not required:
        default = False if default is None else default
    field_name = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), base) if camel else base
    return Param(field_name, base, kind, tuple(args), required, default, has_default=default is not None)


def _returns(text: str) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    out = []
    for part in re.split(r"\s+(?=\w+:(?:n|f|w|p|id):)", text.strip()):
        name, how, rest = part.split(":", 2)
        out.append((name, how, tuple(rest.split("|") if how == "w" else rest.split(":") if how in ("n", "f") else [rest])))
    return tuple(out)


# the specs later corpora add, in the order they follow a domain's own: (the first seed, the specs)
_ADDED = ((EXTRA_FROM_SEED, EXTRA), (MORE_FROM_SEED, MORE), (FIELDS_FROM_SEED, FIELDS), (NOTES_FROM_SEED, NOTES),
          (RATES_FROM_SEED, RATES), (KEEP_FROM_SEED, KEEP))


def _protos(domain: str, seed: int = 0) -> list[tuple[str, str, str, str, str]]:
    """A domain's specs, then those added from a later seed on (``_ADDED``), once that seed is reached."""
    text = DOMAINS[domain] + "".join(specs.get(domain, "") for first, specs in _ADDED if seed >= first)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return [tuple(x.strip() for x in ln.split("|", 4)) for ln in lines]  # type: ignore[misc]


def _third_person(do: str) -> str:
    verb, _, rest = do.partition(" ")
    v = verb + ("es" if verb.endswith(("sh", "ch", "s", "x")) else "s")
    if verb.endswith("y") and verb[-2] not in "aeiou":
        v = verb[:-1] + "ies"
    return f"{v} {rest}".strip()


def _description(rng: random.Random, do: str, params: tuple[Param, ...], obj: str = "") -> str:
    """A tool's description from its ``do`` phrase, or (``obj`` given: a reworded seed's) also its
    ``obj`` noun phrase, as many real tools are described ("Today's weather for a city.")."""
    styles = [do[0].upper() + do[1:], _third_person(do).capitalize(), f"Use this to {do}", f"Tool to {do}",
              _third_person(do).capitalize()]
    if obj:
        req = [p for p in params if p.required]
        whose = f" for a given {req[0].label}" if req and req[0].kind not in ("list", "items", "dims") else ""
        styles += [obj[0].upper() + obj[1:] + whose, f"Returns {obj}{whose}", f"Gives {obj}"]
    first = rng.choice(styles)
    req = [p.name for p in params if p.required]
    tail = ""
    if req and rng.random() < 0.3:
        tail = f" Needs {', '.join(req)}."
    elif rng.random() < 0.2:
        tail = rng.choice((" Results come back as JSON.", " Read-only.", " Fast and free.", " Works worldwide."))
    return f"{first}.{tail}"


_UNIT_NAMES = {"kg": "kilograms", "cm": "centimeters", "m": "meters", "km": "kilometers", "l": "liters", "ml": "milliliters",
               "c": "degrees Celsius", "g": "grams", "mol": "moles", "k": "kelvin", "m2": "square meters", "h": "hours"}


FRACTION_WORDS = (" as a decimal", ", a decimal fraction (0.05 for 5%)", " as a fraction of 1", " as a decimal, e.g. 0.05 for 5%",
                  " (decimal, not percent)")


# From this seed on (run M's corpus), EXAMPLE_SHARE of the parameters of EXAMPLE_KINDS that have a
# description give an example value in it, drawn as a request's values are and so most often not the
# request's ("Expression, for example 312 * 756"): run K copied the demo's "For example (2 + 3) * 4"
# into the calculator for "Figure out 9 and 522" and "Figure out 87.3/0", and many tools' docs give
# examples. The call takes the request's value, never the example.
EXAMPLES_FROM_SEED = 12
EXAMPLE_SHARE = 0.35
EXAMPLE_KINDS = ("text", "place", "expr", "memo", "code", "email", "path", "num", "int", "money")
EXAMPLE_WORDS = (", for example {e}", " (e.g. {e})", ". Example: {e}", ", like {e}", ", such as {e}", ". For example {e}")


def _example(rng: random.Random, p: Param) -> str:
    value = KINDS[p.kind].draw(rng, list(p.args)).input
    return rng.choice(EXAMPLE_WORDS).replace("{e}", value if isinstance(value, str) else json.dumps(value))


def _param_description(rng: random.Random, p: Param, examples: bool = False) -> str | None:
    if rng.random() < 0.25:
        return None
    label = p.label.capitalize()
    extra = {"date": " as YYYY-MM-DD", "time": " as HH:MM (24-hour)", "pct": ", in percent", "money": ", an amount of money"}.get(p.kind, "")
    if p.kind == "frac":
        extra = rng.choice(FRACTION_WORDS)
    if p.kind == "num" and len(p.args) > 2 and p.args[2] in _UNIT_NAMES:
        extra = f" in {_UNIT_NAMES[p.args[2]]}"
    if p.kind == "list":
        extra = ", a list"
    if examples and p.kind in EXAMPLE_KINDS and rng.random() < EXAMPLE_SHARE:
        extra += _example(rng, p)
    return f"{label}{extra}"


def _schema(rng: random.Random, params: tuple[Param, ...], examples: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for p in params:
        s = KINDS[p.kind].schema(list(p.args))
        if p.has_default:
            s["default"] = p.default
        desc = _param_description(rng, p, examples)
        if desc:
            s = {"description": desc, **s} if rng.random() < 0.5 else {**s, "description": desc}
        props[p.name] = s
    return {"type": "object", "properties": props, "required": [p.name for p in params if p.required]}


def _name(style: str, domain: str, base: str, prefix: str) -> str:
    if style == "short":  # one word, as many page and MCP tools are named ("forecast", "time"): run I's seed on
        return [w for w in base.split("_") if w not in ("of", "check", "to")][-1]
    if style == "module":
        return base if base.startswith(domain) else f"{domain}_{base}"
    if style == "camel":
        return base.replace("_", "")
    if style == "vendor":
        return f"{prefix}_{base}"
    return base


# From this seed on (run K's corpus), FRACTION_SHARE of the rates a spec takes (a percent field
# named for a rate: annual_rate, rate) are taken as a decimal, as many finance tools take them: the
# schema's maximum is 1 and the description, where there is one, says so ("as a decimal"); "4.5%"
# is passed as 0.045. Run J passed every rate said in percent as the percent.
FRACTION_FROM_SEED = 11
FRACTION_SHARE = 0.5


def _as_fraction(rng: random.Random, p: Param) -> Param:
    return replace(p, kind="frac") if p.kind == "pct" and "rate" in p.base and rng.random() < FRACTION_SHARE else p


def _spec(rng: random.Random, domain: str, proto: tuple[str, ...], style: str, camel: bool, prefix: str,
          noun_descriptions: bool = False, fractions: bool = False, examples: bool = False) -> ToolSpec:
    base, do, obj, params_text, returns_text = proto
    params = tuple(_param(s, camel) for s in params_text.split())
    params = tuple(p for p in params if p.required or rng.random() < 0.75)
    if fractions:
        params = tuple(_as_fraction(rng, p) for p in params)
    description = _description(rng, do, params, obj if noun_descriptions else "")
    return ToolSpec(_name(style, domain, base, prefix), base, domain, do, obj, description, params, _returns(returns_text),
                    _schema(rng, params, examples))


# a family's naming style and its weight; from run I's seed, one-word names too ("forecast", "time",
# "note": the last word of the spec's name), as many page and MCP tools have (run H called the
# demo's one-word tools by the names it knew them by)
SHORT_FROM_SEED = 9
STYLES = (("snake", "module", "camel", "vendor"), (0.5, 0.25, 0.15, 0.1))
STYLES_SHORT = (("snake", "module", "camel", "vendor", "short"), (0.45, 0.2, 0.12, 0.08, 0.15))
STYLES_TOOLBOX = (("snake", "module", "camel", "vendor"), (0.6, 0.1, 0.2, 0.1))
STYLES_TOOLBOX_SHORT = (("snake", "module", "camel", "vendor", "short"), (0.45, 0.05, 0.15, 0.05, 0.3))
VENDORS = ("acme", "nimbus", "orbit", "pico", "zen", "atlas", "quill", "lumen")


def _family(seed: int, domain: str, i: int) -> Family:
    rng = random.Random(f"{seed}:{domain}:{i}")
    protos = _protos(domain, seed)
    k = min(len(protos), rng.choice((1, 2, 2, 3, 3, 3, 4, 4)))
    chosen = rng.sample(protos, k)
    style = rng.choices(*(STYLES_SHORT if seed >= SHORT_FROM_SEED else STYLES))[0]
    camel = rng.random() < 0.25
    prefix = rng.choice(VENDORS)
    reword, fractions, examples = seed >= REWORD_FROM_SEED, seed >= FRACTION_FROM_SEED, seed >= EXAMPLES_FROM_SEED
    tools = [_spec(rng, domain, p, style, camel, prefix, reword, fractions, examples) for p in chosen]
    others = [d for d in DOMAINS if d != domain and (d not in HELD_OUT or domain in HELD_OUT)]
    if rng.random() < 0.25:  # one tool of another domain: a request still picks its own tool
        other = rng.choice(others)
        tools.append(_spec(rng, other, rng.choice(_protos(other, seed)), style, camel, prefix, reword, fractions, examples))
    fid = f"{domain}-{i:02d}"
    held = domain in HELD_OUT or zlib.crc32(f"{seed}:{fid}".encode()) % 1000 < VAL_FAMILY_SHARE * 1000
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        tools = list({t.name: t for t in tools}.values())
    return Family(fid, domain, "val_family" if held else "train", tuple(tools), rng.random() < 0.4,
                  REWORD_SHARE if reword else 0.0)


# From this seed on (run H's corpus), TOOLBOXES more families are an assistant's toolbox: three to
# five tools of as many domains, as a page's agent has (weather, a clock, a calculator, notes) and as
# BFCL's multiple category gives. Every family before was one domain's tools with at most one other
# beside them, so a request of another domain was always one to refuse (tasks._irrelevant), and
# run G refused plain requests of the demo's five tools, all of different domains. A share of them
# keep memos (run G refused the demo's notes). Their domain is "toolbox".
TOOLBOX_FROM_SEED = 8
KEEPERS = ("add_memo", "keep_note", "add_task", "write_entry", "store_text")  # the specs that keep the user's words as said (domains.MORE, NOTES, KEEP)
TOOLBOXES = 40
TOOLBOX_MEMO_SHARE = 0.6
# from run M's seed, this share of the toolboxes have the math domain's expression tool, as a page's
# agent has a calculator: seed 11 asked it in some 80 conversations of 20,000, its divisions by zero
# in some 50, and run K refused all four of the demo's
TOOLBOX_CALC_FROM_SEED = 12
TOOLBOX_CALC_SHARE = 0.4


def _toolbox(seed: int, i: int) -> Family:
    rng = random.Random(f"{seed}:toolbox:{i}")
    style = rng.choices(*(STYLES_TOOLBOX_SHORT if seed >= SHORT_FROM_SEED else STYLES_TOOLBOX))[0]
    camel, prefix = rng.random() < 0.25, rng.choice(VENDORS)
    domains = rng.sample([d for d in DOMAINS if d not in HELD_OUT], rng.choice((3, 4, 4, 5)))
    protos = [(d, rng.choice(_protos(d, seed))) for d in domains]
    if seed >= TOOLBOX_CALC_FROM_SEED and rng.random() < TOOLBOX_CALC_SHARE:
        calc = next(p for p in _protos("math", seed) if p[0] == "calculate_expression")
        protos = [("math", calc)] + [dp for dp in protos if dp[0] != "math"][:3]
        rng.shuffle(protos)
    if rng.random() < TOOLBOX_MEMO_SHARE:
        keepers = [p for p in _protos("calendar", seed) if p[0] in KEEPERS]
        memo = rng.choice(keepers) if len(keepers) > 1 else keepers[0]  # no draw where the seed has one (run H's)
        protos = [dp for dp in protos if dp[0] != "calendar"][:4] + [("calendar", memo)]
        rng.shuffle(protos)
    fractions = seed >= FRACTION_FROM_SEED
    tools = list({t.name: t for t in (_spec(rng, d, p, style, camel, prefix, True, fractions, seed >= EXAMPLES_FROM_SEED)
                                      for d, p in protos)}.values())
    fid = f"toolbox-{i:02d}"
    held = zlib.crc32(f"{seed}:{fid}".encode()) % 1000 < VAL_FAMILY_SHARE * 1000
    return Family(fid, "toolbox", "val_family" if held else "train", tuple(tools), rng.random() < 0.4, REWORD_SHARE)


def make_families(seed: int, per_domain: int = PER_DOMAIN) -> list[Family]:
    families = [_family(seed, d, i) for d in DOMAINS for i in range(per_domain)]
    return families + ([_toolbox(seed, i) for i in range(TOOLBOXES)] if seed >= TOOLBOX_FROM_SEED else [])


# -- results -------------------------------------------------------------------------------

def result_for(spec: ToolSpec, input: dict[str, Any]) -> dict[str, Any]:
    """The result fields of a call: drawn from the input, so the same call gives the same result."""
    rng = random.Random(zlib.crc32(f"{spec.name}:{json.dumps(input, sort_keys=True)}".encode()))
    out: dict[str, Any] = {}
    for name, how, args in spec.returns:
        if how == "n":
            out[name] = rng.randint(int(args[0]), int(args[1]))
        elif how == "f":
            out[name] = round(rng.uniform(float(args[0]), float(args[1])), 2)
        elif how == "w":
            out[name] = rng.choice(args)
        elif how == "p":
            out[name] = rng.choice(lists.POOLS[args[0]])
        else:
            out[name] = "".join(str(rng.randint(0, 9)) if c == "#" else rng.choice("ABCDEFGHKMNPRSTXYZ") if c == "@" else c for c in args[0])
    return out


# From this seed on (run P's corpus), PAREN_SHARE of the results written as text put their last part
# in parentheses: its last field ("time: 14:30 (utc offset: +01:00)"), or a qualifier after them all
# ("rent: 1250.5 (estimated)"), and a few a qualifier after the first field. No result of the seeds
# before ended with ")", and every run cut the demo's clock, "10:41 in Dodoma (UTC+1)", as "(UTC+1."
# in its final. Drawn from the result's own text (as result_for draws the fields), never from the
# corpus's generator, so the seeds before make their corpora as they did; off (parenthesized), as before.
PAREN_FROM_SEED = 15
PAREN_SHARE = 0.4
QUALIFIERS = ("estimated", "approximate", "as of today", "latest", "provisional", "local time", "UTC+1", "UTC-5", "UTC+05:30",
              "rounded", "incl. tax", "updated 09:30", "subject to change", "per day", "in EUR", "avg. of 3", "beta", "cached")
_PAREN = {"on": False}


def parenthesized(on: bool) -> AbstractContextManager[None]:
    return switched(_PAREN, on)


def result_text(family: Family, fields: dict[str, Any]) -> str:
    """A result as the tool returns it: JSON, or (``family.text_results``) a line of text."""
    if not family.text_results:
        return json.dumps(fields, ensure_ascii=False)
    parts = [f"{k.replace('_', ' ')}: {v}" for k, v in fields.items()]
    text = ", ".join(parts)
    if not _PAREN["on"]:
        return text
    rng = random.Random(zlib.crc32(f"paren:{text}".encode()))
    if rng.random() >= PAREN_SHARE:
        return text
    form = rng.random()
    if len(parts) > 1 and form < 0.45:
        return f"{', '.join(parts[:-1])} ({parts[-1]})"
    if form < 0.85 or len(parts) == 1:
        return f"{text} ({rng.choice(QUALIFIERS)})"
    return f"{parts[0]} ({rng.choice(QUALIFIERS)}), {', '.join(parts[1:])}"


class ToolFailed(Exception):
    """A tool's failure; aerix records it as ``error: <message>``."""


@dataclass
class Runtime:
    """What the tools of a conversation share: which of them fail, and with what message."""

    fail: dict[str, str] = field(default_factory=dict)


def aerix_tools(family: Family, runtime: Runtime) -> list[Tool]:
    def runner(spec: ToolSpec) -> Any:
        def run(input: dict[str, Any], ctx: Any) -> str:
            if spec.name in runtime.fail:
                raise ToolFailed(runtime.fail[spec.name])
            return result_text(family, result_for(spec, input))
        return run

    return [tool(name=t.name, description=t.description, input=t.schema, run=runner(t)) for t in family.tools]
