"""The base with an adapter merged into it, as a GGUF llama.cpp loads: aerix-general.

    python -m build.general.gguf_out BASE.gguf ADAPTER.lora OUT.gguf

``apply`` reads the base, merges each adapted weight (W + alpha/rank * B A, numpy, float64
product: build/general/lora.py) and writes every 2-D weight as Q8_0, norms as F32, with the
base's header (architecture, shape, tokenizer, chat template) except the name, the file type
and a description naming the adapter. A weight the adapter leaves alone and that the base
already stores as Q8_0 (the token embeddings) keeps its bytes. Nothing depends on the clock,
the machine or the thread count: the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType, GGUFWriter, LlamaFileType
from gguf.quants import quantize

from .adapter import load_adapter, merged, scale
from .base import dequantize, gguf_name

__all__ = ["NAME", "apply", "main"]

NAME = "aerix-general (SmolLM2-135M-Instruct + LoRA)"
_WRITTEN_BY_WRITER = {"general.architecture", "general.name", "general.description", "general.file_type"}


def apply(base_gguf: Path, adapter: Path, out: Path, *, name: str = NAME) -> dict[str, int]:
    """Write `out` from `base_gguf` with `adapter` merged; counts of tensors merged, quantized, kept."""
    meta, pairs = load_adapter(adapter)
    factor = scale(meta)
    deltas = {gguf_name(f"{k}.weight"): v for k, v in pairs.items()}
    reader = GGUFReader(base_gguf)
    arch = str(reader.fields["general.architecture"].contents())
    tmp = out.with_name(f".{out.name}.tmp")
    writer = GGUFWriter(tmp, arch)
    writer.add_name(name)
    writer.add_description(f"{meta.get('base', base_gguf.name)} with the LoRA adapter {adapter.name} "
                           f"(rank {meta['rank']}, alpha {meta['alpha']}, step {meta.get('step', '?')}) merged; Q8_0")
    writer.add_file_type(int(LlamaFileType.MOSTLY_Q8_0))
    for key, field in reader.fields.items():
        if key in _WRITTEN_BY_WRITER or key.startswith("GGUF."):
            continue
        vtype = field.types[0]
        writer.add_key_value(key, field.contents(), vtype, sub_type=field.types[-1] if vtype == GGUFValueType.ARRAY else None)
    counts = {"merged": 0, "quantized": 0, "kept": 0}
    for t in reader.tensors:
        shape = tuple(int(n) for n in reversed(t.shape))
        if t.name in deltas:
            w = merged(dequantize(t.data, t.tensor_type, shape), *deltas.pop(t.name), factor)
            writer.add_tensor(t.name, quantize(w, Q.Q8_0), raw_dtype=Q.Q8_0)
            counts["merged"] += 1
        elif len(shape) == 2 and t.tensor_type != Q.Q8_0:
            writer.add_tensor(t.name, quantize(dequantize(t.data, t.tensor_type, shape), Q.Q8_0), raw_dtype=Q.Q8_0)
            counts["quantized"] += 1
        elif len(shape) == 2:
            writer.add_tensor(t.name, np.asarray(t.data), raw_dtype=t.tensor_type)
            counts["kept"] += 1
        else:
            writer.add_tensor(t.name, dequantize(t.data, t.tensor_type, shape))  # norms: F32
            counts["kept"] += 1
    if deltas:
        tmp.unlink(missing_ok=True)
        raise ValueError(f"{adapter}: adapts tensors {sorted(deltas)[:3]} that {base_gguf} does not have")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(tmp, out)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", type=Path)
    ap.add_argument("adapter", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    counts = apply(args.base, args.adapter, args.out)
    print(f"gguf_out: {args.out}: {counts}; {args.out.stat().st_size:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
