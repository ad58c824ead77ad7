"""Tasks for the demo's tools, and the conversations aerix has about them.

A task is a user request (built from a world's phrasings and entities) and what a good agent
does with it: its first turn's calls. ``converse`` runs the task through the real aerix
``Agent`` loop, with the demo's tools (Python mirrors of the page's) and an ``Oracle`` model
that writes the turns a good agent writes; the conversation that comes out (``agent.messages``)
is byte for byte what aerix sends an engine, and ``build.models.chatml`` lays it out as the chat
template that goes into the GGUF does.

Kinds: single calls (weather, time, convert, calculate, save_note), two calls in one turn,
a chained second turn (weather, then its temperature in Fahrenheit), a tool error (units that
do not convert, division by zero), and direct finals when no tool fits.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import zlib
from dataclasses import dataclass, field
from typing import Any

from aerix import Agent
from aerix.testing import ScriptedModel

from . import demo_tools as demo
from . import grammar
from .score import ADVICE, rainy, result_message
from .worlds import EVAL, TRAIN, UNIT_WORDS, World

__all__ = ["Task", "KINDS", "TRAIN_MIX", "EVAL_COUNTS", "make_task", "train_tasks", "eval_tasks", "Conversations", "emphasis"]

KINDS = ("weather", "umbrella", "time", "convert", "calculate", "note", "two", "fahrenheit", "bad_units", "div_zero", "direct")
TRAIN_MIX = {
    "weather": 0.13, "umbrella": 0.07, "time": 0.12, "convert": 0.14, "calculate": 0.14, "note": 0.11,
    "two": 0.10, "fahrenheit": 0.05, "bad_units": 0.03, "div_zero": 0.02, "direct": 0.09,
}
EVAL_COUNTS = {
    "weather": 36, "umbrella": 8, "time": 30, "convert": 30, "calculate": 30, "note": 20,
    "two": 16, "fahrenheit": 10, "bad_units": 6, "div_zero": 4, "direct": 20,
}
CAN_DO = "I can check the weather or the time in a city, convert units, do arithmetic and save notes."
DIRECT = {
    "greeting": ("A greeting; no tool is needed.", f"Hello! {CAN_DO}"),
    "thanks": ("Thanks; no tool is needed.", "You're welcome!"),
    "about": ("A question about me; no tool is needed.", f"I am a small assistant in this page. {CAN_DO}"),
    "other": ("No tool fits this request.", f"Sorry, I can't help with that. {CAN_DO}"),
}
EVAL_SEED = 20261130  # the held-out tasks: their own seed, their own world


@dataclass
class Task:
    kind: str
    prompt: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # the first turn's calls
    direct: str | None = None  # the category of a direct final
    umbrella: bool = False
    then: Task | None = None  # a next request in the same conversation (training only)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "prompt": self.prompt, "calls": [{"tool": t, "input": i} for t, i in self.calls],
                "direct": self.direct, "umbrella": self.umbrella}


# -- entities ------------------------------------------------------------------------------

def held_out(text: str) -> bool:
    """The hash split of numbers and expressions: about one in eight belongs to the eval only."""
    return zlib.crc32(text.encode()) % 8 == 0


_ONSETS = ("b", "br", "c", "ch", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "kr", "l", "m", "n", "p", "pr",
           "qu", "r", "s", "sh", "st", "t", "tr", "v", "w", "z", "th", "sl", "bl", "", "")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ia", "ou", "y", "ei", "ö", "é", "ã", "ü", "å", "í")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "nd", "rt", "st", "k", "x", "th", "ng", "v")


_HELD_OUT_CITIES = {c.casefold() for c in EVAL.cities}
_ONE_WORD_CITIES = tuple(c for c in TRAIN.cities if " " not in c and "-" not in c)


# English words that also end many names ("Lucknow", "Southampton"): glued to a made-up word,
# they teach that a name goes on while no space comes, whatever the next token is.
_GLUED = ("now", "today", "is", "in", "me", "it", "at", "time", "the", "and", "for", "know", "town", "ton", "ham",
          "ville", "field", "port", "land", "wood", "side", "burg", "more", "here", "on", "ore", "ines", "ant")


def synthetic_word(rng: random.Random) -> str:
    n = rng.choice((1, 2, 2, 2, 3, 3, 4))
    w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS[:11] if rng.random() < 0.85 else _VOWELS)
                 + rng.choice(_CODAS) for _ in range(n))
    if rng.random() < 0.15:
        w = w[: rng.randint(2, max(2, len(w)))] + rng.choice(_GLUED)
    return w.capitalize()


def synthetic_city(rng: random.Random) -> str:
    """A made-up place name, so the model learns to copy names it has never seen. Nearly half
    have two or three words, some starting with a known city's name ("Porto Vel"): a name goes
    on while its words are capitalised, not just to the first word the model knows. Never a
    held-out city's name."""
    while True:
        r = rng.random()
        word = synthetic_word(rng)
        if r < 0.10:
            name = rng.choice(("New ", "San ", "Port ", "Saint-", "Lake ", "El ", "Fort ", "Santa ", "Los ", "Le ")) + word
        elif r < 0.20:
            name = word + rng.choice((" City", " Bay", " Springs", "-on-Sea", " Falls", " Heights", " Harbor", " Beach"))
        elif r < 0.32:
            name = f"{word} {synthetic_word(rng)}"
        elif r < 0.42:
            known = rng.choice(_ONE_WORD_CITIES)
            name = f"{known} {word}" if rng.random() < 0.6 else f"{word} {known}"
        elif r < 0.46:
            name = f"{word} {rng.choice(('de', 'del', 'da', 'do', 'la', 'am', 'upon'))} {synthetic_word(rng)}"
        else:
            name = word
        if name.casefold() not in _HELD_OUT_CITIES:
            return name


