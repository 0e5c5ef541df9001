"""Every command's --help lists only the options it uses: each option of the shared groups is
of use only to a command that does what it is for (loads manifests, submits, stops, ...), and
every option a command takes is read by it (by name in its body, or through settings_from)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import click
import pytest

from flink_sql_runner.cli import main as cli
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import settings_from
from flink_sql_runner.model.stored import Meta, StoredManifest
from tests.support.cli import REPO, run_cli

#: What each command does, as far as options are concerned.
DOES = {
    "validate": {"loads", "output"},
    # `saves`: a saved plan records where jobs run, the runner's path among them.
    "plan": {"loads", "store", "target", "spark", "output", "saves"},
    "deploy": {"loads", "store", "target", "spark", "output", "submits", "stops", "locks"},
    "deploy-job": {"loads", "store", "target", "spark", "output", "submits", "stops", "locks"},
    "status": {"loads", "store", "target", "spark", "output"},
    "stop": {"store", "target", "spark", "output", "stops", "locks"},
    "forget": {"store", "target", "spark", "output", "stops", "locks"},
    "logs": {"store", "target", "spark"},
    "inspect": {"store", "target", "spark", "output"},
    "preview": {"loads", "store", "target", "spark", "output"},
    "watch": {"store", "target", "spark", "submits", "stops", "output"},
    "resume": {"store", "locks"},
    "migrate": {"locks"},
    "lineage": {"loads", "output"},
    "jvm-archive": {"spark"},
    # `ui` reads the store and what runs, and serves pages: no document of its own.
    "ui": {"store", "target", "spark"},
}
#: The options of the shared groups, by what they are for.
FOR = {
    "--table-definition-path": "loads",
    "--template-file": "loads",
    "--strict-properties": "loads",
    "--manifest-store": "store",
    "--target": "target",
    "--master": "target",
    "--rest-gateway": "target",
    "--cluster-api": "target",
    "--namespace": "target",
    "--spark-submit": "spark",
    "--runner-path": ("submits", "saves"),
    "--start-timeout": "submits",
    "--stop-timeout": "stops",
    "--lock-timeout": "locks",
    "--output": "output",
}


def purposes(purpose: str | tuple[str, ...]) -> tuple[str, ...]:
    return (purpose,) if isinstance(purpose, str) else purpose


def options_of(command: click.Command) -> set[str]:
    return {p.opts[0] for p in command.params if isinstance(p, click.Option)}


def test_every_command_is_known_here():
    assert set(cli.all_commands()) == set(DOES), "a new command: say what it does in DOES"


def test_each_command_takes_the_shared_options_it_uses_and_no_other():
    for name, command in cli.all_commands().items():
        taken = {option for option in options_of(command) if option in FOR}
        wanted = {option for option, purpose in FOR.items() if set(purposes(purpose)) & DOES[name]}
        assert taken == wanted, (name, sorted(taken - wanted), sorted(wanted - taken))


def test_every_option_a_command_takes_is_read():
    assert 'kwargs.get("debug"' in inspect.getsource(handle_errors), "--debug is read there"
    settings_reads = set(re.findall(r'kw\.get\("(\w+)"', inspect.getsource(settings_from)))
    for name, command in cli.all_commands().items():
        callback = inspect.unwrap(command.callback)
        body = inspect.getsource(callback).split(":\n", 1)[1]  # after the signature
        named = set(inspect.signature(callback).parameters) - {"kw", "debug"}
        for param in command.params:
            if param.name in named:
                assert re.search(rf"\b{param.name}\b", body), (name, param.name, "never read")
            elif param.opts[0] in FOR:
                assert "settings_from(" in body, (name, param.name)
                assert param.name in settings_reads, (name, param.name, "settings_from skips it")


#: The one line a NAME that is not a job name gets, from every command that takes job names.
NOT_A_JOB_NAME = (
    "error: NAME '../x' is not a job name: job names use lowercase letters, digits, '-' and "
    "'_', a letter or digit first (at most 63); nothing was touched"
)


@pytest.mark.parametrize(
    "command",
    [["stop"], ["stop", "tick-log"], ["forget", "--yes"], ["logs"], ["inspect"], ["resume"]],
)
def test_a_name_that_is_not_a_job_name_is_bad_input_and_reaches_nothing(
    command: list[str], tmp_path: Path
) -> None:
    """Issue 40, item 5: `logs ../x` and `inspect ../x` reached the file system beside the
    store (here a manifest `../x` would find); every command taking a job name checks it by the
    job-name rule, before anything is read or touched: exit 2, one line naming the argument."""
    state = tmp_path / "state"
    (state / "manifests").mkdir(parents=True)
    job = {"name": "x", "target-table": "t", "sql": "SELECT 1", "checkpoint-root": "/ck"}
    (state / "x.yaml").write_text(StoredManifest(job, {}, Meta.new(1)).to_yaml())
    (state / "x").mkdir()
    (state / "x" / "20261125T010000.000Z-r1.log").write_text("a log line\n")
    before = sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*"))
    result = run_cli(*command, "../x", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [NOT_A_JOB_NAME]
    assert sorted((str(p), p.stat().st_mtime_ns) for p in tmp_path.rglob("*")) == before


def test_every_argument_that_takes_job_names_checks_them() -> None:
    for name, command in cli.all_commands().items():
        for param in command.params:
            if isinstance(param, click.Argument) and param.name in ("name", "names"):
                assert param.type.name == "job name", (name, param.name)


def test_every_commands_help_says_its_exit_codes():
    """Issue 55: five commands' help said none, and the top level's left out 130."""
    missing = [
        name for name in cli.all_commands() if "Exit codes:" not in run_cli(name, "--help").stdout
    ]
    assert missing == []
    assert "130 interrupted" in run_cli("--help").stdout


def test_every_option_read_from_the_environment_names_its_variable_in_help():
    """Issue 55: no help named its environment variable (`--path` showed `[required]` though
    FLINK_SQL_RUNNER_PATH satisfies it)."""
    for name, command in cli.all_commands().items():
        shown = " ".join(run_cli(name, "--help").stdout.split())
        for param in command.params:
            if isinstance(param, click.Option) and param.envvar and not param.hidden:
                assert f"{param.envvar}" in shown.replace("- ", "-"), (name, param.envvar)


@pytest.mark.parametrize("command", ["plan", "validate", "lineage", "preview"])
def test_path_says_its_variable_satisfies_it_and_is_not_shown_required(command: str) -> None:
    """Issue 55, item 4: `--path` showed `[required]` though FLINK_SQL_RUNNER_PATH satisfies it."""
    shown = " ".join(run_cli(command, "--help").stdout.split())
    assert "Required (or FLINK_SQL_RUNNER_PATH)." in shown
    assert "[required]" not in shown


@pytest.mark.parametrize("command", ["plan", "validate", "lineage", "preview"])
def test_a_missing_path_is_still_an_error_with_one_clear_line(command: str, tmp_path: Path) -> None:
    env = {"FLINK_SQL_RUNNER_PATH": ""}
    name = ["j"] if command == "preview" else []
    result = run_cli(command, *name, "--state-dir", str(tmp_path / "state"), env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "Error: Missing option '--path'. Give the job manifests with --path or "
        "FLINK_SQL_RUNNER_PATH."
    )
    assert not (tmp_path / "state").exists()


def test_the_path_from_the_environment_satisfies_it(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("name: j\ntarget-table: t\nsql: SELECT 1\n")
    result = run_cli("validate", env={"FLINK_SQL_RUNNER_PATH": str(job)}, cwd=tmp_path)
    assert "Missing option" not in result.stderr


@pytest.mark.parametrize(
    ("command", "option"),
    [
        ("validate", "--path"), ("lineage", "--path"), ("plan", "--path"), ("deploy", "--path"),
        ("status", "--path"), ("preview", "--path"), ("deploy-job", "--job-config-path"),
        ("validate", "--table-definition-path"), ("status", "--state-dir"),
    ],
)  # fmt: skip
def test_an_empty_path_on_the_command_line_is_refused_not_read_as_the_current_folder(
    command: str, option: str, tmp_path: Path
) -> None:
    """`--path "$JOBS"` with JOBS unset gives an empty value, which as a path is `.`: every
    job under the folder the command runs in would be read, planned and deployed. An empty
    value on the command line is refused as an empty variable is: exit 2, one line naming the
    option, nothing touched."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "tick-log.yaml").write_text(
        (REPO / "examples" / "queries" / "tick-log.yaml").read_text()
    )
    name = ["tick-log"] if command == "preview" else []
    state = tmp_path / "state"
    given = [] if option == "--state-dir" else ["--state-dir", str(state)]
    result = run_cli(command, *name, option, "", *given, cwd=jobs)
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        f"error: {option} is empty, which would be the folder the command runs in: give a path, "
        f"or leave {option} out; nothing was touched"
    ]
    assert not state.exists() and sorted(p.name for p in jobs.iterdir()) == ["tick-log.yaml"]


