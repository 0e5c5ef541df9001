"""Warm handovers on local Spark, through real spark-submit and the real CLI.

new (v1, cold) -> config change, warm (the new run prepared while v1 runs, v1 stopped, the go)
-> a change whose new run cannot start (`spark.driver.memory: banana`), warm: the pre-flight
fails and v1 is untouched, the same driver committing on -> query change, warm (v2 prepared
beside v1, clean). After each step the sink, read with spark.read, holds every row exactly once.
"""

from __future__ import annotations

import os

import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def committed(ws: Workspace, name: str, version: int) -> int:
    folder = ws.state / "checkpoints" / name / str(version) / "commits"
    return max((int(f) for f in os.listdir(folder) if f.isdigit()), default=-1)


def test_warm_handovers_keep_the_old_run_until_the_new_one_is_ready(workspace: Workspace, spark):
    ws = workspace
    out = ws.root / "out" / "ticks"
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 5, "numPartitions": 2},
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

    def rows(version: int, at_least: int):
        def check():
            values, _ = rows_by_version(spark, out)
            return values if len(values.get(version, [])) >= at_least else None

        return wait_for(check, timeout=120, what=f"{at_least} rows of v{version}")

    # 1. new -> start clean, v1 (nothing runs: a warm handover has nothing to overlap)
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout and "prepare" not in result.stdout
    first = ws.record("ticks-job")
    assert_exactly_once(rows(1, 10))

    # 2. config change, warm: prepared beside v1, v1 stopped, then the go
    ws.write_job("ticks-job", **{**job, "description": "second words"})
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "do: prepare v1 from its checkpoint while v1 runs" in result.stdout
    assert "prepared v1 in" in result.stdout and "stopped gracefully" in result.stdout
    second = ws.record("ticks-job")
    assert second["pid"] != first["pid"]
    values = rows(1, len(rows_by_version(spark, out)[0][1]) + 10)
    assert_exactly_once(values)
    assert ws.stored("ticks-job")["description"] == "second words"

    # 3. a change whose new run cannot start: v1 is never touched
    ws.write_job(
        "ticks-job",
        **{
            **job,
            "description": "third words",
            "sparkProperties": {"spark.driver.memory": "banana"},
        },
    )
    before = committed(ws, "ticks-job", 1)
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 1, result.stdout + result.stderr
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert "pre-flight failed:" in fail and fail.endswith("v1 untouched, still running"), fail
    assert ws.record("ticks-job")["pid"] == second["pid"]
    assert ws.stored("ticks-job")["description"] == "second words"
    wait_for(
        lambda: committed(ws, "ticks-job", 1) >= before + 3,
        timeout=60,
        what="v1 to commit on",
    )
    assert "stop" not in ws.plan_json()["ticks-job"].get("error", "")

    # 4. query change, warm: v2 prepared beside v1, started clean once v1 stopped
    ws.write_job("ticks-job", **{**job, "sql": "SELECT value, value % 2 = 0 AS even FROM ticks"})
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "do: prepare v2 clean in" in result.stdout
    assert ws.stored("ticks-job")["meta"]["query-version"] == 2
    values = rows(2, 10)
    assert_exactly_once(values)
