"""Run M's corpus additions (seed 12, build/general): what run K's misses on the demo's tasks showed.
It saved three of the demo's eight notes, refusing the rest or sending them to another tool, beside a
note keeper whose name it had not seen keep words, and refused all four divisions by zero. Three
more keepers of other names and words (a task, a journal entry, a piece of text), memo
requests headed as notes ("Quick note: call the plumber"), a keeper's family asking for it more, the
math domain drawn more; and parameter descriptions that give an example value (run K copied the
demo's "For example (2 + 3) * 4" into its calculator). The seeds before make their corpora as they did
(test_general_more.FIRST_300). CPython only (the build scripts are not part of the package)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from build.general import corpus, phrasing
from build.general.domains import KEEP, KEEP_FROM_SEED
from build.general.families import EXAMPLE_WORDS, KEEPERS, make_families
from build.general.tasks import NOTE_FROM_SEED, ZERO_ERRORS, ZERO_FROM_SEED

SEED = NOTE_FROM_SEED
NEW = {line.split("|")[0].strip() for text in KEEP.values() for line in text.strip().splitlines()}


@pytest.fixture(scope="module")
def records():
    return corpus.generate(SEED, 3000)


def _asked(record):
    """What the user said, every request of the conversation (lower case: requests may be)."""
    return " ".join(part.split("<|im_end|>", 1)[0] for part in record["text"].split("<|im_start|>user\n")[1:]).casefold()


def test_run_ms_additions_share_one_seed_and_the_new_tools_keep_words():
    assert KEEP_FROM_SEED == NOTE_FROM_SEED == ZERO_FROM_SEED == 12 and NEW <= set(KEEPERS) and len(NEW) == 3
    bases = {t.base for f in make_families(SEED) for t in f.tools}
    assert NEW <= bases
    assert not NEW & {t.base for f in make_families(SEED - 1) for t in f.tools}
    for f in make_families(SEED):
        for t in f.tools:
            if t.base in NEW:
                assert [p.kind for p in t.params] == ["memo"] and t.params[0].required, t


def test_the_new_keepers_are_called_with_the_words_as_said(records):
    calls = [(r, c) for r in records for c in r["calls"]
             if any(c["tool"].replace("_", "").lower().endswith(n.replace("_", "")) for n in NEW)]
    assert len(calls) > 40, len(calls)
    for r, c in calls:
        (words,) = c["input"].values()
        assert words and words.casefold() in _asked(r), (words, _asked(r))


def test_memo_requests_are_headed_as_notes_in_training_and_held_out_ones_only_in_validation(records):
    by_split = Counter((r["split"] == "val_phrasing", phrasing.held_out(r["frame"])) for r in records if r["frame"] in phrasing.NOTE_FRAMES)
    assert by_split[(False, False)] > 15, by_split
    assert by_split[(False, True)] == 0 and by_split[(True, False)] == 0, by_split
    before = corpus.generate(SEED - 1, 1500)
    assert not any(r["frame"] in phrasing.NOTE_FRAMES for r in before)


def test_divisions_by_zero_are_called_and_answered_with_the_calculators_error_more_often_than_in_run_ks_corpus(records):
    assert corpus.DOMAIN_WEIGHTS[SEED]["math"] > corpus.DOMAIN_WEIGHTS[SEED - 1].get("math", 1.0)

    def zeros(rs):
        return [r for r in rs if any(c["tool"].replace("_", "").lower().endswith("calculateexpression")
                                     and re.search(r"/ ?0(\.0+)?$", c["input"]["expression"]) for c in r["calls"])]

    now, before = zeros(records), zeros(corpus.generate(SEED - 1, 3000))
    assert len(now) > 2 * len(before) and len(now) > 15, (len(now), len(before))
    for r in now:  # called as asked, the error fed back, and the final says it
        assert any(e in r["text"] for e in ZERO_ERRORS), r["text"][-400:]


def test_some_parameters_give_an_example_and_calls_take_the_requests_value_not_the_example(records):
    examples = {}  # (family, tool, field) -> the example's text
    for f in make_families(SEED):
        for t in f.tools:
            for name, s in t.schema["properties"].items():
                for words in EXAMPLE_WORDS:
                    lead = words.split("{e}")[0]
                    if lead in s.get("description", ""):
                        examples[(f.id, t.name, name)] = s["description"].split(lead, 1)[1].rstrip(")")
    params = sum(len(t.schema["properties"]) for f in make_families(SEED) for t in f.tools)
    assert 0.08 < len(examples) / params < 0.3, (len(examples), params)
    assert not any("for example" in json.dumps(t.schema) for f in make_families(SEED - 1) for t in f.tools)
    called = same = 0  # values drawn apart from the example: the same only by chance (a small range's numbers)
    for r in records:
        for c in r["calls"]:
            for field, value in c["input"].items():
                ex = examples.get((r["family"], c["tool"], field))
                if ex is not None:
                    called, same = called + 1, same + (str(value) == ex)
    assert called > 200 and same / called < 0.05, (called, same)
