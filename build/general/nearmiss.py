"""Near misses: a request in the family's own domain, phrased like a tool request, that no tool of
the family serves. The answer is a final that says what the tools can and cannot do, and no call.

Built from the family's own tool definitions so that they are truly near (issue 29, run A:
a model that never saw one calls the closest tool with made-up values). Flavours:

- ``action``: an action the tools do not offer on a tool's own object (delete, cancel, change);
- ``range``: a number past the maximum a tool's schema allows ("for 30 days" where it takes 1-10);
- ``enum``: a value not in a tool's enum (a category another family's tool has, this one's not);
- ``quantity``: another quantity of the tool's object: its long-run history or average, which the
  tool (one value for the inputs given) does not compute;
- ``sibling`` (from run I's seed, :data:`SIBLING_FROM_SEED`): what another tool of the same domain
  does, one the family lacks ("solve a quadratic" beside a prime checker and a gcd tool), asked as
  that tool's requests are. Run H called the nearest tool on such requests (BFCL irrelevance 0.56);
- ``output`` (from run J's seed, :data:`OUTPUT_FROM_SEED`): another quantity of the same domain asked
  for with the values a tool of the family takes ("the monthly payment on a loan" with a compound
  interest tool's principal, rate and years). Run I called the tool whose inputs the request gave,
  whatever it asked for;
- ``unknowns`` (from that seed): a tool's work asked with its required values left out, named by
  letters ("for a principal P at rate r") or asked how it is done ("How do I convert a weight?"): the
  final asks for the values rather than a call making them up.
"""

from __future__ import annotations

import random
import re
from contextlib import AbstractContextManager
from dataclasses import replace

from . import phrasing as ph
from .domains import DOMAINS
from .families import Family, Param, ToolSpec, _protos, _spec
from .tasks import _FRAMES, Task, _head, _mention, _request, _values, can_do
from .values import Value, join_words, plural, switched

__all__ = ["near_miss", "FLAVOURS", "SIBLING_FROM_SEED", "SIBLING_SHARE", "siblings", "OUTPUT_FROM_SEED", "FIRST_SHARES", "outputs"]

FLAVOURS = ("action", "range", "enum", "quantity", "sibling", "output", "unknowns")
SIBLING_FROM_SEED = 9
SIBLING_SHARE = 0.45  # of the near misses, from that seed on: a sibling where the family has one
_SIBLINGS = {"on": False}
# specs whose work overlaps, so that one's request is not refused beside the other: every converter
# of the units domain, and the reminder and the memo keeper; an expression tool computes what the
# math domain's tools do
OVERLAPS = ({"set_reminder", "add_memo", "keep_note"},)
NO_SIBLINGS = ("units",)


def siblings(on: bool) -> AbstractContextManager[None]:
    return switched(_SIBLINGS, on)


OUTPUT_FROM_SEED = 10
# from that seed, of the near misses: the flavours tried first, each its share of the time (in this
# order; where none is drawn or the family has none, the others in a random order)
FIRST_SHARES = (("output", 0.35), ("sibling", 0.25), ("unknowns", 0.2))
_OUTPUTS = {"on": False}
# a request's unknowns: letters for its numbers; how-to questions for its work
LETTERS = ("x", "y", "n", "a", "b", "k", "t", "v", "r", "p", "m", "d")
UNKNOWN_X = ("{label} {v}", "a {label} of {v}", "{label} = {v}", "a given {label} {v}", "some {label} {v}")
HOW_FRAMES = ("How do I {x}?", "How would I {x}?", "How can I {x}?", "What's the way to {x}?", "Explain how to {x}.",
              "How does one {x}?", "how do you {x}", "Is there a formula to {x}?", "What are the steps to {x}?")


def outputs(on: bool) -> AbstractContextManager[None]:
    """Run J's seed's near misses: ``output`` and ``unknowns``, drawn first (:data:`FIRST_SHARES`)."""
    return switched(_OUTPUTS, on)
ACTIONS = (("delete", "delete"), ("cancel", "cancel"), ("change", "change"), ("undo", "undo"), ("edit", "edit"),
           ("remove", "remove"), ("share", "share"), ("export", "export"))
ACTION_X = ("{a} the {thing} I {did} yesterday", "{a} my last {thing}", "{a} the {thing} from this morning",
            "{a} every {thing} I {did} last week", "{a} the {thing} you {did} for me earlier")
QUANTITY_X = ("get the average of {obj} over the last {n} years {m}", "chart {obj} over the past {n} years {m}",
              "find the all-time record for {obj} {m}", "compare {obj} with {n} years ago {m}",
              "get the trend of {obj} across the last {n} years {m}")


def _enum_pool() -> dict[str, set[str]]:
    """Every enum's values by its noun, over all domains: what a near enum request draws from."""
    pool: dict[str, set[str]] = {}
    for text in DOMAINS.values():
        for values, noun in re.findall(r":enum:([^:\s]+):(\w+)", text):
            pool.setdefault(noun, set()).update(values.split(","))
    return pool


