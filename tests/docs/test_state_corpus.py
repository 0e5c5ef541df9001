"""docs/concepts/state.md's table of the corpus is the one its data renders
(tests/support/state_corpus.py):
the verdicts and what Spark does on the old checkpoint, per line, cannot drift from the page."""

from __future__ import annotations

from tests.support.doctest_md import REPO
from tests.support.state_corpus import ACCEPTED_WRONGLY, ACCEPTS, CORPUS, LINES, outcome, table

PAGE = REPO / "docs" / "concepts" / "state.md"


def page_table(text: str, header: str) -> str:
    """The table of `text` that begins with `header`, up to its last row."""
    lines = text.splitlines()
    assert header in lines, f"{PAGE.name} has no table headed {header!r}"
    start = lines.index(header)
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def test_the_state_page_holds_the_corpus_table_as_its_data_renders_it() -> None:
    rendered = table()
    assert page_table(PAGE.read_text(), rendered.splitlines()[0]) == rendered


def test_the_two_changes_spark_accepts_wrongly_are_accepted_on_the_default_line() -> None:
    """A window's size, and `count(*)` changed to `sum(v)` under one name: Spark 4.3 goes on
    with the old state (tests/runner/test_state_restart.py shows what it writes is wrong)."""
    wrongly = [case for case in CORPUS if case.name in ACCEPTED_WRONGLY]
    assert len(wrongly) == len(ACCEPTED_WRONGLY)
    assert all(outcome(case, LINES[-1]) == ACCEPTS for case in wrongly)
