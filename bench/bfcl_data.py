"""The Berkeley Function-Calling Leaderboard's data and AST checker, from PyPI, outside the tree.

    python -m bench.bfcl_data            # fetch and unpack the pinned wheel unless it is there; print where
    python -m bench.bfcl_data --path     # only print where it is (exit 1 when it is not unpacked)

`bfcl-eval` (pinned below, sha256 checked) is fetched with `pip download --no-deps` (pip's HTTP
cache serves it the second time) and unpacked into `$AERIX_CACHE/bfcl/bfcl_eval-<version>/`
(default `~/.cache/aerix`). It is never installed: its dependencies are heavy and aerix needs none
of them. Nothing of it is ever committed: benchmarks from outside are evaluation only, and
`tests/unit/test_bfcl_isolation.py` checks that no 8-word sequence of its data is in the bundled
model's training data, the system message, the docs or the demo.

The checker (`bfcl_eval/eval_checker/ast_eval/ast_checker.py`) is imported from the unpacked
files by path (``checker()``), with one module put in place of BFCL's own: its registry of
models (`constants/model_config.py`) imports every vendor's SDK, and the checker reads one field
of it, ``underscore_to_dot`` of the model scored, only for names with a dot. aerix's entry says
False, because the harness gives back BFCL's own names (``bench/bfcl_agent.py`` maps them).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path
from typing import Any, Iterator

__all__ = ["CATEGORIES", "MODEL_NAME", "VERSION", "WHEEL", "WHEEL_SHA256", "answers", "checker", "data_texts", "fetch", "questions", "root"]

PACKAGE, VERSION = "bfcl-eval", "2026.3.23"
WHEEL = f"bfcl_eval-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a"
# The categories `make bfcl` scores: single-turn, Python, scored by the AST checker (irrelevance:
# by whether the turn has calls).
CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
MODEL_NAME = "aerix"  # the name the checker is given; its registry entry is ours (see above)
_DONE = ".unpacked"  # written last: an unpacked tree without it is half-written


def cache() -> Path:
    return Path(os.environ.get("AERIX_CACHE") or Path.home() / ".cache" / "aerix") / "bfcl"


def root() -> Path | None:
    """Where the pinned wheel is unpacked (holding ``bfcl_eval/``), or None when it is not."""
    where = cache() / f"bfcl_eval-{VERSION}"
    done = where / _DONE
    return where if done.is_file() and done.read_text().strip() == WHEEL_SHA256 else None


def log(message: str) -> None:
    print(f"bfcl-data: {message}", file=sys.stderr, flush=True)


def fetch() -> Path:
    """The unpacked wheel: downloaded, checked and unpacked unless it already is."""
    found = root()
    if found:
        return found
    base = cache()
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bfcl-", dir=base) as tmp:
        work = Path(tmp)
        log(f"downloading {PACKAGE}=={VERSION} (no dependencies)")
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "-q", "--no-deps",
                               "--only-binary=:all:", "--dest", str(work), f"{PACKAGE}=={VERSION}"],
                              capture_output=True, text=True)  # fmt: skip
        wheel = work / WHEEL
        if done.returncode or not wheel.is_file():
            sys.exit(f"bfcl-data: pip download {PACKAGE}=={VERSION} failed:\n{done.stdout}{done.stderr}".rstrip())
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            sys.exit(f"bfcl-data: {WHEEL} has sha256 {digest}, not the pinned {WHEEL_SHA256}")
        tree = work / "tree"
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tree)
        (tree / _DONE).write_text(WHEEL_SHA256 + "\n")
        target = base / f"bfcl_eval-{VERSION}"
        shutil.rmtree(target, ignore_errors=True)
        tree.rename(target)
    log(f"unpacked into {target}")
    return target


def _need() -> Path:
    found = root()
    if found is None:
        raise FileNotFoundError(f"{PACKAGE} {VERSION} is not unpacked in {cache()}: run `python -m bench.bfcl_data` (make bfcl-data)")
    return found


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def questions(category: str) -> list[dict[str, Any]]:
    """The category's entries, in the file's order: ``{"id", "question", "function"}``."""
    return list(_lines(_need() / "bfcl_eval" / "data" / f"BFCL_v4_{category}.json"))


def answers(category: str) -> dict[str, list[dict[str, Any]]]:
    """Each question's ground truth (BFCL's possible answers) by id; none for ``irrelevance``."""
    path = _need() / "bfcl_eval" / "data" / "possible_answer" / f"BFCL_v4_{category}.json"
    return {a["id"]: a["ground_truth"] for a in _lines(path)} if path.is_file() else {}


def data_texts() -> Iterator[str]:
    """Every string in every file of the wheel's data (questions, function docs, answers, its
    README), one at a time: what the isolation test looks for elsewhere."""
    data = _need() / "bfcl_eval" / "data"
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:  # one JSON document, JSON lines, or text
            yield from _strings(json.loads(text))
            continue
        except ValueError:
            pass
        for line in text.splitlines():
            try:
                yield from _strings(json.loads(line))
            except ValueError:
                yield line


def _strings(value: Any) -> Iterator[str]:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def checker() -> tuple[Any, Any]:
    """``(ast_checker, Language.PYTHON)`` from the unpacked wheel, imported by path."""
    package = _need() / "bfcl_eval"
    if "bfcl_eval" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bfcl_eval", package / "__init__.py", submodule_search_locations=[str(package)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["bfcl_eval"] = module
        spec.loader.exec_module(module)
        # The one module put in place of BFCL's (see the module docstring): aerix's registry entry.
        registry = types.ModuleType("bfcl_eval.constants.model_config")
        registry.MODEL_CONFIG_MAPPING = {MODEL_NAME: types.SimpleNamespace(underscore_to_dot=False)}  # type: ignore[attr-defined]
        sys.modules[registry.__name__] = registry
    ast = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    enums = importlib.import_module("bfcl_eval.constants.enums")
    loaded = Path(ast.__file__ or "").resolve()
    if package.resolve() not in loaded.parents:
        raise ImportError(f"bfcl_eval was imported from {loaded}, not from {package}")
    return ast.ast_checker, enums.Language.PYTHON


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", action="store_true", help="only print where it is unpacked")
    args = parser.parse_args()
    if args.path:
        found = root()
        if found is None:
            sys.exit(1)
        print(found)
        return
    print(fetch())


if __name__ == "__main__":
    main()
