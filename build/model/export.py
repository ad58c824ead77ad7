"""Write the trained model as a GGUF file llama.cpp (and so wllama) loads unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, TokenType

from ..models import CONTROL_TOKENS, write_llama
from .torch_llama import Config, Llama

__all__ = ["vocab_of", "write_gguf"]


def vocab_of(tokenizer_json: str) -> tuple[list[str], list[int], list[str]]:
    """(tokens by id, token types, merges as "a b") from a `tokenizers` BPE tokenizer."""
    data = json.loads(tokenizer_json)
    vocab: dict[str, int] = data["model"]["vocab"]
    for added in data["added_tokens"]:
        vocab[added["content"]] = added["id"]
    tokens = [""] * len(vocab)
    for token, i in vocab.items():
        tokens[i] = token
    assert all(tokens), "token ids are not contiguous"
    types = [int(TokenType.CONTROL if t in CONTROL_TOKENS else TokenType.NORMAL) for t in tokens]
    merges = [m if isinstance(m, str) else " ".join(m) for m in data["model"]["merges"]]
    return tokens, types, merges


def write_gguf(path: Path, model: Llama, tokenizer_json: str, *, name: str, description: str,
               quant: GGMLQuantizationType = GGMLQuantizationType.Q8_0) -> None:
    cfg: Config = model.cfg
    tokens, types, merges = vocab_of(tokenizer_json)
    assert len(tokens) == cfg.vocab
    tensors = {"token_embd.weight": model.embed.weight,  # no output.weight: llama.cpp ties it to this
               "output_norm.weight": model.norm}
    for i, b in enumerate(model.blocks):
        tensors |= {
            f"blk.{i}.attn_norm.weight": b.attn_norm, f"blk.{i}.attn_q.weight": b.q.weight,
            f"blk.{i}.attn_k.weight": b.k.weight, f"blk.{i}.attn_v.weight": b.v.weight,
            f"blk.{i}.attn_output.weight": b.o.weight, f"blk.{i}.ffn_norm.weight": b.ffn_norm,
            f"blk.{i}.ffn_gate.weight": b.gate.weight, f"blk.{i}.ffn_up.weight": b.up.weight,
            f"blk.{i}.ffn_down.weight": b.down.weight,
        }
    write_llama(path, name=name, description=description, context=cfg.context, dim=cfg.dim, layers=cfg.layers,
                ffn=cfg.ffn, heads=cfg.heads, rope_base=cfg.rope_base, eps=cfg.eps, tokens=tokens, types=types,
                merges=merges, quant=quant,
                tensors={k: t.detach().float().numpy().astype(np.float32) for k, t in tensors.items()})
