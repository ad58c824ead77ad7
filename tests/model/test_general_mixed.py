"""Run P's corpus additions (seed 15, build/general/mixed.py): requests for more calls than one tool
and one list. Two fields' values crossed (a call for each combination), three tools, and one tool for
a list with another tool. Run O made two calls for a request of four, and stopped after two tools of
three. The seeds before make their corpora as they did (test_general_more.FIRST_300). CPython only."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import pytest

from build.general import corpus
from build.general.mixed import MIXED_FROM_SEED

TURNS = re.compile(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", re.S)
USER = re.compile(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", re.S)


@pytest.fixture(scope="module")
def records():
    return corpus.generate(MIXED_FROM_SEED, 2000)


def _first_calls(record: dict) -> list[dict]:
    return json.loads(TURNS.findall(record["text"])[0])["calls"]


def _varying(calls: list[dict]) -> list[str]:
    return [k for k in calls[0]["input"] if len({json.dumps(c["input"].get(k), sort_keys=True) for c in calls}) > 1]


def test_crossed_requests_call_every_combination_of_the_two_lists_once(records):
    crossed = [r for r in records if r["kind"] == "parallel" and len(_varying(_first_calls(r))) == 2
               and not any(j in USER.findall(r["text"])[0] for j in (", and of", "; and", " then ", "same again", "once more"))]
    seen = 0
    for r in crossed:
        calls = _first_calls(r)
        a, b = _varying(calls)
        firsts = list(dict.fromkeys(json.dumps(c["input"][a]) for c in calls))
        seconds = list(dict.fromkeys(json.dumps(c["input"][b]) for c in calls))
        pairs = [(json.dumps(c["input"][a]), json.dumps(c["input"][b])) for c in calls]
        if len(calls) != len(firsts) * len(seconds):
            continue  # a paired request (each call its own values): tests/model/test_general_listed.py
        seen += 1
        assert pairs == list(itertools.product(firsts, seconds))  # each of the first with each of the second, in order
        assert {k: v for k, v in calls[0]["input"].items() if k not in (a, b)} == \
            {k: v for k, v in calls[-1]["input"].items() if k not in (a, b)}  # the rest the same in every call
    assert seen >= 15


def test_three_tools_and_a_list_with_another_tool_are_called_in_the_requests_order(records):
    shapes = Counter()
    for r in (r for r in records if r["kind"] == "multiple"):
        tools = [c["tool"] for c in _first_calls(r)]
        runs = [t for t, _ in itertools.groupby(tools)]
        assert len(runs) == len(set(runs)) >= 2  # each tool's calls together, no tool twice apart
        shapes[(len(tools), len(set(tools)))] += 1
        prompt = USER.findall(r["text"])[0].lower()
        if len(set(tools)) == 3:
            names = [next(iter(c["input"].values())) for c in _first_calls(r)]
            at = [i for i in (prompt.find(str(n).lower()) for n in names if isinstance(n, str) and len(n) > 3) if i >= 0]
            assert at == sorted(at)  # the calls in the order the request asks them (the values said as passed)
    total = sum(shapes.values())
    assert shapes[(3, 3)] > 0.05 * total and sum(v for (n, k), v in shapes.items() if k == 2 and n > 2) > 0.08 * total
    assert shapes[(2, 2)] > 0.5 * total  # two tools, a call each, stay the most of them


def test_the_seed_before_has_none_of_them():
    for r in corpus.generate(MIXED_FROM_SEED - 1, 800):
        calls = _first_calls(r) if r["calls"] else []
        if r["kind"] == "multiple":
            assert len(calls) == 2 and calls[0]["tool"] != calls[1]["tool"]
        if r["kind"] == "parallel" and len(_varying(calls)) == 2:
            assert len(calls) < 4 or len({json.dumps(c["input"], sort_keys=True) for c in calls}) == len(calls)
            a, b = _varying(calls)
            assert len({json.dumps(c["input"][a]) for c in calls}) == len(calls)  # paired: no value of the first repeated


def test_run_qs_seed_has_three_tools_and_crossed_lists_but_no_list_beside_another_tool():
    shapes = Counter()
    for r in corpus.generate(MIXED_FROM_SEED + 1, 1500):
        if r["kind"] in ("multiple", "parallel"):
            tools = [c["tool"] for c in _first_calls(r)]
            shapes[(r["kind"], len(tools), len(set(tools)))] += 1
    assert not any(k == "multiple" and n > distinct for k, n, distinct in shapes)  # no tool twice beside another
    assert shapes[("multiple", 3, 3)] > 0 and shapes[("parallel", 6, 1)] > 0  # three tools; three values crossed with two
