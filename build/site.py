"""Assemble the offline site in build/site/ from pinned, local parts.

    python -m build.site             # every step
    python -m build.site wheels lock # only these steps: pyodide wllama wheels test-wheels lock

Layout of build/site/:

    pyodide/                 Pyodide core, copied from node_modules (no bundled lock: its wheels live on a CDN)
    wllama/index.js          @wllama/wllama ESM build (self-contained: the worker code is inlined)
    wllama/wllama.wasm
    index.html, aerix.mjs, ...  the page side, copied from web/
    models/                  generated GGUF models (build.models writes them) and the bundled
                             trained one, aerix-tools.gguf, copied from models/
    wheels/                  what the page installs: aerix and its dependencies
    pyodide-lock.json        Pyodide's `info` + only our wheels; `file_name` is relative to this file's folder
    test-wheels/             pytest, hypothesis and friends, for tests/pyodide/run_pytest.mjs only
    pyodide-lock-test.json   wheels/ + test-wheels/

Every step skips what is up to date, so a second run does nothing. Downloaded and
built third-party wheels are cached in build/cache/wheels/ across runs and cleans.
Runs in the project's venv: `packaging` reads wheel markers, pip and PyPA's `build` run as
subprocesses.
"""

from __future__ import annotations

import email
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker, default_environment

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
CACHE = ROOT / "build" / "cache" / "wheels"  # third-party wheels, kept across runs
DIST = ROOT / "build" / "cache" / "dist"  # the aerix wheel
PYC = ROOT / "build" / "cache" / "pyc"  # the page's wheels with bytecode, by the sha256 of the wheel they come from
NODE_MODULES = ROOT / "node_modules"
# Wheels we build get fixed zip timestamps: the same sources give the same bytes and sha256.
REPRODUCIBLE = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}

# What Pyodide 314 runs; checked against its lock file, since the wheels must match it.
EMSCRIPTEN_PLATFORM = "pyemscripten_2026_0_wasm32"  # the wheel tag PyPI uses for its ABI
PYODIDE_PYTHON = "3.14.2"
PYTHON_VERSION, ABI = "3.14", "cp314"  # for pip download


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    # "pypi": a binary wheel from PyPI (a pure one, or one built for Pyodide's platform);
    # "pure-sdist": built here from the sdist with the C compiler disabled, so only the
    # pure-Python fallback goes in (MarkupSafe: PyPI has no Pyodide wheel for it).
    source: str = "pypi"


# What the page installs. Exact versions: the site must be reproducible offline.
PAGE_PINS = [
    Pin("pydantic", "2.14.4"),
    Pin("pydantic-core", "2.50.5"),  # wasm wheel published on PyPI for pyemscripten_2026_0
    Pin("typing-extensions", "4.16.0"),
    Pin("annotated-types", "0.8.0"),
    Pin("typing-inspection", "0.4.5"),
    Pin("jinja2", "3.1.6"),
    Pin("markupsafe", "3.0.4", source="pure-sdist"),
    Pin("micropip", "0.11.1"),  # needs Python >= 3.13, hence the 3.14 download
    Pin("packaging", "26.4"),
]

# Only for running tests/unit inside Pyodide; never loaded by the page.
TEST_PINS = [
    Pin("pytest", "9.2.0"),
    Pin("pluggy", "1.7.0"),
    Pin("iniconfig", "2.3.1"),
    Pin("pygments", "2.21.0"),  # pytest >= 8.4 requires it
    Pin("hypothesis", "6.170.17"),  # since 6.156 a native wheel; PyPI has a pyemscripten one
    Pin("sortedcontainers", "2.4.0"),
]

# Environment markers as Pyodide evaluates them, to derive `depends` from wheel metadata.
# platform_release and platform_version are left out: a marker that names them is refused
# rather than evaluated with this machine's values.
MARKER_ENV = {
    "python_version": PYTHON_VERSION,
    "python_full_version": PYODIDE_PYTHON,
    "implementation_version": PYODIDE_PYTHON,
    "sys_platform": "emscripten",
    "platform_system": "Emscripten",
    "platform_machine": "wasm32",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "extra": "",
}
UNKNOWN_MARKERS = re.compile(r"\b(" + "|".join(sorted(set(default_environment()) - set(MARKER_ENV))) + r")\b")


