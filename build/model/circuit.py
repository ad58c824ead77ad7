"""Plant a copying circuit in a fresh model before training.

Everything this model does well needs copying: the city from the request into the call, the
number and units, the note, the tool's result into the final answer. Transformers copy with a
pair of attention heads (an "induction" circuit): a previous-token head writes, at each
position, which token came before it; an induction head then looks, from the current token,
for positions whose previous token is the current one, and reads the token found there.
Gradient descent finds that circuit only after a long plateau: on two CPU cores and an hour's
budget the model never got there (1,800 steps: every copied token wrong, the rest learned),
and a copying drill did not help within hundreds of steps either. So we write the circuit
into the initial weights, and training starts from a model that can already copy.

The residual stream of width d is laid out at init as:

    E  [0, e)        the token's identity (its embedding; random, unit variance)
    C  e             a constant (every embedding has it): positional queries and keys read it
    P  [p0, p0 + e)  the previous token's identity, written by layer 0's previous-token heads

Layer 0, heads 0..k: query and key are built from C only, in the fast-rotating RoPE pairs,
with the key's phase turned so that the score peaks one position back: they attend to the
previous token whatever it is, and copy a slice of its E into P. Layer 1, heads 0..k: query
from the current token's E, key from P, both in the slow-rotating pairs (position hardly
matters there: rope_base 1e6), so a key scores high where the token before it is the current
token; the value copies that position's E back into E, which the tied output layer turns into
that token's logit. Every other weight keeps its ordinary random init, and training changes
the planted ones like any other.
"""

from __future__ import annotations

import math

import torch

from .torch_llama import Config, Llama

__all__ = ["Layout", "plant"]


class Layout:
    """Where the circuit lives in the residual stream and in the heads' RoPE pairs."""

    def __init__(self, cfg: Config, e: int, offsets: tuple[int, ...]) -> None:
        self.cfg = cfg
        self.hd = cfg.dim // cfg.heads
        assert e <= self.hd, "an induction head copies a whole identity in its value"
        self.e = e
        self.c = e
        self.prev = {o: cfg.dim - (len(offsets) - k) * e for k, o in enumerate(offsets)}  # offset -> start of P_o
        assert min(self.prev.values()) > self.c
        pairs = self.hd // 2
        self.thetas = [cfg.rope_base ** (-2 * f / self.hd) for f in range(pairs)]
        self.fast = [f for f in range(pairs) if self.thetas[f] > 0.01]  # fast ones pick the offset, slower ones damp far echoes
        self.slow = [f for f in range(pairs) if self.thetas[f] * 400 < 0.6]  # content pairs: turn < 0.6 rad over 400 tokens
        assert not set(self.fast) & set(self.slow)


