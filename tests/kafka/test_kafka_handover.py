"""Kafka -> SQL -> parquet on the real broker, through real spark-submit: one job through every
kind of restart a Kafka source meets, one after the other on one broker topic of three
partitions, and every record produced is read exactly once across all of them:

1. while a producer keeps producing (tests/support/kafka_handover.py), `deploy` carries out a
   restart from the checkpoint (a config change) and a new version (a query change) whose source
   starts at the offsets v1 committed last, as the plan said it would;
2. `stop`, then records produced into each partition, then `deploy` again: a restart from the
   checkpoint that resumes right after the last batch the stopped run committed. What `inspect`
   reports per topic-partition is what the test produced, and the runs come from the run history
   the runs keep beside their checkpoint (the driver logs are gone when it is read);
3. a SIGKILL mid-stream, then `watch`: a restart from the checkpoint, from the committed offsets
   (after a SIGKILL `deploy` does the same: tests/kafka/test_kafka_to_kafka.py);
4. a new version (v3) that commits and then fails its health check (issue 52): its query fails
   on a record produced once it committed every record before it. The deploy that started it
   is paused (SIGSTOP) from when it submitted v3 until v3 committed and failed, then resumed: it
   finds v3 failed, never healthy, with batches committed. v3 is recorded, not rolled back over
   (v2 is not started again to read what v3 read), the deploy fails saying so and that the job
   is down; a fixed query (v4) then starts where v3's last committed batch ended, and every
   record is in the sink once, read by one version.

The trigger is 3 seconds (the template's is 1): a batch every 3 s while the producer produces,
and a stop finds the run between two batches on a loaded machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.model.checkpoint_report import CheckpointReport
from flink_sql_runner.stores.storage import FileStorage
from tests.support.kafka_handover import DESCRIPTIONS, JOB, PARTITIONS, Scenario
from tests.support.kafka_jobs import (
    PASS_THROUGH,
    exactly_once,
    per_version,
    read_counts,
    sink_rows,
    use_connector,
    watch_once,
)
from tests.support.workspace import Workspace, kill_driver, trace, wait_for

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: seven starts on 2 cores
]

TRIGGER = "3 seconds"
#: A record every 100 ms while the producer produces, 30 a batch; each run reads 20 before the
#: next change (the benchmark: every 20 ms, 100).
EVERY, STEADY = 0.1, 20
#: Records produced into each partition while the job is stopped (step 2).
WHILE_STOPPED = {0: 4, 1: 0, 2: 2}
#: Step 4's v3 copies every record but this one's value: on it, its batch fails (assert_true
#: gives NULL, kept, for every other record), and so its run, after the batches before it.
POISON = "poison"
FAILS_ON_POISON = (
    f"{PASS_THROUGH} WHERE assert_true(CAST(value AS STRING) <> '{POISON}', 'a poison record') "
    "IS NULL"
)
#: v3's query fixed (v4): it copies every record.
FIXED = f"{PASS_THROUGH} WHERE `offset` >= -1"


def inspect(ws: Workspace, *args: str) -> str:
    result = ws.cli("inspect", JOB, *args, paths=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@dataclass
class PausedDeploy:
    """A deploy that was paused: for how long, and its outcome once it ended."""

    paused: float = 0.0
    result: subprocess.CompletedProcess[str] | None = None


@contextmanager
def paused_deploy(ws: Workspace, *args: str) -> Iterator[PausedDeploy]:
    """`deploy *args` in a process of its own, paused (SIGSTOP, by its pid) once its timing log
    says it submitted a run: it is then waiting for the run to report a completed trigger, which
    takes the run's start (a JVM, a session, the query, its first batch), seconds. It cannot
    act meanwhile; the block makes the run do what it should be found to have done. Resumed
    (SIGCONT) when the block ends and waited for (`result`); killed, by its pid, when the block
    fails. Its lease, renewed just before it submitted, is trusted for 90 s (stores/lock.py: 3/4
    of 120 s): resumed within that, it still holds the store's lock."""
    timing, out, err = (ws.root / f"paused-deploy.{n}" for n in ("jsonl", "out", "err"))
    timing.unlink(missing_ok=True)
    env = {**os.environ, "FLINK_SQL_RUNNER_TIMING_LOG": str(timing)}
    argv = ws.argv("deploy", *args)
    began = time.monotonic()
    with out.open("w") as stdout, err.open("w") as stderr:
        deployer = subprocess.Popen(  # noqa: S603 - a list, never a shell
            argv, cwd=ws.root, env=env, stdout=stdout, stderr=stderr, text=True
        )
    done = PausedDeploy()

    def events() -> list[str]:
        lines = timing.read_text().splitlines() if timing.exists() else []
        return [json.loads(line)["event"] for line in lines if line.endswith("}")]

    def submitted() -> bool:
        if deployer.poll() is not None:
            raise AssertionError(f"the deploy ended before it submitted: {out.read_text()}"
                                 f"{err.read_text()}")  # fmt: skip
        return "submitted" in events()

    try:
        wait_for(submitted, timeout=300, interval=0.05, what="the deploy to submit a run")
        os.kill(deployer.pid, signal.SIGSTOP)
        paused = time.monotonic()
        assert "healthy" not in events(), "paused too late: the deploy saw its run healthy"
        yield done
        done.paused = time.monotonic() - paused
        os.kill(deployer.pid, signal.SIGCONT)
        deployer.wait(600)
        done.result = subprocess.CompletedProcess(
            argv, deployer.returncode, out.read_text(), err.read_text()
        )
        trace("cli deploy (paused)", began)
    finally:
        if deployer.poll() is None:
            deployer.kill()  # a stopped process dies of SIGKILL too
            deployer.wait(30)
        ws._remember_pids()  # noqa: SLF001 - kill_all must stop what it started


