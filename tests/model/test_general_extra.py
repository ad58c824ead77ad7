"""Run E's corpus additions (seed 5, build/general): what the demo's tasks showed no generated tool
taught (TRAINING.md, run D). An arithmetic expression said in words and passed as a calculator takes
it, the local time, units said in words and passed as the tool's enum value, a conversion's two
units never the same, and agents with their instructions last; the seeds before make their corpora
as they did. CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import ast
import operator
import random
import re

import pytest

from build.general import corpus
from build.general.domains import EXTRA, EXTRA_FROM_SEED
from build.general.families import make_families
from build.general.tasks import PAIRS
from build.general.values import KINDS, UNIT_WORDS, spoken, unit_words

SEED = EXTRA_FROM_SEED
EXTRA_NAMES = {line.split("|")[0].strip() for text in EXTRA.values() for line in text.strip().splitlines()}


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, 3000)


def _calc(expression: str) -> float:
    ops = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        raise ValueError(f"not arithmetic: {expression!r}")

    return ev(ast.parse(expression, mode="eval").body)


def test_an_expression_is_said_in_words_and_passed_as_arithmetic_on_the_same_numbers():
    rng = random.Random(5)
    drawn = [KINDS["expr"].draw(rng, []) for _ in range(400)]
    said_in_words = 0
    for v in drawn:
        _calc(v.input)  # + - * / and parentheses only
        for n in re.findall(r"\d+(?:\.\d+)?", v.input.removesuffix(" / 100")):  # each number, said in digits or in words
            assert n in v.said.replace(",", "") or ("." not in n and spoken(int(n)) in v.said), (n, v)
        said_in_words += any(w in v.said for w in ("plus", "minus", "times", "divided", "percent", "%", "over", "take away", "less"))
    assert said_in_words > 200  # the rest with symbols: "67 + 2.9", "6 x 573"
    assert any("(" in v.input for v in drawn) and any("/ 100" in v.input for v in drawn)


def test_units_are_said_in_words_only_where_turned_on_and_always_passed_as_the_enum_value():
    rng = random.Random(5)
    enum = KINDS["enum"]
    with unit_words(True):
        drawn = [enum.draw(rng, ["km,mi,ft,kg,lb"]) for _ in range(300)]
    assert all(v.input in ("km", "mi", "ft", "kg", "lb") for v in drawn)
    worded = [v for v in drawn if v.said in UNIT_WORDS[v.input]]
    assert 100 < len(worded) < 260
    with unit_words(False):
        assert all(v.said == v.input for v in (enum.draw(rng, ["km,mi,ft"]) for _ in range(100)))


def test_the_extra_specs_are_in_run_es_families_and_not_in_the_seeds_before():
    def names(seed):
        return {t.base for f in make_families(seed) for t in f.tools}

    assert EXTRA_NAMES <= names(SEED)
    for seed in (1, 2, 3, 4):
        assert not EXTRA_NAMES & names(seed), seed


def test_a_conversions_two_units_are_never_the_same_in_run_es_corpus(records):
    targets = {re.sub("_", "", t) for t in PAIRS} | {re.sub("_", "", s) for s in PAIRS.values()}
    conversions = 0
    for r in records:
        for c in r["calls"]:
            given = {k.replace("_", "").lower(): v for k, v in c["input"].items()}
            for t, s in PAIRS.items():
                t, s = t.replace("_", ""), s.replace("_", "")
                if t in given and s in given:
                    conversions += 1
                    assert given[t] != given[s], c
    assert conversions > 50 and targets


def test_the_extra_tools_are_asked_for_and_called_in_run_es_corpus(records):
    called = {next((n for n in EXTRA_NAMES if c["tool"].endswith(n) or c["tool"].endswith(n.replace("_", ""))), None)
              for r in records for c in r["calls"]}  # fmt: skip
    assert EXTRA_NAMES <= called


def test_some_agents_write_their_instructions_last_and_the_seeds_before_never(records):
    last = [r for r in records if "\n# Instructions\n" in r["text"]]
    first = [r for r in records if not r["text"].startswith("<|im_start|>system\n# How you answer")]
    assert last and 0.35 < len(last) / (len(last) + len(first)) < 0.65
    for r in last:
        system = r["text"].split("<|im_end|>", 1)[0]
        assert system.startswith("<|im_start|>system\n# How you answer") and system.rindex("# Instructions") > system.rindex("# Tools")
    assert not any("\n# Instructions\n" in r["text"] for r in corpus.generate(4, 600))