def log(message: str) -> None:
    print(f"site: {message}", flush=True)


def canonical(name: str) -> str:
    """PEP 503 name, the key Pyodide looks packages up by."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_prefix(pin: Pin) -> str:
    """How a wheel file for `pin` starts (wheel names use `_` and are matched case-insensitively)."""
    return f"{canonical(pin.name).replace('-', '_')}-{pin.version}-"


def copy_if_changed(src: Path, dst: Path) -> bool:
    """Copy keeping the mtime, so size + mtime tell whether a later copy is needed."""
    s = src.stat()
    if dst.exists():
        d = dst.stat()
        if d.st_size == s.st_size and int(d.st_mtime) == int(s.st_mtime):
            return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)
    log(f"copied {dst.relative_to(ROOT)}")
    return True


def npm_package(name: str) -> Path:
    """The installed npm package, checked against the version pinned in package.json."""
    wanted = json.loads((ROOT / "package.json").read_text())["dependencies"][name]
    folder = NODE_MODULES / name
    if not folder.is_dir():
        sys.exit(f"site: {folder.relative_to(ROOT)} is missing: run `npm ci`")
    found = json.loads((folder / "package.json").read_text())["version"]
    if found != wanted:
        sys.exit(f"site: {name} {found} installed but package.json pins {wanted}: run `npm ci`")
    return folder


def pyodide_info() -> dict[str, str]:
    """The `info` of Pyodide's own lock, checked against the platform our wheels are for."""
    info: dict[str, str] = json.loads((npm_package("pyodide") / "pyodide-lock.json").read_text())["info"]
    platform = f"pyemscripten_{info['abi_version']}_{info['arch']}"
    if (platform, info["python"]) != (EMSCRIPTEN_PLATFORM, PYODIDE_PYTHON):
        sys.exit(f"site: Pyodide is {platform} / Python {info['python']}: update the constants and pins")
    return info


# --- steps ---------------------------------------------------------------------------


# Pyodide's core, as the site has it under pyodide/ (build/dist.py ships the same files). The
# bundled pyodide-lock.json points at CDN wheels (pydantic 2.12) we must not use, and pyodide.js
# (the classic-script build) is not needed by a page that imports pyodide.mjs.
PYODIDE_CORE = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
# wllama as the site has it under wllama/: index.js imports nothing and inlines its worker; the
# wasm path is passed by the caller. The only URLs it knows are the compat build on a CDN (off
# with setCompat(null)) and Hugging Face.
WLLAMA_FILES = {"index.js": "index.js", "wllama.wasm": "wasm/wllama.wasm"}  # site name: path under esm/


def copy_pyodide() -> None:
    src = npm_package("pyodide")
    for name in PYODIDE_CORE:
        copy_if_changed(src / name, SITE / "pyodide" / name)


def copy_wllama() -> None:
    src = npm_package("@wllama/wllama") / "esm"
    for name, path in WLLAMA_FILES.items():
        copy_if_changed(src / path, SITE / "wllama" / name)


def copy_web() -> None:
    """The page side (web/: boot module, engine adapter, embed script, demo page) at the site's root."""
    for src in sorted((ROOT / "web").iterdir()):
        if src.is_file():
            copy_if_changed(src, SITE / src.name)


def copy_bundled_model() -> None:
    """The trained model committed in models/ (build/model/ makes it), next to the generated ones."""
    for name in ["aerix-tools.gguf", "aerix-tools.json"]:
        if not (ROOT / "models" / name).exists():
            sys.exit(f"site: models/{name} is missing: it is committed; `make model` trains it again")
        copy_if_changed(ROOT / "models" / name, SITE / "models" / name)


def cached_wheel(pin: Pin) -> Path | None:
    prefix = wheel_prefix(pin)
    found = [p for p in CACHE.glob("*.whl") if p.name.lower().startswith(prefix)]
    return found[0] if found else None


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True, env=env)


