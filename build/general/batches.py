"""Training examples from the corpus's JSONL, and micro-batches by token budget.

A record is ``{"family", "split", "kind", "text", "assistant_spans": [[start, end], ...]}``:
ChatML text and the character spans of the assistant's turns (build/general's corpus writes
them), or ``{"split", "ids": [...], "weights": [...]}`` already tokenized. A token is trained
(weight 1) when it starts inside a span, and so is the ``<|im_end|>`` right after a span that
stops before it: the model learns to end its turn. Everything else (system, user, tool
results, the ``<|im_start|>assistant\\n`` opening) is context only.

Batches: examples (truncated to ``max_len``; dropped when no trained token is left) in an order that is a pure function of the seed and
the epoch; consecutive ones grouped while ``count x longest <= budget`` tokens (one longer than
the budget goes alone), right-padded. Micro-batch k of the endless sequence of epochs is always
the same, so a run resumed at micro-batch k sees what an uninterrupted run would.

Shared prefixes (``--share-prefix``): an example's ``prefix`` is its first tokens up to and
including the first ``<|im_end|>`` (the system turn, the same for every record of a tool family
with the same instructions; 0 when a token in it is trained). ``prefix_batches`` groups the
epoch's shuffled examples by those prefix tokens, packs each group while ``prefix + count x
longest suffix <= budget``, and shuffles the micro-batches (seed, epoch): no micro-batch mixes
two prefixes, every example is in one micro-batch an epoch, and the prefix is run once for it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["Example", "read_examples", "encode", "epoch_batches", "micro_batches", "prefix_batches",
           "prefix_micro_batches", "prefix_length", "IM_END"]

IM_END = "<|im_end|>"


@dataclass(frozen=True)
class Example:
    ids: list[int]
    weights: list[float]
    prefix: int = 0  # how many leading ids are the shared prefix (the system turn); 0: none


def prefix_length(ids: list[int], weights: list[float], end: int | None) -> int:
    """The tokens up to and including the first `end` id (<|im_end|>), or 0 when there is none or a
    token up to the one after it is trained (a shared prefix predicts nothing trained)."""
    if end is None or end not in ids:
        return 0
    n = ids.index(end) + 1
    return 0 if any(weights[: n + 1]) else n


def encode(tok: Tokenizer, text: str, spans: list[list[int]]) -> Example:
    enc = tok.encode(text, add_special_tokens=False)
    ends = {e for _, e in spans if text.startswith(IM_END, e)}
    weights = []
    for start, _ in enc.offsets:
        inside = any(s <= start < e for s, e in spans)
        weights.append(1.0 if inside or start in ends else 0.0)
    return Example(list(enc.ids), weights)


def read_examples(path: Path, tok: Tokenizer, split: str) -> list[Example]:
    """The records of `split` (one name, or several joined by commas) in `path`, encoded; records
    with no trained token are dropped."""
    splits, out = set(split.split(",")), []
    end = tok.token_to_id(IM_END) if tok is not None else None  # ids records need no tokenizer
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            rec: dict[str, Any] = json.loads(line)
            if rec.get("split", "train") not in splits:
                continue
            if "ids" in rec:
                ex = Example([int(i) for i in rec["ids"]], [float(w) for w in rec["weights"]])
                if len(ex.ids) != len(ex.weights):
                    raise ValueError(f"{path}:{n}: {len(ex.ids)} ids but {len(ex.weights)} weights")
            elif "text" in rec and "assistant_spans" in rec:
                ex = encode(tok, rec["text"], rec["assistant_spans"])
            else:
                raise ValueError(f"{path}:{n}: a record needs text and assistant_spans, or ids and weights")
            if any(ex.weights):
                out.append(Example(ex.ids, ex.weights, prefix_length(ex.ids, ex.weights, end)))
    return out


def _epoch(examples: list[Example], epoch: int, seed: int, max_len: int, shuffle: bool) -> Iterator[Example]:
    """The epoch's examples in its order, cut to max_len; those left with no trained token dropped."""
    order = np.random.default_rng([seed, epoch]).permutation(len(examples)) if shuffle else range(len(examples))
    for i in order:
        ex = examples[int(i)]
        ex = Example(ex.ids[:max_len], ex.weights[:max_len], min(ex.prefix, max_len))
        if any(ex.weights):  # else its assistant turns lie past max_len
            yield ex


