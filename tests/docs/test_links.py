"""Every link between the project's pages reaches a file that is there and, where it names a
section (`page.md#section`), a heading of that page as GitHub names it, or an anchor of its own
(`<a id="...">`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.doctest_md import DOCS, REPO

LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.MULTILINE)
EXPLICIT = re.compile(r'<a (?:id|name)="([^"]+)"')
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but hyphens dropped, spaces
    as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    found: set[str] = set()
    for heading in HEADING.findall(text):
        name, n = slug(heading), 1
        while name in found:  # GitHub numbers a repeated heading's anchor
            name, n = f"{slug(heading)}-{n}", n + 1
        found.add(name)
    return found | set(EXPLICIT.findall(text))


def links(doc: str) -> list[tuple[str, str]]:
    """(target file, section or '') of every relative link in `doc`, code blocks left out."""
    text = FENCE.sub("", (REPO / doc).read_text())
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, section = target.partition("#")
        found.append((path, section))
    return found


@pytest.mark.fast
@pytest.mark.parametrize("doc", DOCS)
def test_every_link_reaches_its_page_and_section(doc: str) -> None:
    broken = []
    for path, section in links(doc):
        page = (REPO / doc).parent / path if path else REPO / doc
        if not page.exists():
            broken.append(f"{path}: no such file")
        elif section and page.suffix == ".md" and section not in anchors(page):
            broken.append(f"{path}#{section}: no such heading")
    assert not broken, f"{doc}: " + "; ".join(broken)


@pytest.mark.fast
@pytest.mark.parametrize("doc", DOCS)
def test_no_link_is_empty(doc: str) -> None:
    """`[text]()` goes nowhere on GitHub and nowhere on the site, and MkDocs does not say so."""
    text = FENCE.sub("", (REPO / doc).read_text())
    empty = re.findall(r"\[([^\]]*)\]\(\s*\)", text)
    assert not empty, f"{doc}: links to nothing: {empty}"


@pytest.mark.fast
def test_the_slug_is_githubs() -> None:
    assert slug("Driver start with a class-data-sharing archive") == (
        "driver-start-with-a-class-data-sharing-archive"
    )
    assert slug("`plan` over 1,000 jobs, and from 1,000 to 10,000") == (
        "plan-over-1000-jobs-and-from-1000-to-10000"
    )
