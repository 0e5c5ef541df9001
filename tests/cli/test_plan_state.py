"""`plan` of a stateful query change through the real command line and the real probe (the
deployer's spark-submit, runner/schema_probe.py, runner/stateful_plan.py): a windowed count on a
rate source, whose new version would go on from now: with empty state, or from v1's."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import load_jobs
from flink_sql_runner.stores.local import LocalStore
from tests.support import warm_cli

pytestmark = pytest.mark.spark

STATE = ".flink-sql-runner"
COUNTS = (
    "SELECT window.start AS minute, count(*) AS ticks FROM ticks{where} "
    "GROUP BY window(timestamp, '{size}')"
)
CATALOG = {
    "tables": [
        {"name": "ticks", "format": "rate", "options": {"rowsPerSecond": 5},
         "watermark": {"column": "timestamp", "delay": "10 seconds"}},
        {"name": "tick_counts", "format": "parquet", "options": {"path": "out/tick_counts"}},
    ]
}  # fmt: skip


def write_job(root: Path, **fields) -> None:
    job = {"name": "counts", "target-table": "tick_counts",
           "sql": COUNTS.format(where="", size="20 seconds"), **fields}  # fmt: skip
    (root / "queries" / "counts.yaml").write_text(yaml.safe_dump(job, sort_keys=False))


def plan(root: Path, *more: str):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FLINK_SQL_RUNNER_")}
    environ.update({"FLINK_SQL_RUNNER_STATE_DIR": STATE, "NO_COLOR": "1"})
    argv = ["plan", "--path", "queries", "--table-definition-path", "tables", *more]
    return warm_cli.run(argv, cwd=root, env=environ, stdin=subprocess.DEVNULL, timeout=300)


@pytest.fixture
def deployed(tmp_path: Path) -> Path:
    """v1 of `counts` stored, with a committed batch, not running."""
    (tmp_path / "queries").mkdir()
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "catalog.yaml").write_text(yaml.safe_dump(CATALOG, sort_keys=False))
    write_job(tmp_path)
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        catalog = load_catalog([Path("tables")])
        (job,) = load_jobs([Path("queries")], None, catalog, Path(STATE))
    finally:
        os.chdir(cwd)
    LocalStore(tmp_path / STATE / "manifests").write(
        StoredManifest(job.spec, job.tables, replace(Meta.new(1), spark_version="4.3.0")), None
    )
    checkpoint = tmp_path / job.checkpoint_location(1)
    for folder in ("offsets", "commits"):
        (checkpoint / folder).mkdir(parents=True)
        (checkpoint / folder / "0").write_text("v1\n{}\n")
    (checkpoint / "metadata").write_text('{"id": "x"}')
    return tmp_path


def test_a_window_changed_on_a_source_that_goes_on_is_refused_a_kept_one_continues(deployed):
    """Resized: refused; a filter added (kept): continues from v1's state; resized with
    `on-state-change: partial`: accepted partial."""
    write_job(deployed, sql=COUNTS.format(where="", size="30 seconds"))
    refused = plan(deployed)
    assert refused.returncode == 1, refused.stderr
    assert "counts  refused  v1" in refused.stdout
    assert "state: partial, refused (on-state-change: refuse)" in refused.stdout
    assert (
        "~ aggregation by window(timestamp, 30 seconds): count(*): rebuilt: window 20 seconds "
        "-> 30 seconds"
    ) in refused.stdout
    assert not (deployed / STATE / "checkpoints" / "counts" / "2").exists()
    assert list((deployed / STATE).glob("cache/schemas/*.json")), "the probe's answers cached"

    write_job(deployed, sql=COUNTS.format(where=" WHERE value > 3", size="20 seconds"))
    kept = plan(deployed, "--output", "json")
    assert kept.returncode == 0, kept.stderr
    (decision,) = json.loads(kept.stdout)["jobs"]
    assert decision["action"] == "start-clean" and decision["state"]["how"] == "continued"
    (operator,) = decision["state"]["operators"]
    assert operator["verdict"] == "kept"
    assert "-> value > 3" in operator["mixes"][0]
    (start,) = [s for s in decision["steps"] if s["step"] == "start"]
    assert start["continues-from"]["query-version"] == 1

    write_job(deployed, sql=COUNTS.format(where="", size="30 seconds"),
              **{"on-state-change": "partial"})  # fmt: skip
    accepted = plan(deployed, "--output", "json")
    assert accepted.returncode == 0, accepted.stderr
    (decision,) = json.loads(accepted.stdout)["jobs"]
    assert decision["action"] == "start-clean"
    state = decision["state"]
    assert (state["how"], state["refused"], state["on-state-change"]) == (
        "partial",
        False,
        "partial",
    )


def test_a_change_that_keeps_no_state_asks_no_spark(deployed):
    """The new query is read without Spark (no aggregate, no join, ...): nothing to judge."""
    write_job(deployed, sql="SELECT value, timestamp FROM ticks WHERE value > 3")
    found = plan(deployed, "--output", "json")
    assert found.returncode == 0, found.stderr
    (decision,) = json.loads(found.stdout)["jobs"]
    assert decision["action"] == "start-clean" and "state" not in decision
    assert not list((deployed / STATE).glob("cache/schemas/*.json"))
