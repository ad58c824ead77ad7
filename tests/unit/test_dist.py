"""build/dist.py (`make dist`, issue 21 item 6): from a built site, the runtime alone — its modules,
Pyodide's core, the lock and the wheels it lists, wllama, an empty models.json, README.txt and
MANIFEST.json — as a folder and a tarball; no model, no demo, no test wheel. Run here on a small
fake site; the modules of web/ are checked against the dist's list, so a runtime module added to
web/ without being added to the dist fails here."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tarfile
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("the dist builder runs on CPython: Pyodide has no build/ nor the site", allow_module_level=True)

from build import dist
from build.site import PYODIDE_CORE, WLLAMA_FILES, aerix_version

WEB = Path(__file__).resolve().parents[2] / "web"
VERSION = aerix_version()
WHEELS = [f"aerix-{VERSION}-py3-none-any.whl", "pydantic-2.14.4-py3-none-any.whl"]


def make_site(root: Path) -> Path:
    """A site laid out as build.site lays it out, each file holding its own name."""
    site = root / "site"
    files = [
        *(p.name for p in WEB.iterdir() if p.is_file()),
        *(f"pyodide/{n}" for n in PYODIDE_CORE),
        "pyodide/pyodide-lock.json",  # never copied by build.site; a stray one stays out of the dist too
        *(f"wllama/{n}" for n in WLLAMA_FILES),
        *(f"wheels/{w}" for w in WHEELS),
        "wheels/stale-0.1-py3-none-any.whl",  # in the folder, not in the lock
        "test-wheels/pytest-9.2.0-py3-none-any.whl",
        "models/tiny.gguf",
        "models/aerix-tools.gguf",
        "models/aerix-tools.json",
        "models/models.json",
        "pyodide-lock-test.json",
        ".built",
    ]
    for f in files:
        (site / f).parent.mkdir(parents=True, exist_ok=True)
        (site / f).write_text(f"{f}\n")

    def entry(folder: str, wheel: str) -> tuple[str, dict[str, str]]:
        name, version = wheel.split("-")[:2]
        digest = hashlib.sha256((site / folder / wheel).read_bytes()).hexdigest()
        return name, {"name": name, "version": version, "file_name": f"{folder}/{wheel}", "sha256": digest}

    lock = {"info": {"abi_version": "2026_0"}, "packages": dict(entry("wheels", w) for w in WHEELS)}
    (site / "pyodide-lock.json").write_text(json.dumps(lock))
    return site


EXPECTED = sorted([
    "MANIFEST.json", "README.txt",
    "aerix.js", "aerix.mjs", "chat.mjs", "engine.mjs", "facts.mjs", "generation.mjs", "handle.mjs", "model-cache.mjs", "prompt.mjs",
    "remote.mjs", "rpc.mjs", "runtime.mjs", "store.mjs", "worker.mjs",
    "models/models.json",
    "pyodide-lock.json",
    "pyodide/pyodide.asm.mjs", "pyodide/pyodide.asm.wasm", "pyodide/pyodide.mjs", "pyodide/python_stdlib.zip",
    *(f"wheels/{w}" for w in WHEELS),
    "wllama/index.js", "wllama/wllama.wasm",
])  # fmt: skip


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    site = make_site(tmp_path)
    return site, dist.build_dist(site, tmp_path / "out")


def test_the_dist_holds_exactly_the_runtime(built: tuple[Path, Path]) -> None:
    site, folder = built
    assert folder.name == f"aerix-{VERSION}"
    assert files_under(folder) == EXPECTED
    assert not [f for f in files_under(folder) if f.endswith(".gguf") or "demo" in f or "test" in f]
    for f in EXPECTED:
        if f not in ("MANIFEST.json", "README.txt", "models/models.json"):
            assert (folder / f).read_bytes() == (site / f).read_bytes(), f
    # the site's lock, as it is: its file names are relative to its folder, as the wheels are here
    assert (folder / "pyodide-lock.json").read_bytes() == (site / "pyodide-lock.json").read_bytes()
    assert json.loads((folder / "models/models.json").read_text()) == {"models": []}


def test_the_manifest_lists_every_other_file_with_its_size_and_sha256(built: tuple[Path, Path]) -> None:
    _, folder = built
    manifest = json.loads((folder / "MANIFEST.json").read_text())
    assert (manifest["name"], manifest["version"]) == ("aerix", VERSION)
    assert [e["file"] for e in manifest["files"]] == [f for f in EXPECTED if f != "MANIFEST.json"]
    for e in manifest["files"]:
        data = (folder / e["file"]).read_bytes()
        assert (e["size"], e["sha256"]) == (len(data), hashlib.sha256(data).hexdigest()), e["file"]


def test_the_tarball_is_the_folder(built: tuple[Path, Path]) -> None:
    _, folder = built
    tarball = folder.with_name(f"{folder.name}.tar.gz")
    with tarfile.open(tarball) as tar:
        members = tar.getmembers()
        assert all(m.name == folder.name or m.name.startswith(f"{folder.name}/") for m in members)
        files = {m.name.removeprefix(f"{folder.name}/"): tar.extractfile(m).read() for m in members if m.isfile()}  # type: ignore[union-attr]
        assert all((m.uid, m.gid, m.uname, m.gname, m.mtime) == (0, 0, "", "", dist.EPOCH) for m in members)
    assert sorted(files) == EXPECTED
    assert all(files[f] == (folder / f).read_bytes() for f in EXPECTED)


def test_building_again_gives_the_same_bytes_and_replaces_the_old_folder(built: tuple[Path, Path]) -> None:
    site, folder = built
    tarball = folder.with_name(f"{folder.name}.tar.gz")
    first = tarball.read_bytes()
    (folder / "left-over.txt").write_text("from an older dist")
    assert dist.build_dist(site, folder.parent) == folder
    assert tarball.read_bytes() == first
    assert files_under(folder) == EXPECTED
    assert sorted(p.name for p in folder.parent.iterdir()) == sorted([folder.name, tarball.name])  # no temporary left


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda site: (site / "pyodide" / "pyodide.asm.wasm").unlink(), "lacks pyodide/pyodide.asm.wasm: run `make build`"),
        (lambda site: (site / "worker.mjs").unlink(), "lacks worker.mjs"),
        (lambda site: (site / "wllama" / "wllama.wasm").unlink(), "lacks wllama/wllama.wasm"),
        (lambda site: (site / "pyodide-lock.json").unlink(), "is not a built site (no pyodide-lock.json): run `make build`"),
        (lambda site: (site / "wheels" / WHEELS[1]).unlink(), f"lists wheels/{WHEELS[1]}, which"),
        (lambda site: (site / "wheels" / WHEELS[1]).write_text("other bytes"), "its sha256 is not the one pyodide-lock.json gives"),
        (lambda site: (site / "pyodide-lock.json").write_text("{"), "cannot be read as a Pyodide lock"),
    ],
    ids=["pyodide", "module", "wllama", "lock", "wheel", "wheel-bytes", "lock-json"],
)
def test_a_site_that_lacks_what_the_runtime_needs_is_refused_clearly(tmp_path: Path, damage, said: str) -> None:
    site = make_site(tmp_path)
    damage(site)
    with pytest.raises(dist.DistError, match=re.escape(said)):
        dist.build_dist(site, tmp_path / "out")
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []


def test_a_stale_site_or_the_test_lock_is_refused(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    with pytest.raises(dist.DistError, match=re.escape(f"lists aerix {VERSION}, pyproject.toml says 9.9.9: run `make build`")):
        dist.build_dist(site, tmp_path / "out", version="9.9.9")
    lock = json.loads((site / "pyodide-lock.json").read_text())
    lock["packages"]["pytest"] = {"name": "pytest", "version": "9.2.0", "file_name": "test-wheels/pytest-9.2.0-py3-none-any.whl"}
    (site / "pyodide-lock.json").write_text(json.dumps(lock))
    with pytest.raises(dist.DistError, match="not a wheel under wheels/"):
        dist.build_dist(site, tmp_path / "out")


def test_main_says_what_is_missing_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dist.main(["--site", str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 1
    assert "is not a built site (no pyodide-lock.json): run `make build`" in capsys.readouterr().err


# --- web/ and the dist's list --------------------------------------------------------------

# Static imports and re-exports (`import {a} from "./x.mjs"`, `export {a} from "./x.mjs"`, `import "./x.mjs"`)
# and dynamic imports of a literal.
IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}/[^"']+)["']""")
# URLs built from a literal next to a base (`new URL("worker.mjs", root)`): what the runtime fetches.
URL_LITERAL = re.compile(r"""new URL\(\s*["']([^"'./][^"']*)["']""")


