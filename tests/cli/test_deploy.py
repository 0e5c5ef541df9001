"""`deploy` through the real command line without starting Spark: the lock and --prune."""

from __future__ import annotations

import socket
from pathlib import Path

import yaml

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.local_lock import FileLockBackend
from flink_sql_runner.stores.lock import Holder, this_machine
from tests.support.cli import REPO
from tests.support.cli import run_cli as cli
from tests.support.examples import EXAMPLE_JOBS

TABLES = ["--table-definition-path", "examples/tables"]


def stopped_examples(folder: Path) -> Path:
    """The example jobs with desired-state: stopped, so a deploy starts nothing."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLE_JOBS:
        doc = yaml.safe_load((REPO / "examples" / "queries" / f"{name}.yaml").read_text())
        doc["desired-state"] = "stopped"
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    return folder


def store_with_orphan(folder: Path) -> LocalStore:
    store = LocalStore(folder)
    job = {"name": "gone", "target-table": "t", "sql": "SELECT 1", "checkpoint-root": "/ck"}
    store.write(StoredManifest(job, {}, Meta(4, "id-4", "2026-01-01T00:00:00Z")), None)
    return store


def test_a_locked_store_makes_deploy_wait_then_exit_3_naming_the_holder(tmp_path: Path):
    state = tmp_path / "state"
    holder = Holder("other", "ci-runner-7", 4242, "deploy", "2023-11-14T22:13:20Z", 120.0)
    assert FileLockBackend(state / "manifests" / ".lock").create(holder)
    args = ["--path", "examples/queries", *TABLES, "--state-dir", str(state)]
    result = cli("deploy", *args, "--lock-timeout", "1")
    assert result.returncode == 3, result.stdout + result.stderr
    lock = state / "manifests" / ".lock"
    assert result.stderr.strip().splitlines() == [
        f"waiting for the manifest store's lock ({lock}): held by deploy by pid 4242 on "
        "ci-runner-7 since 2023-11-14T22:13:20Z; waited 0 s, giving up in 1 s (--lock-timeout)",
        "error: the manifest store is locked by deploy by pid 4242 on ci-runner-7 since "
        f"2023-11-14T22:13:20Z ({lock}); waited 1 s",
    ]
    assert not (state / "runs").exists(), "nothing was started"
    # plan, status and --dry-run take no lock.
    assert cli("plan", *args).returncode == 0
    assert cli("status", "--state-dir", str(state)).returncode == 0
    assert cli("deploy", *args, "--dry-run").returncode == 0
    assert cli("stop", "tick-log", "--state-dir", str(state), "--lock-timeout", "0").returncode == 3


def test_a_lock_left_by_a_killed_deploy_on_this_machine_does_not_block(tmp_path: Path):
    state = tmp_path / "state"
    dead = Holder(
        "dead", socket.gethostname(), 2**22 + 17, "deploy", "then", 9e9, this_machine(), "linux:1"
    )
    assert FileLockBackend(state / "manifests" / ".lock").create(dead)
    jobs = stopped_examples(tmp_path / "jobs")
    result = cli(
        "deploy", "--path", str(jobs), *TABLES, "--state-dir", str(state), "--lock-timeout", "0"
    )
    assert result.returncode == 0, result.stderr
    assert not (state / "manifests" / ".lock").exists()


def test_prune_archives_orphans_and_only_with_the_flag(tmp_path: Path):
    state = tmp_path / "state"
    store = store_with_orphan(state / "manifests")
    jobs = stopped_examples(tmp_path / "jobs")
    args = ["--path", str(jobs), *TABLES, "--state-dir", str(state)]

    kept = cli("deploy", *args)
    assert kept.returncode == 0, kept.stderr
    assert "gone" in kept.stdout and "orphaned" in kept.stdout
    assert store.list_names() == ["gone"]

    pruned = cli("deploy", *args, "--prune")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert "prune" in pruned.stdout and "manifest archived to" in pruned.stdout
    assert store.list_names() == []
    (archived,) = (state / "manifests" / "_archive" / "gone").iterdir()
    assert yaml.safe_load(archived.read_text())["meta"]["query-version"] == 4


def test_nothing_is_pruned_when_input_is_invalid_or_empty(tmp_path: Path):
    state = tmp_path / "state"
    store = store_with_orphan(state / "manifests")
    jobs = stopped_examples(tmp_path / "jobs")
    (jobs / "broken.yaml").write_text("name: Broken!\n")
    invalid = cli("deploy", "--path", str(jobs), *TABLES, "--state-dir", str(state), "--prune")
    assert invalid.returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = cli("deploy", "--path", str(empty), *TABLES, "--state-dir", str(state), "--prune")
    assert nothing.returncode == 2
    assert "no *.yaml or *.yml job files" in nothing.stderr
    assert store.list_names() == ["gone"]


def test_desired_state_stopped_is_recorded_the_same_whichever_way_the_job_stopped(
    tmp_path: Path,
):
    """`stop` then a deploy of `desired-state: stopped`, or that deploy alone: the same stored
    manifest, `status` in sync, and a later `stop` says it is already stopped."""
    from tests.support.examples import stored_examples_with

    jobs = stopped_examples(tmp_path / "jobs")
    stores = {}
    for way in ("stop-then-deploy", "deploy-only"):
        store = stored_examples_with(tmp_path / way, **{n: {} for n in EXAMPLE_JOBS})
        on = ["--manifest-store", str(store)]  # the state folder the store's jobs were made for
        if way == "stop-then-deploy":
            stopped = cli("stop", "tick-log", *on)
            assert stopped.returncode == 0, stopped.stderr
            assert "recorded as stopped" in stopped.stdout
        deployed = cli("deploy", "--path", str(jobs), *TABLES, *on)
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        status = cli("status", "--path", str(jobs), *TABLES, *on, "--output", "json")
        rows = {row["name"]: row for row in yaml.safe_load(status.stdout)["jobs"]}
        assert (rows["tick-log"]["desired-state"], rows["tick-log"]["drift"]) == (
            "stopped",
            "in sync",
        ), way
        assert rows["tick-log"]["health"] == "stopped"
        again = cli("stop", "tick-log", *on)
        assert (again.returncode, again.stdout) == (
            0,
            "tick-log: already stopped; checkpoint kept\n",
        )
        stores[way] = LocalStore(store).read("tick-log").manifest
    assert stores["stop-then-deploy"].job == stores["deploy-only"].job
    assert stores["stop-then-deploy"].meta.query_version == stores["deploy-only"].meta.query_version


def test_a_timeout_that_is_no_finite_number_is_refused_before_anything(tmp_path: Path):
    state = tmp_path / "state"
    jobs = stopped_examples(tmp_path / "jobs")
    for value in ("0", "-5", "soon", "nan", "inf", "1e999"):
        refused = cli("deploy", "--path", str(jobs), *TABLES, "--state-dir", str(state),
                      "--prepare-timeout", value)  # fmt: skip
        assert refused.returncode == 2, refused.stderr
        assert "--prepare-timeout" in refused.stderr
    for option in ("--start-timeout", "--stop-timeout", "--lock-timeout"):
        refused = cli("deploy", "--path", str(jobs), *TABLES, "--state-dir", str(state),
                      option, "nan")  # fmt: skip
        assert refused.returncode == 2 and option in refused.stderr, refused.stderr
    for value in ("-1", "601", "nan", "inf"):  # 0 is none; the runner takes at most 3600
        refused = cli("deploy", "--path", str(jobs), *TABLES, "--state-dir", str(state),
                      "--warm-up", value)  # fmt: skip
        assert refused.returncode == 2 and "--warm-up" in refused.stderr, refused.stderr
    assert not state.exists(), "nothing touched"
