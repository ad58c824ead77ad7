"""Run P's corpus addition (seed 15, families.PAREN_FROM_SEED): results written as text that end in
parentheses, and finals that quote them whole. Every run before cut the demo's clock, "10:41 in Dodoma
(UTC+1)", as "(UTC+1." in its final: no result of their corpora ended with ")". The seeds before make
their corpora as they did (test_general_more.FIRST_300). CPython only."""

from __future__ import annotations

import json
import re

import pytest

from build.general import corpus
from build.general.families import PAREN_FROM_SEED, PAREN_SHARE, QUALIFIERS, make_families, parenthesized, result_text

RESULTS = re.compile(r"<\|im_start\|>user\n(\{\"results\".*?)<\|im_end\|>", re.S)
TURNS = re.compile(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", re.S)


def _results(record: dict) -> list[str]:
    return [str(r.get("result", "")) for block in RESULTS.findall(record["text"]) for r in json.loads(block)["results"]]


def _finals(record: dict) -> list[str]:
    return [t["final"] for t in map(json.loads, TURNS.findall(record["text"])) if "final" in t]


@pytest.fixture(scope="module")
def families():
    fams = make_families(PAREN_FROM_SEED)
    return [f for f in fams if f.text_results][0], [f for f in fams if not f.text_results][0]


def test_a_text_result_ends_in_parentheses_only_when_switched_on(families):
    text, as_json = families
    inputs = [{"time": f"{h:02d}:15", "utc_offset": f"+0{h % 10}:00"} for h in range(200)]
    off = [result_text(text, i) for i in inputs]
    assert all(r == ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in i.items()) for r, i in zip(off, inputs))
    with parenthesized(True):
        on = [result_text(text, i) for i in inputs]
        assert on == [result_text(text, i) for i in inputs]  # the same input, the same result
        assert all(json.loads(result_text(as_json, i)) == i for i in inputs)  # JSON results unchanged
    changed = [r for r, o in zip(on, off) if r != o]
    assert abs(len(changed) / len(inputs) - PAREN_SHARE) < 0.12
    assert all(r.count("(") == r.count(")") == 1 for r in changed)
    # each part of the result is still there, in order, and nothing else but the parentheses and a qualifier
    for r, o in zip(on, off):
        bare = re.sub(r" \((?:" + "|".join(map(re.escape, QUALIFIERS)) + r")\)", "", r).replace("(", "").replace(")", "")
        assert bare.replace(", ", " ") == o.replace(", ", " ")
    assert sum(r.endswith(")") for r in changed) > 0.8 * len(changed)


def test_finals_quote_a_result_through_its_closing_parenthesis_from_run_ps_seed_only():
    before = corpus.generate(PAREN_FROM_SEED - 1, 800)
    assert not any(r.endswith(")") for rec in before for r in _results(rec))
    records = corpus.generate(PAREN_FROM_SEED, 800)
    ending = [(rec, r) for rec in records for r in _results(rec) if r.endswith(")")]
    assert len(ending) > 60
    quoted = 0
    for rec, r in ending:
        finals = _finals(rec)
        if any(r in f for f in finals):
            quoted += 1
            assert any(f"{r}." in f or f"{r}," in f for f in finals)  # the closing parenthesis kept, then the sentence goes on
    assert quoted > 0.6 * len(ending)  # the rest are errors' and near misses' conversations, whose finals say other things
