"""Run K's corpus additions (seed 11, build/general): what run J's misses showed. It passed every
rate said in percent as the percent ("5%" as 5) where a tool takes a decimal (0.05), and mixed one
call's values into the next in parallel requests. Rates taken as decimals (``frac`` fields: the
schema's maximum is 1, the description says so), more specs that take a rate, more parallel calls
with paired values. The seeds before make their corpora as they did (test_general_more.FIRST_300).
CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import random
import re

import pytest

from build.general import corpus
from build.general.domains import RATES, RATES_FROM_SEED
from build.general.families import FRACTION_FROM_SEED, FRACTION_WORDS, make_families
from build.general.tasks import MORE_PAIRED_FROM_SEED, MORE_PAIRED_JOINS
from build.general.values import KINDS

SEED = FRACTION_FROM_SEED


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, 3000)


def test_run_ks_additions_share_one_seed():
    assert FRACTION_FROM_SEED == RATES_FROM_SEED == MORE_PAIRED_FROM_SEED == 11


def test_a_rate_said_in_percent_is_drawn_as_its_decimal():
    rng = random.Random(4)
    for _ in range(500):
        v = KINDS["frac"].draw(rng, [])
        assert 0 <= v.input <= 1 and v.short.endswith("%")
        assert v.input == round(float(v.short[:-1]) / 100, 6), v
    assert KINDS["frac"].schema([]) == {"type": "number", "minimum": 0, "maximum": 1}


def test_rate_fields_take_decimals_in_some_families_and_percents_in_others():
    params = [(t, p) for f in make_families(SEED) for t in f.tools for p in t.params if "rate" in p.base and p.kind in ("pct", "frac")]
    kinds = {k: sum(p.kind == k for _, p in params) for k in ("pct", "frac")}
    assert kinds["frac"] > 15 and kinds["pct"] > 15, kinds
    for t, p in params:
        s = t.schema["properties"][p.name]
        assert s["maximum"] == (1 if p.kind == "frac" else 100), (t.name, s)
        if p.kind == "frac" and "description" in s:
            assert s["description"].endswith(FRACTION_WORDS), s
    before = [p for f in make_families(SEED - 1) for t in f.tools for p in t.params]
    assert not any(p.kind == "frac" for p in before)
    assert not {t.base for f in make_families(SEED - 1) for t in f.tools} & {ln.split(" | ")[0] for d in RATES.values() for ln in d.strip().splitlines()}


def test_a_decimal_rate_is_passed_as_the_percent_the_request_says_over_100(records):
    families = {f.id: f for f in make_families(SEED)}
    seen = 0
    for r in records:
        for call in r["calls"]:
            spec = families[r["family"]].tool(call["tool"])
            for p in spec.params:
                if p.kind == "frac" and p.name in call["input"]:
                    seen += 1
                    v = call["input"][p.name]
                    assert 0 <= v <= 1, (call, r["text"][-400:])
                    said = re.sub(r"[^0-9.]", "", f"{round(v * 100, 4):g}")
                    request = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", r["text"], re.S)
                    assert any(said in q or "percent" in q for q in request), (said, request)
    assert seen > 30, seen


def test_run_ks_parallel_requests_pair_more_values_and_say_repeats(records):
    joins = [j.split("{c}")[0] for j in MORE_PAIRED_JOINS]
    repeated = [r for r in records if r["kind"] == "parallel" and any(j in r["text"] for j in joins)]
    assert len(repeated) > 20, len(repeated)
    assert not any(r["kind"] == "parallel" and ". Same again, but " in r["text"] for r in corpus.generate(SEED - 1, 1500))
