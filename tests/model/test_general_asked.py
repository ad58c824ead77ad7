"""Run N's corpus (seed 13, build/general): a request's first turn restates what it asks before it
decides ("Request: what's the hour over. Use local_time."). Every refusal in run K's and M's failed
demo runs was the thought "No tool here can do this." written first, so the choice between a call
and a refusal fell on the thought's first word. The restatement is the request's own words up to its
first value, so it never carries a value the call must copy. The seeds before make their corpora as
they did (test_general_more.FIRST_300). CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import json
import re

import pytest

from build.general import corpus
from build.general.corpus import ASKED_SEEDS, ASKED_WORDS, asked
from build.general.values import Value

SEED = 13


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, 2000)


def _turns(record: dict) -> list[tuple[str, dict]]:
    """(the user message before it, the assistant turn) for each assistant turn."""
    parts = re.findall(r"<\|im_start\|>(user|assistant)\n(.*?)<\|im_end\|>", record["text"], re.S)
    out, last = [], ""
    for role, text in parts:
        if role == "user":
            last = text
        else:
            out.append((last, json.loads(text)))
    return out


def _head(turn: dict) -> str:
    """The restated request of a first turn's thought (what comes before the decision)."""
    thought = turn["thought"]
    assert thought.startswith("Request: "), turn
    if "calls" in turn:
        m = re.fullmatch(r"Request: (.*)\. Use \S+( and \S+)*( \d+ times, once for each)?\.", thought)
        assert m, turn
        return m.group(1)
    return thought[len("Request: "):].split(". ", 1)[0] if ". " in thought else thought


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text.lower())


def test_a_request_is_restated_up_to_its_first_value():
    assert asked("What's the hour over in Davao?", [Value("Davao", "in Davao", "Davao")]) == "What's the hour over"
    assert asked("Can you find x for ax^2 + bx + c = 0 a=1 b=2 c=3?", []) == "Can you find x"  # not "ax^"
    assert asked("Is my parcel nearly here number 'ORD-31870'?", []) == "Is my parcel nearly here number"
    assert asked("Write a short poem about rain.", []) == "Write a short poem about rain"
    assert asked("Hi!", []) == "Hi"  # fewer than two words left: the request's first words
    long = "Please could you kindly go and look up for me the very latest numbers on the " + "Lisbon"
    assert len(asked(long, [Value("Lisbon", "Lisbon", "Lisbon")]).split()) == ASKED_WORDS
    # a value said in another case (requests may be lowered) still ends it
    assert asked("CHECK the weather in lisbon", [Value("Lisbon", "in Lisbon", "Lisbon")]) == "CHECK the weather"
    # where a value comes first ("remind me" ends on a dangling word): the request's first words, value and all
    assert asked("Remind me to call the plumber tomorrow", [Value("call the plumber tomorrow", "call the plumber tomorrow", "")]) \
        == "Remind me to call the plumber"
    assert asked("-1.7 fahrenheit to K?", [Value(-1.7, "-1.7", "-1.7")]) == "1.7 fahrenheit to K"  # as run N read it


def test_first_turns_restate_the_request_and_later_turns_do_not(records):
    firsts = seconds = 0
    for r in records:
        for prompt, turn in _turns(r):
            if prompt.startswith('{"results": '):
                seconds += 1
                assert not turn["thought"].startswith("Request: "), turn
                continue
            firsts += 1
            said = _words(_head(turn))
            words = _words(prompt)
            # the request's own words, in order, from its start
            assert said and words[: len(said)] == said, (prompt, turn["thought"])
    assert firsts > 2000 and seconds > 1000


def test_a_restatement_carries_no_value_a_call_passes_but_where_the_request_begins_with_one(records):
    checked = first_words = 0
    for r in records:
        for prompt, turn in _turns(r):
            if "calls" not in turn or prompt.startswith('{"results": '):
                continue
            head = _head(turn).lower()
            values = [v for call in turn["calls"] for v in call["input"].values()]
            carried = any(isinstance(v, str) and len(v) >= 4 and re.search(r"\b" + re.escape(v.lower()) + r"\b", head)
                          for v in values) or (any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
                                               and re.search(r"\d", head))
            checked += 1
            if carried:  # the fallback: the request's first six words at most, a value among them
                first_words += 1
                assert len(head.split()) <= 6 and _words(prompt)[: len(_words(head))] == _words(head), (prompt, turn)
    assert checked > 1000 and first_words < checked * 0.05


def test_refusals_restate_the_request_then_refuse(records):
    refusals = [t for r in records if r["kind"] == "irrelevant" for p, t in _turns(r)[:1]]
    assert len(refusals) > 100
    assert all(t["thought"].startswith("Request: ") and "final" in t for t in refusals)
    assert sum(t["thought"].endswith("No tool here can do this.") for t in refusals) > len(refusals) // 2


def test_only_run_ns_seed_restates():
    assert ASKED_SEEDS == {SEED}  # run N's result took it out of the seeds after (corpus.ASKED_SEEDS)
    for seed in (SEED - 1, SEED + 1):
        for r in corpus.generate(seed, 200):
            assert not any(t["thought"].startswith("Request: ") for _, t in _turns(r)), seed
