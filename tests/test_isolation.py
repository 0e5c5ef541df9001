"""The suite's guard against touching the user's `./.flink-sql-runner/`
(tests/support/isolation.py): what it notices, what running jobs do that it must not mistake for
a test's doing."""

from __future__ import annotations

import os
from pathlib import Path

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.watch.status import status_rows
from tests.support.cli import run_cli
from tests.support.fakes import FakeStore, FakeTarget
from tests.support.isolation import changes, fingerprint


def example_state(root: Path) -> Path:
    """A state folder as the README's deploy leaves it, one job running."""
    state = root / ".flink-sql-runner"
    for path in (
        "manifests/tick-log.yaml",
        "runs/tick-log/run-1.json",
        "logs/tick-log/20261123T124611.934Z-run-1.log",
        "checkpoints/tick-log/1/commits/0",
        "output/tick_log/part-0.parquet",
    ):
        (state / path).parent.mkdir(parents=True, exist_ok=True)
        (state / path).write_text("x")
    return state


def test_what_running_jobs_write_is_not_a_change(tmp_path: Path):
    state = example_state(tmp_path)
    before = fingerprint(state)
    (state / "checkpoints/tick-log/1/commits/1").write_text("y")
    (state / "output/tick_log/part-1.parquet").write_text("y")
    with (state / "logs/tick-log/20261123T124611.934Z-run-1.log").open("a") as log:
        log.write("more")
    assert changes(before, fingerprint(state)) == []


def test_what_a_deployer_writes_is_a_change(tmp_path: Path):
    state = example_state(tmp_path)
    before = fingerprint(state)
    (state / "manifests/tick-log.yaml").write_text("changed")
    (state / "manifests/.lock").write_text("{}")
    (state / "runs/tick-log/run-1.json").unlink()
    (state / "checkpoints/order-stats").mkdir()
    (state / "logs/tick-log/20261124T000000.000Z-run-2.log").write_text("")
    assert changes(before, fingerprint(state)) == [
        "checkpoints/order-stats: created",
        "logs/tick-log/20261124T000000.000Z-run-2.log: created",
        "manifests/.lock: created",
        "runs/tick-log/run-1.json: deleted",
        "manifests/tick-log.yaml: written",
    ]
    assert changes(None, fingerprint(state)) == ["it was created"]
    assert changes(None, None) == []


def test_a_command_without_state_dir_uses_the_tests_own_folder(tmp_path: Path):
    default = Path(os.environ["FLINK_SQL_RUNNER_STATE_DIR"])
    assert default.is_relative_to(tmp_path.parents[1]), "a temp folder of this test session"
    result = run_cli("stop", "no-such-job")  # takes the store's lock: writes into the state
    assert result.returncode == 2, result.stderr
    assert str(default / "manifests") in result.stderr


def test_a_test_that_patches_path_does_not_fool_the_guard(tmp_path: Path, monkeypatch):
    """The guard runs in a test's teardown, while the test's own patches still hold: a test that
    makes `Path.lstat` refuse (tests/stores/test_storage_listing.py) saw every file of a user's
    state folder reported deleted."""
    state = example_state(tmp_path)
    before = fingerprint(state)

    def refused(self: Path, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with monkeypatch.context() as patch:
        for method in ("lstat", "stat", "iterdir", "rglob", "glob", "is_dir", "is_file"):
            patch.setattr(Path, method, refused)
        assert fingerprint(state) == before
    assert len(before) == 12


def test_settings_made_in_a_test_use_the_tests_own_folder(tmp_path: Path, monkeypatch):
    """A test that makes its own `Settings()` (no --state-dir) and reads status through it writes
    its caches into the session's temp state folder, never into `.flink-sql-runner` of the folder
    it runs in: CI runs the suite beside the README's example jobs, and
    tests/act/test_failed_start.py once wrote `.flink-sql-runner/cache/` there."""
    user = example_state(tmp_path / "clone")
    monkeypatch.chdir(tmp_path / "clone")
    before = fingerprint(user)
    default = Path(os.environ["FLINK_SQL_RUNNER_STATE_DIR"])
    assert Settings().state_dir == default
    status_rows(Deployment(Settings(), store=FakeStore(), target=FakeTarget()), [])
    assert changes(before, fingerprint(user)) == []
    assert (default / "cache" / "status.json").is_file()