def city(rng: random.Random, world: World) -> str:
    if world is TRAIN and rng.random() < 0.5:
        name = synthetic_city(rng)
    else:
        name = rng.choice(world.cities)
    if rng.random() < 0.05:
        name = name.lower()
    return name


def number(rng: random.Random, world: World, temperature: bool = False) -> int | float:
    while True:
        r = rng.random()
        if temperature:
            v: int | float = rng.randint(-30, 110)
        elif r < 0.5:
            v = rng.randint(1, 100)
        elif r < 0.7:
            v = rng.randint(100, 2500)
        elif r < 0.9:
            v = round(rng.uniform(0.1, 100), 1)
        else:
            v = round(rng.uniform(0.01, 50), 2)
        if isinstance(v, float) and v == int(v):
            v = int(v)
        if held_out(str(v)) == (world is EVAL):
            return v


def show_number(v: int | float) -> str:
    return str(v)


_OPS = {"+": ("plus", "and"), "-": ("minus",), "*": ("times", "multiplied by"), "/": ("divided by", "over")}


def expression(rng: random.Random, world: World, zero_divisor: bool = False) -> tuple[str, str]:
    """(what the user writes, what the agent passes to calculate)."""
    while True:
        def operand() -> str:
            if rng.random() < (0.12 if world is EVAL else 0.25):  # training copies more decimals
                return f"{rng.randint(0, 99)}.{rng.randint(1, 9)}"
            return str(rng.randint(1, rng.choice((12, 99, 999))))

        # training has more two-operator expressions: an operator or a digit that comes twice is
        # where a copy jumps to the wrong occurrence ("9 * 886 * 78.9" → "9 * 78.9")
        ops = [rng.choice("+-*/") for _ in range(rng.choice((1, 1, 1, 2) if world is EVAL else (1, 1, 2)))]
        nums = [operand() for _ in range(len(ops) + 1)]
        if zero_divisor:
            ops[-1], nums[-1] = "/", "0"
        if len(ops) == 2 and rng.random() < 0.4 and not zero_divisor:
            canon = f"({nums[0]} {ops[0]} {nums[1]}) {ops[1]} {nums[2]}"
        else:
            canon = " ".join(x for pair in zip(nums, ops + [""]) for x in pair).strip()
        if held_out(canon) != (world is EVAL):
            continue
        r = rng.random()
        if r < 0.2 and "(" not in canon:
            words = nums[0]
            for op, n in zip(ops, nums[1:]):
                words += f" {rng.choice(_OPS[op])} {n}"
            return words, canon
        if r < 0.45:
            tight = canon.replace(" ", "")
            return tight, tight
        return canon, canon


