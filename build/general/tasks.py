"""Tasks over a tool family: a request and what a good agent does with it.

Kinds (``MIX`` the default shares):

- ``single``: one call of one of the family's tools;
- ``parallel``: several calls of one tool, one per value the request lists (or per combination of two lists);
- ``multiple``: calls of two different tools in one turn (from run P's seed also three, or one of them for each value of a list: :mod:`build.general.mixed`);
- ``irrelevant``: a request no tool of the family serves (another domain's request, or chat):
  the answer is a final and no call;
- ``near_miss``: a request in the family's own domain that no tool of it serves (another action,
  a value past the schema, another quantity: :mod:`build.general.nearmiss`): a final, no call;
- ``error``: one call whose result is an error: the final says what failed;
- ``two_requests``: a second request in the same conversation; its final quotes its result.
"""

from __future__ import annotations

import random
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from . import heads
from . import phrasing as ph
from .domains import DOMAINS, FROM_TO_MENTIONS, HELD_OUT, MENTIONS
from .families import KEEPERS, Family, Param, ToolSpec, _protos, _spec
from .listed import pairs_listed, tight
from .values import KINDS, Value, conversions_whole, errand, join_words, sums_more, switched, units_apart, zero_division

__all__ = ["Call", "Task", "MIX", "make_task", "ERRORS", "PAIRED_FROM_SEED", "PAIRED_SHARE", "REMIND_SHARE", "paired",
           "NOTE_FROM_SEED", "NOTE_SHARE", "notes_headed", "ZERO_FROM_SEED", "ZERO_SINGLE_SHARE", "zeros_more"]

# irrelevant + near_miss a quarter of first turns: run A (14 % irrelevant, no near misses) called a
# tool on every BFCL irrelevance question (build/general/TRAINING.md)
MIX = {"single": 0.22, "parallel": 0.13, "multiple": 0.15, "irrelevant": 0.13, "near_miss": 0.12, "error": 0.10,
       "two_requests": 0.15}
ERRORS = ("no match found for {v}", "{v} is not available", "the service is busy, try again later", "permission denied",
          "rate limit reached", "unknown {label}: {v}", "{label} {v} is out of range", "timed out while fetching data",
          "the account has no access to this feature", "invalid {label}")
PARALLEL_KINDS = ("place", "text", "person", "int", "num", "date", "code", "enum", "email", "path")


@dataclass
class Call:
    tool: str
    input: dict[str, Any]
    said: list[Value]  # the values as the request names them, for the final


@dataclass
class Task:
    kind: str
    prompt: str
    calls: list[Call] = field(default_factory=list)  # the first turn's calls; none: a final at once
    reply: str | None = None  # the final when no tool serves
    thought: str = "No tool here can do this."  # the thought before that final
    fail: dict[str, str] = field(default_factory=dict)  # tool -> error message
    then: Task | None = None
    frame: str = ""
    head: str = ""  # the first request's head where it is not the description's (build.general.heads)
    flavour: str = ""  # a near miss's flavour (build.general.nearmiss.FLAVOURS)
    said: list[Value] = field(default_factory=list)  # every value the request mentions (make_task), a call's or not

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "prompt": self.prompt, "calls": [{"tool": c.tool, "input": c.input} for c in self.calls]}


_MENTIONED: list[Value] = []  # the values _mention has said since make_task began a task


def _mention(rng: random.Random, p: Param, v: Value, first_text: bool = True) -> str:
    _MENTIONED.append(v)
    pool = MENTIONS.get(p.base) or KINDS[p.kind].mentions
    if p.base in FROM_TO_MENTIONS and p.kind == "enum":  # domains.FIELDS' units (run G's seed on): "from km", "to miles"
        pool = FROM_TO_MENTIONS[p.base]
    if not first_text:  # "called X" once a request: a second name goes with its noun
        pool = tuple(m for m in pool if not m.startswith(("called", "named"))) or pool
    if p.kind in ("num",) or (p.kind == "int" and not p.noun):
        pool = ("{label} = {v}", "{label}={v}") if len(p.label) == 1 else ("{label} {v}", "a {label} of {v}", "with {label} {v}", "{label}: {v}")
        pool = MENTIONS.get(p.base, pool)
    m = rng.choice(pool)
    return m.replace("{noun}", p.noun or p.label).replace("{label}", p.label).replace("{v}", v.said)


