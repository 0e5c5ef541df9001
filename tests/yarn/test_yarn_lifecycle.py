"""One job's whole life on a real MiniYARNCluster with HDFS (tests/support/hadoop_cluster.py),
deployed with the real CLI: `--target yarn --master yarn --cluster-api <the ResourceManager>`,
drivers in cluster deploy mode, the checkpoint root and the parquet sink on the MiniDFSCluster.

new (v1 clean, RUNNING in the ResourceManager) -> unchanged (noop) -> config change (stop through
the stop marker, restart from the checkpoint) -> query change (v2 clean), its checkpoint root and
sink now written without a scheme -> the application killed through the ResourceManager, as an
operator would -> `watch --once` restarts it from its checkpoint -> config change, warm, whose
new driver has no room beside the running one: its application is never placed, so it is killed
after the start timeout and the change goes the cold way, judged by the application it started
while the ResourceManager's listing, through a proxy, puts the killed one first -> stop
(graceful). After each step the sink, read with spark.read on HDFS, holds every row exactly
once per version, and the checkpoint folders are on HDFS. A failing step's message carries the
containers' logs. Spark on YARN is slow to start: one scenario covers every decision, on six
applications (one of them never placed).

The paths without a scheme: HADOOP_CONF_DIR names HDFS the default file system, so Spark on the
driver puts `/it-.../checkpoints` on HDFS; the deployer looks there too, for v2 and every step
after it, and writes nothing on its own disk. Before, it wrote the runtime manifest and the
runner's package there, and the driver, looking on HDFS, failed: "invalid runtime manifest ...
does not exist" (a bug the minicluster showed).

The job triggers every few seconds, not every second: a loaded machine then still has a pause
between two micro-batches, where the runner's graceful stop takes its turn (it waits for the
running batch to end, up to 30 s), and reads the sink back from fewer files.

What it measured is printed (`pytest -s`): the time from each command's start to its new
application showing RUNNING, and the pause in commits at each restart, from the sink's
`__create_timestamp` column.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import pytest

from flink_sql_runner.stores.storage import FileStorage
from tests.support.faultproxy import FaultProxy
from tests.support.hadoop_cluster import Hadoop, quick_conf, spark_conf
from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import wait_for
from tests.support.yarn_cli import Ran, YarnWorkspace

pytestmark = [
    pytest.mark.yarn,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(3600),  # a safety net, not a limit asserted: six starts on YARN
]

JOB = "ticks-job"
DEPLOY = ("--start-timeout", "300", "--stop-timeout", "120")
#: A batch every few seconds (the template's is every second): see the module's doc.
TRIGGER = {"processingTime": "5 seconds"}


@contextmanager
def container_logs_on_failure(cluster: Hadoop) -> Iterator[None]:
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n\n---- the containers' logs ----\n{cluster.container_logs()}"
        ) from exc


def oldest_first(body: bytes) -> bytes:
    """A ResourceManager listing with its applications oldest first."""
    doc = json.loads(body)
    apps = (doc.get("apps") or {}).get("app")
    if apps:
        doc["apps"]["app"] = sorted(apps, key=lambda app: app["id"])
    return json.dumps(doc).encode()


def ok(ran: Ran) -> Ran:
    assert ran.returncode == 0, ran.output
    return ran


def new_app(ws: YarnWorkspace, ran: Ran) -> str:
    """The one application of ours running now, started by the command `ran`."""
    (running,) = ws.apps()
    assert running["state"] == "RUNNING", running
    assert running["id"] in ran.running_after, (running["id"], ran.running_after)
    return running["id"]


def timing(ran: Ran, app_id: str) -> str:
    """When `app_id` showed RUNNING, from the command's start, and when its run was healthy
    (its first batch committed), from its submission, as the command reports it."""
    healthy = re.search(r"healthy after ([0-9.]+) s", ran.output)
    said = f", healthy after {healthy[1]} s" if healthy else ""
    return f"RUNNING after {ran.running_after[app_id]:.0f} s{said} (command {ran.seconds:.0f} s)"


def wait_rows(spark, sink: str, version: int, at_least: int, what: str) -> dict:
    """Wait until `version` has `at_least` rows in the sink; then every version's values."""

    def enough():
        values = rows_by_version(spark, sink)[0]
        return values if len(values.get(version, [])) >= at_least else None

    return wait_for(enough, timeout=300, interval=3, what=what)


