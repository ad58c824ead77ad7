"""build/requant.py: a GGUF re-quantised keeps every key and its weights (within the new format's rounding)."""

from __future__ import annotations

import sys

import pytest

if sys.platform == "emscripten":
    pytest.skip("the re-quantiser runs on CPython at build time: Pyodide has no build/, numpy nor gguf", allow_module_level=True)

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFWriter, LlamaFileType
from gguf.quants import dequantize, quantize

from build.requant import KVALUES_IQ4_NL, quantize_iq4_nl, requant


def _write(path, weights, norm):
    w = GGUFWriter(path, "llama")
    w.add_name("requant test")
    w.add_uint32("llama.block_count", 1)
    w.add_file_type(LlamaFileType.MOSTLY_Q4_1)
    w.add_token_list(["a", "b", "<|im_end|>"])
    w.add_chat_template("{{ messages }}")
    w.add_tensor("blk.0.ffn_up.weight", quantize(weights, Q.Q4_1), raw_dtype=Q.Q4_1)
    w.add_tensor("blk.0.ffn_norm.weight", norm)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def _source(tmp_path, seed):
    """A small GGUF of one 4×64 weight matrix and a norm; (weights, norm, its path, a path to write)."""
    weights = np.random.default_rng(seed).normal(size=(4, 64)).astype(np.float32)
    norm = np.ones(64, dtype=np.float32)
    src, dst = tmp_path / "src.gguf", tmp_path / "dst.gguf"
    _write(src, weights, norm)
    return weights, norm, src, dst


def test_requant_to_q8_0_keeps_the_keys_and_the_weights(tmp_path):
    weights, norm, src, dst = _source(tmp_path, 3)
    counts = requant(src, dst, "Q8_0")
    assert counts == {"requantised": 1, "kept": 1}
    a, b = GGUFReader(src), GGUFReader(dst)
    keys = lambda r: {k: f.contents() for k, f in r.fields.items() if not k.startswith("GGUF.")}  # noqa: E731
    before, after = keys(a), keys(b)
    assert after.pop("general.file_type") == LlamaFileType.MOSTLY_Q8_0
    before.pop("general.file_type")
    assert after == before
    tensors = {t.name: t for t in b.tensors}
    assert tensors["blk.0.ffn_up.weight"].tensor_type == Q.Q8_0
    assert tensors["blk.0.ffn_norm.weight"].tensor_type == Q.F32
    q41 = dequantize(next(t for t in a.tensors if t.name == "blk.0.ffn_up.weight").data, Q.Q4_1).reshape(4, 64)
    q8 = dequantize(tensors["blk.0.ffn_up.weight"].data, Q.Q8_0).reshape(4, 64)
    # Q8_0 holds the Q4_1 weights to within its step (a 127th of each block's largest magnitude:
    # half a step of rounding, and the step itself stored as a 16-bit float)
    step = np.abs(q41).reshape(4, 2, 32).max(axis=2) / 127
    assert np.all(np.abs(q8 - q41).reshape(4, 2, 32) <= step[..., None])
    assert np.array_equal(np.asarray(tensors["blk.0.ffn_norm.weight"].data), norm)


def test_iq4_nl_blocks_read_back_by_gguf_hold_the_weights():
    rng = np.random.default_rng(5)
    weights = rng.normal(size=(16, 256)).astype(np.float32)
    blocks = quantize_iq4_nl(weights)
    assert blocks.dtype == np.uint8 and blocks.shape == (16, 8 * 18)  # per 32 weights: a float16 and 16 bytes
    back = dequantize(blocks, Q.IQ4_NL).reshape(16, 256)
    # Each weight within an eighth of its block's largest magnitude, Q4_0's worst case (its step is
    # that magnitude / 8, and the largest rounds down a whole step); and closer than Q4_0 overall,
    # which is what IQ4_NL's non-uniform grid is for.
    largest = np.abs(weights).reshape(-1, 32).max(axis=1)
    assert np.all(np.abs(back - weights).reshape(-1, 32).max(axis=1) <= largest / 8)
    q4_0 = dequantize(quantize(weights, Q.Q4_0), Q.Q4_0).reshape(16, 256)
    assert np.sqrt(np.mean((back - weights) ** 2)) < np.sqrt(np.mean((q4_0 - weights) ** 2))


def test_iq4_nl_holds_weights_on_its_grid_exactly():
    # d * KVALUES_IQ4_NL[i] for a float16 d of either sign, each block reaching the grid's -127 (the
    # scale llama.cpp's search starts from): every weight and its position come back as they were,
    # which pins which nibble of which byte holds which weight; a block of zeros stays zeros.
    rng = np.random.default_rng(7)
    index = rng.integers(0, 16, size=(40, 32))
    index[:, rng.integers(0, 32, size=40)] = 0
    d = (rng.choice([-1.0, 1.0], size=(40, 1)) * rng.uniform(1e-3, 4, size=(40, 1))).astype(np.float16).astype(np.float32)
    weights = (d * KVALUES_IQ4_NL[index]).reshape(10, 128)
    weights[3] = 0
    back = dequantize(quantize_iq4_nl(weights), Q.IQ4_NL).reshape(10, 128)
    assert np.array_equal(back, weights)


def test_requant_to_iq4_nl_gives_a_gguf_of_iq4_nl_tensors(tmp_path):
    weights, norm, src, dst = _source(tmp_path, 11)
    assert requant(src, dst, "IQ4_NL") == {"requantised": 1, "kept": 1}
    reader = GGUFReader(dst)
    assert reader.fields["general.file_type"].contents() == LlamaFileType.MOSTLY_IQ4_NL
    assert reader.fields["general.name"].contents() == "requant test"
    tensors = {t.name: t for t in reader.tensors}
    up = tensors["blk.0.ffn_up.weight"]
    assert up.tensor_type == Q.IQ4_NL and [int(n) for n in up.shape] == [64, 4]
    q41 = dequantize(quantize(weights, Q.Q4_1), Q.Q4_1)
    largest = np.abs(q41).reshape(-1, 32).max(axis=1)
    assert np.all(np.abs(dequantize(up.data, Q.IQ4_NL).reshape(4, 64) - q41).reshape(-1, 32).max(axis=1) <= largest / 8)
    assert tensors["blk.0.ffn_norm.weight"].tensor_type == Q.F32
