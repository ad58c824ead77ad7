"""A small Llama in PyTorch, laid out exactly as llama.cpp's ``llama`` architecture computes it:
RMSNorm, rotary positions on interleaved pairs (llama.cpp's "norm" rope), SwiGLU, the output
layer tied to the token embeddings (a GGUF without ``output.weight`` reuses ``token_embd``).
``kv_heads`` below ``heads`` gives grouped-query attention (SmolLM2: 9 query heads, 3 KV heads;
build/general/base.py loads it), each KV head shared by ``heads // kv_heads`` query heads in turn.

Training shares one system prompt across a batch: ``loss`` runs the prefix once and lets every
conversation in the batch attend to its keys and values, which is what makes training on the
full, long aerix system message affordable on two CPU cores.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Config", "Llama"]


@dataclass(frozen=True)
class Config:
    vocab: int
    dim: int = 256
    layers: int = 6
    heads: int = 8
    ffn: int = 704
    rope_base: float = 10000.0
    eps: float = 1e-5
    context: int = 2048
    kv_heads: int = 0  # 0: as many as heads (no grouping)

    @property
    def n_kv(self) -> int:
        return self.kv_heads or self.heads

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def rope_tables(cfg: Config, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    hd = cfg.dim // cfg.heads
    inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    angles = positions.to(torch.float64)[:, None] * inv[None, :]
    return angles.cos().float(), angles.sin().float()


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x: (B, H, T, hd); pairs (2i, 2i+1) rotate by position * base^(-2i/hd)."""
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    out = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    return out.to(x.dtype)


class Block(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        d, f = cfg.dim, cfg.ffn
        self.cfg = cfg
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.q = nn.Linear(d, d, bias=False)
        kv = cfg.n_kv * (d // cfg.heads)
        self.k = nn.Linear(d, kv, bias=False)
        self.v = nn.Linear(d, kv, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.gate = nn.Linear(d, f, bias=False)
        self.up = nn.Linear(d, f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def qkv(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, ...]:
        b, t, d = x.shape
        h = F.rms_norm(x, (d,), self.attn_norm, self.cfg.eps)
        hd = d // self.cfg.heads
        split = lambda y: y.view(b, t, -1, hd).transpose(1, 2)  # noqa: E731
        return rope(split(self.q(h)), cos, sin), rope(split(self.k(h)), cos, sin), split(self.v(h))

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **mask: Any) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=self.cfg.n_kv != self.cfg.heads, **mask)

    def finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        b, _, t, _ = attended.shape
        x = x + self.o(attended.transpose(1, 2).reshape(b, t, -1))
        h = F.rms_norm(x, (x.shape[-1],), self.ffn_norm, self.cfg.eps)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(nn.Module):
    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = nn.Parameter(torch.ones(cfg.dim))
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() == 2:
                scaled = name.endswith(("o.weight", "down.weight"))
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * cfg.layers) if scaled else std)

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(h, (self.cfg.dim,), self.norm, self.cfg.eps) @ self.embed.weight.T

    def loss(self, prefix: torch.Tensor, suffix: torch.Tensor, target: torch.Tensor, weight: torch.Tensor,
             per_token: bool = False) -> Any:
        """Mean cross-entropy over the weighted positions of a batch sharing one prefix.

        prefix: (P,) ids; suffix: (B, S) ids after it; target: (B, S) the id each position must
        predict; weight: (B, S) 1 where that prediction is trained (assistant turns), else 0.
        """
        cfg = self.cfg
        p, (b, s) = prefix.shape[0], suffix.shape
        cos_p, sin_p = rope_tables(cfg, torch.arange(p))
        cos_s, sin_s = rope_tables(cfg, torch.arange(p, p + s))
        mask = torch.ones(s, p + s, dtype=torch.bool)
        mask[:, p:] = torch.tril(torch.ones(s, s, dtype=torch.bool))
        xp, xs = self.embed(prefix)[None], self.embed(suffix)
        for blk in self.blocks:
            qp, kp, vp = blk.qkv(xp, cos_p, sin_p)
            qs, ks, vs = blk.qkv(xs, cos_s, sin_s)
            ap = blk.attend(qp, kp, vp, is_causal=True)
            keys = torch.cat((kp.expand(b, -1, -1, -1), ks), dim=2)
            values = torch.cat((vp.expand(b, -1, -1, -1), vs), dim=2)
            as_ = blk.attend(qs, keys, values, attn_mask=mask)
            xp, xs = blk.finish(xp, ap), blk.finish(xs, as_)
        picked = weight > 0
        logits = self.head(xs[picked]).float()
        losses = F.cross_entropy(logits, target[picked], reduction="none")
        mean = (losses * weight[picked]).sum() / weight[picked].sum()
        if not per_token:
            return mean
        guess = target.clone()
        guess[picked] = logits.argmax(-1)
        return mean, guess == target, guess

    # -- inference with a cache (for the checks after training) ----------------------------

    @torch.no_grad()
    def extend(self, ids: list[int], cache: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Run ``ids`` after what ``cache`` holds (appending to it); the last position's logits."""
        start = cache[0][0].shape[2] if cache else 0
        cos, sin = rope_tables(self.cfg, torch.arange(start, start + len(ids)))
        x = self.embed(torch.tensor([ids]))
        for i, blk in enumerate(self.blocks):
            q, k, v = blk.qkv(x, cos, sin)
            if len(cache) > i:
                k = torch.cat((cache[i][0], k), dim=2)
                v = torch.cat((cache[i][1], v), dim=2)
                cache[i] = (k, v)
            else:
                cache.append((k, v))
            t, total = q.shape[2], k.shape[2]
            mask = torch.ones(t, total, dtype=torch.bool).tril(diagonal=total - t)
            x = blk.finish(x, blk.attend(q, k, v, attn_mask=mask))
        return self.head(x[0, -1]).float()