def _draw(rng: random.Random, p: Param) -> Value:
    return KINDS[p.kind].draw(rng, list(p.args))


# a conversion's target and its source: from run E's seed (units_apart) never the same value
PAIRS = {"to_unit": "from_unit", "target_unit": "source_unit", "to_scale": "from_scale", "to_currency": "from_currency", "to": "from"}


def _partner(named: list[tuple[Param, Value]], p: Param) -> Any:
    """The input of the other side of ``p``'s conversion (source or target) where units are drawn apart."""
    other = PAIRS.get(p.base) or next((t for t, s in PAIRS.items() if s == p.base), None)
    if not units_apart() or other is None:
        return _NONE
    return next((v.input for q, v in named if q.base == other and q is not p), _NONE)


_NONE = object()


def _values(rng: random.Random, spec: ToolSpec) -> list[tuple[Param, Value]]:
    """The parameters a request names: every required one and some optional ones."""
    out = [(p, _draw(rng, p)) for p in spec.params if p.required or rng.random() < 0.35]
    for i, (p, v) in enumerate(out):
        for _ in range(20):
            if v.input != _partner(out, p):
                break
            v = _draw(rng, p)
        out[i] = (p, v)
    if rng.random() < 0.25:
        rng.shuffle(out)
    return out


def _phrase(rng: random.Random, head: str, named: list[tuple[Param, Value]]) -> str:
    texts = [p for p, _ in named if p.kind == "text"]
    out = " ".join([head] + [_mention(rng, p, v, not texts or p is texts[0]) for p, v in named])
    return out.replace(" : ", ": ") if any(p.kind == "memo" for p, _ in named) else out  # "jot down: call mum"


def _input(named: list[tuple[Param, Value]]) -> dict[str, Any]:
    return {p.name: v.input for p, v in named}


_FRAMES = {"do": ph.DO_FRAMES, "obj": ph.OBJ_FRAMES, "ask": ph.ASK_FRAMES}


def _reworded(rng: random.Random, spec: ToolSpec, val: bool, share: float, kinds: tuple[str, ...] = heads.KINDS) -> tuple[str, str] | None:
    """(kind, head) other than the description's, ``share`` of the time (never drawn where 0)."""
    if not share or rng.random() >= share:
        return None
    return heads.draw(rng, spec.base, val, kinds)


def _head(rng: random.Random, spec: ToolSpec, val: bool, reword: float) -> tuple[str, str, str]:
    """(the kind of head, the head a request starts with, that head where another than the description's phrase)."""
    other = _reworded(rng, spec, val, reword)
    if other:
        return other[0], other[1], other[1]
    kind = "obj" if spec.obj and rng.random() < 0.5 else "do"
    return kind, spec.obj if kind == "obj" else spec.do, ""


def _request(rng: random.Random, spec: ToolSpec, named: list[tuple[Param, Value]], val: bool, reword: float = 0.0) -> tuple[str, str, str]:
    """(the request, its frame, its head where another than the description's phrase)."""
    kind, head, other = _head(rng, spec, val, reword)
    frame = rng.choice(ph.frames(_FRAMES[kind], val))
    return ph.fill(ph.dress(rng, frame), x=_phrase(rng, head, named)), frame, other


def _conversion(spec: ToolSpec) -> tuple[Param, Param, Param] | None:
    """(the value, its unit, the unit wanted) of a spec that converts a number between two enum units."""
    by = {p.base: p for p in spec.params}
    value = next((p for p in spec.params if p.required and p.kind in ("num", "int")), None)
    for target, source in PAIRS.items():
        if value and target in by and source in by and by[target].kind == by[source].kind == "enum":
            return value, by[source], by[target]
    return None


WHOLE_SHARE = 0.7  # of the conversions from run F's seed on


def _whole(rng: random.Random, spec: ToolSpec, named: list[tuple[Param, Value]], val: bool,
           frames: tuple[str, ...]) -> tuple[str, str] | None:
    """``WHOLE_SHARE`` of the conversions from run F's seed on, asked for whole: "Express 88.3 meter
    in cm." (run E read the unit next to the target as the source, and copied the target into both
    fields): (the request as ``frames`` word it, undressed; its frame), or None."""
    conv = _conversion(spec) if conversions_whole() else None
    if conv is None or {p for p, _ in named} != set(conv) or rng.random() >= WHOLE_SHARE:
        return None
    said = {p.name: v.said for p, v in named}
    value, source, target = conv
    frame = rng.choice(ph.frames(frames, val))
    return ph.fill(frame, v=said[value.name], a=said[source.name], b=said[target.name]), frame