def top() -> click.Context:
    """The group's context, as a command's is made under it (without it, click caches a help
    option of `--help` alone on the command, and its reference page changes)."""
    return click.Context(cli.main, info_name="flink-sql-runner", **cli.main.context_settings)


#: Renamed options given by both spellings: (command, arguments, the setting, both spellings).
BOTH_SPELLINGS = [
    ("inspect", ["j", "--state", "--keys", "2", "--sample-keys", "3"], "sample_keys",
     ("--keys 2", "--sample-keys 3")),
    ("inspect", ["j", "--version", "1", "--query-version", "2"], "version",
     ("--version 1", "--query-version 2")),
    ("logs", ["j", "--version", "1", "--query-version", "2"], "version",
     ("--version 1", "--query-version 2")),
    ("watch", ["--log-format", "json", "--output", "text"], "output",
     ("--log-format json", "--output text")),
]  # fmt: skip


@pytest.mark.parametrize(("command", "args", "dest", "spellings"), BOTH_SPELLINGS)
def test_both_spellings_of_a_renamed_option_with_different_values_are_a_usage_error(
    command: str, args: list[str], dest: str, spellings: tuple[str, str]
) -> None:
    """A renamed option given by its spelling before and its own with two different values
    (`inspect --keys 2 --sample-keys 3`) is a usage error naming both: neither value is
    dropped without a word."""
    with pytest.raises(click.UsageError) as raised:
        ctx = cli.all_commands()[command].make_context(command, list(args), parent=top())
        pytest.fail(f"{command} {' '.join(args)}: took {dest}={ctx.params[dest]!r}")
    assert all(spelling in raised.value.message for spelling in spellings), raised.value.message


