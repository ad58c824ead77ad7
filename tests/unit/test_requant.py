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

from build.requant import requant


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


def test_requant_to_q8_0_keeps_the_keys_and_the_weights(tmp_path):
    rng = np.random.default_rng(3)
    weights = rng.normal(size=(4, 64)).astype(np.float32)
    norm = np.ones(64, dtype=np.float32)
    src, dst = tmp_path / "src.gguf", tmp_path / "dst.gguf"
    _write(src, weights, norm)
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
