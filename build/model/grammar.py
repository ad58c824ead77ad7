"""A small grammar of training requests: frames × cores, so that what decides the tool is the
tool's words wherever they stand in a sentence, not a sentence learnt whole.

Training only. ``compose(rng, kind)`` returns a phrasing with the same slots as the listed
ones in worlds.py ({city}, {a} and {b}, {v} {u1} … {u2}, {e}, {note}); ``EVAL_TEMPLATES`` are never produced
(``check`` asserts it over every phrasing the grammar can make).
"""

from __future__ import annotations

import itertools
import random

from .worlds import EVAL

__all__ = ["compose", "check"]

# noun phrases ("the weather in {city}") go into noun frames, clauses ("if it's raining in
# {city}") into clause frames
NOUN_FRAMES = (
    "What's {x}?", "What is {x}?", "Tell me {x}.", "Could you tell me {x}?", "I'd like {x}.", "I need {x}.",
    "Get me {x}, please.", "Check {x}.", "Can you look up {x}?", "{x}?", "{x}", "Give me {x}.", "Do you know {x}?",
    "Please find {x}.", "I want {x}.", "Show me {x}.", "Quick: {x}", "Can I have {x}?", "Look up {x} for me.",
    "Hey, {x}?", "Need {x}.", "Would you get {x}?", "Find out {x}.",
)
CLAUSE_FRAMES = (
    "Tell me {x}.", "Could you check {x}?", "Do you know {x}?", "I'd like to know {x}.", "Can you find out {x}?",
    "I wonder {x}.", "Check {x}, please.", "Any idea {x}?", "Please tell me {x}.", "I need to know {x}.",
    "Find out {x}.", "Let me know {x}.", "Can you see {x}?",
)
CORES = {
    "weather": (
        ("the weather in {city}", "the forecast for {city}", "the weather forecast in {city}", "today's weather in {city}",
         "the temperature in {city}", "the weather report for {city}", "the conditions in {city}",
         "the current weather in {city}", "the weather for {city} today", "the forecast in {city} for today",
         "the temperature right now in {city}", "{city}'s weather", "{city}'s forecast", "the weather situation in {city}"),
        ("if it's raining in {city}", "whether it will rain in {city}", "if it's sunny in {city}", "whether it's cloudy in {city}",
         "if it's snowing in {city}", "if it's windy in {city}", "how warm it is in {city}", "how hot it is in {city}",
         "how cold it is in {city}", "how many degrees it is in {city}", "if it's foggy in {city}", "if I need a coat in {city}",
         "what the weather is like in {city}", "what the weather is doing in {city}", "whether it's hot in {city}",
         "if the sun is out in {city}", "whether it's freezing in {city}", "what the forecast says for {city}"),
    ),
    "time": (
        ("the time in {city}", "the local time in {city}", "the current time in {city}", "the hour in {city}",
         "the time right now in {city}", "{city}'s local time", "{city} time", "the clock in {city}",
         "the current hour in {city}", "the local time over in {city}", "the time there in {city}"),
        ("what time it is in {city}", "what the clock says in {city}", "if it's late in {city}", "if it's early in {city}",
         "if it's morning in {city}", "if it's night in {city}", "whether it's day or night in {city}",
         "what hour it is in {city}", "whether it's evening in {city}", "if it's past noon in {city}",
         "how late it is now in {city}", "what time they have in {city}"),
    ),
    "convert": (
        ("{v} {u1} in {u2}", "{v} {u1} converted to {u2}", "{v} {u1} as {u2}", "{v} {u1} expressed as {u2}",
         "the number of {u2} in {v} {u1}", "{v} {u1} changed into {u2}"),
        ("how many {u2} are in {v} {u1}", "what {v} {u1} is in {u2}", "how much {v} {u1} is in {u2}",
         "how many {u2} make {v} {u1}", "what {v} {u1} comes to in {u2}"),
    ),
    "calculate": (
        ("{e}", "the result of {e}", "the answer to {e}", "the value of {e}", "the sum {e}", "the total of {e}"),
        ("what {e} is", "what {e} makes", "how much {e} is", "what {e} equals", "what you get from {e}",
         "what {e} gives", "what {e} adds up to", "what {e} works out to", "what {e} comes out as"),
    ),
}
# requests no tool serves, in the same frames: a frame says nothing about the tool
OTHER = (
    ("a joke", "a recipe for soup", "the capital of Peru", "your name", "a good film", "the news", "the score of the match",
     "a hotel in {city}", "the population of {city}", "the best food in {city}", "flights to {city}",
     "the history of {city}", "the mayor of {city}", "a taxi in {city}", "the train to {city}", "a poem about {city}",
     "a song", "some music", "a gift idea", "the meaning of this word", "my horoscope", "a story", "the lottery numbers",
     "a restaurant in {city}", "the museums in {city}", "the way to the station", "a synonym for happy",
     "the author of this book", "a nice name for a cat", "directions to {city}", "the stock price of Apple"),
    ("who invented the radio", "how to tie a tie", "why the sky is blue", "how old the moon is",
     "who lives in {city}", "how to get to {city}", "where {city} is", "what people eat in {city}",
     "how to learn French", "who wrote this song", "how to make pancakes", "what to watch tonight",
     "how big {city} is", "which language they speak in {city}", "how to fix my phone", "what my name means"),
)
VERB_FRAMES = {
    "convert": ("Convert {v} {u1} to {u2}.", "Change {v} {u1} to {u2}, please.", "Please turn {v} {u1} into {u2}.",
                "Could you change {v} {u1} into {u2}?", "Convert {v} {u1} into {u2}, thanks.", "{v} {u1}: convert to {u2}"),
    "calculate": ("Calculate {e}.", "Compute {e}, please.", "Please calculate {e}.", "Could you compute {e}?",
                  "Do this sum: {e}", "Math: {e}", "Work this out: {e}"),
    "note": ("{verb} a note: {note}", "{verb} a note for me: {note}", "Please {verb_l} a note: {note}",
             "Could you {verb_l} a note: {note}", "{verb} this in my notes: {note}", "Remember to {note}.",
             "Remind me to {note}.", "Don't forget: {note}", "Note to self: {note}", "I must {note}. Note it."),
    "note_fact": ("{verb} a note that {note}.", "Please {verb_l} a note that {note}.", "Remember that {note}.",
                  "Note that {note}.", "For my notes: {note}", "Keep in mind: {note}"),
}
NOTE_VERBS = ("Save", "Add", "Make", "Write", "Take", "Store", "Keep", "Create", "Put")
# Requests typed as a label and a city ("Forecast: Lisbon"). Most labelled requests in the lists
# are notes ("Note: …", "Write down: …"), and a model that learns "a label and a colon make a note"
# saves "Kiel" as a note; the label's words must decide, for the tools and for what no tool serves.
LABELS = {
    "weather": ("Weather", "Forecast", "Weather today", "Today's forecast", "Weather update", "Current weather",
                "Temperature", "Conditions", "Weather please", "Forecast today"),
    "time": ("Time", "Local time", "Current time", "Clock", "Time now", "Hour", "Local hour", "Time please",
             "Time zone check", "Current hour"),
    "other": ("Hotels", "Population", "History", "Flights", "Restaurants", "Museums", "Directions", "Mayor",
              "News", "Train times"),
}
LABEL_FRAMES = ("{label}: {city}", "{label} for {city}?", "{label}, {city}")