def fetch_wheels(pins: list[Pin]) -> list[Path]:
    """The wheels for `pins`, from the cache or fetched into it."""
    pyodide_info()
    CACHE.mkdir(parents=True, exist_ok=True)
    missing = [p for p in pins if cached_wheel(p) is None]
    from_pypi = [f"{p.name}=={p.version}" for p in missing if p.source == "pypi"]
    if from_pypi:
        log(f"downloading {' '.join(from_pypi)}")
        # With Pyodide's platform and ABI pip takes a pyemscripten wheel where one exists, else a pure one.
        pip("download", "--no-deps", "--only-binary=:all:", "--dest", str(CACHE),
            "--platform", EMSCRIPTEN_PLATFORM, "--python-version", PYTHON_VERSION,
            "--implementation", "cp", "--abi", ABI, *from_pypi)  # fmt: skip
    for p in missing:
        if p.source == "pure-sdist":
            log(f"building {p.name}=={p.version} without its C speedups")
            # CC=false makes the extension build fail; MarkupSafe then falls back to pure Python.
            pip("wheel", "--no-deps", "--no-binary", ":all:", "--no-cache-dir", "--wheel-dir", str(CACHE),
                f"{p.name}=={p.version}", env={**REPRODUCIBLE, "CC": "false"})  # fmt: skip
    wheels = []
    for p in pins:
        wheel = cached_wheel(p)
        if wheel is None:
            sys.exit(f"site: no wheel for {p.name}=={p.version} after fetching")
        tags = wheel.name.removesuffix(".whl").split("-")[-3:]
        if tags[2] not in ("any", EMSCRIPTEN_PLATFORM):
            sys.exit(f"site: {wheel.name} is not for Pyodide")
        wheels.append(wheel)
    return wheels


def sync_folder(wheels: list[Path], folder: Path) -> None:
    """Make `folder` hold exactly `wheels`: stale versions would otherwise linger and mislead."""
    folder.mkdir(parents=True, exist_ok=True)
    names = {w.name for w in wheels}
    for old in folder.glob("*.whl"):
        if old.name not in names:
            old.unlink()
            log(f"removed {old.relative_to(ROOT)}")
    for w in wheels:
        copy_if_changed(w, folder / w.name)


def page_wheels() -> None:
    sync_folder(with_bytecode([*fetch_wheels(PAGE_PINS), build_aerix()]), SITE / "wheels")


def with_bytecode(wheels: list[Path]) -> list[Path]:
    """Each wheel with its modules compiled for Pyodide's Python (build/pyc.mjs, in Pyodide under
    Node): the page imports them without compiling them first (bench/README.md, P4, "imports").
    Made once per input wheel, kept in PYC under the input's sha256."""
    out, todo = [], []
    for wheel in wheels:
        target = PYC / hashlib.sha256(wheel.read_bytes()).hexdigest()[:16] / wheel.name
        out.append(target)
        if not target.exists():
            todo.append((wheel, target))
    if todo:
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run(["node", str(ROOT / "build" / "pyc.mjs"), tmp, *(str(w) for w, _ in todo)], capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"{done.stdout}{done.stderr}site: compiling the wheels' bytecode failed")
            for wheel, target in todo:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(Path(tmp) / wheel.name), target)
                log(f"bytecode for {wheel.name}")
    return out


def test_wheels() -> None:
    sync_folder(fetch_wheels(TEST_PINS), SITE / "test-wheels")


def aerix_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def aerix_wheel_name() -> str:
    return f"aerix-{aerix_version()}-py3-none-any.whl"


def aerix_inputs() -> list[Path]:
    files = [ROOT / "pyproject.toml", ROOT / "README.md", *(ROOT / "py").rglob("*")]
    return [f for f in files if f.is_file() and "__pycache__" not in f.parts and ".egg-info" not in str(f)]


