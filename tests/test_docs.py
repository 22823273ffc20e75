"""The documentation as a reader follows it: every relative link lands, every `make X` exists.

A link is checked as GitHub resolves it: relative to the page, to a file or folder of the
repository, and, with a `#fragment`, to a heading of the target page (GitHub's anchors: lower
case, punctuation dropped, spaces as hyphens, `-1`, `-2`... for repeats). Links inside code
blocks are code, not links.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted(
    [
        *ROOT.glob("*.md"),
        *(ROOT / "docs").rglob("*.md"),
        *(p for p in (ROOT / "examples").rglob("*.md") if "node_modules" not in p.parts),
    ]
)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
MAKE_IN_CODE = re.compile(r"`make ([a-z][\w-]*)[^`]*`")
MAKE_LINE = re.compile(r"^\s*make ([a-z][\w-]*)", re.M)
TARGET = re.compile(r"^([a-z][\w-]*)\s*:(?!=)", re.M)


def prose(page: Path) -> str:
    """The page without its fenced code blocks."""
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def anchors(page: Path) -> set[str]:
    """The fragments GitHub gives the page's headings."""
    seen: Counter[str] = Counter()
    found = set()
    for line in prose(page).splitlines():
        if not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return found


def relative_links() -> list[tuple[Path, str]]:
    return [
        (page, target)
        for page in PAGES
        for target in LINK.findall(prose(page))
        if not re.match(r"[a-z][a-z+.-]*:", target)
    ]


def make_targets_named() -> list[tuple[Path, str]]:
    named = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        inline = MAKE_IN_CODE.findall(FENCE.sub("", text))
        in_blocks = [t for block in FENCE.findall(text) for t in MAKE_LINE.findall(block)]
        named += [(page, target) for target in (*inline, *in_blocks)]
    return named


def test_the_docs_have_pages_and_links_to_check() -> None:
    assert ROOT / "README.md" in PAGES
    assert len(relative_links()) > 100
    assert make_targets_named()


@pytest.mark.parametrize(
    ("page", "target"), relative_links(), ids=lambda v: v if isinstance(v, str) else v.name
)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path, target: str) -> None:
    path, _, fragment = target.partition("#")
    where = (page.parent / path).resolve() if path else page
    assert where.exists(), f"{page.relative_to(ROOT)} links to {target}: no such file"
    if fragment:
        assert where.is_file() and where.suffix == ".md", f"{target}: a fragment of a non-page"
        assert fragment in anchors(where), (
            f"{page.relative_to(ROOT)} links to {target}: {where.name} has no heading #{fragment}"
        )


def test_every_make_target_the_docs_name_exists_in_the_makefile() -> None:
    targets = set(TARGET.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    named = make_targets_named()
    missing = sorted({f"{p.relative_to(ROOT)}: make {t}" for p, t in named if t not in targets})
    assert missing == [], f"the docs name make targets the Makefile lacks: {missing}"
