"""The project's Markdown (README, docs/, bench/, models/, tests/): every relative link names a file
that exists, and every `#anchor` a heading of the file it points into (GitHub's slugs). A reader
follows these links from the README; a broken one is a claim with nothing behind it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if sys.platform == "emscripten":
    pytest.skip("the Pyodide runner copies only tests/ and pyproject.toml: the docs are not there", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for d in ("", "docs", "bench", "models", "tests") for p in (ROOT / d).glob("*.md"))
LINK = re.compile(r"\]\(([^)\s#]*)(?:#([^)\s]+))?\)")


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `_` and `-` dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in prose(page.read_text()) if re.match(r"#{1,6} ", line)}


def test_there_are_pages_to_check():
    assert ROOT / "README.md" in PAGES and any(p.parent.name == "docs" for p in PAGES)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for line in prose(page.read_text()):
        for target, anchor in LINK.findall(line):
            if target.startswith(("http:", "https:", "mailto:")):
                continue
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{target}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append(f"{target}#{anchor}: no such heading in {path.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_slugs_follow_github():
    assert slug("The repeat guard") == "the-repeat-guard"
    assert slug("What changed in the runtime for these figures") == "what-changed-in-the-runtime-for-these-figures"
    assert slug("On a server: the same agent on an OpenAI-compatible engine") == "on-a-server-the-same-agent-on-an-openai-compatible-engine"
    assert slug("`make demo`, step by step") == "make-demo-step-by-step"
    assert slug("`Limits.repeat_calls`") == "limitsrepeat_calls"
