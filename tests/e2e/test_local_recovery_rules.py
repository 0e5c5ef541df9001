"""Never lose, double or strand a job, on local Spark with real spark-submit.

One job (a rate source into parquet), through:
- a config change whose driver cannot start (`spark.driver.memory: banana`: the driver's JVM
  refuses the heap size before any of Spark runs), warm: its pre-flight fails and v1 commits
  on, the same driver;
- a config change Spark refuses at start, cold: v1 stops, the new run fails on v1's checkpoint,
  and v1 runs again from it;
- a query change whose v2 fails on its first batch after its go: rolled back the same way.
The store keeps v1's manifest, exit code 1 each time, with Spark's (or the JVM's) own words.
After each step the target, read with spark.read, holds every row exactly once.

Five starts. Proven elsewhere on real Spark, and not started again here: a prepared run refused
in its pre-flight by the run's own check (the code job of tests/e2e/test_schema_contracts.py,
and tests/runner/test_prepare.py on the tests' session); a new version writing a new folder and
a file source reading only its new folder (tests/e2e/test_local_pipeline.py, where the moves
come with a query change; that a path change alone makes a new version, numbered past a failed
version's folder, is decided in tests/decide/test_changes.py and tests/decide/test_tree.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: five starts
]


#: A micro-batch every 3 s, of as many rows as a step waits for: the job idles between its
#: batches, so a graceful stop finds none running and ends at once (a stop waits for the running
#: batch, up to 30 s, and batches back to back on a busy machine kept it waiting all that time,
#: past the deploy's stop timeout), and a running job costs the machine less.
TRIGGER = {"processingTime": "3 seconds"}


def progressed(spark, out: Path, version: int, at_least: int):
    def check():
        values, _ = rows_by_version(spark, out)
        return values if len(values.get(version, [])) >= at_least else None

    return check


def test_failed_starts_are_refused_or_rolled_back(workspace: Workspace, spark):
    ws = workspace
    out = ws.root / "out" / "ticks"
    ticks = {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 14}}
    tick_out = {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}}
    ws.write_tables([ticks, tick_out])
    job = {"target-table": "tick_out", "sql": "SELECT value FROM ticks", "trigger": TRIGGER}
    ws.write_job("ticks-job", **job)

    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert_exactly_once(wait_for(progressed(spark, out, 1, 14), what="v1 rows"))
    stored_v1 = ws.stored("ticks-job")

    # 1. A config change whose driver cannot start: its JVM refuses the heap size before any of
    # Spark runs. Warm (the default), the pre-flight fails and v1 is untouched, committing on.
    pid_before = ws.runs("ticks-job")[0]["pid"]
    ws.write_job("ticks-job", **job, sparkProperties={"spark.driver.memory": "banana"})
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert "pre-flight failed:" in fail and fail.endswith("v1 untouched, still running"), fail
    assert "banana" in result.stdout, "the JVM's own words on why"
    assert ws.stored("ticks-job") == stored_v1, "the store keeps v1's manifest"
    assert [(r["version"], r["pid"]) for r in ws.runs("ticks-job")] == [(1, pid_before)]
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(wait_for(progressed(spark, out, 1, before + 3), what="v1 committing on"))
    ws.write_job("ticks-job", **job)

    # 2. A config change Spark refuses at start, cold: v1 stops, the new run fails on v1's
    # checkpoint, and v1 runs again from it.
    ws.write_tables([{**ticks, "options": {"rowsPerBatch": -1}}, tick_out])
    assert ws.plan_json()["ticks-job"]["action"] == "stop-and-restart-from-checkpoint"
    pid_before = ws.runs("ticks-job")[0]["pid"]
    result = ws.deploy("--handover", "cold")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL ticks-job: rolled back: v1 running again from its checkpoint" in result.stdout
    assert "rowsPerBatch" in result.stdout, "Spark's own words on why"
    assert "Deploy finished with 1 failed: ticks-job." in result.stdout, result.stdout
    assert ws.stored("ticks-job") == stored_v1, "the store keeps v1's manifest"
    (run,) = ws.runs("ticks-job")
    assert run["version"] == 1 and run["pid"] != pid_before
    before = len(rows_by_version(spark, out)[0][1])
    values = wait_for(progressed(spark, out, 1, before + 14), what="v1 rows after rollback")
    assert_exactly_once(values)
    assert sorted(values) == [1]
    ws.write_tables([ticks, tick_out])

    # 3. A query change whose v2 fails on its first batch after its go (warm: v1 stopped, the
    # go given): rolled back, v1 runs again from its checkpoint.
    failing = "SELECT value FROM ticks WHERE assert_true(value < 0) IS NULL"
    ws.write_job("ticks-job", **{**job, "sql": failing})
    assert ws.plan_json()["ticks-job"]["action"] == "stop-and-start-clean"
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rolled back: v1 running again from its checkpoint" in result.stdout
    assert ws.stored("ticks-job") == stored_v1
    assert [r["version"] for r in ws.runs("ticks-job")] == [1]
    before = len(rows_by_version(spark, out)[0][1])
    values = wait_for(progressed(spark, out, 1, before + 14), what="v1 rows, rolled back again")
    assert_exactly_once(values)
    assert sorted(values) == [1], "the failed v2 wrote no row"
