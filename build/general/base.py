"""The base model, read from its GGUF: SmolLM2-135M-Instruct (build/smollm2.py fetches it).

    base = read_base(path)          # numpy only: config, float32 weights, the header's fields
    model = to_llama(base)          # build/model/torch_llama.py's Llama holding those weights
    tok = tokenizer(base)           # a `tokenizers` byte-level BPE from the GGUF's tokens and merges

Weights are dequantized to float32 here (numpy, from the formats' layouts: blocks of 32 values
with an f16 scale, Q4_1 also an f16 minimum); any other block format goes through
``gguf.quants.dequantize``. Names map from llama.cpp's (``blk.N.attn_q.weight``) to torch_llama's
(``blocks.N.q.weight``); arrays are rows first (out_features x in_features), as torch holds them.
The GGUF's Q and K rows are already permuted for llama.cpp's interleaved rope, which is the
rope torch_llama computes, so they load unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, ReaderField, TokenType
from gguf.quants import dequantize as gguf_dequantize

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from build.model.torch_llama import Config, Llama

__all__ = ["Base", "read_base", "dequantize_q4_1", "dequantize_q8_0", "dequantize", "to_llama", "tokenizer",
           "TORCH_NAMES", "gguf_name"]

QK = 32  # values per block in Q4_0/Q4_1/Q8_0

# llama.cpp's tensor names in a block -> torch_llama's attribute names
TORCH_NAMES = {"attn_norm.weight": "attn_norm", "attn_q.weight": "q.weight", "attn_k.weight": "k.weight",
               "attn_v.weight": "v.weight", "attn_output.weight": "o.weight", "ffn_norm.weight": "ffn_norm",
               "ffn_gate.weight": "gate.weight", "ffn_up.weight": "up.weight", "ffn_down.weight": "down.weight"}
_TOP = {"token_embd.weight": "embed.weight", "output_norm.weight": "norm"}


def gguf_name(torch_name: str) -> str:
    """``blocks.3.q.weight`` -> ``blk.3.attn_q.weight`` (and the two tensors outside the blocks)."""
    for g, t in _TOP.items():
        if torch_name == t:
            return g
    _, i, rest = torch_name.split(".", 2)
    return f"blk.{i}.{next(g for g, t in TORCH_NAMES.items() if t == rest)}"


def dequantize_q4_1(raw: np.ndarray) -> np.ndarray:
    """Q4_1 blocks (rows x bytes, 20 bytes a block: f16 d, f16 m, 16 bytes of 4-bit q) -> float32.

    In each block value j (0..15) is the low nibble of byte j and value j + 16 its high nibble;
    x = d * q + m."""
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, 20)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32)
    qs = blocks[:, 4:]
    q = np.concatenate((qs & 0x0F, qs >> 4), axis=1).astype(np.float32)
    rows = raw.shape[0] if raw.ndim == 2 else 1
    return (d * q + m).reshape(rows, -1)


def dequantize_q8_0(raw: np.ndarray) -> np.ndarray:
    """Q8_0 blocks (34 bytes: f16 d, 32 int8 q) -> float32, x = d * q."""
    blocks = np.ascontiguousarray(raw, dtype=np.uint8).reshape(-1, 34)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
    q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
    rows = raw.shape[0] if raw.ndim == 2 else 1
    return (d * q).reshape(rows, -1)


def dequantize(data: np.ndarray, qtype: Q, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor's stored data as float32 of `shape` (rows first)."""
    if qtype == Q.F32:
        out = np.asarray(data, dtype=np.float32)
    elif qtype == Q.F16:
        out = np.asarray(data).astype(np.float32)
    elif qtype == Q.Q4_1:
        out = dequantize_q4_1(data)
    elif qtype == Q.Q8_0:
        out = dequantize_q8_0(data)
    else:
        out = gguf_dequantize(data, qtype).astype(np.float32)
    return np.ascontiguousarray(out.reshape(shape))