def failed_and_gone(ws: Workspace, version: int) -> bool:
    """The run of `version` wrote `failed` in its status file and is gone."""
    status = ws.state / "checkpoints" / JOB / "_control" / f"v{version}.status.json"
    try:
        state = json.loads(status.read_text()).get("state")
    except (OSError, ValueError):
        return False
    return state == "failed" and not ws.runs(JOB)


def test_a_kafka_job_reads_every_record_once_across_handovers_a_stop_and_a_kill(
    kafka_workspace, kafka_broker, kafka_spark, spark
):
    ws, broker = kafka_workspace, kafka_broker
    use_connector(ws, kafka_spark, trigger=TRIGGER)
    scenario = Scenario(ws, broker, lambda path: sink_rows(spark, path), every=EVERY, steady=STEADY)
    topic = scenario.topic

    # 1. a restart and a new version while records arrive
    result = scenario.run()
    restart, clean = result.handovers
    print(result)

    assert "start-clean" in result.started
    assert restart.action == "stop-and-restart-from-checkpoint"
    assert clean.action == "stop-and-start-clean"
    assert clean.reason.endswith("stop, start clean as version 2; src at v1's committed offsets")
    # the deploy read them after v1 stopped, and says where v2 starts
    assert re.search(r"src starts at v1's batch \d+: handover\[0:\d+,1:\d+,2:\d+\]",
                     clean.deploy_output), clean.deploy_output  # fmt: skip

    # records arrived while each deploy ran, and every run read some
    assert restart.produced_during > 0 and clean.produced_during > 0
    assert all(count > 0 for count in result.runs.values()), result.runs
    assert set(result.runs) == {"v1 first run", "v1 second run", "v2"}
    # none lost, none repeated: at either handover, and over everything
    assert (restart.lost, restart.repeated) == (0, 0)
    assert (clean.lost, clean.repeated) == (0, 0)
    assert result.overall == {
        "produced": result.produced,
        "read": result.produced,
        "lost": 0,
        "repeated": 0,
        "unexpected": 0,
    }
    assert sum(result.versions.values()) == result.produced
    assert set(result.versions) == {1, 2}

    # from here on records are produced in steps, keys going on from the producer's
    produced = result.produced
    in_v1 = result.versions[1]
    checkpoint = ws.state / "checkpoints" / JOB / "2"

    def produce(count: int = 0, into: dict[int, int] | None = None, value: str = "") -> None:
        """`count` records, keyed, or `into` each partition as many as it says; each record's
        value `value-<n>`, or `value`."""
        nonlocal produced
        for partition, many in (into or {None: count}).items():
            keys = range(produced, produced + many)
            records = ((f"key-{n}", value or f"value-{n}") for n in keys)
            broker.produce(topic, records, partition=partition)
            produced += many

    def end_offsets() -> dict[str, dict[str, int]]:
        """The topic's end offsets, as a checkpoint's committed offsets name them."""
        return {topic: {str(p): n for p, n in sorted(broker.end_offsets(topic).items())}}

    def all_read(what: str, version: int | None = None) -> list[dict[str, Any]]:
        """The sink's rows once the checkpoint (of `version`, else the current one) committed
        every record produced (a file sink writes a batch before its checkpoint commits it),
        each read once."""
        wait_for(committed(end_offsets(), version), timeout=180, interval=0.25, what=what)
        rows = scenario.rows()
        assert exactly_once(rows, produced, topic) == {
            "produced": produced,
            "read": produced,
            "lost": 0,
            "repeated": 0,
            "unexpected": 0,
        }
        assert set(read_counts(rows).values()) == {1}
        return rows

    def held() -> dict[str, dict[str, int]]:
        """The offsets after every record produced: per partition, how many it holds."""
        counts = Counter(record.partition for record in broker.records(topic))
        assert sum(counts.values()) == produced
        return {topic: {str(p): counts[p] for p in range(PARTITIONS)}}

    def committed(offsets: dict[str, Any], version: int | None = None) -> Any:
        """Whether the checkpoint of `version` (the current one's: `checkpoint`) committed
        `offsets`."""
        folder = checkpoint if version is None else checkpoint.parent / str(version)

        def check() -> CheckpointReport | None:
            report = read_checkpoint(FileStorage(), str(folder))
            done = report is not None and report.sources and report.sources[0].committed
            return report if done == offsets else None

        return check

    # 2. stop, records produced, deploy: the restart resumes after the last committed batch
    assert ws.cli("stop", JOB, paths=False).returncode == 0
    stopped = read_checkpoint(FileStorage(), str(checkpoint))
    assert stopped is not None and stopped.last_committed is not None
    produce(into=WHILE_STOPPED)
    deployed = ws.deploy()
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    assert "restart-from-checkpoint" in deployed.stdout
    ends = held()
    wait_for(committed(ends), timeout=120, interval=0.25, what="the new records committed")

    shutil.rmtree(ws.state / "logs")  # the runs come from the run history, as on any target
    doc = json.loads(inspect(ws, "--output", "json"))
    batches = doc["checkpoint"]["batches"]
    assert batches["first"] == 0 and batches["last"] > stopped.last_committed
    assert batches["pending"] is None
    assert doc["checkpoint"]["sources"] == [
        {"index": 0, "kind": "kafka", "committed": ends, "next": None}
    ]
    runs = doc["runs"]
    assert [(r["first-batch"], r["ended"], r["up"]) for r in runs] == [
        (0, "stopped", False),
        (stopped.last_committed + 1, None, True),
    ], "the second run resumed right after the last batch the first one committed"
    assert runs[1]["run-id"] == ws.record(JOB)["run-id"]
    assert doc["notes"] == []

    text = inspect(ws).splitlines()
    offsets = ",".join(f"{p}:{n}" for p, n in ends[topic].items())
    assert f"  source 0    kafka: committed {topic}[{offsets}]" in text
    run_lines = [line for line in text if line.startswith("  run ")]
    assert [line.split(", ", 1)[1] for line in run_lines] == [
        "first batch 0, stopped",
        f"first batch {stopped.last_committed + 1}, up now",
    ]
    all_read("the restarted run to read on")

    # 3. SIGKILL mid-stream -> watch restarts it from the checkpoint (`deploy` does the same
    # in test_kafka_to_kafka.py)
    kill_driver(ws.record(JOB)["pid"])
    # gone before `watch` looks: a JVM that is still exiting is up (and healthy) for it
    wait_for(lambda: ws.record(JOB) is None, timeout=30, interval=0.1, what="the killed run gone")
    produce(30)
    watched = watch_once(ws)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    produce(30)
    rows = all_read("the run watch restarted to read on")
    # every record after the new version is v2's: the restarts kept the version
    assert per_version(rows) == {1: in_v1, 2: produced - in_v1}
    assert {row["t"] for row in rows} == {topic} and {row["p"] for row in rows} == {0, 1, 2}

    # 4. a new version that commits, then fails: recorded, not rolled back over (issue 52)
    ws.write_job(JOB, description=DESCRIPTIONS[1], **{**scenario.job, "sql": FAILS_ON_POISON})
    before_v3 = produced
    with paused_deploy(ws, "--handover", "cold") as deploy_v3:
        # the deployer is paused from when it submitted v3: it cannot see v3 healthy
        produce(30)
        wait_for(
            committed(end_offsets(), 3),
            timeout=180,
            interval=0.25,
            what="v3 to commit every record",
        )
        produce(1, value=POISON)  # v3's next batch fails on it
        wait_for(
            lambda: failed_and_gone(ws, 3), timeout=180, interval=0.25, what="v3 to fail and exit"
        )
    failed = deploy_v3.result
    print(f"the v3 deploy, paused {deploy_v3.paused:.1f} s:\n{failed.stdout}{failed.stderr}")
    said, words = failed.stdout, failed.stdout.lower()
    assert "start clean as version 3; src at v2's committed offsets" in said, said
    assert failed.returncode != 0, said
    # once v3 committed a batch, resuming v2 would read and write again what v3 did
    assert not re.search(r"rolled back: v\d+ running again", words), said
    assert ws.record(JOB) is None, f"a run is up after v3 failed: {ws.record(JOB)}"
    assert all(word in words for word in ("committed", "not rolled back", "down")), said
    assert ws.stored(JOB)["meta"]["query-version"] == 3, "v3 is recorded"
    shown = ws.cli("status", "--output", "json")
    assert shown.returncode in (0, 1), shown.stdout + shown.stderr
    (row,) = json.loads(shown.stdout)["jobs"]
    assert (row["stored-version"], row["running"]) == (3, False), row

    # a fixed query, v4: it starts where v3's last committed batch ended, at the poison record
    ws.write_job(JOB, description=DESCRIPTIONS[1], **{**scenario.job, "sql": FIXED})
    fixed = ws.deploy()
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "start clean as version 4; src at v3's committed offsets" in fixed.stdout, fixed.stdout
    produce(30)
    rows = all_read("v4 to read on", version=4)
    assert per_version(rows) == {
        1: in_v1,
        2: before_v3 - in_v1,
        3: 30,
        4: produced - before_v3 - 30,
    }, "every record read by one version: v3 what it committed, v4 the poison record on"
    for partition in range(PARTITIONS):
        offsets = [
            sorted(r["o"] for r in rows if r["p"] == partition and r["__query_version"] == v)
            for v in (2, 3, 4)
        ]
        read = [o for o in offsets if o]
        assert all(a[-1] < b[0] for a, b in zip(read, read[1:], strict=False)), (
            f"partition {partition}: v2, v3 and v4 read one after the other: {offsets}"
        )