def note_text(rng: random.Random, world: World) -> tuple[str, bool]:
    """(the note, whether it is a statement rather than a task)."""
    if rng.random() < 0.2:
        return rng.choice(world.note_facts), True
    obj = rng.choice(world.note_objects)
    verb = rng.choice(world.note_verbs)
    if world is TRAIN:  # made-up words too: a note is copied from its first word, known or not
        if rng.random() < 0.15:
            obj = synthetic_word(rng)
            if rng.random() < 0.4:  # a made-up compound ("the brenkol tap"): a note goes on past its first noun
                obj = f"the {obj.lower()} {synthetic_word(rng).lower()}"
        if rng.random() < 0.25:
            verb = synthetic_word(rng).lower()
    when = rng.choice(world.note_when)
    if world is TRAIN and rng.random() < 0.3:
        when = note_when(rng)
    return f"{verb} {obj}{when}", False


_WHEN_HEADS = ("on", "by", "before", "after", "until", "at", "next", "this", "every", "around", "from", "till")
_WHEN_TAILS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "noon", "midnight",
               "lunch", "dinner", "week", "month", "weekend", "morning", "evening", "Easter", "Christmas", "May", "June")
_HELD_OUT_WHEN = {w.strip().casefold() for w in EVAL.note_when}


def note_when(rng: random.Random) -> str:
    """A made-up time clause for a note ("by Saturday", "after 7", "until Brenkol"): a note goes on
    to the end of its clause, capitalised words and numbers included. Never a held-out one."""
    while True:
        r = rng.random()
        tail = (str(rng.randint(1, 12)) if r < 0.2 else synthetic_word(rng) if r < 0.4 else rng.choice(_WHEN_TAILS))
        when = f"{rng.choice(_WHEN_HEADS)} {tail}"
        if when.casefold() not in _HELD_OUT_WHEN:
            return " " + when


def unit_word(rng: random.Random, unit: str) -> str:
    forms = UNIT_WORDS[unit]
    return forms[0] if rng.random() < 0.45 else rng.choice(forms)


def with_number(v: str, word: str) -> str:
    return f"{v}{word}" if word.startswith("°") else f"{v} {word}"


COMPATIBLE = [("km", "mi"), ("mi", "km"), ("m", "ft"), ("ft", "m"), ("cm", "in"), ("in", "cm"), ("km", "m"),
              ("m", "cm"), ("mi", "ft"), ("kg", "lb"), ("lb", "kg"), ("g", "oz"), ("oz", "g"), ("kg", "g"),
              ("lb", "oz"), ("l", "gal"), ("gal", "l"), ("c", "f"), ("f", "c"), ("m", "km"), ("in", "ft"), ("ft", "in")]
BAD_PAIRS = [("kg", "km"), ("km", "kg"), ("l", "m"), ("c", "km"), ("lb", "gal"), ("mi", "lb"), ("f", "kg"),
             ("gal", "ft"), ("g", "cm"), ("m", "c"), ("oz", "l"), ("cm", "g")]


def dimension(unit: str) -> str:
    return "temperature" if unit in demo.SHOWN else demo.FACTORS[unit][0]


# Training draws only from every pair the tool converts or refuses, evenly: in the lists above the
# target nearly names the source ("to m" comes only from ft or km), and a model that learns that
# guesses the source from the target instead of reading it. (With half the pairs from the lists,
# three models of four did guess: "Express 37 miles in ft" → from "in".)
ANY_COMPATIBLE = [(a, b) for a in demo.UNITS for b in demo.UNITS if a != b and dimension(a) == dimension(b)]
ANY_BAD = [(a, b) for a in demo.UNITS for b in demo.UNITS if dimension(a) != dimension(b)]