@dataclass
class Base:
    """A llama GGUF in memory: its header fields, float32 weights by GGUF name, and the shape."""

    path: Path
    fields: dict[str, ReaderField]
    tensors: dict[str, np.ndarray]
    types: dict[str, Q]  # each tensor's stored type

    def value(self, key: str) -> Any:
        return self.fields[key].contents() if key in self.fields else None

    def config(self) -> Config:
        from build.model.torch_llama import Config

        a = self.value("general.architecture")
        if a != "llama":
            raise ValueError(f"{self.path}: architecture {a!r}, not llama")
        dim, heads = int(self.value(f"{a}.embedding_length")), int(self.value(f"{a}.attention.head_count"))
        rope_dim = self.value(f"{a}.rope.dimension_count")
        if rope_dim is not None and int(rope_dim) != dim // heads:
            raise ValueError(f"{self.path}: rope on {rope_dim} of {dim // heads} head dimensions is not supported")
        if "output.weight" in self.tensors:
            raise ValueError(f"{self.path}: an untied output.weight is not supported")
        return Config(vocab=int(self.tensors["token_embd.weight"].shape[0]), dim=dim,
                      layers=int(self.value(f"{a}.block_count")), heads=heads,
                      kv_heads=int(self.value(f"{a}.attention.head_count_kv") or heads),
                      ffn=int(self.value(f"{a}.feed_forward_length")),
                      rope_base=float(self.value(f"{a}.rope.freq_base") or 10000.0),
                      eps=float(self.value(f"{a}.attention.layer_norm_rms_epsilon")),
                      context=int(self.value(f"{a}.context_length")))


def read_base(path: Path) -> Base:
    reader = GGUFReader(path)
    tensors: dict[str, np.ndarray] = {}
    types: dict[str, Q] = {}
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))
        tensors[t.name] = dequantize(t.data, t.tensor_type, shape)
        types[t.name] = t.tensor_type
    return Base(Path(path), dict(reader.fields), tensors, types)


def to_llama(base: Base) -> Llama:
    """torch_llama's Llama with the base's weights (float32), in eval mode."""
    import torch

    from build.model.torch_llama import Llama

    cfg = base.config()
    with torch.random.fork_rng():  # Llama's random init, overwritten below, must not move the caller's RNG
        model = Llama(cfg)
    state = {_torch_name(k): torch.from_numpy(v.copy()) for k, v in base.tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        raise ValueError(f"{base.path}: tensors missing {missing[:3]}, unexpected {unexpected[:3]}")
    return model.eval()


def _torch_name(name: str) -> str:
    if name in _TOP:
        return _TOP[name]
    _, i, rest = name.split(".", 2)
    return f"blocks.{i}.{TORCH_NAMES[rest]}"


def tokenizer(base: Base) -> Tokenizer:
    """The GGUF's byte-level BPE as llama.cpp's ``smollm`` pre-tokenizer splits text: every digit
    alone, then GPT-2's pattern; control tokens (``<|im_start|>``, ...) are special, matched whole."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens = [str(t) for t in base.value("tokenizer.ggml.tokens")]
    types = [int(t) for t in base.value("tokenizer.ggml.token_type")]
    merges = [tuple(str(m).split(" ", 1)) for m in base.value("tokenizer.ggml.merges")]
    pre = base.value("tokenizer.ggml.pre")
    if base.value("tokenizer.ggml.model") != "gpt2" or pre not in ("smollm", "gpt-2"):
        raise ValueError(f"{base.path}: tokenizer {base.value('tokenizer.ggml.model')}/{pre} is not supported")
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, ignore_merges=False))
    steps = [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]
    if pre == "smollm":
        steps.insert(0, pre_tokenizers.Digits(individual_digits=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.ByteLevel()
    control = int(TokenType.CONTROL)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, k in zip(tokens, types) if k == control])
    return tok
