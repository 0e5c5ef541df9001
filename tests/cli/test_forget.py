"""`forget` through the real command line, without Spark: it lists before it deletes, asks on a
terminal, refuses to guess without one, and touches nothing for a name that is nowhere."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from tests.support.cli import migrated_store, run_cli


def cli(*args: str, stdin: int | None = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """One CLI run whose stdin is not a terminal (unless the caller hands one)."""
    return run_cli(*args, stdin=stdin)


def deployed(state: Path, name: str = "tick-log", versions: int = 2) -> Path:
    """A job stored at v`versions`, not running, with a checkpoint per version, a log and a
    sink; returns the sink."""
    root, sink = state / "checkpoints", state / "output" / name
    job = {"name": name, "target-table": "t", "sql": "SELECT 1", "checkpoint-root": str(root)}
    LocalStore(state / "manifests").write(StoredManifest(job, {}, Meta.new(versions)), None)
    for version in range(1, versions + 1):
        (root / name / str(version) / "offsets").mkdir(parents=True)
        (root / name / str(version) / "offsets" / "0").write_text("v1\n{}\n{}")
        (root / name / "_control").mkdir(exist_ok=True)
        (root / name / "_control" / f"v{version}.status.json").write_text("{}")
    (state / "logs" / name).mkdir(parents=True)
    (state / "logs" / name / "20261125T010000.000Z-r1.log").write_text("a log line\n")
    (sink / "_spark_metadata").mkdir(parents=True)
    (sink / "_spark_metadata" / "0").write_text("v1")
    (sink / "part-0.parquet").write_text("rows")
    return sink


def tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}


def test_without_a_terminal_and_without_yes_nothing_is_touched(tmp_path: Path):
    deployed(tmp_path)
    before = tree(tmp_path)
    result = cli("forget", "tick-log", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "error: forget asks before it deletes, and there is no terminal to ask on: pass --yes "
        "(--dry-run lists what it would delete)"
    ]
    assert tree(tmp_path) == before


def test_dry_run_lists_what_it_would_delete_and_touches_nothing(tmp_path: Path):
    deployed(tmp_path)
    before = tree(tmp_path)
    result = cli("forget", "tick-log", "--dry-run", "--state-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    ck = tmp_path / "checkpoints" / "tick-log"
    assert result.stdout.splitlines() == [
        "tick-log:",
        f"  archive  manifest        {tmp_path}/manifests/tick-log.yaml",
        f"  delete   logs            {tmp_path}/logs/tick-log  (1 file, 11 B)",
        f"  delete   checkpoint v1   {ck}/1  (1 file, 8 B)",
        f"  delete   checkpoint v2   {ck}/2  (1 file, 8 B)",
        f"  delete   control files   {ck}/_control  (2 files, 4 B)",
        "  keep     sink            t  (its data, _spark_metadata and the runner's claims)",
    ]
    assert tree(tmp_path) == before


def test_yes_forgets_the_job_and_keeps_its_sink_and_its_archived_manifest(tmp_path: Path):
    sink = deployed(tmp_path)
    kept = tree(sink)
    result = cli("forget", "tick-log", "--yes", "--state-dir", str(tmp_path), "--output", "json")
    assert result.returncode == 0, result.stderr
    (doc,) = json.loads(result.stdout)["jobs"]
    assert doc["outcome"] == "forgotten"
    assert [item["what"] for item in doc["items"]] == [
        "manifest", "logs", "checkpoint v1", "checkpoint v2", "control files"
    ]  # fmt: skip
    assert not (tmp_path / "checkpoints" / "tick-log").exists()
    assert not (tmp_path / "logs" / "tick-log").exists()
    assert not (tmp_path / "manifests" / "tick-log.yaml").exists()
    assert len(list((tmp_path / "manifests" / "_archive" / "tick-log").glob("*.yaml"))) == 1
    assert tree(sink) == kept
    again = cli("forget", "tick-log", "--yes", "--state-dir", str(tmp_path))
    assert (again.returncode, again.stdout) == (0, "tick-log: nothing left to forget\n")


def test_on_a_terminal_it_asks_and_no_touches_nothing(tmp_path: Path):
    deployed(tmp_path)
    before = tree(tmp_path)
    answers = []
    for answer in ("n", "y"):
        leader, follower = pty.openpty()
        os.write(leader, f"{answer}\n".encode())
        try:
            result = cli("forget", "tick-log", "--state-dir", str(tmp_path), stdin=follower)
        finally:
            os.close(follower)
            os.close(leader)
        answers.append(result)
        if answer == "n":
            assert tree(tmp_path) == before, "nothing touched"
    no, yes = answers
    assert no.returncode == 1
    assert "Forget 1 job (" in no.stderr and "[y/N]" in no.stderr
    assert no.stderr.endswith("[y/N]: error: not confirmed: nothing was touched\n")
    assert yes.returncode == 0, yes.stderr
    assert yes.stdout.splitlines()[-1].startswith("tick-log: forgotten: manifest archived to ")
    assert not (tmp_path / "checkpoints" / "tick-log").exists()


def test_an_unknown_name_is_bad_input_and_nothing_is_touched(tmp_path: Path):
    deployed(tmp_path)
    before = tree(tmp_path)
    result = cli("forget", "tick-log", "no-such-job", "--yes", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: unknown job 'no-such-job': nothing of it in {tmp_path / 'manifests'} (stored, "
        "archived or records), no run of it on the local target, no run records or logs in "
        f"{tmp_path}"
    ]
    assert tree(tmp_path) == before


def test_names_or_all_and_json_does_not_ask(tmp_path: Path):
    both = cli("forget", "a", "--all", "--yes", "--state-dir", str(tmp_path))
    assert (both.returncode, both.stderr) == (
        2,
        "error: name the jobs to forget, or give --all (not both)\n",
    )
    asks = cli("forget", "a", "--output", "json", "--state-dir", str(tmp_path))
    assert asks.returncode == 2
    assert "--output json does not ask: pass --yes" in asks.stderr


def test_all_forgets_every_job_and_then_there_is_none(tmp_path: Path):
    deployed(tmp_path, "tick-log")
    deployed(tmp_path, "order-stats", versions=1)
    result = cli("forget", "--all", "--yes", "--state-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert [line.split(":")[:2] for line in result.stdout.splitlines() if "forgotten" in line] == [
        ["order-stats", " forgotten"],
        ["tick-log", " forgotten"],
    ]
    assert list((tmp_path / "checkpoints").iterdir()) == []
    again = cli("forget", "--all", "--yes", "--state-dir", str(tmp_path))
    assert (again.returncode, again.stdout) == (0, "No jobs to forget.\n")


def test_a_locked_store_is_exit_3_and_a_dry_run_needs_no_lock(tmp_path: Path):
    from flink_sql_runner.stores.local_lock import FileLockBackend
    from flink_sql_runner.stores.lock import Holder

    deployed(tmp_path)
    holder = Holder("other", "ci-runner-7", 4242, "deploy", "2023-11-14T22:13:20Z", 120.0)
    assert FileLockBackend(tmp_path / "manifests" / ".lock").create(holder)
    before = tree(tmp_path)
    args = ["--state-dir", str(tmp_path), "--lock-timeout", "0"]
    locked = cli("forget", "tick-log", "--yes", *args)
    assert locked.returncode == 3
    assert "the manifest store is locked by deploy by pid 4242" in locked.stderr
    assert tree(tmp_path) == before
    dry = cli("forget", "tick-log", "--dry-run", *args)
    assert dry.returncode == 0 and dry.stdout.startswith("tick-log:\n")


def test_a_migrated_job_not_deployed_yet_is_forgotten_one_or_all(tmp_path: Path):
    """Issue 40, item 2: a manifest `migrate` converted names no checkpoint root (no deploy of
    this tool has run it): `forget` and `forget --all` ended in KeyError: 'checkpoint-root'."""
    state = tmp_path / "state"
    names = migrated_store(state)
    one = cli("forget", "late-shipments", "--yes", "--state-dir", str(state))
    assert (one.returncode, one.stderr) == (0, "")
    manifests = state / "manifests"
    lines = one.stdout.splitlines()
    assert lines[:3] == [
        "late-shipments:",
        f"  archive  manifest        {manifests}/late-shipments.yaml",
        "  keep     sink            `kafka`.`late-shipments`  (its data, _spark_metadata and "
        "the runner's claims)",
    ]
    assert lines[3].startswith(
        f"late-shipments: forgotten: manifest archived to {manifests}/_archive/late-shipments/"
    )
    assert lines[4:] == []
    assert not (manifests / "late-shipments.yaml").exists()
    every = cli("forget", "--all", "--yes", "--state-dir", str(state), "--output", "json")
    assert (every.returncode, every.stderr) == (0, "")
    assert len(every.stdout.splitlines()) == 1, "one document, on one line"
    docs = json.loads(every.stdout)["jobs"]
    assert [(d["name"], d["outcome"]) for d in docs] == [
        (n, "forgotten") for n in names if n != "late-shipments"
    ]
    assert sorted(p.name for p in manifests.glob("*.yaml")) == []


def test_an_error_before_any_job_is_inside_the_one_json_document(tmp_path: Path):
    """Issue 55, item 4: `forget --output json` printed JSON Lines, one object per job; it
    prints one document, `{"jobs": [...]}`, an error before any job inside it."""
    result = cli("forget", "a", "b", "--yes", "--state-dir", str(tmp_path), "--output", "json")
    assert result.returncode == 2
    docs = json.loads(result.stdout)["jobs"]
    assert [(d["name"], d["outcome"]) for d in docs] == [("a", "failed"), ("b", "failed")]


@pytest.mark.parametrize(
    ("args", "names", "error"),
    [
        (["--yes"], [None], "name the jobs to forget, or give --all (not both)"),
        (["a", "--all", "--yes"], ["a"], "name the jobs to forget, or give --all (not both)"),
        (["a"], ["a"], "--output json does not ask: pass --yes (or --dry-run to list only)"),
    ],
)
def test_a_usage_error_with_output_json_is_one_document_too(
    args: list[str], names: list[str | None], error: str, tmp_path: Path
):
    """Every error of `forget --output json` is the one document, an object per NAME given
    (`"name": null` when none is), exit 2, the line on stderr as well; nothing is touched."""
    before = tree(tmp_path)
    result = cli("forget", *args, "--state-dir", str(tmp_path), "--output", "json")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [f"error: {error}"]
    assert json.loads(result.stdout) == {
        "jobs": [{"name": name, "outcome": "failed", "error": error} for name in names]
    }
    assert tree(tmp_path) == before