@pytest.mark.parametrize(("command", "args", "dest", "spellings"), BOTH_SPELLINGS)
def test_both_spellings_of_a_renamed_option_with_the_same_value_are_fine(
    command: str, args: list[str], dest: str, spellings: tuple[str, str]
) -> None:
    """The same value given by both spellings of a renamed option is that value."""
    same = [*args[:-1], args[-3]]
    ctx = cli.all_commands()[command].make_context(command, same, parent=top())
    assert str(ctx.params[dest]) == args[-3]


def test_two_spellings_disagreeing_is_one_line_and_exit_2(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run_cli("inspect", "j", "--version", "1", "--query-version", "2",
                     "--state-dir", str(state))  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [
        "error: --version 1 and --query-version 2 disagree (--version is the spelling before "
        "of --query-version): give one; nothing was touched"
    ]
    assert not state.exists()


#: The commands that print no result of their own to choose a form of: `logs` prints a log,
#: `migrate` what it converts (a one-off, read by people before it writes), `resume` and
#: `jvm-archive` one line.
WITHOUT_OUTPUT = {"logs", "migrate", "resume", "jvm-archive", "ui"}
#: The forms beyond text and json a command has.
MORE_FORMS = {
    "plan": ("markdown",), "deploy": ("markdown",), "deploy-job": ("markdown",),
    "preview": ("markdown",), "lineage": ("mermaid", "dot"),
}  # fmt: skip


def test_every_command_with_a_result_takes_one_output_option_read_from_one_variable():
    """Issue 55, item 4: `watch` took `--log-format`, `validate` had no JSON, `lineage` read
    its own variable: every command with a result takes `--output text|json[|...]`, read from
    FLINK_SQL_RUNNER_OUTPUT."""
    for name, command in cli.all_commands().items():
        (output,) = [p for p in command.params if p.name == "output"] or [None]
        if name in WITHOUT_OUTPUT:
            assert output is None, name
            continue
        assert isinstance(output, click.Option) and output.opts == ["--output"], name
        assert tuple(output.type.choices) == ("text", "json", *MORE_FORMS.get(name, ())), name
        assert output.envvar == "FLINK_SQL_RUNNER_OUTPUT", name
        assert output.default == "text", name
        shown = [p.opts[0] for p in command.params if isinstance(p, click.Option) and
                 not p.hidden]  # fmt: skip
        assert "--log-format" not in shown, name
