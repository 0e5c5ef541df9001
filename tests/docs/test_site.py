"""The docs as a reader has them: a README of at most 300 lines, a site (MkDocs) that builds with
--strict and lists every page, pages of one purpose and about 300 lines at most, and every page
read by the doc tests (tests/docs/test_docs.py, test_links.py)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.doctest_md import DOCS, REPO

pytestmark = pytest.mark.fast

#: A user's page holds one purpose; past this many lines it holds two.
MOST_LINES = 300
#: The developers' pages keep the suite's measured history: long by nature, read by few.
DEVELOPERS = "docs/developers/"
#: Markdown files that are not docs pages: the code's map, and what the tests keep beside them.
NOT_PAGES = ("ARCHITECTURE.md", "tests/", "examples/")


def lines(doc: str) -> int:
    return len((REPO / doc).read_text().splitlines())


def test_the_readme_is_at_most_300_lines() -> None:
    assert lines("README.md") <= MOST_LINES, (
        f"README.md has {lines('README.md')} lines: move the rest to a page of docs/"
    )


def test_every_users_page_is_at_most_about_300_lines() -> None:
    long = {doc: lines(doc) for doc in DOCS if doc.startswith("docs/")}
    long = {d: n for d, n in long.items() if n > MOST_LINES and not d.startswith(DEVELOPERS)}
    assert not long, f"pages of more than {MOST_LINES} lines (split them by purpose): {long}"


def nav_pages(nav: list) -> list[str]:
    found = []
    for item in nav:
        for value in item.values() if isinstance(item, dict) else [item]:
            found += nav_pages(value) if isinstance(value, list) else [value]
    return found


def test_every_page_is_in_the_sites_nav_and_read_by_the_doc_tests() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text())
    listed = nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md"))
    assert sorted(listed) == pages, (
        f"mkdocs.yml's nav and docs/ differ: not listed {sorted(set(pages) - set(listed))}, "
        f"listed but missing {sorted(set(listed) - set(pages))}"
    )
    tracked = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    unread = [f for f in tracked if f not in DOCS and not f.startswith(NOT_PAGES)]
    assert not unread, f"pages the doc tests do not read: {unread} (tests/support/doctest_md.py)"


def test_no_page_of_the_site_links_outside_it() -> None:
    """A link that leaves docs/ breaks on the site: name a repository file as `code` instead."""
    outside = []
    for doc in DOCS:
        if not doc.startswith("docs/"):
            continue
        text = re.sub(r"^```.*?^```", "", (REPO / doc).read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = ((REPO / doc).parent / target.partition("#")[0]).resolve()
            if not path.is_relative_to(REPO / "docs"):
                outside.append(f"{doc}: {target}")
    assert not outside, "links out of the site: " + "; ".join(outside)


def test_the_site_builds_with_strict(tmp_path: Path) -> None:
    """Every link and anchor resolves, every page is in the nav (mkdocs.yml's validation)."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "index.html").exists()


def test_every_docs_page_the_code_names_is_there() -> None:
    """Messages, comments and tests name pages as `docs/<part>/<page>.md`: each one is a page."""
    named = {}
    for folder in ("flink_sql_runner", "runner", "tests", "templates", "examples", ".ci"):
        for path in (REPO / folder).rglob("*"):
            if path.is_file() and path.suffix in (".py", ".json", ".yaml", ".yml", ".sql", ""):
                for page in re.findall(r"\bdocs/[\w/.-]+?\.md", path.read_text(errors="ignore")):
                    named.setdefault(page, str(path.relative_to(REPO)))
    missing = {page: where for page, where in named.items() if not (REPO / page).exists()}
    assert not missing, f"pages named that are not there (page: where): {missing}"
