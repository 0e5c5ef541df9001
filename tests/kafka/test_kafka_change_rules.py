"""Kafka's change rules for real: one job on the real broker, changed through the real CLI while a
producer keeps producing, one decision after the other (five Spark starts in all):

- the source's broker list written in another order and spacing: no change, nothing touched;
- its file sink made a Kafka sink whose broker does not answer: a restart from the checkpoint
  whose run fails, rolled back to the file sink from the same checkpoint (the batch the failed
  run had planned is written to the file sink, once);
- the same change to the real broker: a restart from the checkpoint, the topic gets only what
  the file sink did not;
- a second job writing that topic on the broker list spelled otherwise: refused before anything
  starts, exit 2, naming both files, the running job untouched although it had a change too;
- the source's topic changed: a new version, reading the new topic from where its table says
  (Spark's default, `latest`): every record produced once the deploy returned reaches it.

Every record of the first topic lands once in the file sink or in the topic. A restart of a
Kafka sink that cut a batch writes that batch again whole: tests/kafka/test_kafka_to_kafka.py.

The trigger is 3 seconds (the template's is 1): a batch every 3 s while the producer produces,
and a stop finds the run between two batches on a loaded machine (a run whose batches fall
behind its trigger is stopped only by the deployer's timeout, with a SIGKILL)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.support.kafka_broker import free_port
from tests.support.kafka_jobs import Producer, kafka_sink, sink_rows, use_connector
from tests.support.workspace import wait_for

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: five starts on 2 cores
]

JOB = "rules"
#: Kafka's sink writes `key` and `value`; the file sink keeps where each record was read.
COPY = (
    "SELECT CAST(key AS STRING) AS key, CAST(value AS STRING) AS value, topic AS t, "
    "`partition` AS p, `offset` AS o FROM src"
)


def changed(planned) -> dict[str, str]:
    """{field: kind} of a plan's changes."""
    return {change["field"]: change["kind"] for change in planned["changes"]}


def keys_in(broker, topic: str) -> Counter[str]:
    return Counter(record.key.decode() for record in broker.records(topic))


