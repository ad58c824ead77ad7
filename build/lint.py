"""`make lint`: the size limits of py/aerix and the type checker, with the figures printed.

    python -m build.lint

Limits (issue 16): no function over 80 lines, no module over 450 lines, the loop itself
(`loop.py`, `Loop.events`) at most 60 lines; then `mypy` in strict mode, as configured in
pyproject.toml, clean on py/aerix. Exits non-zero when any of them fails.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "py" / "aerix"
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
    modules.sort(reverse=True)
    longest.sort(reverse=True)
    print(f"lint: {len(modules)} modules in py/aerix")
    print(f"  largest modules (limit {MAX_MODULE}): " + ", ".join(f"{rel} {n}" for n, rel in modules[:3]))
    print(f"  longest functions (limit {MAX_FUNCTION}): " + ", ".join(f"{name} {n}" for n, name in longest[:3]))
    print(f"  the loop {LOOP[0]}:{LOOP[1]}: {loop_lines} lines (limit {MAX_LOOP})")
    return failures


def main() -> int:
    failures = sizes()
    print("lint: mypy --strict (pyproject.toml [tool.mypy])", flush=True)
    checked = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT)
    if checked.returncode != 0:
        failures.append("mypy found errors (above)")
    for failure in failures:
        print(f"lint: FAILED {failure}")
    if not failures:
        print("lint: all limits hold; the type checker is clean")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
