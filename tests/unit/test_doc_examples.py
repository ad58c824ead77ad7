"""Every Python example in README.md and docs/ runs as written (issue 28).

Each ```python block is a whole program: it is run on its own, as a reader would paste it into a
file, with this interpreter, in an empty temporary folder, with the aerix under test on
``PYTHONPATH``. It must exit 0, write nothing to stderr (warnings are errors) and print what it
shows. No block is skipped: a block that is not a program belongs in another language's fence."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import aerix

if sys.platform == "emscripten":
    pytest.skip("the Pyodide runner copies only tests/ and pyproject.toml, and has no subprocesses", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)")
PYTHON = {"python", "py", "python3"}
TIMEOUT_S = 60


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # the block's first line of code, 1-based
    code: str

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def python_blocks(text: str, page: str = "page.md") -> list[Block]:
    """The ```python (or ```py, ~~~python) blocks of a Markdown text, each dedented by its fence's
    indentation (a block inside a list item), with the line its code starts on."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].lower()
        end = i + 1
        while end < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[end]):
            end += 1
        if info in PYTHON:
            body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1 : end]]
            blocks.append(Block(page, i + 2, "\n".join(body) + "\n"))
        i = end + 1
    return blocks


BLOCKS = [b for page in PAGES for b in python_blocks(page.read_text(), str(page.relative_to(ROOT)))]


def test_the_extractor_finds_every_python_fence():
    text = "# t\n```python\na = 1\n```\n```js\nno()\n```\n- item:\n\n  ~~~py\n  b = 2\n  ~~~\n````python\nc = '```'\n````\n"
    assert [(b.line, b.code) for b in python_blocks(text)] == [(3, "a = 1\n"), (11, "b = 2\n"), (14, "c = '```'\n")]


def test_there_are_examples_to_run():
    assert sum(b.page == "README.md" for b in BLOCKS) >= 2 and any(b.page.startswith("docs/") for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=str)
def test_every_python_example_runs_as_written(block, tmp_path):
    program = tmp_path / "example.py"
    program.write_text(block.code)
    package = str(Path(aerix.__file__).resolve().parents[1])  # the aerix under test, not an installed one
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([package, *filter(None, [os.environ.get("PYTHONPATH")])])}
    env.pop("AERIX_API_KEY", None)
    try:
        done = subprocess.run(
            [sys.executable, "-W", "error", str(program)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block}: still running after {TIMEOUT_S} s")
    where = f"{block}: exit {done.returncode} (example.py's line 1 is line {block.line} of {block.page})"
    assert done.returncode == 0 and not done.stderr, f"{where}\n{done.stderr}"
    assert done.stdout.strip(), f"{block}: printed nothing; an example prints what it shows"
