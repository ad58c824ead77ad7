"""`make dist`: the aerix runtime alone, to serve from a site of your own.

    python -m build.dist [--site build/site] [--out dist]

From the built site, copies what a page needs to boot aerix, and nothing else, into
``OUT/aerix-<version>/`` (the version of pyproject.toml), then packs that folder as
``OUT/aerix-<version>.tar.gz``:

    aerix.mjs, aerix.js, ...  the runtime's modules (RUNTIME_MODULES; the demo's pages are not in it)
    pyodide/                  Pyodide's core (build.site.PYODIDE_CORE)
    pyodide-lock.json         the site's lock, and the wheels/ it lists (never test-wheels/)
    wllama/                   index.js and wllama.wasm
    models/models.json        an empty list: the dist ships no model (see below)
    README.txt                how to serve it (README_TEXT)
    MANIFEST.json             every other file with its size and sha256

No GGUF at all. runtime.mjs always reads ``models/models.json`` (the model cache's manifest,
model-cache.mjs's MODEL CACHE), so the dist carries one that lists nothing: without it every boot
would ask for it and get a 404. With the empty list a cached model is revalidated with a
conditional request; a site that puts its model under ``models/`` and lists it there (file,
size, sha256) saves even that request.

A site that lacks a file the runtime needs, a lock that names a missing wheel or one whose bytes
differ, or an aerix wheel of another version than pyproject.toml's fails with the reason and
`run make build`. The tarball is reproducible: sorted entries, fixed times, no owner names.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import sys
import tarfile
from pathlib import Path

from build.site import PYODIDE_CORE, ROOT, SITE, WLLAMA_FILES, aerix_version

__all__ = ["RUNTIME_MODULES", "DEMO_FILES", "DistError", "runtime_files", "build_dist", "main"]

# web/ as the dist sees it: every file there is one or the other (tests/unit/test_dist.py checks,
# and that each runtime module imports only runtime modules).
RUNTIME_MODULES = (
    "aerix.mjs",  # boot(): the API
    "aerix.js",  # the same for a <script> tag: loads aerix.mjs
    "runtime.mjs",  # Python and the engine in this realm
    "remote.mjs",  # the page's side of worker mode
    "worker.mjs",  # the worker's side (started by remote.mjs)
    "rpc.mjs",  # the messages between them
    "handle.mjs",  # what an agent handle of both modes shares (state, asTool, options)
    "engine.mjs",  # loadEngine: wllama behind the model protocol
    "generation.mjs",  # one generation as deltas; the queue (one generation at a time)
    "prompt.mjs",  # the prompt modes and the request a generation sends
    "model-cache.mjs",  # the models this browser keeps (Cache API)
    "facts.mjs",  # what a loaded model is (engine.info's facts)
    "store.mjs",  # IndexedDB store for durable runs
    "chat.mjs",  # chat(agent), re-exported by aerix.mjs
)
DEMO_FILES = ("index.html", "embed.html", "demo.mjs", "demo.css", "demo-mcp.mjs", "demo-picker.mjs", "demo-routing.mjs", "demo-trace.mjs", "demo-tools.mjs", "demo-tools.json")

LOCK = "pyodide-lock.json"
WHEELS = "wheels/"
MODELS_MANIFEST = "models/models.json"
EMPTY_MODELS = json.dumps({"models": []}, indent=2) + "\n"
EPOCH = 315532800  # 1980-01-01, as build.site's reproducible wheels

README_TEXT = """\
aerix {version}: an AI agent runtime that runs inside the web page (Pyodide + llama.cpp in wasm).
This folder is the runtime only: no demo, no model. MANIFEST.json lists its files with their sha256.

1. Copy this folder into your site, say as /aerix/, and your GGUF model, say as /models/my.gguf.

