"""`inspect` of a Kafka job on the real broker, through real spark-submit, across a restart: a
job reads a topic of three partitions the test produced known records into, is stopped, more
records are produced, and it is deployed again from its checkpoint. What `inspect` reports per
topic-partition is what the test produced; the second run resumed right after the last batch
the first one committed; the runs come from the run history the runs keep beside their
checkpoint (the driver logs are gone when it is read)."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.model.checkpoint_report import CheckpointReport
from flink_sql_runner.stores.storage import FileStorage
from tests.support.kafka_jobs import PASS_THROUGH, kafka_source, use_connector
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

TOPIC = "inspected"
#: Records produced per partition before the first run, then before the second.
FIRST = {0: 5, 1: 7, 2: 9}
SECOND = {0: 4, 1: 0, 2: 2}


def ends(*counts: dict[int, int]) -> dict[str, dict[str, int]]:
    """The offsets after every record produced: per partition, how many it holds."""
    return {TOPIC: {str(p): sum(c[p] for c in counts) for p in FIRST}}


def inspect(ws: Workspace, *args: str) -> str:
    result = ws.cli("inspect", "orders", *args, paths=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_inspect_reports_the_offsets_produced_and_where_a_restart_resumed(
    kafka_workspace, kafka_broker, kafka_spark
):
    ws, broker = kafka_workspace, kafka_broker
    broker.create_topic(TOPIC, partitions=3)
    use_connector(ws, kafka_spark)
    out = ws.root / "out" / "orders"
    ws.write_tables(
        [
            kafka_source(broker.bootstrap, TOPIC),
            {"name": "out", "format": "parquet", "options": {"path": str(out)}},
        ]
    )
    ws.write_job("orders", **{"target-table": "out", "sql": PASS_THROUGH})
    checkpoint = ws.state / "checkpoints" / "orders" / "1"
    produced = 0

    def produce(counts: dict[int, int]) -> None:
        nonlocal produced
        for partition, count in counts.items():
            keys = range(produced, produced + count)
            broker.produce(TOPIC, ((f"k-{n}", f"v-{n}") for n in keys), partition=partition)
            produced += count

    def committed(offsets: dict[str, Any]) -> Any:
        def check() -> CheckpointReport | None:
            report = read_checkpoint(FileStorage(), str(checkpoint))
            done = report is not None and report.sources and report.sources[0].committed
            return report if done == offsets else None

        return check

    produce(FIRST)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    wait_for(committed(ends(FIRST)), timeout=120, what="the first records committed")
    assert ws.cli("stop", "orders", paths=False).returncode == 0
    stopped = read_checkpoint(FileStorage(), str(checkpoint))
    assert stopped is not None and stopped.last_committed is not None

    produce(SECOND)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-from-checkpoint" in result.stdout
    wait_for(committed(ends(FIRST, SECOND)), timeout=120, what="the new records committed")

    shutil.rmtree(ws.state / "logs")  # the runs come from the run history, as on any target
    doc = json.loads(inspect(ws, "--output", "json"))
    batches = doc["checkpoint"]["batches"]
    assert batches["first"] == 0 and batches["last"] > stopped.last_committed
    assert batches["pending"] is None
    assert doc["checkpoint"]["sources"] == [
        {"index": 0, "kind": "kafka", "committed": ends(FIRST, SECOND), "next": None}
    ]
    runs = doc["runs"]
    assert [(r["first-batch"], r["ended"], r["up"]) for r in runs] == [
        (0, "stopped", False),
        (stopped.last_committed + 1, None, True),
    ], "the second run resumed right after the last batch the first one committed"
    assert runs[1]["run-id"] == ws.record("orders")["run-id"]
    assert doc["notes"] == []

    text = inspect(ws).splitlines()
    assert "  source 0    kafka: committed inspected[0:9,1:7,2:11]" in text
    run_lines = [line for line in text if line.startswith("  run ")]
    assert [line.split(", ", 1)[1] for line in run_lines] == [
        "first batch 0, stopped",
        f"first batch {stopped.last_committed + 1}, up now",
    ]