REMIND_SHARE = 0.6  # of the requests for a memo keeper (add_memo), from run H's seed on


def _reminder(rng: random.Random, spec: ToolSpec, val: bool) -> Task | None:
    """From run H's seed, ``REMIND_SHARE`` of the requests for a memo keeper asked as people ask
    for a reminder: "Remind me to call the plumber tomorrow." -> its content "call the plumber
    tomorrow"; "Remember that the gate code is 4821." (run G refused "Remind me to call the plumber
    tomorrow." and six of the demo's eight notes: its near misses refuse errands, and no request for a
    memo keeper was worded as one)."""
    memo = next((p for p in spec.params if p.kind == "memo"), None)
    if memo is None or spec.base not in KEEPERS or not heads.needs_on() or rng.random() >= REMIND_SHARE:
        return None
    if any(p.required and p is not memo for p in spec.params):
        return None
    v = _draw(rng, memo)
    pool = ph.REMIND_FRAMES if errand(v.input) else ph.KEEP_FRAMES
    if _NOTES_HEADED["on"] and rng.random() < NOTE_SHARE:
        pool = ph.NOTE_FRAMES
    frame = rng.choice(ph.frames(pool, val))
    prompt = ph.dress(rng, ph.fill(frame, v=v.input))
    return Task("single", prompt, [Call(spec.name, {memo.name: v.input}, [v])], frame=frame)


# From run M's seed, NOTE_SHARE of those requests are headed as a note ("Quick note: {v}", an errand or a
# fact alike: phrasing.NOTE_FRAMES), and MEMO_PICK_MORE of a keeper's family's single requests are for it
NOTE_FROM_SEED = 12
NOTE_SHARE = 0.5
MEMO_PICK_MORE = 0.45
_NOTES_HEADED = {"on": False}


def notes_headed(on: bool) -> AbstractContextManager[None]:
    return switched(_NOTES_HEADED, on)


MEMO_PICK = 0.35  # from run H's seed, of the single requests of a family with a memo keeper: for it


# From run M's seed, ZERO_SINGLE_SHARE of the single requests of a family with an expression tool are
# a division by zero, called as asked and answered with the calculator's error (_division_by_zero, as the
# error kind's): seed 11
# had some fifty in 20,000 conversations, and run K refused all four of the demo's
ZERO_FROM_SEED = 12
ZERO_SINGLE_SHARE = 0.08
_ZEROS_MORE = {"on": False}


def zeros_more(on: bool) -> AbstractContextManager[None]:
    return switched(_ZEROS_MORE, on)


def _single(rng: random.Random, family: Family, val: bool) -> Task:
    calc = _calculator(family) if _ZEROS_MORE["on"] else None
    if calc and rng.random() < ZERO_SINGLE_SHARE:
        return _division_by_zero(rng, family, calc, val)
    keeper = next((t for t in family.tools if t.base in KEEPERS), None) if heads.needs_on() else None
    spec = keeper if keeper and rng.random() < (MEMO_PICK_MORE if _NOTES_HEADED["on"] else MEMO_PICK) else rng.choice(family.tools)
    reminder = _reminder(rng, spec, val)
    if reminder:
        return reminder
    named = _values(rng, spec)
    whole = _whole(rng, spec, named, val, ph.CONVERT_FRAMES)
    if whole:
        prompt, frame, head = ph.dress(rng, whole[0][:1].upper() + whole[0][1:]), whole[1], ""
    else:
        prompt, frame, head = _request(rng, spec, named, val, family.reworded)
    return Task("single", prompt, [Call(spec.name, _input(named), [v for _, v in named])], frame=frame, head=head)


