"""`logs` through the real command line, without Spark: an unknown job, a job with no log yet,
a log printed whole and its tail, from another folder than the state's parent."""

from __future__ import annotations

from pathlib import Path

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import run_cli as cli


def test_an_unknown_job_is_bad_input(tmp_path: Path):
    state = tmp_path / "state"
    result = cli("logs", "no-such-job", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: unknown job 'no-such-job': no manifest of it in {state / 'manifests'}, no run "
        "of it on the local target and no log of it"
    ]


def test_a_job_with_no_log_yet_says_so_and_exits_1(tmp_path: Path):
    state = tmp_path / "state"
    job = {"name": "tick-log", "target-table": "t", "sql": "SELECT 1", "checkpoint-root": "/ck"}
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta.new(1)), None)
    result = cli("logs", "tick-log", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.splitlines() == ["tick-log: no log of any run yet"]
    result = cli(
        "logs", "tick-log", "--query-version", "3", "--state-dir", str(state), cwd=tmp_path
    )
    assert result.stderr.splitlines() == ["tick-log: no log of v3 yet"]


def test_the_last_run_s_log_whole_or_its_tail(tmp_path: Path):
    state = tmp_path / "state"
    folder = state / "logs" / "tick-log"
    folder.mkdir(parents=True)
    old = folder / "20261125T010000.000Z-run-a.log"
    old.write_text("==== 2026-11-25T01:00:00 flink-sql-runner-tick-log-v1 run run-a\nold run\n")
    new = folder / "20261125T020000.000Z-run-b.log"
    new.write_text(
        "==== 2026-11-25T02:00:00 flink-sql-runner-tick-log-v2 run run-b\none\ntwo\nthree\n"
    )
    result = cli("logs", "tick-log", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:] == ["one", "two", "three"]
    assert result.stderr.splitlines() == [f"==> {new} <=="]
    tail = cli("logs", "tick-log", "--tail", "2", "--state-dir", str(state), cwd=tmp_path)
    assert tail.stdout.splitlines() == ["two", "three"]
    older = cli("logs", "tick-log", "--query-version", "1", "--state-dir", str(state), cwd=tmp_path)
    assert older.stdout.splitlines()[1:] == ["old run"]
    by_run = cli("logs", "tick-log", "--run", "run-a", "-f", "--state-dir", "state",
                 cwd=tmp_path)  # fmt: skip
    assert by_run.returncode == 0, "following a run that is not up prints its log and ends"
    assert by_run.stdout.splitlines()[1:] == ["old run"]


def test_the_query_versions_spelling_before_still_works_with_a_note(tmp_path: Path) -> None:
    """Issue 55: `--version` is the tool's release; a job's query version is `--query-version`,
    and `--version N`, its spelling before, still works with a note."""
    before = cli("logs", "tick-log", "--version", "3", "--state-dir", str(tmp_path / "s"),
                 cwd=tmp_path)  # fmt: skip
    now = cli("logs", "tick-log", "--query-version", "3", "--state-dir", str(tmp_path / "s"),
              cwd=tmp_path)  # fmt: skip
    note = "note: --version N is now --query-version N (the tool's --version is its release)"
    assert before.stderr.splitlines()[0] == note
    assert before.stderr.splitlines()[1:] == now.stderr.splitlines()
    assert before.returncode == now.returncode
    assert "--version" not in cli("logs", "--help").stdout