def _capitalised(templates: list[str]) -> list[str]:
    """Each template with its first letter upper-case ("{city}" and other slots left as they are)."""
    return [t[0].upper() + t[1:] if t[0].islower() else t for t in templates]


def _templates(kind: str) -> list[str]:
    if kind == "other":
        nouns, clauses = OTHER
        out = [f.replace("{x}", c) for f, c in itertools.product(NOUN_FRAMES, nouns)]
        out += [f.replace("{x}", c) for f, c in itertools.product(CLAUSE_FRAMES, clauses)]
        return _capitalised(out + _labelled(kind))
    if kind in ("note", "note_fact"):
        out = []
        for f in VERB_FRAMES[kind]:
            out += sorted({f.format(verb=v, verb_l=v.lower(), note="{note}") for v in NOTE_VERBS})
        return out
    nouns, clauses = CORES[kind]
    out = [f.replace("{x}", c) for f, c in itertools.product(NOUN_FRAMES, nouns)]
    out += [f.replace("{x}", c) for f, c in itertools.product(CLAUSE_FRAMES, clauses)]
    out += list(VERB_FRAMES.get(kind, ()))
    return _capitalised(out + _labelled(kind))


def _labelled(kind: str) -> list[str]:
    return [f.replace("{label}", label) for f, label in itertools.product(LABEL_FRAMES, LABELS.get(kind, ()))]


# Two calls in one request: two noun phrases or two clauses, each with its own tool's words next
# to its own city, in either order ("the time in {a} and the forecast for {b}"), so that which
# tool goes with which city is read from the words beside it, not from how the sentence opens.
# Phrases that name a clock stay out of these: a held-out request pairs "the clock" with a
# forecast, and the pairing is left for the model to work out from single requests.
PAIR_JOINS = (" and ", ", and ", " and also ", " plus ")
TOOL_OF_SHAPE = {"two_weather": ("weather", "weather"), "two_time": ("time", "time"),
                 "weather_time": ("weather", "time"), "time_weather": ("time", "weather")}


def _pair_templates(shape: str) -> list[str]:
    first, second = TOOL_OF_SHAPE[shape]
    out = []
    for kind, frames in ((0, NOUN_FRAMES), (1, CLAUSE_FRAMES)):
        xs = [c for c in CORES[first][kind] if "clock" not in c]
        ys = [c for c in CORES[second][kind] if "clock" not in c]
        for frame, x, y, join in itertools.product(frames, xs, ys, PAIR_JOINS):
            if x == y or (kind == 1 and join == " plus "):
                continue
            out.append(frame.replace("{x}", x.replace("{city}", "{a}") + join + y.replace("{city}", "{b}")))
    return _capitalised(out)


TEMPLATES = {k: _templates(k) for k in ("weather", "time", "convert", "calculate", "note", "note_fact", "other")}
TEMPLATES.update({shape: _pair_templates(shape) for shape in TOOL_OF_SHAPE})
EVAL_TEMPLATES = {t.casefold() for f in ("weather", "umbrella", "time", "fahrenheit", "convert", "calculate", "note", "note_fact",
                                         "other", "greetings", "thanks", "about", *TOOL_OF_SHAPE)
                  for t in getattr(EVAL, f)}
for _k, _ts in TEMPLATES.items():
    TEMPLATES[_k] = [t for t in _ts if t.casefold() not in EVAL_TEMPLATES]


def compose(rng: random.Random, kind: str) -> str:
    return rng.choice(TEMPLATES[kind])


def check() -> None:
    for ts in TEMPLATES.values():
        assert not {t.casefold() for t in ts} & EVAL_TEMPLATES