# From run H's seed, PAIRED_SHARE of the parallel requests give each call its own value of two or
# more fields ("the status of case XY-12 in Leeds, and of case GH-7 in York"): run G's BFCL parallel
# misses were calls that mixed one call's values with another's, and every parallel request before
# varied one field only.
PAIRED_FROM_SEED = 8
PAIRED_SHARE = 0.4
_PAIRED = {"on": False}
PAIRED_JOINS = (", and {c}", ", and also {c}", ", then {c}", "; and {c}", ", and the same {c}", " and {c}", "; then {c}")
# from run K's seed: more of them (run J mixed one call's values into the next on BFCL parallel), and
# the later calls said as a repeat with other values
MORE_PAIRED_FROM_SEED = 11
MORE_PAIRED_SHARE = 0.6
MORE_PAIRED_JOINS = (". Do the same for {c}", ". Then the same again with {c} instead", "; and once more for {c}",
                     ". Repeat that for {c}", ", and then {c} as well", ". Same again, but {c}")
_MORE_PAIRED = {"on": False}


def paired(on: bool) -> AbstractContextManager[None]:
    return switched(_PAIRED, on)


def more_paired(on: bool) -> AbstractContextManager[None]:
    return switched(_MORE_PAIRED, on)


def _two_varying(family: Family) -> list[ToolSpec]:
    """The family's tools with two or more required fields whose values a request can list."""
    return [t for t in family.tools if sum(p.required and p.kind in PARALLEL_KINDS for p in t.params) >= 2]


def _paired(rng: random.Random, family: Family, val: bool) -> Task | None:
    """Several calls of one tool, each with its own values of two or more required fields."""
    options = _two_varying(family)
    if not _PAIRED["on"] or not options or rng.random() >= (MORE_PAIRED_SHARE if _MORE_PAIRED["on"] else PAIRED_SHARE):
        return None
    spec = rng.choice(options)
    first = _values(rng, spec)
    varying = [p for p, _ in first if p.required and p.kind in PARALLEL_KINDS]
    rows, n = [first], rng.choice((2, 2, 3))
    for _ in range(40):
        row = [(p, _draw(rng, p) if p in varying else v) for p, v in first]
        fresh = all(v.input != r[i][1].input for r in rows for i, (p, v) in enumerate(row) if p in varying)
        if fresh and all(v.input != _partner(row, p) for p, v in row):
            rows.append(row)
        if len(rows) == n:
            break
    if len(rows) < 2:
        return None
    kind, head, other = _head(rng, spec, val, family.reworded)
    texts = [p for p, _ in first if p.kind == "text"]
    both = pairs_listed(rng, varying, rows)  # run O's seed on: "for a and b: 2 and 7, 6 and 9"
    if both:
        x = _phrase(rng, head, [(p, v) for p, v in first if p not in varying]) + " " + both
    else:
        x = _phrase(rng, head, first)
        for row in rows[1:]:
            clause = " ".join(_mention(rng, p, v, not texts or p is texts[0]) for p, v in row if p in varying)
            x += rng.choice(PAIRED_JOINS + MORE_PAIRED_JOINS if _MORE_PAIRED["on"] else PAIRED_JOINS).replace("{c}", clause)
    frame = rng.choice(ph.frames(_FRAMES[kind], val))
    calls = [Call(spec.name, _input(row), [v for p, v in row if p in varying]) for row in rows]
    return Task("parallel", ph.fill(ph.dress(rng, frame), x=x), calls, frame=frame, head=other)


def _distinct(rng: random.Random, varying: Param, named: list[tuple[Param, Value]], n: int) -> list[Value]:
    """Up to ``n`` values of ``varying``, each its own, none its conversion partner's in ``named``."""
    values: list[Value] = []
    for _ in range(40):
        v = _draw(rng, varying)
        if all(v.input != w.input for w in values) and v.input != _partner(named, varying):
            values.append(v)
        if len(values) == n:
            break
    return values


def _joined(rng: random.Random, values: list[Value]) -> Value:
    """The values in one mention, as a parallel request lists them: "in Lisbon, Porto and Oslo"."""
    return Value([v.input for v in values], tight(rng, values) or join_words(rng, [v.said for v in values]), "")


def _listing(rng: random.Random, family: Family, counts: tuple[int, ...]) -> tuple[ToolSpec, Param, list[tuple[Param, Value]], list[Value]] | None:
    """A tool, a required field of it that a request lists values of, the values the request names,
    and two or more values of that field (as many as drawn from ``counts``); None where none can vary."""
    options = [(t, p) for t in family.tools for p in t.params if p.required and p.kind in PARALLEL_KINDS]
    if not options:
        return None
    spec, varying = rng.choice(options)
    named = _values(rng, spec)
    values = _distinct(rng, varying, named, rng.choice(counts))
    return (spec, varying, named, values) if len(values) >= 2 else None