# -- tasks ---------------------------------------------------------------------------------

# Words that may follow a name or an expression in a request: a name ends where the capitalised
# words end and an expression where its numbers and operators end, not at the next punctuation mark.
AFTER_NAME = (" now", " right now", " later", " today", " for me", " at the moment", " please", " this morning",
              " tonight", " these days", " this week", " then", " again", " exactly", " currently", " for a moment",
              " as well", " too", " quickly", " by any chance", " this afternoon", " just now", " at all",
              " in total", " altogether", " for me please", " if you can", " real quick", " here", " in my head")
AFTER_SHARE = 0.3


def _after_name(rng: random.Random, prompt: str) -> str:
    """Put a few lower-case words after one name or expression slot that ends a clause."""
    slots = [m.end() for m in re.finditer(r"\{(?:city|a|b|e)\}(?=[?.!,]|$)", prompt)]
    if not slots:
        return prompt
    at = rng.choice(slots)
    return prompt[:at] + rng.choice(AFTER_NAME) + prompt[at:]


def _dress(rng: random.Random, world: World, prompt: str) -> str:
    """Small surface noise on a phrasing, before its entities go in (they keep their case):
    fillers, words after a name, lower case, a missing question mark."""
    if world is TRAIN and rng.random() < AFTER_SHARE:
        prompt = _after_name(rng, prompt)
    r = rng.random()
    if r < 0.1:
        prompt = rng.choice(world.prefixes) + prompt[0].lower() + prompt[1:]
    elif r < (0.2 if world is TRAIN else 0.16):  # the held-out set stays as it was drawn
        prompt = prompt.rstrip() + rng.choice(world.suffixes)
    if world is TRAIN:
        r = rng.random()
        if r < 0.08:
            prompt = prompt.lower()
        elif r < 0.16 and prompt[-1] in "?.":
            prompt = prompt[:-1]
    return prompt


GRAMMAR_SHARE = 0.5  # training requests phrased by grammar.py rather than taken from the lists


def composed(rng: random.Random, world: World) -> bool:
    return world is TRAIN and rng.random() < GRAMMAR_SHARE


def make_task(rng: random.Random, world: World, kind: str) -> Task:
    c = lambda: city(rng, world)  # noqa: E731
    if kind in ("weather", "umbrella", "time"):
        name = c()
        phrasing = rng.choice(world.umbrella if kind == "umbrella" else world.time if kind == "time" else world.weather)
        if kind != "umbrella" and composed(rng, world):
            phrasing = grammar.compose(rng, kind)
        tool = "time" if kind == "time" else "weather"
        return Task(kind, _dress(rng, world, phrasing).format(city=name), [(tool, {"city": name})], umbrella=kind == "umbrella")
    if kind == "two":
        a, b = c(), c()
        while b.casefold() == a.casefold():
            b = c()
        shape = rng.choice(("two_weather", "two_weather", "two_time", "weather_time", "time_weather"))
        tools_ = grammar.TOOL_OF_SHAPE[shape]
        phrasing = grammar.compose(rng, shape) if composed(rng, world) else rng.choice(getattr(world, shape))
        prompt = _dress(rng, world, phrasing).format(a=a, b=b)
        return Task(kind, prompt, [(tools_[0], {"city": a}), (tools_[1], {"city": b})])
    if kind == "fahrenheit":
        name = c()
        return Task(kind, _dress(rng, world, rng.choice(world.fahrenheit)).format(city=name), [("weather", {"city": name})])
    if kind in ("convert", "bad_units"):
        if world is TRAIN:
            src, dst = rng.choice(ANY_COMPATIBLE if kind == "convert" else ANY_BAD)
        else:
            src, dst = rng.choice(COMPATIBLE if kind == "convert" else BAD_PAIRS)
        if world is TRAIN and kind == "convert" and rng.random() < 0.08:  # two temperature scales in one request
            src, dst = rng.choice((("c", "f"), ("f", "c")))
        v = number(rng, world, temperature=src in ("c", "f"))
        prompt = _dress(rng, world, grammar.compose(rng, "convert") if composed(rng, world) else rng.choice(world.convert))
        w1, w2 = unit_word(rng, src), unit_word(rng, dst)
        text = prompt.replace("{v} {u1}", with_number(show_number(v), w1)).replace("{v}{u1}", with_number(show_number(v), w1))
        text = text.replace("{u2}", w2.lstrip("°") if w2.startswith("°") and rng.random() < 0.5 else w2)
        return Task(kind, text, [("convert", {"value": v, "from": src, "to": dst})])
    if kind in ("calculate", "div_zero"):
        said, canon = expression(rng, world, zero_divisor=kind == "div_zero")
        phrasing = grammar.compose(rng, "calculate") if composed(rng, world) else rng.choice(world.calculate)
        return Task(kind, _dress(rng, world, phrasing).format(e=said), [("calculate", {"expression": canon})])
    if kind == "note":
        text, fact = note_text(rng, world)
        phrasing = rng.choice(world.note_fact if fact else world.note)
        if composed(rng, world):
            phrasing = grammar.compose(rng, "note_fact" if fact else "note")
        return Task(kind, _dress(rng, world, phrasing).format(note=text), [("save_note", {"text": text})])
    if kind == "direct":
        category = rng.choice(("greeting", "thanks", "about", "other", "other", "other"))
        pool = {"greeting": world.greetings, "thanks": world.thanks, "about": world.about, "other": world.other}[category]
        phrasing = grammar.compose(rng, "other") if category == "other" and composed(rng, world) else rng.choice(pool)
        prompt = phrasing.format(city=c())
        return Task(kind, prompt, [], direct=category)
    raise ValueError(f"unknown kind {kind!r}")


