"""Reworded requests (build/general/heads.py, run D's corpus): every generated tool can be asked for
without its description's words, those requests call it as the description-worded ones do, held-out
heads stay out of training, and the corpora of the seeds before (runs A-C) are made as they were.
CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from build.general import corpus, heads, phrasing
from build.general.domains import DOMAINS, KEEP, KEEP_FROM_SEED, NOTES_FROM_SEED
from build.general.families import REWORD_FROM_SEED, REWORD_SHARE, _protos, make_families
from build.general.tasks import make_task

SEED = REWORD_FROM_SEED
COUNT = 1500
KEEP_NAMES = {line.split("|")[0].strip() for text in KEEP.values() for line in text.strip().splitlines()}


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, COUNT)


def test_every_spec_has_heads_of_each_kind_sharing_no_word_with_its_description():
    for domain in DOMAINS:
        kept = [p for p in _protos(domain, KEEP_FROM_SEED) if p[0] in KEEP_NAMES]  # and run M's keepers (run K's rate specs have none)
        for name, do, obj, _, _ in _protos(domain, NOTES_FROM_SEED) + kept:  # the specs added by runs E, F, G and I too
            got = heads.HEADS.get(name)
            assert got, f"{name} has no heads"
            assert len(got.get("do", ())) >= 3 and len(got.get("ask", ())) >= 1, name
            assert not obj or len(got.get("obj", ())) >= 2, name
            banned = heads.content_words(f"{do} {obj} {name.replace('_', ' ')}")
            for kind, hs in got.items():
                for h in hs:
                    assert not heads.content_words(h) & banned, (name, kind, h)
                    assert h == h.strip() and h[:1] == h[:1].lower() and h[-1:] not in ".?!,", (name, h)
    assert set(heads.HEADS) == {p[0] for d in DOMAINS for p in _protos(d, NOTES_FROM_SEED)} | KEEP_NAMES


def test_a_malformed_heads_line_is_refused_by_name():
    with pytest.raises(ValueError, match="get_x: unknown kind of head 'verb'"):
        heads._parse("get_x | verb: fetch it")


def test_about_the_configured_share_of_requests_are_reworded_and_call_as_before(records):
    asked = [r for r in records if r["kind"] in ("single", "parallel", "error", "two_requests")]
    share = sum(1 for r in asked if r["head"]) / len(asked)
    assert abs(share - REWORD_SHARE) < 0.06, share
    for r in asked:
        if r["head"]:
            user = r["text"].split("<|im_start|>user\n", 1)[1]
            assert r["head"].lower() in user.lower(), (r["head"], user[:120])
            assert r["calls"], r  # a reworded request is still answered by its calls


def test_held_out_heads_appear_only_in_validation(records):
    held = [r for r in records if r["head"] and heads.held_out(r["head"])]
    assert held and all(r["split"] == "val_phrasing" for r in held)
    assert all(not heads.held_out(r["head"]) for r in records if r["head"] and r["split"] == "train")


def test_the_seeds_before_word_requests_and_descriptions_as_runs_a_to_c_did():
    for seed in (1, 2, 3):
        assert all(not r["head"] for r in corpus.generate(seed, 200))
        assert all(f.reworded == 0.0 for f in make_families(seed))
    nouns = lambda seed: sum(t.description.startswith(("Returns ", "Gives ")) for f in make_families(seed) for t in f.tools)
    assert nouns(3) == 0 and nouns(SEED) > 20


def test_ask_heads_go_in_question_frames():
    rng = random.Random(1)
    family = next(f for f in make_families(SEED) if f.split == "train")
    seen = Counter()
    for _ in range(400):
        task = make_task(rng, family, "single", val_phrasing=False)
        if task.head and any(task.head in heads.HEADS[t.base].get("ask", ()) for t in family.tools):
            seen["ask"] += 1
            assert task.frame in phrasing.ASK_FRAMES, (task.head, task.frame)
    assert seen["ask"] > 10


def test_large_amounts_are_said_as_people_write_them_and_passed_as_numbers():
    from build.general.values import KINDS, big_numbers

    rng = random.Random(4)
    with big_numbers(True):
        drawn = [KINDS["money"].draw(rng, ["USD"]) for _ in range(400)]
    big = [v for v in drawn if v.input >= 10_000]
    assert len(big) > 60
    for v in big:
        digits = v.said.replace(",", "")
        if "k" in v.said:
            assert f"{v.input // 1000}k" in v.said, v
        elif "million" in v.said or "M" in v.said:
            assert float(digits.split()[0].lstrip("$").rstrip("M")) * 1_000_000 == v.input, v
        else:
            assert str(v.input) in digits, v
    assert any("," in v.said for v in big) and any("k" in v.said for v in big) and any("million" in v.said for v in big)
    with big_numbers(False):
        assert all(KINDS["money"].draw(rng, ["USD"]).input <= 5000 for _ in range(200))
    year = KINDS["int"]
    with big_numbers(True):
        assert all("," not in year.draw(rng, ["2015", "2027", ""]).said for _ in range(50))
        assert all(not year.draw(rng, ["1000", "90000", ""]).said.endswith(" s") for _ in range(50))


def test_requests_no_tool_serves_and_near_misses_carry_the_head_they_were_worded_by(records):
    for kind in ("irrelevant", "near_miss"):
        worded = [r for r in records if r["kind"] == kind and r["head"]]
        assert len(worded) > 10, kind
        for r in worded:
            user = r["text"].split("<|im_start|>user\n", 1)[1]
            assert r["head"].lower() in user.lower(), (kind, r["head"], user[:120])
            assert not r["calls"]  # still answered without a call
