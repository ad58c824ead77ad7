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
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["Example", "read_examples", "encode", "epoch_batches", "micro_batches", "IM_END"]

IM_END = "<|im_end|>"


@dataclass(frozen=True)
class Example:
    ids: list[int]
    weights: list[float]


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
                out.append(ex)
    return out


def epoch_batches(examples: list[Example], epoch: int, *, seed: int, budget: int, max_len: int,
                  shuffle: bool = True) -> list[list[Example]]:
    order = np.random.default_rng([seed, epoch]).permutation(len(examples)) if shuffle else range(len(examples))
    batches: list[list[Example]] = []
    group: list[Example] = []
    longest = 0
    for i in order:
        ex = examples[int(i)]
        ex = Example(ex.ids[:max_len], ex.weights[:max_len])
        if not any(ex.weights):  # its assistant turns lie past max_len
            continue
        if group and (len(group) + 1) * max(longest, len(ex.ids)) > budget:
            batches.append(group)
            group, longest = [], 0
        group.append(ex)
        longest = max(longest, len(ex.ids))
    if group:
        batches.append(group)
    return batches


def micro_batches(examples: list[Example], start: int, *, seed: int, budget: int, max_len: int,
                  pad: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(index, ids, weights) for micro-batch `start` on, endlessly; ids and weights are (B, T)."""
    if not examples:
        raise ValueError("no training examples (none of the split, or none with an assistant token)")
    epoch, index = 0, 0
    batches = epoch_batches(examples, 0, seed=seed, budget=budget, max_len=max_len)
    if not batches:
        raise ValueError(f"no training example has an assistant token within its first {max_len} tokens")
    while True:
        for k, group in enumerate(batches):
            if index + k >= start:
                yield index + k, *pad_batch(group, pad)
        index += len(batches)
        epoch += 1
        batches = epoch_batches(examples, epoch, seed=seed, budget=budget, max_len=max_len)


def pad_batch(group: list[Example], pad: int) -> tuple[np.ndarray, np.ndarray]:
    t = max(len(e.ids) for e in group)
    ids = np.full((len(group), t), pad, dtype=np.int64)
    weights = np.zeros((len(group), t), dtype=np.float32)
    for row, e in enumerate(group):
        ids[row, : len(e.ids)] = e.ids
        weights[row, : len(e.weights)] = e.weights
    return ids, weights
