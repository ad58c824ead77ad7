"""LoRA on torch_llama's Llama, and the adapter file that is the committed artifact.

    adapters = attach(model, rank=8, alpha=16, targets=TARGETS, seed=0)   # the base frozen
    save_adapter(path, adapters_of(model), meta)                          # build/general/adapter.py

Each adapted linear layer ``y = W x`` becomes ``y = W x + s * B (A x)`` with A (rank x in),
B (out x rank) and s = alpha / rank. A starts random (Kaiming-uniform, as in the LoRA paper's
code), B at zero, so an untrained adapter is the base exactly. Targets are torch_llama's names:
``q k v o`` (attention) and ``gate up down`` (the MLP).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from build.model.torch_llama import Llama, rope_tables

__all__ = ["TARGETS", "LoRALinear", "attach", "adapters_of", "hidden", "weighted_loss", "prefix_loss",
           "merge_into"]

TARGETS = ("q", "k", "v", "o", "gate", "up", "down")


class LoRALinear(nn.Module):
    def __init__(self, base: nn.Linear, rank: int, alpha: float) -> None:
        super().__init__()
        self.base = base
        self.rank, self.alpha, self.scale = rank, alpha, alpha / rank
        self.a = nn.Parameter(torch.empty(rank, base.in_features))
        self.b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.a, a=math.sqrt(5))

    @property
    def weight(self) -> torch.Tensor:  # what the layer computes, as one matrix (tests, merging)
        return self.base.weight + self.scale * (self.b @ self.a)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * F.linear(F.linear(x, self.a), self.b)


def attach(model: Llama, *, rank: int, alpha: float, targets: tuple[str, ...] = TARGETS, seed: int = 0) -> list[str]:
    """Freeze `model` and put a LoRA on each target of each block; the adapters' names, in order.
    Their A matrices come from a generator seeded with `seed`, so the same call gives the same start."""
    unknown = set(targets) - set(TARGETS)
    if unknown:
        raise ValueError(f"unknown LoRA targets {sorted(unknown)} (known: {', '.join(TARGETS)})")
    for p in model.parameters():
        p.requires_grad_(False)
    names = []
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        for i, blk in enumerate(model.blocks):
            for t in targets:
                setattr(blk, t, LoRALinear(getattr(blk, t), rank, alpha))
                names.append(f"blocks.{i}.{t}")
    return names


def adapters_of(model: Llama) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (A, B) as float32 numpy, for every LoRA in `model`, in block order."""
    out = {}
    for name, mod in model.named_modules():
        if isinstance(mod, LoRALinear):
            out[name] = (mod.a.detach().float().numpy().copy(), mod.b.detach().float().numpy().copy())
    return out


def hidden(model: Llama, ids: torch.Tensor) -> torch.Tensor:
    """The last block's output for a batch (B, T) of sequences from position 0, causal (right
    padding is harmless: nothing before a pad attends to it)."""
    cos, sin = rope_tables(model.cfg, torch.arange(ids.shape[1]))
    x = model.embed(ids)
    for blk in model.blocks:
        q, k, v = blk.qkv(x, cos, sin)
        x = blk.finish(x, blk.attend(q, k, v, is_causal=True))
    return x


def weighted_loss(model: Llama, ids: torch.Tensor, weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum of cross-entropy over the positions whose target has weight > 0, that weight's sum).

    ids: (B, T); weights: (B, T), weights[b, t] saying how much predicting ids[b, t] counts."""
    h = hidden(model, ids[:, :-1])
    target, w = ids[:, 1:], weights[:, 1:]
    picked = w > 0
    logits = model.head(h[picked]).float()  # only the trained positions: the 49k-wide head is the cost
    losses = F.cross_entropy(logits, target[picked], reduction="none")
    return (losses * w[picked]).sum(), w[picked].sum()


def prefix_loss(model: Llama, prefix: torch.Tensor, ids: torch.Tensor,
                weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`weighted_loss` of the sequences ``prefix + ids[b]``, the prefix run once for the batch.

    prefix: (P,) ids, none of them trained; ids and weights: (B, S), what follows it, right-padded.
    As Llama.loss computes it (each row attends to the prefix's keys and values), through the
    blocks' own projections, LoRA'd, with gradients; ids[:, 0] is predicted from the prefix's
    last position, so the result is weighted_loss's over the whole sequences."""
    p, (b, s) = prefix.shape[0], ids.shape
    if p == 0:
        return weighted_loss(model, ids, weights)
    # prefix and rows as one sequence of P + B*S tokens for the per-token layers (half the ops of
    # two passes: what costs most on a loaded CPU); only attention sees them apart
    positions = torch.cat((torch.arange(p), torch.arange(p, p + s).repeat(b)))
    cos, sin = rope_tables(model.cfg, positions)
    mask = torch.ones(s, p + s, dtype=torch.bool)
    mask[:, p:] = torch.tril(torch.ones(s, s, dtype=torch.bool))
    x = torch.cat((model.embed(prefix), model.embed(ids).reshape(b * s, -1)))[None]
    for blk in model.blocks:
        q, k, v = blk.qkv(x, cos, sin)  # (1, H, P + B*S, hd)
        rows = lambda t: t[0, :, p:].unflatten(1, (b, s)).transpose(0, 1)  # noqa: E731  (B, H, S, hd)
        kp, vp = k[:, :, :p], v[:, :, :p]
        keys = torch.cat((kp.expand(b, -1, -1, -1), rows(k)), dim=2)
        values = torch.cat((vp.expand(b, -1, -1, -1), rows(v)), dim=2)
        ap = blk.attend(q[:, :, :p], kp, vp, is_causal=True)
        as_ = blk.attend(rows(q), keys, values, attn_mask=mask)
        x = blk.finish(x, torch.cat((ap, as_.transpose(0, 1).flatten(1, 2)[None]), dim=2))
    xp, xs = x[:, :p], x[0, p:].unflatten(0, (b, s))
    h = torch.cat((xp[:, -1:].expand(b, -1, -1), xs[:, :-1]), dim=1)  # position t predicts ids[:, t]
    picked = weights > 0
    logits = model.head(h[picked]).float()
    losses = F.cross_entropy(logits, ids[picked], reduction="none")
    return (losses * weights[picked]).sum(), weights[picked].sum()


def merge_into(model: Llama) -> None:
    """Replace every LoRA in `model` by a plain linear layer holding its merged weight."""
    for blk in model.blocks:
        for t in TARGETS:
            mod = getattr(blk, t)
            if isinstance(mod, LoRALinear):
                plain = nn.Linear(mod.base.in_features, mod.base.out_features, bias=False)
                with torch.no_grad():
                    plain.weight.copy_(mod.weight)
                setattr(blk, t, plain)