def plant(model: Llama, gen: torch.Generator, *, e: int = 64, offsets: tuple[int, ...] = (1, 2), induction: int = 3,
          lookahead: bool = True, const: float = 3.0, pos_gain: float = 2.3, match_gain: float = 2.0,
          copy_gain: float = 8.0, look_gain: float = 4.0, out_scale: float = 0.1) -> Layout:
    """Write the circuit into ``model`` (freshly initialised). Layer 0 gets one previous-token
    head per offset (P1: the token before, P2: the one before that); layer 1 gets ``induction``
    heads that match the current bigram (E, P1) against each earlier position's (P1, P2) and
    copy that position's identity. Matching two tokens, not one, matters because spaces are
    tokens of their own: after a space, "the token that followed a space" is anything.

    With ``lookahead``, layer 1's next head looks one token further: from the current token it
    attends to the position two after that token's earlier occurrence and writes what it finds
    into N, the free dims between C and P. Where a copy may stop ("Porto" + " " + "Alegre" or
    + "now"; "503" + " " + "-" or + "come") the next token to copy is a space either way: the
    token after it decides, and N holds it."""
    cfg = model.cfg
    lay = Layout(cfg, e, offsets)
    hd = lay.hd
    assert len(offsets) <= cfg.heads and induction <= cfg.heads
    with torch.no_grad():
        emb = model.embed.weight
        ids = torch.randn(emb.shape[0], e, generator=gen)
        # every token's identity has the same length: RMSNorm then leaves C the same for all
        # tokens, and the positional heads' scores stay free of content
        emb[:, :e] = ids * (math.sqrt(e) / ids.norm(dim=1, keepdim=True))
        emb[:, lay.c] = const
        for start in lay.prev.values():
            emb[:, start: start + e] = 0.0

        # layer 0: previous-token heads, one per offset; q and k read C only
        b0 = model.blocks[0]
        for h, (off, start) in enumerate(lay.prev.items()):
            rows = slice(h * hd, (h + 1) * hd)
            for w in (b0.q.weight, b0.k.weight, b0.v.weight):
                w[rows] = 0.0
            b0.o.weight[:, rows] = 0.0
            for f in lay.fast:
                turn = off * lay.thetas[f]  # the key's phase: the score peaks `off` positions back
                b0.q.weight[h * hd + 2 * f, lay.c] = pos_gain
                b0.k.weight[h * hd + 2 * f, lay.c] = pos_gain * math.cos(turn)
                b0.k.weight[h * hd + 2 * f + 1, lay.c] = pos_gain * math.sin(turn)
            for i in range(e):
                b0.v.weight[h * hd + i, i] = 1.0
                b0.o.weight[start + i, h * hd + i] = 1.0
        # nothing else writes into the P subspaces at init
        for start in lay.prev.values():
            b0.o.weight[start: start + e, len(offsets) * hd:] = 0.0
            b0.down.weight[start: start + e] = 0.0

        # layer 1: induction heads; half the slow dims match E(i) with P1(j), half P1(i) with P2(j)
        b1 = model.blocks[1]
        slow_dims = [d for f in lay.slow for d in (2 * f, 2 * f + 1)]
        half = len(slow_dims) // 2
        p1, p2 = lay.prev[offsets[0]], lay.prev[offsets[1]] if len(offsets) > 1 else None
        for h in range(induction):
            rows = slice(h * hd, (h + 1) * hd)
            for w in (b1.q.weight, b1.k.weight, b1.v.weight):
                w[rows] = 0.0
            b1.o.weight[:, rows] = 0.0
            for n, dim in enumerate(slow_dims):
                src = (h * half + n) % e
                if n < half or p2 is None:
                    b1.q.weight[h * hd + dim, src] = match_gain  # current token ...
                    b1.k.weight[h * hd + dim, p1 + src] = match_gain  # ... against the token before j
                else:
                    b1.q.weight[h * hd + dim, p1 + src] = match_gain  # token before the current one ...
                    b1.k.weight[h * hd + dim, p2 + src] = match_gain  # ... against the one two before j
            for i in range(e):
                b1.v.weight[h * hd + i, i] = 1.0
                b1.o.weight[i, h * hd + i] = copy_gain / induction
        if lookahead:  # layer 1, head `induction`: E(i) against P2(j); copies E(j) into N
            h = induction
            assert h < cfg.heads
            n0, width = lay.c + 1, min(e, min(lay.prev.values()) - lay.c - 1)
            emb[:, n0: n0 + width] = 0.0
            b0.o.weight[n0: n0 + width] = 0.0
            b0.down.weight[n0: n0 + width] = 0.0
            rows = slice(h * hd, (h + 1) * hd)
            for w in (b1.q.weight, b1.k.weight, b1.v.weight):
                w[rows] = 0.0
            b1.o.weight[:, rows] = 0.0
            for n, dim in enumerate(slow_dims):
                src = n % e
                b1.q.weight[h * hd + dim, src] = match_gain
                b1.k.weight[h * hd + dim, p2 + src] = match_gain
            for i in range(width):
                b1.v.weight[h * hd + i, i] = 1.0
                b1.o.weight[n0 + i, h * hd + i] = look_gain
        # unit-variance identities make the tied output layer's logits huge (~150); start them
        # near ±15 so a wrong guess costs a bounded loss
        model.norm.fill_(out_scale)
    return lay
