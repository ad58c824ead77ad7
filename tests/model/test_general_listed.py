"""Run O's corpus additions (seed 14, build/general/listed.py): numbers listed as people jot them down
in parallel requests. On BFCL's parallel questions run M read a list of the form "4,9 and 12" as other
numbers, and paired the values of "2 and 7, 6 and 9" wrongly (build/general/README.md). The
seeds before make their corpora as they did (test_general_more.FIRST_300). CPython only."""

from __future__ import annotations

import json
import random
import re

import pytest

from build.general import corpus
from build.general.families import Param
from build.general.listed import LISTED_FROM_SEED, listed, pairs_listed, tight
from build.general.values import Value

NUMBER = r"-?\d+(?:\.\d+)?"
LIST = re.compile(rf"(?<![\d.,]){NUMBER}(?:(?:,|, and | and | & ){NUMBER})+")


@pytest.fixture(scope="module")
def records():
    return corpus.generate(LISTED_FROM_SEED, 3000)


def _first(record: dict) -> tuple[str, dict]:
    user = re.findall(r"<\|im_start\|>user\n(.*?)<\|im_end\|>", record["text"], re.S)[0]
    turn = json.loads(re.findall(r"<\|im_start\|>assistant\n(.*?)<\|im_end\|>", record["text"], re.S)[0])
    return user, turn


def test_a_list_is_written_tight_with_its_unit_once_and_only_where_it_cannot_read_as_thousands():
    years = [Value(n, f"{n} {'year' if n == 1 else 'years'}", str(n)) for n in (1, 5, 10)]
    with listed(True):
        said = {tight(random.Random(i), years) for i in range(60)} - {None}
        assert said and all(re.fullmatch(r"1,5(,| and | & |, and )10 years", s) for s in said), said
        # an item of three digits after the first would read as a thousands separator ("5,100")
        assert all(tight(random.Random(i), [Value(5, "5", "5"), Value(100, "100", "100")]) is None for i in range(30))
        assert all(tight(random.Random(i), [Value("Oslo", "Oslo", "Oslo"), Value("Rome", "Rome", "Rome")]) is None for i in range(30))
    rng = random.Random(3)
    state = rng.getstate()
    assert tight(rng, years) is None and rng.getstate() == state  # off: nothing drawn


def test_pairs_are_listed_after_their_labels_named_once():
    a = Param("a", "pythagoras", "num", ("1", "100", ""), True)
    b = Param("b", "pythagoras", "num", ("1", "100", ""), True)
    rows = [[(a, Value(3, "3", "3")), (b, Value(4, "4", "4"))], [(a, Value(5, "5", "5")), (b, Value(12, "12", "12"))]]
    with listed(True):
        said = {pairs_listed(random.Random(i), [a, b], rows) for i in range(80)} - {None}
    assert said
    for s in said:
        numbers = re.findall(r"\d+", s)
        assert numbers == ["3", "4", "5", "12"], s  # each call's pair together, in the calls' order
    rng = random.Random(3)
    state = rng.getstate()
    assert pairs_listed(rng, [a, b], rows) is None and rng.getstate() == state  # off: nothing drawn


def test_tight_lists_are_called_one_number_a_call(records):
    seen = 0
    for r in records:
        user, turn = _first(r)
        # a list with one comma and no space at least, none a thousands separator ("1,371")
        m = next((m for m in LIST.finditer(user) if re.search(r",\d", m.group()) and not re.search(r",\d{3}", m.group())), None)
        if not m or "calls" not in turn or len({c["tool"] for c in turn["calls"]}) != 1:
            continue
        listed_numbers = [float(x) for x in re.findall(NUMBER, m.group())]
        if len(listed_numbers) != len(turn["calls"]):
            continue  # a comma list that is not the calls' (a value of one call)
        seen += 1
        called = [next(v for v in c["input"].values() if isinstance(v, (int, float)) and not isinstance(v, bool) and v in listed_numbers)
                  for c in turn["calls"]]
        assert called == listed_numbers, (user, turn)
    assert seen >= 5


def test_pairs_listed_are_called_pair_by_pair(records):
    seen = 0
    for r in records:
        user, turn = _first(r)
        if r["kind"] not in ("parallel", "two_requests") or not re.search(r"(:|=|of|are) \(?-?\d", user) or "calls" not in turn:
            continue
        tail = user[re.search(r"(:|=|of|are) \(?-?\d", user).start():]
        numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", tail)]
        called = [float(v) for c in turn["calls"] for v in c["input"].values() if isinstance(v, (int, float)) and not isinstance(v, bool)
                  and float(v) in numbers]
        if len(called) == len(numbers) == 2 * len(turn["calls"]):
            seen += 1
            assert called == numbers, (user, turn)
    assert seen >= 5
