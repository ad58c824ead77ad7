"""How requests are worded: frames around a tool's phrase and its values' mentions, and which
frames only validation sees.

A frame is a sentence with ``{x}`` (one request) or ``{x1}``/``{x2}`` (two). ``held_out(frame)``
is a hash split: those frames make the ``val_phrasing`` split and never appear in training.
"""

from __future__ import annotations

import random
import zlib

__all__ = ["DO_FRAMES", "OBJ_FRAMES", "ASK_FRAMES", "MULTI_FRAMES", "PARALLEL_FRAMES", "REMIND_FRAMES", "KEEP_FRAMES", "NOTE_FRAMES", "CHAT", "GREETINGS", "THANKS", "held_out", "frames", "dress", "FOLLOW_LEADS"]

DO_FRAMES = (
    "Please {x}.", "Can you {x}?", "Could you {x}?", "{X}.", "{X}, please.", "I need you to {x}.", "Would you {x}?",
    "Help me {x}.", "I'd like you to {x}.", "Go ahead and {x}.", "Hey, {x}.", "{X} for me.", "Quick one: {x}.",
    "I want to {x}.", "Let's {x}.", "Need to {x}.", "Can I get you to {x}?", "{X} now.", "Kindly {x}.",
    "Would you mind if we {x}?", "Be a dear and {x}.", "{x}", "pls {x}", "I was hoping you could {x}.",
    "Is it possible to {x}?", "Your task: {x}.", "Okay so {x}.", "Right, {x}.", "Do me a favour and {x}.",
)
OBJ_FRAMES = (
    "What's {x}?", "What is {x}?", "Tell me {x}.", "Show me {x}.", "I'd like {x}.", "Give me {x}.", "Look up {x}.",
    "Find {x}.", "Get me {x}.", "I want to know {x}.", "Fetch {x}.", "Need {x}.", "{X}?", "Do you know {x}?",
    "Check {x} for me.", "I'm after {x}.", "Any chance of {x}?", "{x}", "Pull up {x}.", "Can I see {x}?",
    "Looking for {x}.", "What would {x} be?", "Report {x}.", "Let me have {x}.",
)
# around a direct question ("what time is it" + " in Davao": build.general.heads' ``ask`` heads)
ASK_FRAMES = (
    "{X}?", "{X}?", "Quick question: {x}?", "Hey, {x}?", "So {x}?", "{X}? Thanks.", "{x}?", "Um, {x}?",
    "Just wondering, {x}?", "{X}", "Tell me, {x}?", "{X} right now?", "Do you happen to know, {x}?",
)
# a conversion asked for whole (run F's seed on, tasks.py): {v} the value, {a} its unit, {b} the unit wanted
CONVERT_FRAMES = (
    "Convert {v} {a} to {b}.", "{v} {a} to {b}?", "{v} {a} in {b}?", "What is {v} {a} in {b}?", "What's {v} {a} in {b}?",
    "How many {b} is {v} {a}?", "How many {b} are in {v} {a}?", "How many {b} make {v} {a}?", "Change {v} {a} into {b}, please.",
    "Express {v} {a} in {b}.", "Turn {v} {a} into {b}.", "I need {v} {a} converted to {b}.", "{v} {a} is how many {b}?",
    "Give me {v} {a} as {b}.", "Can you put {v} {a} into {b}?", "What does {v} {a} come to in {b}?", "{v} {a} expressed in {b}, please.",
    "I have {v} {a}. How much is that in {b}?", "Could you convert {v} {a} into {b}?", "From {a} to {b}: {v}.", "{v} {a} => {b}",
    "If something is {v} {a}, what is it in {b}?", "Switch {v} {a} over to {b}.", "{v} {a}, in {b} please.",
)
# the same as a clause of a request for two things (MULTI_FRAMES' {x1}, {x2})
CONVERT_CLAUSES = (
    "convert {v} {a} to {b}", "turn {v} {a} into {b}", "change {v} {a} to {b}", "express {v} {a} in {b}", "put {v} {a} into {b}",
    "work out {v} {a} in {b}", "tell me how many {b} are in {v} {a}", "give me {v} {a} in {b}", "switch {v} {a} to {b}",
)
MULTI_FRAMES = (
    "{X1}, and {x2}.", "{X1}. Also, {x2}.", "First {x1}, then {x2}.", "Can you {x1} and {x2}?", "I need two things: {x1}, and {x2}.",
    "{X1}; {x2}.", "Please {x1}, and after that {x2}.", "{X1} and also {x2}.", "Two jobs: {x1}. And {x2}.",
    "Could you {x1}? And {x2} too.", "{X1}, plus {x2}.",  "{X1}, then {x2}.",
)
# a memo keeper asked as a reminder (run H's seed on, tasks._reminder): {v} an errand ("call the plumber
# tomorrow"), then a fact to keep ("the gate code is 4821")
REMIND_FRAMES = (
    "Remind me to {v}.", "Don't let me forget to {v}.", "I need to remember to {v}.", "Make sure I remember to {v}.",
    "Can you remind me to {v}?", "I have to {v}, don't let me forget.", "Remember that I need to {v}.",
    "I keep forgetting to {v}.", "Note that I must {v}.", "Could you remind me to {v}?", "remind me to {v}",
    "Please remind me I have to {v}.", "Don't let me forget: {v}.", "I mustn't forget to {v}.",
)
KEEP_FRAMES = (
    "Remember that {v}.", "Keep in mind that {v}.", "Don't let me forget: {v}.", "So I don't forget, {v}.", "For later: {v}.",
    "Can you remember that {v}?", "Please keep this: {v}.", "I'll need this later: {v}.", "Hold on to this for me: {v}.",
)
# from run M's seed, a memo keeper also asked as people head a note, an errand or a fact alike
# ("Quick note: call the plumber"): run K refused such notes or sent them to another tool
NOTE_FRAMES = (
    "Note to self: {v}", "Quick note: {v}", "Add to my notes: {v}", "Make a note: {v}", "Write this down: {v}",
    "Take this down: {v}", "For my notes: {v}", "Memo: {v}", "Note this: {v}", "A note for later: {v}",
    "Log this for me: {v}", "Add a note saying {v}", "Could you note: {v}", "Please write down: {v}",
)
# {x}: the request with its first value; {rest}: the others ("Madrid and Oslo")
PARALLEL_FRAMES = (
    "{X}. Do the same for {rest}.", "{X}, and the same for {rest}.", "{X}. Then again for {rest}.",
    "{X}. Repeat it for {rest}.", "{X}, and also for {rest}.", "{X}. After that, {rest} as well.",
    "{X}; same thing for {rest}.", "{X}. And for {rest} too.",
)
GREETINGS = ("Hi!", "Hello there.", "Good morning!", "Hey", "Who are you?", "What can you do?", "hello", "Hi, what do you do?")
THANKS = ("Thanks, that's all.", "Thank you so much!", "thx", "Great, thanks.", "Perfect, cheers!")
CHAT = (
    "Write a short poem about rain.", "Tell me a joke.", "How are you today?",
    "What is the meaning of the word serendipity?", "Summarize the plot of a famous novel for me.",
    "Can you recommend a name for my goldfish?", "Why do cats purr?", "Give me a motivational quote.",
    "Explain how rainbows form.", "Sing me a song.", "What's your favourite colour?",
    "Write a limerick about a lazy dog.", "How do I tie my shoelaces?", "What year did humans first walk on the Moon?",
    "Help me pick a gift for my sister.", "Is it rude to be late to a party?", "Teach me a word in Swahili.",
)
FOLLOW_LEADS = ("", "", "Now ", "Also, ", "Next: ", "One more thing: ", "And ", "Thanks. Now ")
_LEADS = ("Hi! ", "Hello, ", "So, ", "Okay, ", "Hey there. ", "Um, ", "Right. ", "Good evening. ")
_TAILS = (" Thanks!", " Thank you.", " Cheers.", " ASAP.", " Thanks in advance.", " :)")


def held_out(frame: str) -> bool:
    """About one frame in six belongs to validation only."""
    return zlib.crc32(frame.encode()) % 6 == 0


def frames(pool: tuple[str, ...], val: bool) -> tuple[str, ...]:
    out = tuple(f for f in pool if held_out(f) == val)
    assert out, pool
    return out


def fill(frame: str, **parts: str) -> str:
    for k, v in parts.items():
        frame = frame.replace("{" + k.upper() + "}", v[:1].upper() + v[1:]).replace("{" + k + "}", v)
    return frame


def dress(rng: random.Random, text: str) -> str:
    """Surface noise: a lead-in or a thanks, lower case, a missing full stop."""
    r = rng.random()
    if r < 0.1 and not text.startswith(("Hey", "Hi", "Okay", "Right", "So")):
        text = rng.choice(_LEADS) + text[0].lower() + text[1:]
    elif r < 0.18:
        text = text + rng.choice(_TAILS)
    r = rng.random()
    if r < 0.06:
        text = text.lower()
    elif r < 0.14 and text[-1] in ".?":
        text = text[:-1]
    return text
