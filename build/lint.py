"""`make lint`: the size limits of py/aerix and web/ and their type checkers, with the figures printed.

    python -m build.lint

Limits (issue 16): no function over 80 lines, no module over 450 lines, the loop itself
(`loop.py`, `Loop.events`) at most 60 lines; then `mypy` in strict mode, as configured in
pyproject.toml, clean on py/aerix. The page side (issue 28) under the same limits: every
web/*.mjs and web/*.js, its functions measured by build/jssizes.mjs with TypeScript's own parser
(a function from its first token to its last line, the functions inside it included, as Python's
are); then TypeScript's checker over the JSDoc types they carry (`tsc -p tsconfig.json`: checkJs,
noEmit), clean. TypeScript is a dev dependency in package.json (`make node_modules/.installed`).
Exits non-zero when any of them fails.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py" / "aerix"
WEB = ROOT / "web"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
MAX_FUNCTION, MAX_MODULE, MAX_LOOP = 80, 450, 60
LOOP = ("loop.py", "Loop.events")


def functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, int]]:
    """Every function and method as (qualified name, lines from its `def` to its last line)."""
    out: list[tuple[str, int]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((name, (node.end_lineno or node.lineno) - start + 1))
            out += functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            out += functions(node, prefix + node.name + ".")
    return out


def report(where: str, modules: list[tuple[int, str]], longest: list[tuple[int, str]]) -> None:
    """Print the figures of one tree: how many modules, the largest three, the longest three functions."""
    modules.sort(reverse=True)
    longest.sort(reverse=True)
    print(f"lint: {len(modules)} modules in {where}")
    print(f"  largest modules (limit {MAX_MODULE}): " + ", ".join(f"{rel} {n}" for n, rel in modules[:3]))
    print(f"  longest functions (limit {MAX_FUNCTION}): " + ", ".join(f"{name} {n}" for n, name in longest[:3]))


def sizes() -> list[str]:
    """Check every module of the package; print the largest and return what is over a limit."""
    failures: list[str] = []
    modules, longest, loop_lines = [], [], None
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        modules.append((lines, rel))
        if lines > MAX_MODULE:
            failures.append(f"module {rel}: {lines} lines (limit {MAX_MODULE})")
        for name, n in functions(ast.parse(text, rel)):
            longest.append((n, f"{rel}:{name}"))
            if n > MAX_FUNCTION:
                failures.append(f"function {rel}:{name}: {n} lines (limit {MAX_FUNCTION})")
            if (rel, name) == LOOP:
                loop_lines = n
    if loop_lines is None:
        failures.append(f"the loop {LOOP[0]}:{LOOP[1]} was not found")
    elif loop_lines > MAX_LOOP:
        failures.append(f"the loop {LOOP[0]}:{LOOP[1]}: {loop_lines} lines (limit {MAX_LOOP})")
    report("py/aerix", modules, longest)
    print(f"  the loop {LOOP[0]}:{LOOP[1]}: {loop_lines} lines (limit {MAX_LOOP})")
    return failures


def web_sizes() -> list[str]:
    """The same limits on web/'s modules (build/jssizes.mjs measures them); print the largest."""
    paths = sorted([*WEB.glob("*.mjs"), *WEB.glob("*.js")])
    measured = subprocess.run(
        ["node", str(ROOT / "build" / "jssizes.mjs"), *(p.relative_to(ROOT).as_posix() for p in paths)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if measured.returncode != 0:
        return [f"build/jssizes.mjs could not measure web/ (`make node_modules/.installed`?): {measured.stderr.strip()}"]
    failures: list[str] = []
    modules, longest = [], []
    for module in json.loads(measured.stdout)["modules"]:
        rel = Path(module["path"]).relative_to("web").as_posix()
        modules.append((module["lines"], rel))
        if module["lines"] > MAX_MODULE:
            failures.append(f"module web/{rel}: {module['lines']} lines (limit {MAX_MODULE})")
        for function in module["functions"]:
            longest.append((function["lines"], f"{rel}:{function['name']}"))
            if function["lines"] > MAX_FUNCTION:
                failures.append(f"function web/{rel}:{function['name']}: {function['lines']} lines (limit {MAX_FUNCTION})")
    report("web/", modules, longest)
    return failures


def main() -> int:
    failures = sizes() + web_sizes()
    print("lint: mypy --strict (pyproject.toml [tool.mypy])", flush=True)
    checked = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT)
    if checked.returncode != 0:
        failures.append("mypy found errors (above)")
    print("lint: tsc --noEmit --checkJs on web/ (tsconfig.json)", flush=True)
    if not TSC.exists():
        failures.append("no node_modules/.bin/tsc: run `make node_modules/.installed`")
    elif subprocess.run([str(TSC), "-p", "tsconfig.json"], cwd=ROOT).returncode != 0:
        failures.append("tsc found errors (above)")
    for failure in failures:
        print(f"lint: FAILED {failure}")
    if not failures:
        print("lint: all limits hold; the type checkers are clean")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
