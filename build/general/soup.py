"""Adapters averaged in weight space (a "soup"), then cut back to a small rank.

    python -m build.general.soup OUT 0.5:run-k.lora 0.5:run-o.lora [--rank 8]
    python -m build.general.soup OUT 1/3:run-o.lora 1/3:run-o2.lora 1/3:run-o3.lora --rank 8

Each layer's update of the soup is the weighted sum of the adapters' updates,
``sum_i w_i * s * B_i A_i`` (s = alpha / rank, the same for every adapter). Written exactly it is
one adapter of rank ``sum r_i``: the A's stacked, the B's side by side, each scaled by its weight.
``--rank R`` then keeps the best rank-R approximation of each layer's update (the truncated SVD of
``B A``, computed through QR of the thin factors, so never on the full matrix), and prints how much
of it was lost (relative Frobenius norm). Adapters of one lineage share most of their subspace:
the soup of run K and run O loses 0.3 % at rank 8. The committed adapter is the soup of four runs of
one recipe (one start and corpus, other data orders), which scored above each of its runs
(build/general/TRAINING.md). Numpy only; the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from .adapter import load_adapter, save_adapter, scale

__all__ = ["SoupError", "soup", "shrink", "main"]

Pairs = dict[str, tuple[np.ndarray, np.ndarray]]


class SoupError(ValueError):
    """Adapters that cannot be averaged: what differs between them."""


def soup(parts: list[tuple[float, dict[str, Any], Pairs]]) -> tuple[dict[str, Any], Pairs]:
    """(meta, pairs) of the weighted sum of `parts` ((weight, meta, pairs) each), exact, rank summed."""
    if not parts:
        raise SoupError("no adapters to average")
    scales = {scale(m) for _, m, _ in parts}
    if len(scales) != 1:
        raise SoupError(f"the adapters scale their updates differently (alpha / rank: {sorted(scales)})")
    for key in ("targets", "base_sha256"):
        seen = {str(m.get(key)) for _, m, _ in parts}
        if len(seen) != 1:
            raise SoupError(f"the adapters differ in {key}: {sorted(seen)}")
    layers = [sorted(pairs) for _, _, pairs in parts]
    if any(names != layers[0] for names in layers):
        raise SoupError("the adapters adapt different layers")
    factor = scales.pop()
    pairs = {name: (np.concatenate([p[name][0] for _, _, p in parts], axis=0),
                    np.concatenate([w * p[name][1] for w, _, p in parts], axis=1)) for name in layers[0]}
    rank = sum(int(m["rank"]) for _, m, _ in parts)
    meta = {k: v for k, v in parts[0][1].items() if k not in ("rank", "alpha", "step", "init", "data_sha256")}
    return {**meta, "rank": rank, "alpha": factor * rank}, pairs


def shrink(meta: dict[str, Any], pairs: Pairs, rank: int) -> tuple[dict[str, Any], Pairs, list[float]]:
    """The best rank-`rank` approximation of each layer's update; the relative norm each one lost."""
    factor = scale(meta)
    out, lost = {}, []
    for name, (a, b) in pairs.items():
        qb, rb = np.linalg.qr(b.astype(np.float64))  # B = Qb Rb
        qa, ra = np.linalg.qr(a.astype(np.float64).T)  # A = Ra^T Qa^T
        u, s, vt = np.linalg.svd(rb @ ra.T)  # B A = Qb (U S V^T) Qa^T
        total = float((s**2).sum())
        lost.append(float(np.sqrt((s[rank:] ** 2).sum() / total)) if total else 0.0)
        root = np.sqrt(s[:rank])  # the singular values split between the factors: both stay in float16's range
        out[name] = ((root[:, None] * vt[:rank]) @ qa.T, (qb @ u[:, :rank]) * root)
    return {**meta, "rank": rank, "alpha": factor * rank}, out, lost


def _part(text: str) -> tuple[str, float, Path]:
    """"0.5:a.lora" or "1/3:a.lora": the weight as written, its value, the adapter."""
    weight, sep, path = text.partition(":")
    try:
        if not sep or not path:
            raise ValueError
        return weight, float(Fraction(weight)), Path(path)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected WEIGHT:ADAPTER, the weight a number or a fraction, e.g. 0.5:run-k.lora or 1/3:run-o.lora"
        ) from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("parts", type=_part, nargs="+", metavar="WEIGHT:ADAPTER")
    ap.add_argument("--rank", type=int, default=0, help="cut the soup to this rank (0: keep the summed rank)")
    args = ap.parse_args(argv)
    try:
        meta, pairs = soup([(w, *load_adapter(p)) for _, w, p in args.parts])
        # each part as WEIGHT:FOLDER/FILE, so that run folders' adapter.lora files stay told apart
        meta["soup"] = [f"{text}:{'/'.join(p.parts[-2:])}" for text, _, p in args.parts]
        if args.rank:
            if not 0 < args.rank <= int(meta["rank"]):
                raise SoupError(f"--rank {args.rank}: must be between 1 and the soup's rank {meta['rank']}")
            meta, pairs, lost = shrink(meta, pairs, args.rank)
            print(f"soup: cut to rank {args.rank}: relative norm lost, mean {np.mean(lost):.4f}, largest {max(lost):.4f}")
    except (SoupError, OSError) as err:
        print(f"soup: {err}", file=sys.stderr)
        return 2
    save_adapter(args.out, pairs, meta)
    print(f"soup: {args.out}: rank {meta['rank']}, alpha {meta['alpha']}, {len(pairs)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