def epoch_batches(examples: list[Example], epoch: int, *, seed: int, budget: int, max_len: int,
                  shuffle: bool = True) -> list[list[Example]]:
    batches: list[list[Example]] = []
    group: list[Example] = []
    longest = 0
    for ex in _epoch(examples, epoch, seed, max_len, shuffle):
        if group and (len(group) + 1) * max(longest, len(ex.ids)) > budget:
            batches.append(group)
            group, longest = [], 0
        group.append(ex)
        longest = max(longest, len(ex.ids))
    if group:
        batches.append(group)
    return batches


def prefix_batches(examples: list[Example], epoch: int, *, seed: int, budget: int,
                   max_len: int) -> list[list[Example]]:
    """The epoch's micro-batches of examples sharing one prefix (their first `prefix` ids)."""
    groups: dict[tuple[int, ...], list[Example]] = {}  # in order of first appearance: deterministic
    for ex in _epoch(examples, epoch, seed, max_len, shuffle=True):
        groups.setdefault(tuple(ex.ids[: ex.prefix]), []).append(ex)
    batches: list[list[Example]] = []
    for key, members in groups.items():
        group: list[Example] = []
        longest = 0
        for ex in members:
            rest = len(ex.ids) - len(key)
            if group and len(key) + (len(group) + 1) * max(longest, rest) > budget:
                batches.append(group)
                group, longest = [], 0
            group.append(ex)
            longest = max(longest, rest)
        batches.append(group)
    order = np.random.default_rng([seed, epoch, 1]).permutation(len(batches))
    return [batches[int(i)] for i in order]


def _endless(make: Callable[[int], list[list[Example]]], examples: list[Example], start: int,
             max_len: int) -> Iterator[tuple[int, list[Example]]]:
    if not examples:
        raise ValueError("no training examples (none of the split, or none with an assistant token)")
    epoch, index = 0, 0
    batches = make(0)
    if not batches:
        raise ValueError(f"no training example has an assistant token within its first {max_len} tokens")
    while True:
        for k, group in enumerate(batches):
            if index + k >= start:
                yield index + k, group
        index += len(batches)
        epoch += 1
        batches = make(epoch)


def micro_batches(examples: list[Example], start: int, *, seed: int, budget: int, max_len: int,
                  pad: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(index, ids, weights) for micro-batch `start` on, endlessly; ids and weights are (B, T)."""
    make = lambda e: epoch_batches(examples, e, seed=seed, budget=budget, max_len=max_len)  # noqa: E731
    for k, group in _endless(make, examples, start, max_len):
        yield k, *pad_batch(group, pad)


def prefix_micro_batches(examples: list[Example], start: int, *, seed: int, budget: int, max_len: int,
                         pad: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """(index, prefix, ids, weights) for micro-batch `start` on, endlessly: the shared prefix (P,)
    and what follows it in each example, (B, S), right-padded."""
    make = lambda e: prefix_batches(examples, e, seed=seed, budget=budget, max_len=max_len)  # noqa: E731
    for k, group in _endless(make, examples, start, max_len):
        p = group[0].prefix
        rests = [Example(e.ids[p:], e.weights[p:]) for e in group]
        yield k, np.array(group[0].ids[:p], dtype=np.int64), *pad_batch(rests, pad)


def pad_batch(group: list[Example], pad: int) -> tuple[np.ndarray, np.ndarray]:
    t = max(len(e.ids) for e in group)
    ids = np.full((len(group), t), pad, dtype=np.int64)
    weights = np.zeros((len(group), t), dtype=np.float32)
    for row, e in enumerate(group):
        ids[row, : len(e.ids)] = e.ids
        weights[row, : len(e.weights)] = e.weights
    return ids, weights