def pause_in_commits(spark, sink: str, version: int) -> str:
    """The longest gap between two consecutive batches of `version` in the sink, from their
    `__create_timestamp` (the batch's time), in words: how long, and from when to when."""
    from pyspark.sql import functions as F

    times = sorted(
        row[0]
        for row in spark.read.parquet(sink)
        .where(F.col("__query_version") == version)
        .select("__create_timestamp")
        .distinct()
        .collect()
    )
    gaps = [(b - a, a, b) for a, b in zip(times, times[1:], strict=False)]
    if not gaps:
        return "no two batches"
    gap, before, after = max(gaps)
    return f"{gap.total_seconds():.0f} s ({before:%H:%M:%S} -> {after:%H:%M:%S})"


def write_tables(ws: YarnWorkspace, sink: str) -> None:
    """A rate source and a parquet sink at `sink`."""
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 7, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": sink}},
        ]
    )


def write_ticks_job(ws: YarnWorkspace, root: str, sink: str) -> dict:
    """The tables of `write_tables` and job JOB copying one into the other, its checkpoints
    under `root`, with the Spark properties of the minicluster; the job's fields."""
    write_tables(ws, sink)
    job = {
        "description": "first words",
        "target-table": "tick_out",
        "sql": "SELECT value FROM ticks",
        "checkpoint-root": root,
        "trigger": TRIGGER,
        "sparkProperties": {**spark_conf(), **quick_conf()},
    }
    ws.write_job(JOB, **job)
    return job


