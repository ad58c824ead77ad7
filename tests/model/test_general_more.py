"""Run F's corpus additions (seed 6, build/general): what run E's misses on the demo's tasks showed
no generated tool taught. Tools that store the user's own words (run E passed "New note: plan the
contract" to a calculator), conversions asked for whole with the value's unit beside it ("Express
88.3 meter in cm.": run E took the unit next to its target for the source), units in the
singular, fewer near misses; the seeds before make their corpora as they did. CPython only (the
build scripts are not part of the package)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter

import pytest

from build.general import corpus, phrasing
from build.general.domains import MORE, MORE_FROM_SEED
from build.general.families import make_families
from build.general.tasks import PAIRS, ZERO_ERRORS
from build.general.values import KINDS, MORE_UNIT_WORDS, SUMS_FROM_SEED, UNIT_WORDS, said_whole, sums_said_more, unit_words

SEED = MORE_FROM_SEED
COUNT = 3000
MORE_NAMES = {line.split("|")[0].strip() for text in MORE.values() for line in text.strip().splitlines()}


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, COUNT)


def _requests(record: dict) -> list[str]:
    return re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", record["text"], re.S)


def test_a_memo_is_passed_as_said_without_its_quotes():
    rng = random.Random(6)
    drawn = [KINDS["memo"].draw(rng, []) for _ in range(300)]
    for v in drawn:
        assert v.input and v.input == v.input.strip() and v.input[0] not in "\"'" and v.input in v.said, v
    assert any(v.said != v.input for v in drawn) and len({v.input for v in drawn}) > 150


def test_the_added_specs_are_in_run_fs_families_only():
    def names(seed):
        return {t.base for f in make_families(seed) for t in f.tools}

    assert MORE_NAMES <= names(SEED)
    for seed in (1, 2, 3, 4, 5):
        assert not MORE_NAMES & names(seed), seed


def test_a_memo_tool_gets_the_users_words_exactly_as_the_request_has_them(records):
    memos = 0
    for r in records:
        for c in r["calls"]:
            if c["tool"].replace("_", "").endswith(("addmemo", "poststatus")):
                text = c["input"].get("content", c["input"].get("body"))
                assert text and text in _requests(r)[0], (c, _requests(r)[0])
                memos += 1
    assert memos > 30


def test_conversions_are_asked_for_whole_and_keep_their_two_units_apart(records):
    frames = set(phrasing.CONVERT_FRAMES)
    whole = [r for r in records if r["frame"] in frames]
    assert len(whole) > 30
    clauses = [re.escape(c).replace(r"\{v\}", ".+").replace(r"\{a\}", ".+").replace(r"\{b\}", ".+") for c in phrasing.CONVERT_CLAUSES]
    assert sum(r["kind"] == "multiple" and any(re.search(c, _requests(r)[0]) for c in clauses) for r in records) > 10  # in requests for two things too
    for r in whole:
        (call,) = r["calls"] if r["kind"] != "two_requests" else r["calls"][:1]
        given = {k.replace("_", "").lower(): v for k, v in call["input"].items()}
        pair = next((t.replace("_", ""), s.replace("_", "")) for t, s in PAIRS.items() if t.replace("_", "") in given)
        assert given[pair[0]] != given[pair[1]], call
        # the value stands before its unit and nothing says "from": the request's order tells the source
        request = _requests(r)[0]
        assert "From" in r["frame"] or not re.search(r"\bfrom\b", request, re.I), request


def test_units_may_be_said_in_the_singular_from_run_fs_seed_only():
    rng = random.Random(6)
    with unit_words(True), said_whole(True):
        drawn = [KINDS["enum"].draw(rng, ["km,mi,m,kg,lb,celsius,fahrenheit"]) for _ in range(600)]
    assert {v.said for v in drawn} & {w for ws in MORE_UNIT_WORDS.values() for w in ws}
    assert all(v.said in (v.input, *UNIT_WORDS[v.input], *MORE_UNIT_WORDS.get(v.input, ())) for v in drawn)
    with unit_words(True):
        assert not {KINDS["enum"].draw(rng, ["km,mi,m"]).said for _ in range(300)} & {w for ws in MORE_UNIT_WORDS.values() for w in ws}


def test_run_fs_mix_has_fewer_near_misses_than_run_es(records):
    counts = Counter(r["kind"] for r in records)
    assert counts["near_miss"] / COUNT < 0.11 and counts["single"] / COUNT > 0.22
    assert json.dumps(corpus.MIXES[SEED], sort_keys=True) != json.dumps(corpus.MIXES.get(5, {}), sort_keys=True)


# the first 300 conversations of runs E to K's and M to Q's corpora (seeds 5 to 16), as the runs trained on them: their texts' sha256
# (seeds 7 to 16 checked against the cached corpora the runs read)
FIRST_300 = {5: "e8998948af8e85e4485eee86576a47c5a98718b20d4f520a1376e3c242be75f4",
             6: "581c0d754ef3f0d69e7a82642d16f26999d520c23846e539f61e70db799a346f",
             7: "35d96de56bddb9c95f2358542bc25955047d59ea042a137112761444c04ade31",
             8: "036b06d293c9e01facd75d8d84330d4216638dbe1d038fc819cdd13e3c393213",
             9: "6f28f1ed2b716f4312d96d35228ea27939503ca6be48bbaf666df26fcb5190a4",
             10: "543d5a31de6c6d8778b11a634d8ed313ba9f0f0f646c2fdca95607ce2fed06b5",
             11: "addb069827ddace2de6aeb834bf751213daf8b5a9c0cc5decded57f4ba6812bd",
             12: "df2ca4f4304e788cde372c6d48628ee52c2caf6446cf5d23db715c5a9bb74bc4",
             13: "2801f3d54742e25f7f0993d183d6855a236f04efbf23cd867319d9cdcea6a283",
             14: "c91a6854c7eba86fad8896c476a049de01eecc68c0f6db667a68d6fe9dd1d9bf",
             15: "39a9f1a8b7b562ddc233dcacba5bc2ad67de0c96add183499cabc1e854dcd47f",
             16: "c112165f2a39bc99eb0f2f6c20d928936c1c5d70d107af9ede8c342622e65d8e"}


@pytest.mark.parametrize("seed", sorted(FIRST_300))
def test_the_seeds_before_make_their_corpora_as_before(seed):
    digest = hashlib.sha256()
    for r in corpus.generate(seed, 300):
        digest.update(r["text"].encode())
    assert digest.hexdigest() == FIRST_300[seed]


def test_run_es_seed_has_none_of_run_fs_additions():
    before = corpus.generate(5, 600)
    assert not any(r["frame"] in phrasing.CONVERT_FRAMES for r in before)
    assert not any(c["tool"].replace("_", "").endswith(("addmemo", "poststatus")) for r in before for c in r["calls"])


# -- run G's seed (7): sums said with "and", divisions by zero answered with the calculator's error --


def test_a_division_by_zero_is_called_as_asked_and_its_error_is_what_the_final_says():
    records = corpus.generate(SUMS_FROM_SEED, 3000)
    zero = [r for r in records if r["kind"] in ("error", "two_requests") and any(c["input"].get("expression", "").endswith(" / 0") for c in r["calls"])]
    assert len(zero) >= 3
    for r in zero:
        results = re.findall(r'"result": "error: ([^"]+)"', r["text"])
        after = r["text"].split(f'"result": "error: {results[0]}"', 1)[1] if results else ""
        assert results[0] in ZERO_ERRORS and f"{results[0]}." in after.split("<|im_start|>assistant", 1)[1], r["text"][-400:]  # the next final says it
    with said_whole(True):  # the seed before has none
        assert not any(c["input"].get("expression", "").endswith(" / 0") for r in corpus.generate(6, 600) for c in r["calls"])


def test_sums_said_with_and_are_passed_as_additions_only_from_run_gs_seed():
    rng = random.Random(7)
    with sums_said_more(True):
        drawn = [KINDS["expr"].draw(rng, []) for _ in range(600)]
    anded = [v for v in drawn if re.search(r"\d and \d|\band (\d|[a-z]+-?[a-z]*) (together|added)", v.said) or v.said.startswith("the sum of")]
    assert len(anded) > 20 and all(re.fullmatch(r"[\d.]+ \+ [\d.]+", v.input) for v in anded)
    assert not any(v.said.startswith("the sum of") for v in (KINDS["expr"].draw(rng, []) for _ in range(600)))


def test_conversions_with_fields_named_from_and_to_are_asked_for_as_people_ask_from_run_gs_seed():
    records = corpus.generate(SUMS_FROM_SEED, 3000)
    plain = [(r, c) for r in records for c in r["calls"] if {"from", "to", "value"} <= set(c["input"])]
    assert len(plain) > 40
    for r, c in plain:
        assert c["input"]["from"] != c["input"]["to"], c
    said = " ".join(_requests(r)[0] for r, _ in plain)
    assert "Celsius" in said or "°C" in said or "degrees C" in said
    assert not any({"from", "to"} <= set(c["input"]) for r in corpus.generate(6, 600) for c in r["calls"])
