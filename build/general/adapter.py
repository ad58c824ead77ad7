"""The adapter file, the committed artifact of aerix-general (numpy only: no torch to apply it).

    save_adapter(path, pairs, meta)           # pairs: name -> (A, B), e.g. lora.adapters_of(model)
    meta, pairs = load_adapter(path)
    w = merged(w_base, a, b, scale(meta))                     # float32, the same bits anywhere

The adapter file: ``AXLORA1\\n``, the JSON header's length (8 bytes, little-endian), the JSON
header (rank, alpha, targets, the base's sha256, each tensor's name, shape and byte offset),
then the tensors as little-endian float16, A then B for each layer in header order. Written
the same way every time, so the same weights give the same bytes.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["MAGIC", "save_adapter", "load_adapter", "scale", "merged"]

MAGIC = b"AXLORA1\n"


def save_adapter(path: Path, pairs: dict[str, tuple[np.ndarray, np.ndarray]], meta: dict[str, Any]) -> None:
    tensors, blobs, offset = [], [], 0
    for name, (a, b) in pairs.items():
        for part, arr in (("a", a), ("b", b)):
            data = np.ascontiguousarray(arr, dtype="<f2").tobytes()
            tensors.append({"name": f"{name}.{part}", "shape": list(arr.shape), "offset": offset})
            blobs.append(data)
            offset += len(data)
    header = json.dumps({**meta, "dtype": "float16", "tensors": tensors}, sort_keys=True).encode()
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for blob in blobs:
            f.write(blob)
    tmp.replace(path)


def load_adapter(path: Path) -> tuple[dict[str, Any], dict[str, tuple[np.ndarray, np.ndarray]]]:
    raw = Path(path).read_bytes()
    if not raw.startswith(MAGIC):
        raise ValueError(f"{path}: not an aerix LoRA adapter (no {MAGIC!r} magic)")
    (n,) = struct.unpack("<Q", raw[len(MAGIC):len(MAGIC) + 8])
    start = len(MAGIC) + 8
    meta = json.loads(raw[start:start + n])
    body = raw[start + n:]
    arrays = {}
    for t in meta.pop("tensors"):
        count = int(np.prod(t["shape"]))
        arrays[t["name"]] = np.frombuffer(body, "<f2", count, t["offset"]).reshape(t["shape"]).astype(np.float32)
    names = [k[:-2] for k in arrays if k.endswith(".a")]
    return meta, {k: (arrays[f"{k}.a"], arrays[f"{k}.b"]) for k in names}


def scale(meta: dict[str, Any]) -> float:
    """What an adapter's ``B A`` is multiplied by before it is added to W: alpha / rank."""
    return float(meta["alpha"]) / int(meta["rank"])


def merged(w: np.ndarray, a: np.ndarray, b: np.ndarray, scale: float) -> np.ndarray:
    """W + scale * B A in float32, the product in float64: the same bits on any BLAS (each term
    of a rank-r sum of float16-exact factors is exact in float64)."""
    delta = b.astype(np.float64) @ a.astype(np.float64)
    return (w.astype(np.float64) + scale * delta).astype(np.float32)