def build_aerix() -> Path:
    """The aerix wheel from the working tree, rebuilt when a source is newer."""
    wheel = DIST / aerix_wheel_name()
    newest = max(f.stat().st_mtime for f in aerix_inputs())
    if wheel.exists() and wheel.stat().st_mtime >= newest:
        return wheel
    log(f"building {wheel.name}")
    with tempfile.TemporaryDirectory() as tmp:
        # Build from a copy: setuptools writes build/lib and build/bdist.* into the project,
        # which would land in our own build/ folder, and egg-info next to the sources.
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "py", src / "py", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        shutil.copy2(ROOT / "pyproject.toml", src)
        if (ROOT / "README.md").exists():
            shutil.copy2(ROOT / "README.md", src)
        else:  # pyproject.toml names it; the site does not need it
            log("README.md missing: building with an empty one")
            (src / "README.md").write_text("")
        out = Path(tmp) / "dist"
        # PyPA's `build`, run from the temporary folder: in the repository root `-m build` would
        # find this folder, the `build` package the scripts here belong to.
        done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(src)],
                              cwd=tmp, capture_output=True, text=True, env=REPRODUCIBLE)  # fmt: skip
        if done.returncode:
            sys.exit(f"{done.stdout}{done.stderr}site: building the aerix wheel failed")
        (built,) = out.glob("*.whl")
        if built.name != wheel.name:
            sys.exit(f"site: expected {wheel.name}, setuptools made {built.name}")
        wheel.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, wheel)
    return wheel


# --- lock files ------------------------------------------------------------------------


def marker_holds(marker: str) -> bool:
    """Whether a PEP 508 marker holds in Pyodide (MARKER_ENV)."""
    if UNKNOWN_MARKERS.search(marker):
        raise ValueError(f"unknown marker variable in {marker!r}: MARKER_ENV has no Pyodide value for it")
    return Marker(marker).evaluate(MARKER_ENV)


def wheel_entry(wheel: Path, site: Path) -> dict[str, Any]:
    """One `packages` entry of a Pyodide lock file, read from the wheel itself.

    The fields are those of Pyodide 314's own lock (no `shared_library` flag: that is a `package_type`).
    """
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta_path = next(n for n in names if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        meta = email.message_from_bytes(z.read(meta_path))
    depends = []
    for req in meta.get_all("Requires-Dist", []):
        spec, _, marker = req.partition(";")
        if marker and not marker_holds(marker):
            continue
        depends.append(canonical(re.split(r"[\s\[(<>=!~]", spec.strip(), maxsplit=1)[0]))
    # Top-level importable names: packages and single-file modules, not metadata folders.
    sources = [n for n in names if n.endswith(".py") and ".dist-info/" not in n and ".data/" not in n]
    imports = sorted({n.split("/")[0].removesuffix(".py") for n in sources})
    return {
        "name": canonical(meta["Name"]),
        "version": meta["Version"],
        "file_name": wheel.relative_to(site).as_posix(),
        "install_dir": "site",
        "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        "package_type": "package",
        "imports": imports,
        "depends": depends,
        "unvendored_tests": False,
        "tool": {},
    }


def write_lock(path: Path, folders: list[Path]) -> None:
    info = pyodide_info()
    entries = [wheel_entry(w, path.parent) for folder in folders for w in sorted(folder.glob("*.whl"))]
    packages = {e["name"]: e for e in entries}
    for e in entries:  # else the gap would only show in the page, when loadPackage throws
        for dep in e["depends"]:
            if dep not in packages:
                sys.exit(f"site: {e['name']} needs {dep}, which is not pinned")
    text = json.dumps({"info": info, "packages": dict(sorted(packages.items())), "tool": {}}, indent=1) + "\n"
    if path.exists() and path.read_text() == text:
        return
    path.write_text(text)
    log(f"wrote {path.relative_to(ROOT)} ({len(packages)} packages)")


def locks() -> None:
    write_lock(SITE / "pyodide-lock.json", [SITE / "wheels"])
    write_lock(SITE / "pyodide-lock-test.json", [SITE / "wheels", SITE / "test-wheels"])


STEPS = {
    "pyodide": copy_pyodide,
    "wllama": copy_wllama,
    "wheels": page_wheels,
    "test-wheels": test_wheels,
    "lock": locks,
    "web": copy_web,
    "model": copy_bundled_model,
}


def main(argv: list[str]) -> None:
    unknown = [a for a in argv if a not in STEPS]
    if unknown:
        sys.exit(f"usage: python -m build.site [{' | '.join(STEPS)} ...]  (unknown: {' '.join(unknown)})")
    for name in argv or list(STEPS):
        STEPS[name]()
    log("up to date")


if __name__ == "__main__":
    main(sys.argv[1:])
