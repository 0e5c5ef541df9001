"""Kafka -> SQL -> parquet on the real broker, through real spark-submit: a restart from the
checkpoint (a config change; a SIGKILL then `deploy`; a SIGKILL then `watch`) continues from the
committed offsets, and every record produced is read exactly once."""

from __future__ import annotations

import pytest

from tests.support.kafka_jobs import (
    PASS_THROUGH,
    exactly_once,
    kafka_source,
    per_version,
    read_counts,
    sink_rows,
    use_connector,
    watch_once,
)
from tests.support.workspace import kill_driver, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.e2e, pytest.mark.spark]


def test_restarts_from_the_checkpoint_read_every_record_once(
    kafka_workspace, kafka_broker, kafka_spark, spark
):
    ws, broker = kafka_workspace, kafka_broker
    topic, out = "orders-a", ws.root / "out" / "orders"
    broker.create_topic(topic, partitions=3)
    use_connector(ws, kafka_spark)
    ws.write_tables(
        [
            kafka_source(broker.bootstrap, topic),
            {"name": "out", "format": "parquet", "options": {"path": str(out)}},
        ]
    )
    job = {"description": "first words", "target-table": "out", "sql": PASS_THROUGH}
    ws.write_job("orders", **job)
    produced = 0

    def produce(count: int) -> None:
        nonlocal produced
        broker.produce(
            topic, ((f"key-{n}", f"value-{n}") for n in range(produced, produced + count))
        )
        produced += count

    def all_read(what: str) -> list[dict]:
        def check():
            rows = sink_rows(spark, out)
            return rows if len(rows) >= produced else None

        rows = wait_for(check, timeout=180, what=what)
        assert exactly_once(rows, produced, topic) == {
            "produced": produced,
            "read": produced,
            "lost": 0,
            "repeated": 0,
            "unexpected": 0,
        }
        assert set(read_counts(rows).values()) == {1}
        return rows

    # 1. new -> start clean (v1), reads what the topic held from the earliest offsets
    produce(60)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout
    rows = all_read("v1 to read the first records")
    assert {row["__query_description"] for row in rows} == {"first words"}

    # 2. a config change -> stop with checkpoint, restart: the committed offsets continue
    produce(40)
    ws.write_job("orders", **{**job, "description": "second words"})
    assert ws.plan_json()["orders"]["action"] == "stop-and-restart-from-checkpoint"
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    produce(40)
    rows = all_read("the restarted run to read on")
    assert per_version(rows) == {1: produced}
    assert "second words" in {row["__query_description"] for row in rows}

    # 3. SIGKILL mid-stream -> deploy restarts it from the checkpoint
    kill_driver(ws.record("orders")["pid"])
    produce(50)
    wait_for(
        lambda: ws.plan_json()["orders"]["action"] == "restart-from-checkpoint",
        timeout=60,
        what="the job to be seen as down",
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-from-checkpoint" in result.stdout
    produce(30)
    all_read("the run deploy restarted to read on")

    # 4. SIGKILL again -> watch restarts it from the checkpoint
    kill_driver(ws.record("orders")["pid"])
    produce(30)
    watched = watch_once(ws)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    produce(30)
    rows = all_read("the run watch restarted to read on")
    assert per_version(rows) == {1: produced}
    assert {row["t"] for row in rows} == {topic} and {row["p"] for row in rows} == {0, 1, 2}
