"""Jobs on a real Spark standalone cluster (master and a 4-core worker on 127.0.0.1, one for the
module), deployed with the real CLI: drivers in cluster deploy mode through the master's REST
gateway.

new (v1) -> the driver is the worker's child and keeps writing after `deploy` exited ->
unchanged (noop) -> config change, warm: a second driver prepared on the worker while v1 runs,
v1 stopped, the go, while the gateway answers 503 to the status of the old driver (it is waited
for, never taken for gone: one driver at a time); the version's submission record names the new
driver -> a change whose new driver cannot start (`spark.driver.memory: banana`): the pre-flight
fails, v1 untouched -> a change whose new driver needs the room the running one holds
(`spark.driver.cores: 3`): it is never placed, so the change goes the cold way and says so ->
status, and a listing answered with 503 (an error, nothing acted on) -> stop past its timeout
(killed through the REST API). After each step the target, read with spark.read, holds every
row exactly once. The gateway and the web UI are reached through fault-injecting proxies on
127.0.0.1.

Three drivers run to their first batch; one cannot start, one is never placed. A new version's
start, a restart after a kill and a graceful `stop` from the command line are the same
submissions and stop markers on this target; they are proven on a cluster by
tests/yarn/test_yarn_lifecycle.py and on local Spark by the e2e scenarios, and not started again
here.

Then a driver that cannot start (the worker cannot fetch the runner), a gateway that is not
there, and the master's own port given as the gateway: the cluster's own message comes back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from tests.support.faultproxy import FaultProxy
from tests.support.jvm import cluster_conf
from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.standalone_cluster import Cluster, free_port, standalone_cluster
from tests.support.workspace import Workspace, wait_for

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit: four drivers on 2 cores
]

#: Two drivers and their executors fit the worker (4 cores, 3g): a warm handover has room.
CLUSTER_JOB_PROPERTIES = {
    "spark.cores.max": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
    **cluster_conf(),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Cluster:
    with standalone_cluster(tmp_path_factory.mktemp("standalone")) as running:
        yield running


@pytest.fixture
def proxies(cluster: Cluster):
    """(gateway, web UI) behind fault-injecting proxies."""
    gateway = FaultProxy(cluster.rest.replace("spark://", "http://")).start()
    web_ui = FaultProxy(cluster.web_ui).start()
    try:
        yield gateway, web_ui
    finally:
        gateway.stop()
        web_ui.stop()


@pytest.fixture
def workspace(tmp_path, cluster: Cluster, proxies) -> Iterator[Workspace]:
    gateway, web_ui = proxies
    options = ("--rest-gateway", gateway.url, "--cluster-api", web_ui.url)
    ws = Workspace(tmp_path, cluster.master, "standalone", options)
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 7, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(tmp_path / "out")}},
        ]
    )
    try:
        yield ws
    finally:
        cluster.kill_drivers()  # the cluster is the module's: a failed test's driver goes


def record(ws: Workspace, version: int) -> dict:
    path = ws.state / "checkpoints" / "ticks-job" / "_control" / f"v{version}.submission.json"
    return json.loads(path.read_text())


def wait_rows(spark, out: Path, version: int, at_least: int, what: str) -> dict:
    """Wait until `version` has `at_least` rows in the target; then every version's values."""

    def enough():
        values = rows_by_version(spark, out)[0]
        return values if len(values.get(version, [])) >= at_least else None

    return wait_for(enough, what=what)


def driver_parent(submission_id: str) -> int | None:
    """The parent pid of the driver JVM the worker launched for this submission."""
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        if b"org.apache.spark.deploy.worker.DriverWrapper" in cmdline and any(
            submission_id.encode() in arg for arg in cmdline
        ):
            return int(stat[stat.rindex(")") + 2 :].split()[1])
    return None