def test_a_job_lives_its_whole_life_on_yarn_with_hdfs(
    yarn_workspace: YarnWorkspace, hadoop_cluster: Hadoop, spark
) -> None:
    ws, cluster = yarn_workspace, hadoop_cluster
    storage = FileStorage(env=cluster.env())
    # `bare`: the same folders without a scheme, as the job writes them from its query change on
    bare = f"/it-{uuid.uuid4().hex[:8]}"
    bare_root, bare_sink = f"{bare}/checkpoints", f"{bare}/out"
    root, sink = f"{cluster.default_fs}{bare_root}", f"{cluster.default_fs}{bare_sink}"
    job = write_ticks_job(ws, root, sink)
    measured: list[str] = []

    def record(version: int) -> dict:
        text = storage.read_text(f"{root}/{JOB}/_control/v{version}.submission.json")
        assert text, f"no submission record of v{version}"
        return json.loads(text)

    with container_logs_on_failure(cluster):
        # 1. new: v1 starts clean, an application of its own RUNNING in the ResourceManager
        ran = ok(ws.run("deploy", *DEPLOY))
        assert "start-clean" in ran.stdout
        first = new_app(ws, ran)
        measured.append(f"new: {timing(ran, first)}")
        app = ws.app(first)
        assert app["name"] == "flink-sql-runner-ticks-job-v1"
        rec = record(1)
        assert (rec["target"], rec["submission_id"]) == ("yarn", first)
        assert f"flink-sql-runner-run-{rec['run_id']}" in app["applicationTags"].split(",")
        assert f"started v1 ({first})" in ran.stdout
        assert storage.dir_names(f"{root}/{JOB}") == ["1", "_control"]
        assert storage.file_names(f"{root}/{JOB}/1/commits"), "v1 committed a batch on HDFS"
        values = wait_rows(spark, sink, 1, 14, "v1 rows on HDFS")
        assert_exactly_once(values)

        # 2. unchanged: nothing is done, the same application runs on
        ran = ok(ws.run("deploy", *DEPLOY))
        assert "noop" in ran.stdout, ran.stdout
        assert [app["id"] for app in ws.apps()] == [first]
        assert record(1)["submission_id"] == first

        # 3. config change, warm: v1' prepared beside v1, v1 stopped through the stop marker
        # (its driver ends the application itself, SUCCEEDED), the go: v1 from the checkpoint
        job["description"] = "second words"
        ws.write_job(JOB, **job)
        ran = ok(ws.run("deploy", *DEPLOY))
        assert "stop-and-restart-from-checkpoint" in ran.stdout
        assert "stopped gracefully" in ran.stdout
        assert (ws.app(first)["state"], ws.app(first)["finalStatus"]) == ("FINISHED", "SUCCEEDED")
        wait_for(lambda: not ws.processes_of(first), timeout=60, what=f"{first}'s processes")
        second = new_app(ws, ran)
        assert ws.app(second)["name"] == "flink-sql-runner-ticks-job-v1"
        assert record(1)["submission_id"] == second
        measured.append(f"config change: {timing(ran, second)}")
        # the new run's first batch is in (it was healthy); one more of its batches (7 rows)
        count = len(rows_by_version(spark, sink)[0][1])
        values = wait_rows(spark, sink, 1, count + 7, "v1 rows after the restart")
        assert_exactly_once(values)
        descriptions = {meta[1] for meta in rows_by_version(spark, sink)[1][1]}
        assert descriptions == {"first words", "second words"}
        pause = pause_in_commits(spark, sink, 1)
        measured.append(f"config change: pause in commits {pause}")

        # 4. query change: v1 stops, v2 starts clean in a checkpoint of its own; the job now
        # writes its checkpoint root and its sink without a scheme, the same folders on HDFS
        job["sql"] = "SELECT value FROM ticks WHERE value >= 0"
        job["checkpoint-root"] = bare_root
        write_tables(ws, bare_sink)
        ws.write_job(JOB, **job)
        ran = ok(ws.run("deploy", *DEPLOY))
        assert "stop-and-start-clean" in ran.stdout
        assert f"in {bare_root}/{JOB}/2" in ran.stdout, "the plan shows the root as written"
        assert ws.app(second)["finalStatus"] == "SUCCEEDED"
        third = new_app(ws, ran)
        assert ws.app(third)["name"] == "flink-sql-runner-ticks-job-v2"
        measured.append(f"query change: {timing(ran, third)}")
        assert not Path(bare).exists(), "nothing on the deployer's own disk"
        assert storage.dir_names(f"{root}/{JOB}") == ["1", "2", "_control"]
        assert storage.file_names(f"{root}/{JOB}/2/commits"), "v2 committed a batch on HDFS"
        assert record(2)["submission_id"] == third, "v2's control files on HDFS"
        v1_rows = len(rows_by_version(spark, sink)[0][1])
        values = wait_rows(spark, sink, 2, 14, "v2 rows")
        assert_exactly_once(values)
        assert len(values[1]) == v1_rows, "v1 wrote nothing after it stopped"
        # The beacons on HDFS: v1's beacon and beat file dropped once v2 was recorded; v2's
        # beacon is not rewritten while what it says is the same, its beat file is (the
        # heartbeat `watch` lists), through Hadoop's FileSystem on the driver.
        beacons = f"{root}/_status"
        first_look = {listed.location: listed for listed in storage.listing(beacons)}
        assert sorted(first_look) == [f"{beacons}/{JOB}.v2.beat", f"{beacons}/{JOB}.v2.json"]

        def beat_moved() -> bool:
            now = {listed.location: listed for listed in storage.listing(beacons)}
            return now[f"{beacons}/{JOB}.v2.beat"] != first_look[f"{beacons}/{JOB}.v2.beat"]

        wait_for(beat_moved, timeout=40, what="the v2 run's heartbeat on HDFS")
        later = {listed.location: listed for listed in storage.listing(beacons)}
        assert later[f"{beacons}/{JOB}.v2.json"] == first_look[f"{beacons}/{JOB}.v2.json"]
        status = ok(ws.run("status", "--output", "json"))
        (row,) = json.loads(status.stdout)["jobs"]
        assert (row["stored-version"], row["running"], row["running-version"]) == (2, True, 2)
        assert row["where"] == third

        # 5. an operator kills the application through the ResourceManager: `watch --once`
        # restarts v2 from its checkpoint
        count = len(rows_by_version(spark, sink)[0][2])
        cluster.kill_app(third)
        killed = datetime.now(timezone.utc)
        assert ws.wait_ended(third)["state"] == "KILLED"
        # the kill ended its driver, Python included: nothing of it writes beside the next run
        wait_for(lambda: not ws.processes_of(third), timeout=60, what=f"{third}'s processes")
        ran = ok(ws.run("watch", "--once", paths=False))
        assert "restarted" in ran.output and "from checkpoint" in ran.output, ran.output
        fourth = new_app(ws, ran)
        assert ws.app(fourth)["name"] == "flink-sql-runner-ticks-job-v2"
        measured.append(f"watch after a kill: {timing(ran, fourth)}")
        values = wait_rows(spark, sink, 2, count + 14, "v2 rows after the kill and the restart")
        assert_exactly_once(values)
        pause = pause_in_commits(spark, sink, 2)
        measured.append(f"killed at {killed:%H:%M:%S}, then watch: pause in commits {pause}")

        # 6. config change, warm, with no room: the new driver's container (512 MiB and 6,200
        # MiB overhead) does not fit the node (8 GiB) beside v2's two (1,792 MiB), so its
        # application waits, never placed, until the prepare timeout; it is killed at once and
        # the change goes the cold way: v2 stopped through the stop marker, restarted from its
        # checkpoint alone on the node. The listing reaches the deployer oldest first (the
        # killed application before the new one), as the ResourceManager may list them: the
        # cold start is judged by its own application (issue 40).
        count = len(rows_by_version(spark, sink)[0][2])
        job["description"] = "third words"
        job["sparkProperties"] = {**job["sparkProperties"], "spark.driver.memoryOverhead": "6200m"}
        ws.write_job(JOB, **job)
        with FaultProxy(cluster.resource_manager) as rm_proxy:
            rm_proxy.rewrite("/ws/v1/cluster/apps", oldest_first)
            # The prepare timeout alone bounds the wait for the run never placed; the cold start
            # after it has DEPLOY's start timeout (a YARN start took 47 to 118 s on busy cores).
            warm = ("--handover", "warm", "--prepare-timeout", "10", "--cluster-api", rm_proxy.url)
            ran = ok(ws.run("deploy", *DEPLOY, *warm))
        assert "stop-and-restart-from-checkpoint" in ran.stdout
        assert "could not prepare v2: it did not report" in ran.stdout, ran.stdout
        assert "handing over the cold way" in ran.stdout and "stopped gracefully" in ran.stdout
        (never_placed,) = [app for app in ws.apps("KILLED") if app["id"] != third]  # step 5's
        assert never_placed["name"] == "flink-sql-runner-ticks-job-v2"
        assert (ws.app(fourth)["state"], ws.app(fourth)["finalStatus"]) == (
            "FINISHED",
            "SUCCEEDED",
        )
        fifth = new_app(ws, ran)
        assert record(2)["submission_id"] == fifth and f"started v2 ({fifth})" in ran.stdout
        run_tags = [
            {t for t in app["applicationTags"].split(",") if t.startswith("flink-sql-runner-run-")}
            for app in (never_placed, ws.app(fifth))
        ]
        assert run_tags[0] != run_tags[1], "the cold start has a run id of its own"
        measured.append(f"config change, warm then cold: {timing(ran, fifth)}")
        values = wait_rows(spark, sink, 2, count + 14, "v2 rows after the cold restart")
        assert_exactly_once(values)

        # 7. stop: graceful, the driver ends its application itself; nothing of ours runs
        ran = ok(ws.run("stop", JOB, "--stop-timeout", "120", paths=False))
        assert "stopped gracefully" in ran.stdout, ran.stdout
        assert (ws.app(fifth)["state"], ws.app(fifth)["finalStatus"]) == (
            "FINISHED",
            "SUCCEEDED",
        )
        assert ws.apps() == []
        final = rows_by_version(spark, sink)[0]
        assert_exactly_once(final)
        assert len(final[2]) >= count + 14
        stored = ws.stored(JOB)
        assert stored["meta"]["query-version"] == 2 and stored["desired-state"] == "stopped"
        assert stored["checkpoint-root"] == bare_root
        assert not Path(bare).exists(), "nothing on the deployer's own disk"

    print(f"\nHadoop minicluster started in {cluster.started_in:.0f} s; " + "; ".join(measured))