FOLLOW_UPS = ("What about {city}?", "And in {city}?", "How about {city}?", "And {city}?", "Same for {city}.",
              "and {city}?", "What about in {city}?")
SECOND = 0.15  # the share of training conversations that go on with a second request


def train_tasks(n: int, seed: int) -> list[Task]:
    """n conversations; some go on with a second request, often a follow-up on the first
    (as in the demo, where one agent keeps its conversation across prompts)."""
    rng = random.Random(seed)
    kinds = list(TRAIN_MIX)
    weights = [TRAIN_MIX[k] for k in kinds]
    out = []
    for _ in range(n):
        task = make_task(rng, TRAIN, rng.choices(kinds, weights)[0])
        if rng.random() < SECOND:
            if task.kind in ("weather", "umbrella", "time") and rng.random() < 0.4:
                name = city(rng, TRAIN)
                task.then = Task("follow_up", rng.choice(FOLLOW_UPS).format(city=name), [(task.calls[0][0], {"city": name})],
                                 umbrella=task.umbrella)
            else:
                task.then = make_task(rng, TRAIN, rng.choices(kinds, weights)[0])
        out.append(task)
    return out


def eval_tasks(seed: int = EVAL_SEED) -> list[Task]:
    rng = random.Random(seed)
    out = [make_task(rng, EVAL, kind) for kind, count in EVAL_COUNTS.items() for _ in range(count)]
    rng.shuffle(out)
    return out


# -- what a good agent says ------------------------------------------------------------------

def _turn(thought: str, calls: list[tuple[str, dict[str, Any]]] | None = None, final: str | None = None) -> str:
    body: dict[str, Any] = {"thought": thought}
    if calls is not None:
        body["calls"] = [{"tool": t, "input": i} for t, i in calls]
    else:
        body["final"] = final
    return json.dumps(body, ensure_ascii=False)


def first_thought(task: Task) -> str:
    """Names the tools to use and nothing the call copies: a name written twice is two chances
    to get it wrong, and the call would then copy the thought rather than the request."""
    tools_ = [t for t, _ in task.calls]
    if task.kind == "fahrenheit":
        return "Use weather, then convert to Fahrenheit."
    names = tools_[0]
    if len(tools_) == 2:
        names = f"{tools_[0]} twice" if tools_[0] == tools_[1] else f"{tools_[0]} and {tools_[1]}"
    why = " for the umbrella" if task.umbrella else ""
    return f"Use {names}{why}."


