"""`.ci/run` runs the README's two set-up commands as written: the first in its clone before the
tests (the suite must pass where a user ran it), the second as the suite."""

from __future__ import annotations

from tests.support.doctest_md import REPO, read_blocks

#: The comment line in .ci/run after which a stage's command is the README's, word for word.
THAT_COMMAND = "(everything below this line is that command)"


def set_up_commands() -> list[str]:
    """The README's two set-up commands: the first two `bash` blocks of its Install section."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in read_blocks("README.md", section) if b.lang == "bash"]
    return [blocks[0].text.strip(), blocks[1].text.strip()]


def test_ci_runs_the_readmes_two_commands_in_order_first_the_first() -> None:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    ran = [lines[i + 1].strip() for i, line in enumerate(lines) if line.endswith(THAT_COMMAND)]
    first, tests = set_up_commands()
    assert ran == [first, tests], "edit .ci/run with the README's Install (or the other way)"
    assert tests.endswith("pytest -n 3"), (
        "the suite runs in three workers (docs/developers/testing.md)"
    )
    after = lines.index(next(line for line in lines if line.strip() == ran[0])) + 1
    steps = [line for line in lines[after : after + 5] if line and not line.startswith("#")]
    # The page looked at as a new user opens it next (issue 56), then the jobs stopped.
    assert steps[:2] == ["python -m tests.ui.first_look", "flink-sql-runner stop --all"], (
        "the first command's jobs looked at in the page, then stopped"
    )
