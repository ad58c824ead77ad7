"""Benchmarks from outside are evaluation only: no text of theirs in what aerix trains on, says or shows.

No 8-word sequence of the pinned bfcl-eval data (every string of every file under its data/:
questions, function docs, possible answers, its README) occurs in:

- the bundled model's training data: every prompt and call input of the 86,400 training tasks
  (``build/model/corpus.py``, the committed model's seed and count), and the rendered
  conversations (system message, turns, results, finals) of one task in 86;
- the general model's training data (``build/general``): a sample of ``GENERAL_SAMPLE``
  conversations of each of the corpus's seeds it was trained on (``corpus.SEEDS``) as rendered (system message with every tool doc, prompts,
  calls and their inputs, results, finals) and the tool docs of every family of those seeds;
- any text file of the repository (``git ls-files``, untracked ones included) but
  ``bench/results/`` (evaluation output, which quotes the benchmark by necessity) and
  ``package-lock.json``: the system message template, the docs and their examples, the demo and
  its tools, the training scripts' phrase lists, the tests.

Words are runs of letters and digits, case-folded (NFKC), so punctuation and case do not hide a
copy. ``COINCIDENCES`` are the sequences found in both that were not taken from BFCL, each said
why; an entry that stops occurring fails the test, so the list stays exact.

The data comes from ``bench/bfcl_data.py`` (``make bfcl-data``; ``make test-unit`` fetches it
first and sets ``AERIX_REQUIRE_BFCL=1``, under which a missing copy fails instead of skipping).
CPython only.
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Iterator

import pytest

if sys.platform == "emscripten":
    pytest.skip("the BFCL data and the training scripts are not in Pyodide", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
N = 8
WORD = re.compile(r"\w+")
SKIPPED = ("bench/results/", "package-lock.json")

# Found in both, not taken from BFCL: each is composed by build/model/grammar.py and worlds.py
# (written on 2026-11-30, before BFCL came into the project) from a frame and a core that are
# everyday English, and occurs in a few of the 86,400 training prompts; BFCL's live user queries
# (live_simple, live_multiple, ...) happen to ask the same way.
COINCIDENCES = {
    "could you tell me the current weather in": "grammar.py's frame 'Could you tell me {x}' and a weather core (17 training prompts); BFCL live_* queries",
    "what s the weather going to be like": "worlds.py's weather phrasing \"What's the weather going to be like in {city}?\"; a BFCL live_multiple query",
    "s the weather going to be like in": "the same phrasing, one word on",
    "so i d like to know what the": "grammar.py's frame \"I'd like to know {x}\" after a lead-in 'So'; a BFCL unused exec query",
    "0 0 0 0 0 0 0 0": "bench/README.md's ablation table: a row of zero figures (0.0% accuracy, 0.0% not expressed, ...); zeros in a BFCL answer",
}


def words(text: str) -> list[str]:
    return WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def grams(text: str) -> Iterator[tuple[str, ...]]:
    w = words(text)
    return (tuple(w[i : i + N]) for i in range(len(w) - N + 1))


def repo_texts() -> Iterator[tuple[str, str]]:
    """(path, text) of each text file of the repository but the skipped ones."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file outside the ignored folders
        ignored = (".git/", ".venv/", "node_modules/", "build/site/", "build/cache/", "dist/")
        listed = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and not str(p.relative_to(ROOT)).startswith(ignored)]
    for name in listed:
        if name.startswith(SKIPPED) or not (ROOT / name).is_file():
            continue
        try:
            yield name, (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (the GGUF): no text to carry


def training_texts() -> Iterator[tuple[str, str]]:
    """(where, text) of the bundled model's training data, as build/model/corpus.py makes it."""
    import json

    from build.model import corpus

    trained = json.loads((ROOT / "models" / "aerix-tools.json").read_text())
    tasks = corpus.train_tasks(trained["conversations"], seed=trained["seed"])
    seen: set[str] = set()
    for task in tasks:
        while task is not None:
            for text in [task.prompt, *(v for _, i in task.calls for v in i.values() if isinstance(v, str))]:
                if text not in seen:
                    seen.add(text)
                    yield "a training prompt or call input", text
            task = task.then
    conversations = corpus.Conversations()
    try:
        for task in tasks[::86]:
            for message in conversations(task):
                if message["content"] not in seen:
                    seen.add(message["content"])
                    yield f"a training conversation ({message['role']})", message["content"]
    finally:
        conversations.close()


GENERAL_SAMPLE = 3000


def general_texts() -> Iterator[tuple[str, str]]:
    """(where, text) of the general model's corpus: a rendered sample and every family's tool docs."""
    from aerix import Agent
    from aerix.testing import ScriptedModel
    from build.general import corpus
    from build.general.families import Runtime, aerix_tools, make_families

    for seed in corpus.SEEDS:
        for family in make_families(seed):
            yield f"build/general family {family.id} of seed {seed} (tool docs)", Agent(model=ScriptedModel([]), tools=aerix_tools(family, Runtime())).system
        for r in corpus.generate(seed, GENERAL_SAMPLE):
            yield f"build/general conversation of seed {seed} ({r['family']}, {r['kind']}, frame {r['frame']!r})", r["text"]


def copies_of_bfcl(texts: Iterator[tuple[str, str]], at_least: int) -> dict[str, str]:
    """The 8-word sequences of BFCL's data found in ``texts``: sequence -> where it is first."""
    from bench import bfcl_data

    ours: dict[int, str] = {}  # a sequence's hash -> where it is first (hashes: a set of tuples would take GBs)
    for where, text in texts:
        for g in grams(text):
            ours.setdefault(hash(g), where)
    assert len(ours) > at_least, "the texts were not read"
    found: dict[str, str] = {}
    for text in bfcl_data.data_texts():
        for g in grams(text):
            if hash(g) in ours:
                found.setdefault(" ".join(g), ours[hash(g)])
    return found


def test_no_8_word_sequence_of_bfcl_is_in_the_training_data_or_the_repository(bfcl_data_root):
    found = copies_of_bfcl(iter([*repo_texts(), *training_texts()]), at_least=300_000)
    copies = {g: where for g, where in found.items() if g not in COINCIDENCES}
    assert not copies, "BFCL's text in aerix's training data or files (8-word sequence: where):\n" + "\n".join(f"  {g!r}: {w}" for g, w in copies.items())
    assert set(COINCIDENCES) <= set(found), f"no longer found, remove from COINCIDENCES: {sorted(set(COINCIDENCES) - set(found))}"


def test_no_8_word_sequence_of_bfcl_is_in_the_general_models_corpus(bfcl_data_root):
    found = copies_of_bfcl(general_texts(), at_least=200_000)
    assert not found, "BFCL's text in build/general's corpus (8-word sequence: where):\n" + "\n".join(f"  {g!r}: {w}" for g, w in found.items())


def test_the_sequences_are_words_whatever_the_punctuation_and_case():
    assert words("What's the WEATHER, e.g. in Zürich?") == ["what", "s", "the", "weather", "e", "g", "in", "zürich"]
    assert list(grams("one two three four five six seven")) == []
    assert len(list(grams("one two three four five six seven eight nine"))) == 2
