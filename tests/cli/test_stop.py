"""`stop` through the real command line, without Spark: unknown jobs, jobs that do not run,
JSON on every outcome, and a --help of what it uses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from flink_sql_runner.act.stop import StopResult
from flink_sql_runner.cli.main import main
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import migrated_store
from tests.support.cli import run_cli as cli


def stored_job(state: Path, name: str = "tick-log") -> None:
    job = {"name": name, "target-table": "t", "sql": "SELECT 1", "checkpoint-root": "/ck"}
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta.new(1)), None)


def test_a_name_neither_stored_nor_running_is_an_unknown_job(tmp_path: Path):
    state = tmp_path / "state"
    (state / "manifests").mkdir(parents=True)
    result = cli("stop", "no-such-job", "--state-dir", str(state), cwd=tmp_path)
    assert result.returncode == 2, "a name that is nowhere is bad input"
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"error: unknown job 'no-such-job': no manifest of it in {state / 'manifests'} and no "
        "run of it on the local target"
    ]


def test_an_error_is_one_json_document_with_output_json(tmp_path: Path):
    state = tmp_path / "state"
    (state / "manifests").mkdir(parents=True)
    result = cli("stop", "no-such-job", "--state-dir", str(state), "--output", "json")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: unknown job 'no-such-job'")
    assert json.loads(result.stdout) == {"jobs": [{
        "name": "no-such-job",
        "outcome": "failed",
        "error": f"unknown job 'no-such-job': no manifest of it in {state / 'manifests'} and "
        "no run of it on the local target",
    }]}  # fmt: skip


def test_a_locked_store_is_a_json_error_with_its_exit_code(tmp_path: Path):
    from flink_sql_runner.stores.local_lock import FileLockBackend
    from flink_sql_runner.stores.lock import Holder

    state = tmp_path / "state"
    holder = Holder("other", "ci-runner-7", 4242, "deploy", "2023-11-14T22:13:20Z", 120.0)
    assert FileLockBackend(state / "manifests" / ".lock").create(holder)
    args = ["--state-dir", str(state), "--lock-timeout", "0", "--output", "json"]
    result = cli("stop", "tick-log", *args)
    assert result.returncode == 3
    (document,) = json.loads(result.stdout)["jobs"]
    assert document["outcome"] == "failed"
    assert document["error"].startswith("the manifest store is locked by deploy by pid 4242")


def test_a_job_that_is_not_running_is_recorded_as_stopped_and_then_already_stopped(
    tmp_path: Path,
):
    state = tmp_path / "state"
    stored_job(state)
    text = cli("stop", "tick-log", "--state-dir", str(state))
    assert text.returncode == 0, text.stderr
    assert text.stdout == "tick-log: was not running; recorded as stopped (checkpoint kept)\n"
    stored = LocalStore(state / "manifests").read("tick-log").manifest
    assert stored is not None and stored.job["desired-state"] == "stopped"
    as_json = cli("stop", "tick-log", "--state-dir", str(state), "--output", "json")
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == {"jobs": [{
        "name": "tick-log",
        "outcome": "not-running",
        "result": "tick-log: already stopped; checkpoint kept",
    }]}  # fmt: skip
    assert LocalStore(state / "manifests").list_names() == ["tick-log"]


def test_help_lists_only_the_options_stop_uses():
    result = cli("stop", "--help")
    assert result.returncode == 0
    for used in ("--state-dir", "--manifest-store", "--target", "--master", "--output",
                 "--stop-timeout", "--lock-timeout", "--spark-submit", "--namespace"):  # fmt: skip
        assert used in result.stdout, used
    for unused in ("--table-definition-path", "--template-file", "--strict-properties",
                   "--runner-path", "--start-timeout"):  # fmt: skip
        assert unused not in result.stdout, unused
    refused = cli("stop", "tick-log", "--table-definition-path", "examples/tables")
    assert refused.returncode == 2
    assert "--table-definition-path: no such option of `flink-sql-runner stop`" in refused.stderr


def test_several_names_and_all_each_get_a_line_and_an_unknown_name_stops_none(tmp_path: Path):
    state = tmp_path / "state"
    for name in ("tick-log", "order-stats", "expensive-orders"):
        stored_job(state, name)
    store = LocalStore(state / "manifests")
    args = ["--state-dir", str(state)]

    typo = cli("stop", "tick-log", "tick-lgo", "order-stat", *args)
    assert typo.returncode == 2
    assert typo.stdout == ""
    assert typo.stderr.splitlines() == [
        f"error: unknown jobs 'tick-lgo', 'order-stat': no manifest of them in "
        f"{state / 'manifests'} and no run of them on the local target"
    ]
    assert "desired-state" not in store.read("tick-log").manifest.job, "nothing stopped"

    two = cli("stop", "tick-log", "order-stats", *args)
    assert two.returncode == 0, two.stderr
    assert two.stdout.splitlines() == [
        "tick-log: was not running; recorded as stopped (checkpoint kept)",
        "order-stats: was not running; recorded as stopped (checkpoint kept)",
    ]

    every = cli("stop", "--all", *args, "--output", "json")
    assert every.returncode == 0, every.stderr
    assert len(every.stdout.splitlines()) == 1, "one document, on one line"
    assert json.loads(every.stdout)["jobs"] == [
        {
            "name": "expensive-orders",
            "outcome": "not-running",
            "result": "expensive-orders: was not running; recorded as stopped (checkpoint kept)",
        },
        {
            "name": "order-stats",
            "outcome": "not-running",
            "result": "order-stats: already stopped; checkpoint kept",
        },
        {
            "name": "tick-log",
            "outcome": "not-running",
            "result": "tick-log: already stopped; checkpoint kept",
        },
    ]
    assert all(store.read(n).manifest.job["desired-state"] == "stopped" for n in store.list_names())


def test_stop_needs_names_or_all_but_not_both(tmp_path: Path):
    for args in ((), ("tick-log", "--all")):
        result = cli("stop", *args, "--state-dir", str(tmp_path / "state"))
        assert result.returncode == 2, args
        assert result.stderr.splitlines() == [
            "error: name the jobs to stop, or give --all (not both)"
        ], args


def test_a_migrated_job_not_deployed_yet_has_nothing_to_stop(tmp_path: Path):
    """Issue 40, item 2: a manifest `migrate` converted names no checkpoint root (no deploy of
    this tool has run it): `stop` ended in KeyError: 'checkpoint-root'."""
    state = tmp_path / "state"
    names = migrated_store(state)
    result = cli("stop", "late-shipments", "--state-dir", str(state), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        "late-shipments: not deployed by this tool yet (converted by `migrate`: no checkpoint); "
        "nothing to stop; recorded as stopped\n"
    )
    stored = LocalStore(state / "manifests").read("late-shipments").manifest
    assert stored is not None and stored.job["desired-state"] == "stopped"
    again = cli("stop", "late-shipments", "--state-dir", str(state), cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout == (
        "late-shipments: already stopped (not deployed by this tool yet: no checkpoint)\n"
    )
    every = cli("stop", "--all", "--state-dir", str(state), "--output", "json", cwd=tmp_path)
    assert (every.returncode, every.stderr) == (0, "")
    docs = json.loads(every.stdout)["jobs"]
    assert [(d["name"], d["outcome"]) for d in docs] == [(n, "not-running") for n in names]


class Interrupted:
    """A deployment whose stop reports `a` stopped, then gets Ctrl-C (or the SIGTERM the
    command line turns into one) with `b` not reported."""

    def __init__(self, settings: object) -> None:
        pass

    def stop(self, names: object) -> Iterator[StopResult]:
        yield StopResult("a", "stopped", "a: stopped (checkpoint kept)")
        raise KeyboardInterrupt


def test_an_interrupted_stop_still_prints_one_json_document(monkeypatch: pytest.MonkeyPatch):
    """Ctrl-C or SIGTERM during `stop --output json`: the one document still comes, with what
    was done and each NAME with no result `left-in-flight`; exit 130."""
    monkeypatch.setattr("flink_sql_runner.cli.jobs.Deployment", Interrupted)
    result = CliRunner().invoke(main, ["stop", "a", "b", "--output", "json"])
    assert result.exit_code == 130
    assert result.stderr == "interrupted\n"
    assert json.loads(result.stdout) == {"jobs": [
        {"name": "a", "outcome": "stopped", "result": "a: stopped (checkpoint kept)"},
        {"name": "b", "outcome": "left-in-flight",
         "error": "b: interrupted before its result was known: give the command again"},
    ]}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "names"), [([], [None]), (["a", "--all"], ["a"]), (["a", "b", "--all"], ["a", "b"])]
)
def test_a_usage_error_with_output_json_is_one_document_too(
    args: list[str], names: list[str | None], tmp_path: Path
):
    """No NAME and no --all, or both, with `--output json`: the same document as an unknown
    NAME's, an object per NAME given (`"name": null` when none is), exit 2, the line on stderr
    as well; nothing is touched."""
    state = tmp_path / "state"
    result = cli("stop", *args, "--state-dir", str(state), "--output", "json")
    assert result.returncode == 2
    error = "name the jobs to stop, or give --all (not both)"
    assert result.stderr.splitlines() == [f"error: {error}"]
    assert json.loads(result.stdout) == {
        "jobs": [{"name": name, "outcome": "failed", "error": error} for name in names]
    }
    assert not state.exists()


def test_stop_all_of_a_store_folder_that_does_not_exist_says_so_and_creates_nothing(
    tmp_path: Path,
):
    """`stop --all --manifest-store <a typo>` created the folder and answered `{"jobs": []}`,
    exit 0, while the real store's jobs went on running. A store folder that does not exist is
    one line, exit 2 (with `--output json`, in the one document), and nothing is created."""
    typo = tmp_path / "manifsets"
    args = ["--manifest-store", str(typo), "--state-dir", str(tmp_path / "s")]
    error = (
        f"the manifest store {typo} does not exist (nothing was deployed there): check "
        "--manifest-store and --state-dir; nothing was touched"
    )
    text = cli("stop", "--all", *args)
    assert (text.returncode, text.stdout, text.stderr) == (2, "", f"error: {error}\n")
    as_json = cli("stop", "--all", *args, "--output", "json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout) == {
        "jobs": [{"name": None, "outcome": "failed", "error": error}]
    }
    assert not typo.exists() and not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    "args",
    [["status"], ["inspect", "j"], ["forget", "j", "--yes"], ["watch", "--once"], ["resume", "j"]],
)
def test_a_command_that_only_reads_or_stops_refuses_a_store_folder_that_is_not_there(
    args: list[str], tmp_path: Path
):
    """`status`, `inspect`, `forget`, `watch` and `resume` of a store folder that does not
    exist: one line, exit 2, the folder not created (not "no jobs")."""
    typo = tmp_path / "manifsets"
    result = cli(*args, "--manifest-store", str(typo), "--state-dir", str(tmp_path / "s"))
    assert result.returncode == 2, result.stdout
    assert result.stderr.splitlines() == [
        f"error: the manifest store {typo} does not exist (nothing was deployed there): check "
        "--manifest-store and --state-dir; nothing was touched"
    ]
    assert not typo.exists()


@pytest.mark.s3
@pytest.mark.parametrize("args", [["stop", "--all"], ["status"], ["inspect", "j"]])
def test_a_bucket_that_does_not_exist_is_an_error_not_a_store_without_jobs(
    args: list[str], s3_env: dict[str, str], tmp_path: Path
):
    """On S3 the store's first call says a bucket that does not exist (stores/s3_client.py):
    `stop --all` and `status` never read it as a store without jobs, and exit non-zero."""
    store = "s3://no-such-bucket-here/jobs/"
    result = cli(*args, "--manifest-store", store, "--state-dir", str(tmp_path / "s"),
                 env=s3_env)  # fmt: skip
    assert result.returncode not in (0, 130), result.stdout
    assert "bucket no-such-bucket-here does not exist" in result.stderr, result.stderr
    assert "No jobs" not in result.stdout and '"jobs": []' not in result.stdout


def test_stop_all_with_no_job_says_so(tmp_path: Path):
    """`stop --all` of a store without jobs says it found none, as `forget --all` does, rather
    than printing nothing; JSON stays one document with no job."""
    (tmp_path / "state" / "manifests").mkdir(parents=True)
    text = cli("stop", "--all", "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert (text.returncode, text.stdout) == (0, "No jobs to stop.\n"), text.stderr
    shown = cli("stop", "--all", "--output", "json", "--state-dir", str(tmp_path / "state"))
    assert (shown.returncode, json.loads(shown.stdout)) == (0, {"jobs": []}), shown.stderr
    stored_job(tmp_path / "state")
    one = cli("stop", "--all", "--state-dir", str(tmp_path / "state"), cwd=tmp_path)
    assert one.returncode == 0 and "No jobs" not in one.stdout, one.stdout + one.stderr
    assert one.stdout.startswith("tick-log: "), one.stdout
