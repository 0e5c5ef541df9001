"""The reference pages made from the code (docs/reference/, by tests/docs/reference.py) are what
the code makes now; every FLINK_SQL_RUNNER_ variable the code names is on the environment page;
shell completion answers to the variable the command line page names."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import click
import pytest

from tests.docs import reference
from tests.docs.reference import COMMAND, COMPLETE_VAR, PROG, REPO

#: The code that may read the environment: the deployer and the runner it ships.
CODE = ("flink_sql_runner", "runner")
NAMED = re.compile(r"\bFLINK_SQL_RUNNER_[A-Z0-9_]*[A-Z0-9]\b")
#: `env_var("NAME")` (cli/options.py) names FLINK_SQL_RUNNER_NAME.
BUILT = re.compile(r"""\benv_var\(\s*["']([A-Z0-9_]+)["']\s*\)""")
#: The installed command, as its console script starts it (pyproject.toml's [project.scripts]):
#: click takes the program's name, and so completion's variable, from argv[0].
CONSOLE_SCRIPT = (
    "import sys\n"
    f"sys.argv[0] = '/usr/local/bin/{PROG}'\n"
    "from flink_sql_runner.cli.main import main\n"
    "sys.exit(main())\n"
)


@pytest.mark.parametrize("kind", sorted(reference.KINDS))
def test_each_generated_reference_page_is_what_the_code_makes_now(kind: str) -> None:
    stale = reference.differences(reference.KINDS[kind]())
    assert stale == [], (
        f"{', '.join(stale)}: not what the code makes now: run `{COMMAND}` and commit the pages"
    )


def test_no_command_page_is_left_of_a_command_that_is_gone() -> None:
    made = set(reference.cli_pages())
    folder = REPO / reference.REFERENCE / "cli"
    left = sorted(str(p.relative_to(REPO)) for p in folder.glob("*.md")) if folder.exists() else []
    assert [path for path in left if path not in made] == [], (
        "pages of commands the CLI no longer has: delete them (the folder is generated)"
    )


def test_every_link_of_the_generated_pages_reaches_a_file() -> None:
    broken = []
    for path, text in reference.pages().items():
        for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"```.*?```", "", text, flags=re.S)):
            file = target.partition("#")[0]
            if (
                file
                and not re.match(r"[a-z]+:", file)
                and not (REPO / path).parent.joinpath(file).exists()
            ):
                broken.append(f"{path}: {target}")
    assert broken == []


def _named_in_the_code() -> dict[str, str]:
    """Every FLINK_SQL_RUNNER_ variable the code names, with a file that names it."""
    found: dict[str, str] = {}
    for top in CODE:
        for folder, _, files in os.walk(REPO / top):  # symbolic links not followed
            for name in sorted(files):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as source:
                    text = source.read()
                names = NAMED.findall(text) + [f"FLINK_SQL_RUNNER_{n}" for n in BUILT.findall(text)]
                for variable in names:
                    found.setdefault(variable, os.path.relpath(path, REPO))
    return found


def test_every_variable_the_code_names_is_on_the_environment_page() -> None:
    """A variable that no option reads and `READ_BY_THE_CODE` does not list is one the code
    reads itself (`os.environ`): the page must say what it does."""
    documented = reference.every_option_variable() | set(reference.READ_BY_THE_CODE)
    missing = {v: where for v, where in _named_in_the_code().items() if v not in documented}
    assert missing == {}, (
        "the code names variables the environment page does not list: add them to "
        f"READ_BY_THE_CODE in tests/docs/reference.py and run `{COMMAND}`"
    )


def test_every_variable_the_page_says_the_code_reads_is_named_by_it() -> None:
    named = _named_in_the_code()
    gone = sorted(v for v in reference.READ_BY_THE_CODE if v not in named)
    assert gone == [], "READ_BY_THE_CODE lists variables the code no longer names"


def _as_installed(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, **env}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", CONSOLE_SCRIPT],
        env=environ,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_completion_variable_makes_the_command_print_its_completion_script(shell: str) -> None:
    """What the line of docs/reference/cli/index.md runs: a script that asks the command again
    through the same variable."""
    result = _as_installed({COMPLETE_VAR: f"{shell}_source"})
    assert result.returncode == 0, result.stderr
    assert f"{COMPLETE_VAR}={shell}_complete" in result.stdout
    assert "_flink_sql_runner_completion" in result.stdout


def test_completion_names_the_commands_a_word_begins() -> None:
    result = _as_installed(
        {COMPLETE_VAR: "bash_complete", "COMP_WORDS": f"{PROG} dep", "COMP_CWORD": "1"}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["plain,deploy", "plain,deploy-job"]


def test_a_renamed_options_variable_is_filed_as_its_old_spelling_and_says_what_it_is_now() -> None:
    """FLINK_SQL_RUNNER_LOG_FORMAT (watch's --log-format, renamed --output) is not one of the
    original tool's: it is under the renamed options' section, and its meaning names the
    option and variable it is the old spelling of. Every row of the page has a meaning."""
    page = (REPO / "docs" / "reference" / "environment.md").read_text()
    sections = {
        head: body for head, _, body in
        (part.partition("\n") for part in page.split("\n## ")[1:])
    }  # fmt: skip
    renamed = sections["Read by renamed options' old spellings"]
    original = sections["Read by the original tool's options"]
    assert "`FLINK_SQL_RUNNER_LOG_FORMAT`" in renamed
    assert "FLINK_SQL_RUNNER_LOG_FORMAT" not in original
    (row,) = [line for line in renamed.splitlines() if "`FLINK_SQL_RUNNER_LOG_FORMAT`" in line]
    assert row.endswith(
        "| The old spelling of `--output` / `FLINK_SQL_RUNNER_OUTPUT`, still read (with a note). |"
    )
    rows = [line for line in page.splitlines() if line.startswith("| `FLINK_SQL_RUNNER_")]
    assert [row for row in rows if not row.strip().strip("|").split("|")[-1].strip()] == []


def test_the_pages_do_not_depend_on_who_read_the_commands_before() -> None:
    """A context made without the program's settings (as a test may make one) caches each
    command's help option as `--help` alone; the pages are the same after it."""
    from flink_sql_runner.cli.main import main

    commands = [
        main.get_command(click.Context(main), n) for n in main.list_commands(click.Context(main))
    ]
    kept = {command: command._help_option for command in commands}
    try:
        for command in commands:
            command._help_option = None
            command.get_help_option(click.Context(command))  # cached as `--help` alone
        assert reference.differences(reference.KINDS["cli"]()) == []
    finally:
        for command, option in kept.items():  # as it was, for the tests after this one
            command._help_option = option