def test_kafka_change_rules_on_the_real_broker(kafka_workspace, kafka_broker, kafka_spark, spark):
    ws, broker = kafka_workspace, kafka_broker
    for topic, partitions in (("r-in-a", 2), ("r-in-b", 1), ("r-out-1", 1)):
        broker.create_topic(topic, partitions=partitions)
    use_connector(ws, kafka_spark, trigger="3 seconds")
    out = ws.root / "out" / JOB
    brokers = f"{broker.bootstrap},{broker.other}"
    source = {
        "name": "src",
        "format": "kafka",
        "options": {
            "kafka.bootstrap.servers": brokers,
            "subscribe": "r-in-a",
            "startingOffsets": "earliest",
        },
    }
    file_sink = {"name": "out", "format": "parquet", "options": {"path": str(out)}}
    job = {"description": "copies", "target-table": "out", "sql": COPY}
    ws.write_tables([source, file_sink])
    ws.write_job(JOB, **job)

    def file_keys() -> Counter[str]:
        return Counter(row["key"] for row in sink_rows(spark, out))

    def deploy(expect: int = 0):
        result = ws.deploy()
        assert result.returncode == expect, result.stdout + result.stderr
        return result

    def pid() -> int:
        record = ws.record(JOB)
        assert record is not None, "the job is not running"
        return int(record["pid"])

    producer = Producer(broker, "r-in-a", every=0.1, limit=20_000, seconds=900)
    producer.start()
    try:
        # v1: Kafka -> parquet
        deploy()
        wait_for(lambda: len(file_keys()) >= 50, timeout=180, what="v1 to write its first rows")
        running = pid()

        # the same brokers in another order and spacing: nothing changes, nothing is touched
        source["options"]["kafka.bootstrap.servers"] = f" {broker.other} , {broker.bootstrap}"
        ws.write_tables([source, file_sink])
        planned = ws.plan_json()[JOB]
        assert planned["action"] == "noop", planned
        assert "nothing to do" in deploy().stdout
        assert pid() == running

        # file sink -> Kafka sink whose broker does not answer: a restart from the checkpoint,
        # its run fails on its first batch, and the file sink's run is started again from the
        # same checkpoint, the store unchanged
        dead = kafka_sink(f"127.0.0.1:{free_port()}", "r-out-1")
        dead["options"]["kafka.max.block.ms"] = "1000"  # no broker there: 1 s says so
        ws.write_tables([source, dead])
        planned = ws.plan_json()[JOB]
        assert planned["action"] == "stop-and-restart-from-checkpoint", planned
        assert changed(planned)["tables.out.format"] == "config", planned["changes"]
        assert set(changed(planned).values()) == {"config"}, planned["changes"]
        failed = deploy(expect=1)
        assert "rolled back: v1 running again from its checkpoint" in failed.stdout, failed.stdout
        assert ws.stored(JOB)["tables"]["out"]["format"] == "parquet"
        assert pid() != running
        before = len(file_keys())
        wait_for(lambda: len(file_keys()) > before + 20, timeout=120, what="the file sink again")

        # file sink -> Kafka sink on the real broker: a restart from the checkpoint; Kafka gets
        # only what the file sink did not
        ws.write_tables([source, kafka_sink(broker.bootstrap, "r-out-1")])
        planned = ws.plan_json()[JOB]
        assert planned["action"] == "stop-and-restart-from-checkpoint", planned
        deploy()
        wait_for(lambda: len(broker.records("r-out-1")) >= 30, timeout=180, what="r-out-1")
        running = pid()

        # a second job writing r-out-1 on the broker list spelled otherwise: refused before
        # anything starts, although the first job has a change of its own
        other_sink = kafka_sink(f"{broker.bootstrap} ,{broker.bootstrap}", "r-out-1", "out_too")
        ws.write_tables([source, kafka_sink(broker.bootstrap, "r-out-1"), other_sink])
        ws.write_job(JOB, **{**job, "description": "copies, changed"})
        ws.write_job("rules-too", **{**job, "target-table": "out_too"})
        refused = deploy(expect=2)
        assert "rules.yaml" in refused.stderr and "rules-too.yaml" in refused.stderr, refused
        assert "two jobs cannot write one sink" in refused.stderr, refused.stderr
        assert pid() == running and ws.record("rules-too") is None
        assert ws.stored(JOB)["description"] == "copies"
        (ws.jobs / "rules-too.yaml").unlink()
        ws.write_job(JOB, **job)
    finally:
        produced = producer.stop()

    expected = {f"key-{n}" for n in range(produced)}

    def landed():
        found = file_keys() + keys_in(broker, "r-out-1")
        return found if set(found) >= expected else None

    wait_for(landed, timeout=180, what=f"all {produced} records in the sinks")
    in_file, in_one = file_keys(), keys_in(broker, "r-out-1")
    assert set(in_file) | set(in_one) == expected, "nothing lost"
    assert max(in_file.values()) == 1, "the file sink holds each record once"
    assert not set(in_file) & set(in_one), "Kafka got only what the file sink did not"
    assert max(in_one.values()) == 1, "the topic holds each record once"
    for record in broker.records("r-out-1"):
        headers = dict(record.headers)
        assert headers["__query_name"] == JOB.encode()
        assert headers["__query_version"] == b"1"

    # the source's topic changes: a new version, reading r-in-b from where its table says
    source["options"] = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": "r-in-b"}
    ws.write_tables([source, kafka_sink(broker.bootstrap, "r-out-1")])
    planned = ws.plan_json()[JOB]
    assert planned["action"] == "stop-and-start-clean", planned
    assert planned["query-version"] == 2
    assert changed(planned)["tables.src.options.subscribe"] == "query"
    assert planned["reason"].endswith(
        "src starts at latest (Spark's default; the table sets no startingOffsets) (topics not "
        "read by v1)"
    )
    deploy()
    broker.produce("r-in-b", ((f"b-{n}", f"b-value-{n}") for n in range(20)))

    def new_version():
        found = [r for r in broker.records("r-out-1") if dict(r.headers)["__query_version"] == b"2"]
        return found if len(found) >= 20 else None

    records = wait_for(new_version, timeout=180, what="v2 to copy r-in-b")
    assert sorted(r.key.decode() for r in records) == sorted(f"b-{n}" for n in range(20))
    print(f"change rules: {produced} produced; file {len(in_file)}, r-out-1 {len(in_one)}")