def dist_paths(folder: Path) -> set[str]:
    """Every file of a dist and every folder in it (`wllama/`), and every file's name alone: a URL
    made against another base (`new URL("wllama.wasm", base)`) names one of those."""
    files = files_under(folder)
    folders = {f.rsplit("/", 1)[0] + "/" for f in files if "/" in f}
    return {*files, *folders, *(f.rsplit("/", 1)[-1] for f in files)}


def test_every_file_of_web_is_runtime_or_demo() -> None:
    assert not set(dist.RUNTIME_MODULES) & set(dist.DEMO_FILES)
    assert sorted(p.name for p in WEB.iterdir() if p.is_file()) == sorted([*dist.RUNTIME_MODULES, *dist.DEMO_FILES]), (
        "a file in web/ is neither in build/dist.py's RUNTIME_MODULES nor in its DEMO_FILES: say which"
    )


def test_every_import_of_a_runtime_module_is_in_the_dist(built: tuple[Path, Path]) -> None:
    _, folder = built
    held = set(files_under(folder))
    seen = {}
    for name in dist.RUNTIME_MODULES:
        imports = IMPORT.findall((WEB / name).read_text())
        seen[name] = imports
        for target in imports:
            assert target.startswith("./") and target.removeprefix("./") in held, f"web/{name} imports {target}, which the dist lacks"
    assert {"./runtime.mjs", "./remote.mjs", "./chat.mjs"} <= set(seen["aerix.mjs"])
    assert {"./rpc.mjs", "./runtime.mjs"} <= set(seen["worker.mjs"])
    # the demo's own modules import the runtime, never the other way round
    assert not any(t.removeprefix("./") in dist.DEMO_FILES for imports in seen.values() for t in imports)


def test_every_url_a_runtime_module_builds_from_a_literal_is_in_the_dist(built: tuple[Path, Path]) -> None:
    _, folder = built
    paths = dist_paths(folder)
    found = {name: URL_LITERAL.findall((WEB / name).read_text()) for name in dist.RUNTIME_MODULES}
    for name, urls in found.items():
        for url in urls:
            assert url in paths, f"web/{name} builds a URL to {url!r}, which the dist lacks"
    built_urls = {u for urls in found.values() for u in urls}
    assert {"worker.mjs", "pyodide/pyodide.mjs", "pyodide-lock.json", "wllama/", "models/models.json", "wllama.wasm", "aerix.mjs"} <= built_urls


def test_the_readme_gives_the_headers_and_the_csp_sources_build_serve_uses(built: tuple[Path, Path]) -> None:
    from build.serve import CSP, HEADERS

    _, folder = built
    readme = (folder / "README.txt").read_text()
    for name in ("Cross-Origin-Opener-Policy", "Cross-Origin-Embedder-Policy"):
        assert f"{name}: {HEADERS[name]}" in readme
    for directive in ("script-src", "worker-src"):
        assert f"{directive} {CSP[directive]}" in readme
    assert "one thread" in readme and f"aerix {VERSION}" in readme
