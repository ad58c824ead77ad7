"""The weights side of aerix-general (build/general/) that needs no torch: the base's formats
dequantized, the adapter file, the GGUF written with an adapter merged, `make general-model` and
the micro-batches. Tiny GGUFs made here, so it runs in seconds. test_general_training.py has the
parts that need torch."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader
from gguf.quants import dequantize as gguf_dequantize
from gguf.quants import quantize

from build.general.adapter import load_adapter, merged, save_adapter
from build.general.base import dequantize_q4_1, dequantize_q8_0, read_base
from build.general.batches import Example, epoch_batches, micro_batches, read_examples
from build.general.gguf_out import apply
from build.general.model import FILE, GeneralError, link_into, make, pin
from build.models import SPECS, build_vocab, make_tensors, write_llama


def test_q4_1_block_dequantizes_as_the_format_says():
    # d = 0.5, m = -1.0; byte j holds q_j = j (low nibble) and q_{j+16} = 15 - j (high nibble)
    block = np.concatenate([np.array([0.5, -1.0], "<f2").view(np.uint8),
                            np.array([j | ((15 - j) << 4) for j in range(16)], np.uint8)])
    got = dequantize_q4_1(block[None, :])
    want = [0.5 * j - 1.0 for j in range(16)] + [0.5 * (15 - j) - 1.0 for j in range(16)]
    assert got.shape == (1, 32) and got[0].tolist() == want
    rows = np.random.default_rng(1).integers(0, 256, (3, 40), dtype=np.uint8)  # 3 rows of 2 blocks
    rows[:, 0:2] = rows[:, 20:22] = np.array([0.25], "<f2").view(np.uint8)  # finite scales
    assert np.array_equal(dequantize_q4_1(rows), gguf_dequantize(rows, Q.Q4_1))


def test_q8_0_block_dequantizes_as_the_format_says():
    block = np.concatenate([np.array([0.125], "<f2").view(np.uint8), np.arange(-16, 16, dtype=np.int8).view(np.uint8)])
    assert dequantize_q8_0(block[None, :])[0].tolist() == [0.125 * q for q in range(-16, 16)]


# -- a tiny llama GGUF, as SmolLM2's is laid out (tied output, Q8_0 weights) -------------------

def tiny_base(path: Path) -> Path:
    spec = SPECS[0]  # tiny: 64 wide, 2 blocks, 4 heads, 128 FFN, byte-level BPE with ChatML
    vocab = build_vocab(spec)
    tensors = make_tensors(spec, vocab)
    del tensors["output.weight"]
    write_llama(path, name="tiny base", description="test", context=512, dim=64, layers=2, ffn=128, heads=4,
                rope_base=10000.0, eps=1e-5, tokens=vocab.tokens, types=vocab.types, merges=vocab.merges,
                quant=Q.Q8_0, tensors=tensors)
    return path


def random_adapter(path: Path, rank: int = 4, zero: bool = False) -> Path:
    rng = np.random.default_rng(7)
    shapes = {"q": (64, 64), "k": (64, 64), "v": (64, 64), "o": (64, 64), "gate": (128, 64), "up": (128, 64),
              "down": (64, 128)}
    pairs = {f"blocks.{i}.{t}": (rng.normal(0, 0.1, (rank, cols)).astype(np.float32),
                                 np.zeros((rows, rank), np.float32) if zero else rng.normal(0, 0.1, (rows, rank)).astype(np.float32))
             for i in range(2) for t, (rows, cols) in shapes.items()}
    save_adapter(path, pairs, {"rank": rank, "alpha": 8.0, "targets": list(shapes), "base": "tiny", "step": 3})
    return path


def test_the_merged_gguf_reads_back_with_its_shapes_types_and_metadata(tmp_path):
    base = tiny_base(tmp_path / "base.gguf")
    adapter = random_adapter(tmp_path / "a.lora")
    out = tmp_path / "general.gguf"
    counts = apply(base, adapter, out)
    assert counts == {"merged": 14, "quantized": 0, "kept": 1 + 5}  # token_embd; 4 block norms and output_norm
    first = hashlib.sha256(out.read_bytes()).hexdigest()
    apply(base, adapter, out)
    assert hashlib.sha256(out.read_bytes()).hexdigest() == first  # the same bytes every time

    src, got = GGUFReader(base), GGUFReader(out)
    assert "general" in got.fields["general.name"].contents()
    for key in ("general.architecture", "llama.block_count", "llama.embedding_length", "llama.attention.head_count_kv",
                "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.chat_template", "tokenizer.ggml.eos_token_id"):
        assert got.fields[key].contents() == src.fields[key].contents(), key
    assert got.fields["general.file_type"].contents() == 7  # MOSTLY_Q8_0
    theirs = {t.name: t for t in src.tensors}
    for t in got.tensors:
        assert list(t.shape) == list(theirs[t.name].shape)
        assert t.tensor_type == (Q.Q8_0 if len(t.shape) == 2 else Q.F32), t.name
    _, pairs = load_adapter(adapter)
    a, b = pairs["blocks.1.up"]
    want = merged(read_base(base).tensors["blk.1.ffn_up.weight"], a, b, 8.0 / 4)
    stored = next(t for t in got.tensors if t.name == "blk.1.ffn_up.weight")
    assert np.array_equal(stored.data, quantize(want, Q.Q8_0))


def test_a_zero_adapter_writes_the_base_weights_unchanged(tmp_path):
    base = tiny_base(tmp_path / "base.gguf")
    apply(base, random_adapter(tmp_path / "zero.lora", zero=True), tmp_path / "out.gguf")
    theirs = {t.name: t for t in GGUFReader(base).tensors}
    for t in GGUFReader(tmp_path / "out.gguf").tensors:
        assert np.array_equal(t.data, theirs[t.name].data), t.name


def test_an_adapter_file_is_small_and_round_trips_in_float16(tmp_path):
    path = random_adapter(tmp_path / "a.lora")
    meta, pairs = load_adapter(path)
    assert meta["rank"] == 4 and len(pairs) == 14 and path.stat().st_size < 60_000
    a, _ = pairs["blocks.0.q"]
    want = np.random.default_rng(7).normal(0, 0.1, (4, 64)).astype(np.float16).astype(np.float32)
    assert np.array_equal(a, want)
    with pytest.raises(ValueError, match="not an aerix LoRA adapter"):
        load_adapter(tiny_base(tmp_path / "base.gguf"))


def test_make_general_model_stops_without_an_adapter_and_checks_what_it_makes(tmp_path):
    base = tiny_base(tmp_path / "base.gguf")
    adapter, manifest, cache = tmp_path / "adapter.lora", tmp_path / "manifest.json", tmp_path / "cache"
    with pytest.raises(GeneralError, match="no trained adapter yet"):
        make(adapter, manifest, cache, base)
    assert not cache.exists()  # nothing written
    random_adapter(adapter)
    pinned = pin(adapter, manifest, cache, base)
    (cache / FILE).unlink()
    out = make(adapter, manifest, cache, base)
    assert out == cache / FILE and hashlib.sha256(out.read_bytes()).hexdigest() == pinned["sha256"]
    site = tmp_path / "site"
    site.mkdir()
    assert link_into(site, cache).read_bytes() == out.read_bytes()
    random_adapter(adapter, zero=True)  # another adapter than the one pinned
    with pytest.raises(GeneralError, match="not the one .* pins"):
        make(adapter, manifest, cache, base)
    random_adapter(adapter)
    manifest.write_text(json.dumps({**pinned, "sha256": "0" * 64}))
    (cache / FILE).unlink()
    with pytest.raises(GeneralError, match="not the pinned"):
        make(adapter, manifest, cache, base)
    assert not (cache / FILE).exists()


def test_micro_batches_keep_to_the_token_budget_and_drop_what_max_len_cuts_off():
    exs = [Example([1] * n, [0.0] * (n - 2) + [1.0, 1.0]) for n in (3, 5, 4, 6, 2)] + [Example([9] * 10, [0.0] * 8 + [1.0] * 2)]
    batches = epoch_batches(exs, 0, seed=0, budget=10, max_len=6, shuffle=False)
    assert [[len(e.ids) for e in g] for g in batches] == [[3, 5], [4], [6], [2]]  # the 10-token one: its turn is cut
    assert all(len(g) * max(len(e.ids) for e in g) <= 10 for g in batches)
    # 4 micro-batches an epoch, endlessly: 7 is the second epoch's last, 8 and 9 the third's first
    assert [k for (k, _, _), _ in zip(micro_batches(exs, 7, seed=0, budget=10, max_len=6, pad=0), range(3))] == [7, 8, 9]
    with pytest.raises(ValueError, match="within its first 6 tokens"):
        next(micro_batches(exs[-1:], 0, seed=0, budget=10, max_len=6, pad=0))


def test_records_are_read_by_split_and_a_bad_one_is_named(tmp_path):
    path = tmp_path / "corpus.jsonl"
    records = [{"split": s, "ids": [1, 2, 3], "weights": [0, 1, 1]} for s in ("train", "val_family", "val_phrasing", "train")]
    records.append({"split": "train", "ids": [4, 5], "weights": [0, 0]})  # nothing to train: left out
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert len(read_examples(path, None, "train")) == 2  # type: ignore[arg-type]  (no text records: no tokenizer)
    assert len(read_examples(path, None, "val_family,val_phrasing")) == 2  # type: ignore[arg-type]
    path.write_text(json.dumps({"split": "train", "ids": [1, 2], "weights": [1]}) + "\n" + json.dumps({"split": "train", "text": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"corpus.jsonl:1: 2 ids but 1 weights"):
        read_examples(path, None, "train")  # type: ignore[arg-type]
    path.write_text(json.dumps({"split": "train", "text": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"corpus.jsonl:1: a record needs text and assistant_spans"):
        read_examples(path, None, "train")  # type: ignore[arg-type]