_LEAD = {"weather": "expect ", "time": "it is ", "convert": "", "calculate": "", "save_note": "done, "}


def final_answer(task: Task, results: list[tuple[str, str]]) -> tuple[str, str]:
    """(thought, final) once every result is in: the final quotes each result as it came."""
    failed = [text for _, text in results if text.startswith("error: ")]
    if failed:
        return "The tool failed; tell the user why.", f"Sorry, I could not do that: {result_message(failed[0])}."
    text = ", and ".join(_LEAD[tool] + result for tool, result in results)
    if task.umbrella:
        text += f", so {ADVICE[True]}" if rainy(results) else f", so you can {ADVICE[False]} at home"
    thought = "I have the result." if len(results) == 1 else "I have both results."
    return thought, text[0].upper() + text[1:] + "."


# Where the loss weighs more than elsewhere in an assistant turn: a call's input (the copying
# that the first-turn figure counts: one token cut or added is a wrong call), the tools the
# first thought names and each call's tool (which tool goes with which city), the umbrella
# advice (one token after ", so " decides it, among a whole final's tokens), and most of all a
# conversion's source unit (the token trained models got wrong most, guessing it from the target).
EMPHASIS = ((re.compile(r'"input": \{[^{}]*\}'), 2.0), (re.compile(r'"tool": "[^"]*"'), 2.0),
            (re.compile(r'"thought": "Use [^"]*"'), 2.0), (re.compile(r", so [^.]*"), 3.0),
            (re.compile(r'"from": "[^"]*"'), 4.0))


def emphasis(text: str, offsets: list[tuple[int, int]]) -> list[float]:
    """Each token's weight in a trained text, given the tokens' character offsets."""
    spans = [(m.start(), m.end(), w) for pattern, w in EMPHASIS for m in pattern.finditer(text)]
    return [max([w for a, b, w in spans if start < b and end > a], default=1.0) for start, end in offsets]


class Oracle:
    """The model for ``ScriptedModel``: given the conversation so far, the turn a good agent writes."""

    def __init__(self) -> None:
        self.task: Task | None = None

    def __call__(self, messages: list[dict[str, str]], options: dict[str, Any]) -> str:
        task = self.task
        assert task is not None
        results: list[tuple[str, str]] = []
        asked = max(i for i, m in enumerate(messages) if m["role"] == "user" and not m["content"].startswith('{"results": '))
        for m in messages[asked:]:
            if m["role"] == "user" and m["content"].startswith('{"results": '):
                results += [(r["tool"], r["result"]) for r in json.loads(m["content"])["results"]]
        if task.direct is not None:
            thought, final = DIRECT[task.direct]
            return _turn(thought, final=final)
        if not results:
            return _turn(first_thought(task), calls=task.calls)
        if task.kind == "fahrenheit" and len(results) == 1 and not results[0][1].startswith("error: "):
            celsius = demo.weather_celsius(results[0][1])
            return _turn("Now convert it to Fahrenheit.",
                         calls=[("convert", {"value": celsius, "from": "c", "to": "f"})])
        thought, final = final_answer(task, results)
        return _turn(thought, final=final)


class Conversations:
    """Runs tasks through the real aerix loop and returns ``agent.messages``."""

    def __init__(self) -> None:
        self.oracle = Oracle()
        self.agent = Agent(model=ScriptedModel(self.oracle), instructions=demo.INSTRUCTIONS, tools=demo.aerix_tools(),
                           limits={"turns": 6, "retries": 0})
        self.loop = asyncio.new_event_loop()

    @property
    def system(self) -> str:
        return self.agent.system

    def close(self) -> None:
        self.loop.close()

    def __call__(self, task: Task) -> list[dict[str, str]]:
        self.agent.reset()
        self.agent.model.calls.clear()
        while True:
            self.oracle.task = task
            answer = self.loop.run_until_complete(self.agent.ask(task.prompt))
            assert answer.text, task
            if task.then is None:
                return self.agent.messages
            task = task.then
