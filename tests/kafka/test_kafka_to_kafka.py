"""Kafka -> SQL -> Kafka on the real broker: a Kafka sink is at-least-once (Spark's promise). While
records are produced continuously, the driver is SIGKILLed mid-stream and `deploy` restarts it from
its checkpoint, to read what arrived until the producer stopped, 2 s after the kill: no record is
lost, and any record written twice belongs to the one batch the run replayed, which the metadata
columns (as record headers) identify: both copies carry the same query id, version and batch
time."""

from __future__ import annotations

import json
import time
from collections import defaultdict

import pytest

from tests.support.kafka_jobs import Producer, kafka_sink, kafka_source, use_connector
from tests.support.workspace import kill_driver, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.e2e]

#: 10 ms per record (Thread.sleep through reflect): a batch takes long enough to be killed in.
COPY = (
    "SELECT key, to_json(named_struct('k', CAST(key AS STRING), 'p', `partition`, "
    "'o', `offset`)) AS value FROM src "
    "WHERE length(coalesce(reflect('java.lang.Thread', 'sleep', CAST(10 AS BIGINT)), '')) >= 0"
)
METADATA = {
    "__create_timestamp",
    "__query_name",
    "__query_description",
    "__query_id",
    "__query_version",
    "__query_create_timestamp",
}


def in_flight(checkpoint) -> bool:
    """A batch is planned (its offsets written) and not committed."""
    planned = {p.name for p in (checkpoint / "offsets").iterdir() if p.name.isdigit()}
    done = {p.name for p in (checkpoint / "commits").iterdir() if p.name.isdigit()}
    return bool(planned - done)


def test_a_kafka_sink_loses_nothing_and_a_replay_is_one_batch(
    kafka_workspace, kafka_broker, kafka_spark
):
    ws, broker = kafka_workspace, kafka_broker
    broker.create_topic("c-in", partitions=2)
    broker.create_topic("c-out", partitions=1)
    use_connector(ws, kafka_spark)
    ws.write_tables([kafka_source(broker.bootstrap, "c-in"), kafka_sink(broker.bootstrap, "c-out")])
    ws.write_job("copy", description="copies", **{"target-table": "out", "sql": COPY})

    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    # records from when the run is up until just after the kill: each batch the run reads
    # then is one of records that keep arriving, none a backlog of its start
    producer = Producer(broker, "c-in", every=0.02)
    producer.start()
    try:
        wait_for(lambda: len(broker.records("c-out")) >= 200, timeout=120, what="first output")
        checkpoint = ws.state / "checkpoints" / "copy" / "1"
        wait_for(lambda: in_flight(checkpoint), interval=0.05, what="a batch under way")
        kill_driver(ws.record("copy")["pid"])  # mid-batch: the producer does not pause
        time.sleep(2)
    finally:
        produced = producer.stop()
    wait_for(
        lambda: ws.plan_json()["copy"]["action"] == "restart-from-checkpoint",
        timeout=60,
        what="the job to be seen as down",
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-from-checkpoint" in result.stdout

    def written():
        records = broker.records("c-out")
        keys = {json.loads(r.value)["k"] for r in records}
        return records if len(keys) >= produced else None

    records = wait_for(written, timeout=180, what="every record copied")
    stored = ws.stored("copy")["meta"]
    copies = defaultdict(list)
    for record in records:
        source = json.loads(record.value)
        headers = {key: (value or b"").decode() for key, value in record.headers}
        assert set(headers) == METADATA, headers
        assert headers["__query_name"] == "copy"
        assert headers["__query_id"] == stored["query-id"]
        assert headers["__query_version"] == "1"
        copies[(source["p"], source["o"])].append(headers["__create_timestamp"])

    keys = {json.loads(r.value)["k"] for r in records}
    assert keys == {f"key-{n}" for n in range(produced)}, "no record is lost"
    repeated = {where: times for where, times in copies.items() if len(times) > 1}
    assert all(len(times) == 2 for times in repeated.values()), "replayed at most once"
    # a repeat is a replay of one batch: both copies carry that batch's time, one batch in all
    assert all(len(set(times)) == 1 for times in repeated.values()), repeated
    assert len({times[0] for times in repeated.values()}) <= 1, repeated
    print(f"kafka sink: {produced} produced, {len(records)} written, {len(repeated)} repeated")
