"""Write the trained model as a GGUF file llama.cpp (and so wllama) loads unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType, TokenType
from gguf.quants import quantize

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from models import CHAT_TEMPLATE, CONTROL_TOKENS, ENDOFTEXT, IM_END  # noqa: E402

from llama import Config, Llama  # noqa: E402

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
    w = GGUFWriter(path, "llama")
    w.add_name(name)
    w.add_description(description)
    w.add_context_length(cfg.context)
    w.add_embedding_length(cfg.dim)
    w.add_block_count(cfg.layers)
    w.add_feed_forward_length(cfg.ffn)
    w.add_head_count(cfg.heads)
    w.add_head_count_kv(cfg.heads)
    w.add_rope_dimension_count(cfg.dim // cfg.heads)
    w.add_rope_freq_base(cfg.rope_base)
    w.add_layer_norm_rms_eps(cfg.eps)
    w.add_vocab_size(cfg.vocab)
    w.add_file_type(int({GGMLQuantizationType.F32: LlamaFileType.ALL_F32, GGMLQuantizationType.F16: LlamaFileType.MOSTLY_F16,
                         GGMLQuantizationType.Q8_0: LlamaFileType.MOSTLY_Q8_0}[quant]))
    if quant == GGMLQuantizationType.Q8_0:
        w.add_quantization_version(2)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index(ENDOFTEXT))
    w.add_eos_token_id(tokens.index(IM_END))
    w.add_pad_token_id(tokens.index(ENDOFTEXT))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    def put(key: str, t: torch.Tensor) -> None:
        a = t.detach().float().numpy().astype(np.float32)
        if a.ndim == 2 and quant != GGMLQuantizationType.F32:
            w.add_tensor(key, quantize(a, quant) if quant == GGMLQuantizationType.Q8_0 else a.astype(np.float16),
                         raw_dtype=quant if quant == GGMLQuantizationType.Q8_0 else None)
        else:
            w.add_tensor(key, a)

    put("token_embd.weight", model.embed.weight)  # no output.weight: llama.cpp ties it to this
    put("output_norm.weight", model.norm)
    for i, b in enumerate(model.blocks):
        put(f"blk.{i}.attn_norm.weight", b.attn_norm)
        put(f"blk.{i}.attn_q.weight", b.q.weight)
        put(f"blk.{i}.attn_k.weight", b.k.weight)
        put(f"blk.{i}.attn_v.weight", b.v.weight)
        put(f"blk.{i}.attn_output.weight", b.o.weight)
        put(f"blk.{i}.ffn_norm.weight", b.ffn_norm)
        put(f"blk.{i}.ffn_gate.weight", b.gate.weight)
        put(f"blk.{i}.ffn_up.weight", b.up.weight)
        put(f"blk.{i}.ffn_down.weight", b.down.weight)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
