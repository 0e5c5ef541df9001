"""One job through its whole life on local Spark, with real spark-submit, checking the data.

new (v1) -> unchanged (noop, same process) -> config change (restart, same version)
-> query change (v2, clean) -> driver SIGKILLed, deploy (restart from checkpoint)
-> stopped and checkpoint removed, deploy (error for that job, exit 1).
After each step the target, read with spark.read, holds every row exactly once. Both ways a
change of a running job can be carried out: warm (the default: the new run prepared while the
old one runs) and cold (stop, then start).
"""

from __future__ import annotations

import json
import shutil
import stat

import pyspark
import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, kill_driver, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


@pytest.mark.parametrize("handover", ["warm", "cold"])
def test_job_lifecycle_keeps_every_row_exactly_once(
    workspace: Workspace, spark, handover: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FLINK_SQL_RUNNER_HANDOVER", handover)
    ws = workspace
    out = ws.root / "out" / "ticks"
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 7, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}},
        ]
    )
    job = {
        "description": "first words",
        "target-table": "tick_out",
        "sql": "SELECT value FROM ticks",
    }
    ws.write_job("ticks-job", **job)

    def progressed(version, at_least):
        def check():
            values, _ = rows_by_version(spark, out)
            return values if len(values.get(version, [])) >= at_least else None

        return check

    # 1. new -> start clean, version 1
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout
    first = ws.record("ticks-job")
    stored = ws.stored("ticks-job")
    assert stored["meta"]["query-version"] == 1
    query_id_v1 = stored["meta"]["query-id"]
    runtime = ws.state / "checkpoints" / "ticks-job" / "_control" / "v1.manifest.json"
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o600, "it may hold resolved ${ENV} values"
    status_file = runtime.with_name("v1.status.json")
    assert json.loads(status_file.read_text())["spark-version"] == pyspark.__version__
    values = wait_for(progressed(1, 14), what="v1 rows")
    assert_exactly_once(values)

    # 2. unchanged -> noop, the same process keeps running
    result = ws.deploy()
    assert result.returncode == 0, result.stderr
    plan = ws.plan_json()
    assert plan["ticks-job"]["action"] == "noop"
    assert ws.record("ticks-job")["pid"] == first["pid"]

    # 3. config change (description) -> stop with checkpoint, restart, same version and id
    before = len(rows_by_version(spark, out)[0][1])
    ws.write_job("ticks-job", **{**job, "description": "second words"})
    assert ws.plan_json()["ticks-job"]["action"] == "stop-and-restart-from-checkpoint"
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stopped gracefully" in result.stdout
    assert ("prepared v1 in " in result.stdout) == (handover == "warm"), result.stdout
    assert ws.record("ticks-job")["pid"] != first["pid"]
    stored = ws.stored("ticks-job")
    assert (stored["meta"]["query-version"], stored["meta"]["query-id"]) == (1, query_id_v1)
    values = wait_for(progressed(1, before + 14), what="v1 rows after the restart")
    assert_exactly_once(values)
    _, meta = rows_by_version(spark, out)
    assert meta[1] == {
        ("ticks-job", "first words", query_id_v1),
        ("ticks-job", "second words", query_id_v1),
    }

    # 4. query change -> stop, start clean as version 2 in a new checkpoint folder
    ws.write_job(
        "ticks-job",
        **{**job, "description": "second words", "sql": "SELECT value FROM ticks WHERE value >= 0"},
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stop-and-start-clean" in result.stdout
    stored = ws.stored("ticks-job")
    assert stored["meta"]["query-version"] == 2
    query_id_v2 = stored["meta"]["query-id"]
    assert query_id_v2 != query_id_v1
    assert (ws.state / "checkpoints" / "ticks-job" / "2" / "metadata").exists()
    v1_rows = len(rows_by_version(spark, out)[0][1])
    values = wait_for(progressed(2, 14), what="v2 rows")
    assert_exactly_once(values)
    assert len(values[1]) == v1_rows  # version 1's rows are all still there, once

    # 5. the driver dies by SIGKILL -> deploy restarts it from its checkpoint
    before = len(values[2])
    kill_driver(ws.record("ticks-job")["pid"])
    wait_for(
        lambda: ws.plan_json()["ticks-job"]["action"] == "restart-from-checkpoint",
        timeout=30,
        what="the job to be seen as not running",
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-from-checkpoint" in result.stdout
    values = wait_for(progressed(2, before + 14), what="v2 rows after SIGKILL and restart")
    assert_exactly_once(values)
    _, meta = rows_by_version(spark, out)
    assert meta[2] == {("ticks-job", "second words", query_id_v2)}

    # status shows the job, its version, running, and a committed batch
    status = ws.cli("status", "--output", "json")
    assert status.returncode == 0, status.stderr
    (row,) = json.loads(status.stdout)["jobs"]
    assert (row["name"], row["stored-version"], row["running"]) == ("ticks-job", 2, True)
    assert row["drift"] == "in sync" and row["last-committed-batch"] >= 1

    # 6. stopped, checkpoint removed -> deploy says error for that job, exit 1
    result = ws.cli("stop", "ticks-job", "--stop-timeout", "30", paths=False)
    assert result.returncode == 0, result.stderr
    assert "stopped gracefully" in result.stdout
    again = ws.cli("stop", "ticks-job", paths=False)  # a stopped job: nothing to do, no failure
    assert again.returncode == 0, again.stderr
    assert again.stdout == "ticks-job: already stopped; checkpoint kept\n"
    shutil.rmtree(ws.state / "checkpoints" / "ticks-job" / "2")
    result = ws.deploy()
    assert result.returncode == 1
    assert "no valid checkpoint" in result.stdout
    assert ws.record("ticks-job") is None