2. Serve your site with these two headers on every response (the page's, and worker.mjs's for
   worker mode, must have them):

     Cross-Origin-Opener-Policy: same-origin
     Cross-Origin-Embedder-Policy: require-corp

   They make the page cross-origin isolated, which is what lets llama.cpp use threads. Without them
   everything still works, but wllama runs on one thread. With them, anything your page loads from
   another origin must allow it (CORS or Cross-Origin-Resource-Policy). Serve .wasm as
   application/wasm and .mjs as text/javascript. If your site sends a Content-Security-Policy, it
   must allow:

     script-src 'self' 'wasm-unsafe-eval'   (Pyodide and wllama compile WebAssembly)
     worker-src 'self' blob:                (worker.mjs; wllama's worker and threads are blob: URLs)
     connect-src 'self'                     (the lock, the wheels, the model; add the origin of an
                                             OpenAI-compatible server if you use one)

3. Boot it from your page (a module script; the URLs are relative to the page):

     import {{ boot }} from "./aerix/aerix.mjs";
     const ai = await boot({{ model: "./models/my.gguf", worker: true }});
     const answer = await ai.agent({{ instructions: "Be brief." }}).ask("Hello");

   Without modules: <script src="./aerix/aerix.js"></script>, then window.aerix.boot({{ ... }}).

The browser keeps the model in its Cache API ("aerix-models") and revalidates it on the next boot.
A model kept in this folder's models/ and listed in models/models.json as
{{"file": "my.gguf", "size": <bytes>, "sha256": "<hex>"}} loads from the cache with no request at all.
"""


class DistError(Exception):
    """The site cannot make a dist: what is missing or wrong, and what to run."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lock_wheels(site: Path, version: str) -> list[str]:
    """The wheels the site's lock lists (paths under the site), each checked against its file."""
    try:
        packages = json.loads((site / LOCK).read_text())["packages"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DistError(f"{site / LOCK} cannot be read as a Pyodide lock ({err}): run `make build`") from None
    aerix = packages.get("aerix")
    if aerix is None or aerix.get("version") != version:
        found = "no aerix" if aerix is None else f"aerix {aerix.get('version')}"
        raise DistError(f"{site / LOCK} lists {found}, pyproject.toml says {version}: run `make build`")
    wheels = []
    for name, entry in sorted(packages.items()):
        file = str(entry.get("file_name", ""))
        if not file.startswith(WHEELS) or "/" in file.removeprefix(WHEELS) or not file.endswith(".whl"):
            raise DistError(f"{site / LOCK}: {name} is {file!r}, not a wheel under {WHEELS} (the test lock?)")
        path = site / file
        if not path.is_file():
            raise DistError(f"{site / LOCK} lists {file}, which {site} lacks: run `make build`")
        if sha256(path) != entry.get("sha256"):
            raise DistError(f"{path}: its sha256 is not the one {LOCK} gives: run `make build`")
        wheels.append(file)
    return wheels


def runtime_files(site: Path, version: str) -> list[str]:
    """Every file of `site` the runtime needs, as paths under it, sorted; DistError if one is missing."""
    if not (site / LOCK).is_file():
        raise DistError(f"{site} is not a built site (no {LOCK}): run `make build`")
    wanted = [
        *RUNTIME_MODULES,
        *(f"pyodide/{name}" for name in PYODIDE_CORE),
        *(f"wllama/{name}" for name in WLLAMA_FILES),
        LOCK,
    ]
    missing = [f for f in wanted if not (site / f).is_file()]
    if missing:
        raise DistError(f"{site} lacks {', '.join(missing)}: run `make build`")
    return sorted([*wanted, *lock_wheels(site, version)])


def manifest(folder: Path, files: list[str], version: str) -> dict[str, object]:
    """MANIFEST.json: each of `files` (paths under `folder`) with its size and sha256."""
    entries = [{"file": f, "size": (folder / f).stat().st_size, "sha256": sha256(folder / f)} for f in files]
    return {"name": "aerix", "version": version, "files": entries}


def write_tarball(folder: Path, tarball: Path) -> None:
    """`folder` as a gzipped tar with the folder as its one top-level entry, byte-for-byte reproducible."""
    paths = sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix())

    def info(path: Path, name: str) -> tarfile.TarInfo:
        entry = tarfile.TarInfo(name)
        entry.mtime, entry.uid, entry.gid, entry.uname, entry.gname = EPOCH, 0, 0, "", ""
        if path.is_dir():
            entry.type, entry.mode = tarfile.DIRTYPE, 0o755
        else:
            entry.size, entry.mode = path.stat().st_size, 0o644
        return entry

    tmp = tarball.with_name(f".{tarball.name}.tmp")
    with tmp.open("wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            tar.addfile(info(folder, folder.name))
            for path in paths:
                entry = info(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
                if path.is_dir():
                    tar.addfile(entry)
                else:
                    with path.open("rb") as f:
                        tar.addfile(entry, f)
    os.replace(tmp, tarball)


def build_dist(site: Path = SITE, out: Path = ROOT / "dist", version: str | None = None) -> Path:
    """Write ``out/aerix-<version>/`` and its ``.tar.gz`` from the built `site`; the folder's path.

    A folder or tarball of that version already in `out` is replaced whole.
    """
    version = version or aerix_version()
    site = Path(site)
    files = runtime_files(site, version)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    name = f"aerix-{version}"
    tmp = out / f".{name}.tmp"  # the old dist stays whole until the new one is
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        for f in files:
            (tmp / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(site / f, tmp / f)
        (tmp / MODELS_MANIFEST).parent.mkdir(parents=True, exist_ok=True)
        (tmp / MODELS_MANIFEST).write_text(EMPTY_MODELS)
        (tmp / "README.txt").write_text(README_TEXT.format(version=version))
        listed = sorted([*files, MODELS_MANIFEST, "README.txt"])
        (tmp / "MANIFEST.json").write_text(json.dumps(manifest(tmp, listed, version), indent=1) + "\n")
        folder = out / name
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write_tarball(folder, out / f"{name}.tar.gz")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=SITE, help="the built site (default: build/site)")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where to write (default: dist/)")
    args = parser.parse_args(argv)
    try:
        folder = build_dist(args.site, args.out)
    except DistError as err:
        print(f"dist: {err}", file=sys.stderr)
        return 1
    files = json.loads((folder / "MANIFEST.json").read_text())["files"]
    for f in files:
        print(f"{f['file']:72} {f['size']:>11,} B")
    total = sum(f["size"] for f in files)
    tarball = folder.with_name(f"{folder.name}.tar.gz")
    print(f"dist: {folder} ({len(files) + 1} files, {total:,} B); {tarball} ({tarball.stat().st_size:,} B)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