def _parallel(rng: random.Random, family: Family, val: bool) -> Task | None:
    both = _paired(rng, family, val)
    if both:
        return both
    from . import mixed  # run P's seed on: two fields' values crossed (it builds on this module's helpers)

    if mixed.on() and rng.random() < mixed.CROSSED_SHARE:
        crossed = mixed.crossed(rng, family, val)
        if crossed:
            return crossed
    listing = _listing(rng, family, (2, 2, 3, 3, 4))
    if listing is None:
        return None
    spec, varying, named, values = listing
    calls = []
    for v in values:
        inp = {p.name: (v.input if p is varying else x.input) for p, x in named}
        calls.append(Call(spec.name, inp, [v]))
    names = [p for p in spec.params if p.required]
    if rng.random() < 0.5 or varying is not names[0] or varying.kind not in ("place", "text", "person", "code", "email", "path"):
        # the values listed in one mention: "in Lisbon, Porto and Oslo"; "the same for B" only
        # where B can be nothing but the request's first value
        joined = _joined(rng, values)
        parts = [(p, joined if p is varying else x) for p, x in named]
        prompt, frame, head = _request(rng, spec, parts, val, family.reworded)
    else:
        parts = [(p, values[0] if p is varying else x) for p, x in named]
        first, _, head = _request(rng, spec, parts, val, family.reworded)
        frame = rng.choice(ph.frames(ph.PARALLEL_FRAMES, val))
        x = first.rstrip(".?!") if first[-1:] in ".?!" else first
        prompt = ph.fill(ph.dress(rng, frame), x=x[:1].lower() + x[1:], rest=join_words(rng, [v.said for v in values[1:]]))
    return Task("parallel", prompt, calls, frame=frame, head=head)


def _clause(rng: random.Random, family: Family, spec: ToolSpec, val: bool) -> tuple[str, Call, str]:
    """One tool's part of a request for several things: (its clause, its call, its head where reworded)."""
    named = _values(rng, spec)
    whole = _whole(rng, spec, named, val, ph.CONVERT_CLAUSES)
    other = None if whole else _reworded(rng, spec, val, family.reworded, ("do",))
    head = other[1] if other else ""
    return whole[0] if whole else _phrase(rng, head or spec.do, named), Call(spec.name, _input(named), [v for _, v in named]), head


def _multiple(rng: random.Random, family: Family, val: bool) -> Task | None:
    if len(family.tools) < 2:
        return None
    from . import mixed  # run P's seed on: three tools, or one tool for two values and another

    if mixed.on():
        more = mixed.more_than_two(rng, family, val)
        if more:
            return more
    specs = rng.sample(family.tools, 2)
    parts, calls, worded = [], [], []
    for spec in specs:
        part, call, head = _clause(rng, family, spec, val)
        parts.append(part)
        calls.append(call)
        worded.append(head)
    frame = rng.choice(ph.frames(ph.MULTI_FRAMES, val))
    return Task("multiple", ph.fill(ph.dress(rng, frame), x1=parts[0], x2=parts[1]), calls, frame=frame, head=worded[0] or worded[1])


def can_do(family: Family) -> str:
    dos = [t.do for t in family.tools]
    return join_words(random.Random(family.id), dos)


def _irrelevant(rng: random.Random, family: Family, val: bool) -> Task:
    here = {t.domain for t in family.tools}
    c = can_do(family)
    r = rng.random()
    if r < 0.1:
        prompt = rng.choice(ph.GREETINGS)
        return Task("irrelevant", prompt, reply=rng.choice(("Hello! I can {c}.", "Hi! What can I do for you? I can {c}.")).replace("{c}", c), frame="chat",
                    thought="A greeting; no tool is needed.")
    if r < 0.15:
        prompt = rng.choice(ph.THANKS)
        return Task("irrelevant", prompt, reply=rng.choice(("You're welcome!", "Glad to help.", "Any time!")), frame="chat",
                    thought="Thanks; no tool is needed.")
    head = ""
    if r < 0.3:
        prompt = rng.choice(ph.CHAT)
        frame = "chat"
    else:
        domain = rng.choice([d for d in DOMAINS if d not in here and (d not in HELD_OUT or family.split != "train")])
        spec = _spec(rng, domain, rng.choice(_protos(domain)), "snake", False, "")
        prompt, frame, head = _request(rng, spec, _values(rng, spec), val, family.reworded)
    reply = rng.choice(("Sorry, I can't help with that: none of my tools does it. I can {c}.",
                        "None of my tools can do that. What I can do: {c}.", "I can't do that here. My tools {c2}."))
    return Task("irrelevant", prompt, reply=reply.replace("{c2}", "only " + c).replace("{c}", c), frame=frame, head=head)


