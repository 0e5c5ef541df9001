"""Warm handovers on a real Spark standalone cluster (master and a 4-core worker on 127.0.0.1),
drivers in cluster mode through the REST gateway, with the real CLI.

new (v1) -> config change, warm: a second driver prepared on the worker while v1 runs, v1
stopped, the go; the version's submission record names the new driver -> a change whose new
driver cannot start (`spark.driver.memory: banana`): the pre-flight fails, v1 untouched -> a
change whose new driver needs the room the running one holds (`spark.driver.cores: 3`): it is
never placed, so the change goes the cold way and says so. After each step the sink holds every
row exactly once.
"""

from __future__ import annotations

import json

import pytest

from tests.support.jvm import cluster_conf
from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.standalone_cluster import Cluster, standalone_cluster
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.e2e, pytest.mark.spark]

PROPERTIES = {
    **cluster_conf(),
    "spark.cores.max": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as running:
        yield running


@pytest.fixture
def workspace(tmp_path, cluster: Cluster) -> Workspace:
    options = (
        "--rest-gateway",
        cluster.rest.replace("spark://", "http://"),
        "--cluster-api",
        cluster.web_ui,
    )
    ws = Workspace(tmp_path, cluster.master, "standalone", options)
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 5, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(tmp_path / "out")}},
        ]
    )
    try:
        yield ws
    finally:
        ws.cli("stop", "--all")
        ws.kill_all()


def submission(ws: Workspace) -> str:
    path = ws.state / "checkpoints" / "ticks-job" / "_control" / "v1.submission.json"
    return json.loads(path.read_text())["submission_id"]


def test_warm_handovers_on_a_standalone_cluster(workspace: Workspace, cluster: Cluster, spark):
    ws, out = workspace, workspace.root / "out"
    job = {
        "description": "first words",
        "target-table": "tick_out",
        "sql": "SELECT value FROM ticks",
        "sparkProperties": PROPERTIES,
    }
    ws.write_job("ticks-job", **job)

    def rows(at_least: int) -> dict:
        def enough():
            values = rows_by_version(spark, out)[0]
            return values if len(values.get(1, [])) >= at_least else None

        return wait_for(enough, timeout=180, what=f"{at_least} rows of v1")

    # 1. new: v1 starts (nothing runs yet: nothing to overlap)
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    first = submission(ws)
    assert_exactly_once(rows(10))

    # 2. config change, warm: the new driver is prepared beside v1's, then takes over
    ws.write_job("ticks-job", **{**job, "description": "second words"})
    result = ws.deploy("--handover", "warm", "--start-timeout", "300")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "prepared v1 in" in result.stdout, result.stdout
    second = submission(ws)
    assert second != first, "the version's record names the driver that took over"
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"]
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(rows(before + 10))

    # 3. a new driver that cannot start: v1's keeps running, untouched
    banana = {**PROPERTIES, "spark.driver.memory": "banana"}
    ws.write_job("ticks-job", **{**job, "description": "third", "sparkProperties": banana})
    result = ws.deploy("--handover", "warm", "--start-timeout", "300")
    assert result.returncode == 1, result.stdout + result.stderr
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert "pre-flight failed:" in fail and fail.endswith("v1 untouched, still running"), fail
    assert submission(ws) == second
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(rows(before + 10))

    # 4. a new driver that needs the room v1's holds: never placed, so the cold way
    wide = {**PROPERTIES, "spark.driver.cores": "3"}
    ws.write_job("ticks-job", **{**job, "description": "fourth", "sparkProperties": wide})
    result = ws.deploy("--handover", "warm", "--start-timeout", "60")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "handing over the cold way (stop, then start)" in result.stdout, result.stdout
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"]
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(rows(before + 10))