def test_a_job_lives_its_whole_life_on_a_standalone_cluster(
    workspace: Workspace, cluster: Cluster, proxies, spark, monkeypatch
):
    ws = workspace
    gateway, web_ui = proxies
    out = ws.root / "out"
    job = {
        "description": "first words",
        "target-table": "tick_out",
        "sql": "SELECT value FROM ticks",
        "sparkProperties": CLUSTER_JOB_PROPERTIES,
    }
    ws.write_job("ticks-job", **job)

    # 1. new: start clean as v1, a driver on the cluster, recorded beside the checkpoints
    # (warm or not: nothing runs yet, nothing to overlap)
    result = ws.deploy("--handover", "warm")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout
    first = record(ws, 1)
    assert first["target"] == "standalone" and first["submission_id"].startswith("driver-")
    assert first["app_name"] == "flink-sql-runner-ticks-job-v1"
    assert f"started v1 ({first['submission_id']})" in result.stdout
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"]
    worker_pid = cluster.pids[1]
    assert driver_parent(first["submission_id"]) == worker_pid, "the worker runs the driver"
    # `deploy` has exited; the job goes on writing without it
    # one batch (7 rows) past what was in when it exited
    before = len(rows_by_version(spark, out)[0].get(1, []))
    values = wait_rows(spark, out, 1, before + 7, "v1 rows after deploy exited")
    assert_exactly_once(values)
    assert os.getpid() != worker_pid

    # 2. unchanged: noop, the same submission keeps running
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert ws.plan_json()["ticks-job"]["action"] == "noop"
    assert record(ws, 1) == first

    # 3. config change, warm: the new driver is prepared beside v1's, then v1 stops gracefully
    # through the stop marker and the prepared one takes over from the checkpoint.
    # The gateway answers 503 to the first questions about the old driver: an answer that
    # is no answer, so the deployer keeps waiting for the driver to be gone before it gives
    # the go (before, a 503 read as "not running": two drivers wrote at once).
    status_path = f"/v1/submissions/status/{first['submission_id']}"
    gateway.clear()
    gateway.inject("slowdown", times=4, method="GET", path=status_path)
    ws.write_job("ticks-job", **{**job, "description": "second words"})
    # Timeouts as safety nets: two drivers on a busy machine start and stop slowly.
    # (The warm-up's too: on a loaded machine the executors took over 20 s, its default.)
    result = ws.deploy(
        "--handover", "warm", "--start-timeout", "300", "--stop-timeout", "90", "--warm-up", "120"
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stop-and-restart-from-checkpoint" in result.stdout
    assert "prepared v1 in" in result.stdout, result.stdout
    assert "stopped gracefully" in result.stdout
    assert [s.fault for s in gateway.seen("GET", status_path)][:4] == ["slowdown"] * 4
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"], "one driver at a time"
    second = record(ws, 1)
    assert second["submission_id"] != first["submission_id"]
    # before it said ready, the new driver warmed up on its executors: into the noop sink, for
    # a folder of the driver is not theirs (runner/warm_up.py)
    driver_logs = [cluster.work_dir / second["submission_id"] / n for n in ("stdout", "stderr")]
    said = "".join(p.read_text(errors="replace") for p in driver_logs if p.exists())
    assert "(one micro-batch into noop)" in said, said[-3000:]
    # on the worker too, SPARK_HOME is pip's pyspark: its installed modules, not the zip
    assert f"(pyspark from {Path(pyspark.__file__).parent}), " in said, said[-3000:]
    stored = ws.stored("ticks-job")
    assert stored["meta"]["query-version"] == 1
    # the new run's first batch is in (it was healthy); one more of its batches (7 rows)
    count = len(rows_by_version(spark, out)[0][1])
    values = wait_rows(spark, out, 1, count + 7, "v1 rows after the restart")
    assert_exactly_once(values)
    _, meta = rows_by_version(spark, out)
    assert {description for _, description, _ in meta[1]} == {"first words", "second words"}

    # 4. a new driver that cannot start: v1's keeps running, untouched
    banana = {**CLUSTER_JOB_PROPERTIES, "spark.driver.memory": "banana"}
    ws.write_job("ticks-job", **{**job, "description": "third", "sparkProperties": banana})
    result = ws.deploy("--handover", "warm", "--start-timeout", "300")
    assert result.returncode == 1, result.stdout + result.stderr
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert "pre-flight failed:" in fail and fail.endswith("v1 untouched, still running"), fail
    assert record(ws, 1)["submission_id"] == second["submission_id"]
    count = len(rows_by_version(spark, out)[0][1])
    values = wait_rows(spark, out, 1, count + 7, "v1 rows after the failed pre-flight")
    assert_exactly_once(values)

    # 5. a new driver that needs the room v1's holds: never placed, so the cold way
    wide = {**CLUSTER_JOB_PROPERTIES, "spark.driver.cores": "3"}
    ws.write_job("ticks-job", **{**job, "description": "wide", "sparkProperties": wide})
    # The prepare timeout alone bounds the wait for the driver never placed; the cold start
    # after it has the default start timeout (executors took over 20 s under load).
    warm = ("--handover", "warm", "--prepare-timeout", "10")
    result = ws.cli("deploy", *warm, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "handing over the cold way (stop, then start)" in result.stdout, result.stdout
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"]
    count = len(rows_by_version(spark, out)[0][1])
    values = wait_rows(spark, out, 1, count + 7, "v1 rows after the cold handover")
    assert_exactly_once(values)

    # 6. status: the cluster's listing, with version and running state
    status = ws.cli("status", "--output", "json")
    assert status.returncode == 0, status.stderr
    (row,) = json.loads(status.stdout)["jobs"]
    assert (row["name"], row["stored-version"], row["running"]) == ("ticks-job", 1, True)
    assert row["running-version"] == 1 and row["where"].startswith("app-")
    text = ws.cli("status").stdout
    assert "ticks-job" in text and "v1" in text and "yes (app-" in text
    # logs: the driver logs to its folder in the worker's work dir. Not known to be on this
    # machine, it is named; with $SPARK_WORKER_DIR saying where, it is read.
    driver = record(ws, 1)["submission_id"]
    named = ws.cli("logs", "ticks-job", paths=False)
    assert named.returncode == 1, named.stdout + named.stderr
    assert f"{driver}/stderr (and stdout) in the work folder of the worker" in named.stderr
    assert row["log"].startswith(f"{driver}/stderr (and stdout) in the work folder")
    monkeypatch.setenv("SPARK_WORKER_DIR", str(cluster.work_dir))
    logs = ws.cli("logs", "ticks-job", paths=False)
    assert logs.returncode == 0, logs.stderr
    assert f"==> {cluster.work_dir / driver / 'stderr'} <==" in logs.stderr
    assert f"==> {cluster.work_dir / driver / 'stdout'} <==" in logs.stderr
    assert "[flink-sql-runner] job ticks-job v1 run" in logs.stdout  # the runner's, in stdout
    assert "INFO" in logs.stdout or "WARN" in logs.stdout  # Spark's, in stderr
    monkeypatch.delenv("SPARK_WORKER_DIR")
    # The master's listing answers 503: nothing can be decided, nothing is done, exit 1.
    web_ui.clear()
    web_ui.inject("slowdown", times=1, method="GET", path="/json/")
    refused = ws.deploy()
    assert refused.returncode == 1 and "answered HTTP 503" in refused.stderr, refused.stderr
    assert cluster.active_apps() == ["flink-sql-runner-ticks-job-v1"]

    # 7. a stop that times out is killed through the master's REST API
    killed = record(ws, 1)["submission_id"]
    result = ws.cli("stop", "ticks-job", "--stop-timeout", "0", paths=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"killed {killed} through the master's REST API" in result.stdout
    wait_for(lambda: not cluster.active_apps(), timeout=60, what="the killed app to go")
    values = rows_by_version(spark, out)[0]
    assert_exactly_once(values)
    # the deployer sees it gone, its checkpoint there to restart from
    assert ws.plan_json()["ticks-job"]["action"] == "restart-from-checkpoint"


def test_the_clusters_own_message_comes_back_when_a_driver_cannot_start(
    workspace: Workspace, cluster: Cluster
):
    ws = workspace
    ws.write_job(
        "ticks-job",
        **{
            "target-table": "tick_out",
            "sql": "SELECT value FROM ticks",
            "sparkProperties": CLUSTER_JOB_PROPERTIES,
        },
    )
    # The worker cannot fetch the runner: the driver ends in ERROR with the worker's exception.
    result = ws.deploy("--runner-path", "/nonexistent/job_runner.py")
    assert result.returncode == 1
    assert "java.nio.file.NoSuchFileException: /nonexistent/job_runner.py" in result.stdout
    assert "ERROR" in result.stdout
    assert ws.stored("ticks-job") is None

    # No REST gateway there: one clear line naming it, nothing recorded.
    closed = f"127.0.0.1:{free_port()}"
    result = ws.cli(
        "deploy", "--master", f"spark://{closed}", "--rest-gateway", f"http://{closed}",
        "--start-timeout", "60", "--stop-timeout", "10",
    )  # fmt: skip
    assert result.returncode == 1
    assert "cannot reach the Spark master's REST gateway" in result.stdout
    assert ws.stored("ticks-job") is None

    # The master's own port given as the gateway (the master as a user knows it): the master
    # closes the connection without an answer; the line says which URL to give, as the master's
    # web UI shows it.
    master = cluster.master.removeprefix("spark://")
    gateway = cluster.rest.replace("spark://", "http://")
    result = ws.cli(
        "deploy", "--master", cluster.master, "--rest-gateway", f"http://{master}",
        "--cluster-api", cluster.web_ui, "--start-timeout", "60", "--stop-timeout", "10",
    )  # fmt: skip
    assert result.returncode == 1
    failed = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert failed == (
        f"FAIL ticks-job: cannot reach the Spark master's REST gateway at http://{master}/v1/"
        "submissions/create: the connection was closed without an answer (the master's web "
        f"UI at {cluster.web_ui}/ shows its REST gateway: give --rest-gateway {gateway})"
    ), result.stdout
    assert ws.stored("ticks-job") is None
    assert not (ws.state / "manifests" / "_intents").exists() or not any(
        (ws.state / "manifests" / "_intents").iterdir()
    ), "nothing can have started: no intent record is left"