ENUM_POOL = _enum_pool()


def _thing(spec: ToolSpec) -> tuple[str, str]:
    """(the object a tool's ``do`` acts on, its verb in the past): "log a symptom" -> (symptom, logged)."""
    verb, _, rest = spec.do.partition(" ")
    rest = re.sub(r"^(a|an|the|my|up|for)\s+", "", rest)
    rest = re.sub(r"^(a|an|the)\s+", "", rest)
    did = verb + ("d" if verb.endswith("e") else "ed")
    irregular = {"get": "got", "find": "found", "buy": "bought", "send": "sent", "make": "made", "look": "looked up",
                 "split": "split", "set": "set", "put": "put", "run": "ran", "pay": "paid", "write": "wrote", "take": "took"}
    return rest, irregular.get(verb, did)


def _reply(rng: random.Random, family: Family, cannot: str) -> str:
    c = can_do(family)
    return rng.choice((f"I can't {cannot}: none of my tools does that. I can {c}.",
                       f"That is beyond my tools: they cannot {cannot}. What I can do: {c}.",
                       f"Sorry, my tools can't {cannot}. They only {c}."))


def _action(rng: random.Random, family: Family, val: bool) -> Task | None:
    names = " ".join(t.name + " " + t.do for t in family.tools).lower()
    spec = rng.choice(family.tools)
    verb, _ = rng.choice([a for a in ACTIONS if a[0] not in names])
    thing, did = _thing(spec)
    if not thing:
        return None
    x = rng.choice(ACTION_X).format(a=verb, thing=thing, did=did)
    frame = rng.choice(ph.frames(ph.DO_FRAMES, val))
    a = "an" if thing[:1] in "aeiou" else "a"
    thought = f"The tools cannot {verb} {a} {thing}; none fits."
    return Task("near_miss", ph.fill(ph.dress(rng, frame), x=x), reply=_reply(rng, family, f"{verb} {a} {thing}"), thought=thought, frame=frame)


def _swap(rng: random.Random, spec: ToolSpec, p: Param, v: Value, val: bool, reword: float) -> tuple[str, str, str]:
    """(the request, its frame, its head where another than the description's phrase)."""
    named = [(q, v if q is p else w) for q, w in _values(rng, spec)]
    if p not in [q for q, _ in named]:
        named.append((p, v))
    return _request(rng, spec, named, val, reword)


def _range(rng: random.Random, family: Family, val: bool) -> Task | None:
    options = [(t, p) for t in family.tools for p in t.params if p.kind == "int" and len(p.args) > 2 and p.args[2]
               and 2 <= int(p.args[1]) <= 400]
    if not options:
        return None
    spec, p = rng.choice(options)
    hi, noun = int(p.args[1]), p.args[2]
    n = rng.choice((hi + 1, hi * 2, hi * 3, hi * 5, hi * 10))
    prompt, frame, head = _swap(rng, spec, p, Value(n, f"{n} {plural(noun, n)}".strip(), str(n)), val, family.reworded)
    most = f"{hi} {plural(noun, hi)}".strip()
    reply = _reply(rng, family, f"go past {most} for the {p.label} ({n} asked)")
    return Task("near_miss", prompt, reply=reply, thought=f"The {p.label} can be at most {hi}; {n} is out of range.", frame=frame, head=head)


def _enum(rng: random.Random, family: Family, val: bool) -> Task | None:
    options = []
    for t in family.tools:
        for p in t.params:
            if p.kind == "enum":
                allowed = set(p.args[0].split(","))
                others = sorted(ENUM_POOL.get(p.args[-1], set()) - allowed - {"none"})
                options += [(t, p, o, sorted(allowed)) for o in others]
    if not options:
        return None
    spec, p, other, allowed = rng.choice(options)
    noun = p.args[-1]
    said = other.replace("_", " ")  # the mention adds the noun ("theater category")
    prompt, frame, head = _swap(rng, spec, p, Value(other, said, other), val, family.reworded)
    reply = (_reply(rng, family, f"use the {noun} {other.replace('_', ' ')}")
             + f" The {noun} can be {', '.join(a.replace('_', ' ') for a in allowed)}.")
    return Task("near_miss", prompt, reply=reply, thought=f"{other} is not a {noun} the tools take.", frame=frame, head=head)


def _quantity(rng: random.Random, family: Family, val: bool) -> Task | None:
    options = [t for t in family.tools if t.obj and not any(p.kind == "date" for p in t.params)]
    if not options:
        return None
    spec = rng.choice(options)
    named = [(p, v) for p, v in _values(rng, spec) if p.required][:1]
    m = " ".join(_mention(rng, p, v) for p, v in named)
    x = rng.choice(QUANTITY_X).format(obj=spec.obj, n=rng.choice((5, 10, 20, 30)), m=m).strip()
    frame = rng.choice(ph.frames(ph.DO_FRAMES, val))
    reply = _reply(rng, family, f"give {spec.obj} over time, only as it is for the inputs given")
    return Task("near_miss", ph.fill(ph.dress(rng, frame), x=x), reply=reply,
                thought=f"The tools give {spec.obj} now, not its history or average.", frame=frame)


