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
   (after a SIGKILL `deploy` does the same: tests/kafka/test_kafka_to_kafka.py).

The trigger is 3 seconds (the template's is 1): a batch every 3 s while the producer produces,
and a stop finds the run between two batches on a loaded machine."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from typing import Any

import pytest

from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.model.checkpoint_report import CheckpointReport
from flink_sql_runner.stores.storage import FileStorage
from tests.support.kafka_handover import JOB, PARTITIONS, Scenario
from tests.support.kafka_jobs import (
    exactly_once,
    per_version,
    read_counts,
    sink_rows,
    use_connector,
    watch_once,
)
from tests.support.workspace import Workspace, kill_driver, wait_for

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: five starts on 2 cores
]

TRIGGER = "3 seconds"
#: A record every 100 ms while the producer produces, 30 a batch; each run reads 20 before the
#: next change (the benchmark: every 20 ms, 100).
EVERY, STEADY = 0.1, 20
#: Records produced into each partition while the job is stopped (step 2).
WHILE_STOPPED = {0: 4, 1: 0, 2: 2}


def inspect(ws: Workspace, *args: str) -> str:
    result = ws.cli("inspect", JOB, *args, paths=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


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

    def produce(count: int = 0, into: dict[int, int] | None = None) -> None:
        """`count` records, keyed, or `into` each partition as many as it says."""
        nonlocal produced
        for partition, many in (into or {None: count}).items():
            keys = range(produced, produced + many)
            records = ((f"key-{n}", f"value-{n}") for n in keys)
            broker.produce(topic, records, partition=partition)
            produced += many

    def all_read(what: str) -> list[dict[str, Any]]:
        """The sink's rows once the checkpoint committed every record produced (a file sink
        writes a batch before its checkpoint commits it), each read once."""
        ends = {topic: {str(p): n for p, n in sorted(broker.end_offsets(topic).items())}}
        wait_for(committed(ends), timeout=180, what=what)
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

    def committed(offsets: dict[str, Any]) -> Any:
        def check() -> CheckpointReport | None:
            report = read_checkpoint(FileStorage(), str(checkpoint))
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
    wait_for(committed(ends), timeout=120, what="the new records committed")

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
    produce(30)
    watched = watch_once(ws)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    produce(30)
    rows = all_read("the run watch restarted to read on")
    # every record after the new version is v2's: the restarts kept the version
    assert per_version(rows) == {1: in_v1, 2: produced - in_v1}
    assert {row["t"] for row in rows} == {topic} and {row["p"] for row in rows} == {0, 1, 2}
