"""The package as CPython users get it: an sdist and a wheel built by PyPA's ``build`` (``python
-m build``, the wheel made from the sdist), the wheel installed, ``python -m aerix --help``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("packaging runs on CPython: Pyodide has no subprocess, nor pip and build", allow_module_level=True)

import aerix

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "py" / "aerix"


def sources() -> set[str]:
    """The package's files as the wheel should carry them: every module, the templates, py.typed."""
    found = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert "aerix/py.typed" in found and "aerix/system.j2" in found
    return {f for f in found if f.endswith((".py", ".j2")) or f == "aerix/py.typed"}


def python(*args: str, cwd: Path, path: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run this Python in ``cwd``, importing from ``path`` (not this checkout) when given."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """``python -m build`` on a copy of the project (setuptools writes egg-info beside the
    sources), run outside the repository root, where ``build`` is this project's own folder."""
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    shutil.copytree(ROOT / "py", src / "py", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    done = python("-m", "build", "--outdir", str(tmp / "dist"), str(src), cwd=tmp)
    assert done.returncode == 0, f"python -m build failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    (wheel,) = (tmp / "dist").glob("*.whl")
    (sdist,) = (tmp / "dist").glob("*.tar.gz")
    return tmp, wheel, sdist


def test_the_wheel_carries_every_module_the_templates_and_py_typed(built):
    _, wheel, _ = built
    assert wheel.name == f"aerix-{aerix.__version__}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert {n for n in names if n.startswith("aerix/")} == sources()
    metadata = zipfile.ZipFile(wheel).read(f"aerix-{aerix.__version__}.dist-info/METADATA").decode()
    assert "Requires-Python: >=3.11" in metadata and "Requires-Dist: pydantic" in metadata and "Requires-Dist: jinja2" in metadata


def test_the_sdist_carries_the_sources(built):
    _, _, sdist = built
    top = f"aerix-{aerix.__version__}"
    assert sdist.name == f"{top}.tar.gz"
    names = set(tarfile.open(sdist).getnames())
    assert {f"{top}/pyproject.toml", f"{top}/README.md"} <= names
    assert {f"{top}/py/{f}" for f in sources()} <= names


def test_the_installed_wheel_runs_python_m_aerix_help(built):
    tmp, wheel, _ = built
    site = tmp / "site"
    done = python("-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--target", str(site), str(wheel), cwd=tmp)
    assert done.returncode == 0, done.stderr
    assert (site / "aerix" / "py.typed").is_file()
    where = python("-c", "import aerix; print(aerix.__file__)", cwd=tmp, path=site)
    assert Path(where.stdout.strip()) == site / "aerix" / "__init__.py", "it imported the installed copy"
    helped = python("-m", "aerix", "--help", cwd=tmp, path=site)
    assert helped.returncode == 0, helped.stderr
    assert "python -m aerix run --base-url" in helped.stdout
    # the server is in the wheel; the site is not: outside the repository it asks for --root
    served = python("-m", "aerix", "serve", "--proxy", "http://127.0.0.1:8080/v1", cwd=tmp, path=site)
    assert served.returncode == 2 and "pass --root DIR" in served.stderr, served.stderr


def test_python_m_aerix_help_prints_the_commands_and_an_example():
    done = python("-m", "aerix", "--help", cwd=ROOT, path=ROOT / "py", timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m aerix [-h] [--version] COMMAND ...")
    for said in ("an agent runtime", "run       run an agent on an OpenAI-compatible server", "serve     serve the site", "examples:", "exit status: 0"):
        assert said in done.stdout
    version = python("-m", "aerix", "--version", cwd=ROOT, path=ROOT / "py", timeout=60)
    assert (version.returncode, version.stdout) == (0, f"aerix {aerix.__version__}\n")


def test_help_needs_no_httpx():
    # the base install, without the openai extra: httpx cannot be imported
    script = "import runpy, sys; sys.modules['httpx'] = None; sys.argv = ['aerix', '--help']; runpy.run_module('aerix', run_name='__main__')"
    done = python("-c", script, cwd=ROOT, path=ROOT / "py", timeout=60)
    assert done.returncode == 0 and "COMMAND" in done.stdout, done.stderr