def _lacking(family: Family) -> list[tuple[str, tuple[str, ...]]]:
    """(domain, spec) of the specs of the family's domains that no tool of the family does."""
    have = {t.base for t in family.tools}
    if "calculate_expression" in have:
        have |= {p[0] for p in _protos("math", SIBLING_FROM_SEED)}
    for group in OVERLAPS:
        if have & group:
            have |= group
    domains = sorted({t.domain for t in family.tools if t.domain not in NO_SIBLINGS})
    return [(d, p) for d in domains for p in _protos(d, SIBLING_FROM_SEED) if p[0] not in have]


def _sibling(rng: random.Random, family: Family, val: bool) -> Task | None:
    if not _SIBLINGS["on"]:
        return None
    options = _lacking(family)
    if not options:
        return None
    domain, proto = rng.choice(options)
    spec = _spec(rng, domain, proto, "snake", False, "", True)
    prompt, frame, head = _request(rng, spec, _values(rng, spec), val, family.reworded)
    return Task("near_miss", prompt, reply=_reply(rng, family, spec.do), thought=f"Asked to {spec.do}; no tool here does that.", frame=frame, head=head)


def _output(rng: random.Random, family: Family, val: bool) -> Task | None:
    """Another quantity of a tool's domain asked for with that tool's values."""
    if not _OUTPUTS["on"]:
        return None
    lacking = _lacking(family)
    options = [(t, p) for t in family.tools if t.params for d, p in lacking if d == t.domain and p[2]]
    if not options:
        return None
    spec, proto = rng.choice(options)
    other = _spec(rng, spec.domain, proto, "snake", False, "", True)
    prompt, frame, _ = _request(rng, replace(spec, do=other.do, obj=other.obj), _values(rng, spec), val)
    gives = f"{spec.name} gives {spec.obj}, not that" if spec.obj else f"{spec.name} does not give it"
    return Task("near_miss", prompt, reply=_reply(rng, family, f"give {other.obj}"), thought=f"Asked for {other.obj}; {gives}.",
                frame=frame)


def _unknowns(rng: random.Random, family: Family, val: bool) -> Task | None:
    """A tool's work asked for without its required values (letters in their place, or how it is done)."""
    if not _OUTPUTS["on"]:
        return None
    options = [t for t in family.tools if any(p.required for p in t.params)]
    if not options:
        return None
    spec = rng.choice(options)
    needed = [p for p in spec.params if p.required]
    numbers = [p for p in needed if p.kind in ("num", "int", "money", "pct", "frac")]
    if rng.random() < 0.35 or not numbers:
        frame = rng.choice(ph.frames(HOW_FRAMES, val))
        prompt = ph.fill(frame, x=spec.do)
    else:
        letters = rng.sample(LETTERS, len(numbers))
        said = join_words(rng, [rng.choice(UNKNOWN_X).format(label=p.label, v=v) for p, v in zip(numbers, letters)])
        kind, head, _ = _head(rng, spec, val, 0.0)
        frame = rng.choice(ph.frames(_FRAMES[kind], val))
        prompt = ph.fill(ph.dress(rng, frame), x=f"{head} for {said}")
    labels = join_words(rng, [p.label for p in needed])
    what, which = ("What is it?", "Which one") if len(needed) == 1 else ("What are they?", "Which ones")
    reply = rng.choice((f"I can {spec.do} with {spec.name} once I have the {labels}. {what}",
                        f"Tell me the {labels} and I will {spec.do} with {spec.name}.",
                        f"To {spec.do} I need actual values for the {labels}. {which} should I use?"))
    return Task("near_miss", prompt, reply=reply, thought=f"No values given for the {labels}; ask for them.", frame=frame)


_FLAVOURS = {"action": _action, "range": _range, "enum": _enum, "quantity": _quantity, "sibling": _sibling, "output": _output,
             "unknowns": _unknowns}


def near_miss(rng: random.Random, family: Family, val: bool, flavour: str | None = None) -> Task | None:
    """A near-miss task of the flavour (drawn where not given), or None where the family has none."""
    if flavour:
        kinds = [flavour]
    elif _OUTPUTS["on"]:
        r, first = rng.random(), []
        for name, share in FIRST_SHARES:
            if r < share:
                first = [name]
                break
            r -= share
        kinds = first + rng.sample(FLAVOURS, len(FLAVOURS))
    elif _SIBLINGS["on"]:
        kinds = (["sibling"] if rng.random() < SIBLING_SHARE else []) + rng.sample(FLAVOURS[:5], 5)
    else:
        kinds = rng.sample(FLAVOURS[:4], 4)  # as the seeds before drew them
    for k in kinds:
        task = _FLAVOURS[k](rng, family, val)
        if task is not None:
            task.flavour = k
            return task
    return None