ZERO_ERRORS = ("division by zero", "cannot divide by zero", "the divisor is zero", "float division by zero")


def _calculator(family: Family) -> ToolSpec | None:
    """The family's expression tool (the math domain's ``calculate_expression``), if it has one."""
    return next((t for t in family.tools if t.base == "calculate_expression"), None)


def _zero(rng: random.Random, family: Family, val: bool) -> Task | None:
    """From run G's seed, most errors of a family with an expression tool: a division by zero,
    called as asked, answered with the calculator's error (run F refused "What does 563 / 0 come to?")."""
    spec = _calculator(family) if sums_more() else None
    if spec is None or rng.random() >= 0.8:
        return None
    return _division_by_zero(rng, family, spec, val)


def _division_by_zero(rng: random.Random, family: Family, spec: ToolSpec, val: bool) -> Task:
    named = [(spec.params[0], zero_division(rng))]
    prompt, frame, head = _request(rng, spec, named, val, family.reworded)
    return Task("error", prompt, [Call(spec.name, _input(named), [named[0][1]])], fail={spec.name: rng.choice(ZERO_ERRORS)},
                frame=frame, head=head)


def _error(rng: random.Random, family: Family, val: bool) -> Task:
    zero = _zero(rng, family, val)
    if zero:
        return zero
    task = _single(rng, family, val)
    call = task.calls[0]
    spec = family.tool(call.tool)
    first = next((p for p in spec.params if p.name in call.input), None)
    message = rng.choice(ERRORS)
    shown = call.said[0].short if call.said else ""
    if first is None or not isinstance(call.input[first.name], (str, int, float)):
        message = rng.choice(ERRORS[2:5])
    message = message.replace("{v}", shown).replace("{label}", first.label if first else "input")
    return Task("error", task.prompt, task.calls, fail={call.tool: message}, frame=task.frame, head=task.head)


def _near_miss(rng: random.Random, family: Family, val: bool) -> Task | None:
    from .nearmiss import near_miss  # it builds on this module's helpers

    return near_miss(rng, family, val)


_MAKERS = {"single": _single, "parallel": _parallel, "multiple": _multiple, "irrelevant": _irrelevant, "near_miss": _near_miss,
           "error": _error}


def _made(kind: str, rng: random.Random, family: Family, val_phrasing: bool) -> Task | None:
    """A task of this kind, with the values its request mentions (``Task.said``)."""
    _MENTIONED.clear()
    task = _MAKERS[kind](rng, family, val_phrasing)
    if task is not None:
        task.said = list(_MENTIONED)
    return task


def make_task(rng: random.Random, family: Family, kind: str, val_phrasing: bool) -> Task | None:
    """A task of this kind over the family, or None where the family cannot have one (a
    ``multiple`` of a one-tool family)."""
    if kind == "two_requests":
        first = _made(rng.choice(("single", "single", "parallel", "error")), rng, family, val_phrasing)
        second = _made(rng.choice(("single", "single", "parallel", "multiple", "irrelevant", "near_miss")), rng, family, val_phrasing)
        if first is None or second is None:
            return None
        seen = {repr((c.tool, c.input)) for c in first.calls}
        if any(repr((c.tool, c.input)) in seen for c in second.calls):
            return None  # the repeat guard would answer it from the first
        lead = rng.choice(ph.FOLLOW_LEADS) if second.frame != "chat" else ""
        second.prompt = lead + (second.prompt[:1].lower() + second.prompt[1:] if lead else second.prompt)
        first.then = second
        first.kind = "two_requests"
        return first
    return _made(kind, rng, family, val_phrasing)
