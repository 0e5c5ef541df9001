"""A windowed count read from Kafka through a change that keeps its state and one that does not,
on the real broker through the real CLI (docs/concepts/state.md): one job, one topic of two
partitions.

The count is per record key in 20-second windows of the record's Kafka `timestamp` (produced
with explicit timestamps, so every window and count is known in advance), watermarked 10 s
behind, written in append mode to parquet: a window is written once, when the watermark passes
its end. The truth is counted here, from every record produced. The trigger is 2 seconds: a
window closes two batches after the record that moves the watermark past it.

1. v1 reads the topic from the earliest offset (`deploy --kafka-start earliest`, its table
   without `startingOffsets`) and writes the windows the watermark closed; two are open.
2. While a producer keeps producing into both open windows, a filter every record passes
   (kept): the plan says the state is continued, and the deploy continues from v1's state (its
   checkpoint copied once v1 stopped; the offsets and open windows go on, nothing read again).
   A record far ahead then closes every window: each closed window is written once across v1
   and v2, with its true count, and the windows open at the change are v2's.
3. The window made 30 seconds (rebuilt) while the source goes on from where v2 stopped:
   refused, exit 1, before anything stops: v2's run is the one that ran before.
4. The same change with `deploy --kafka-start earliest`: v3 reads the topic again, and every
   window it writes is the truth for 30-second windows over every record produced.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest

from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.stores.storage import FileStorage
from tests.support.kafka_jobs import Producer, sink_rows, use_connector
from tests.support.workspace import wait_for

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1200),  # a safety net, not a limit asserted: three starts on 2 cores
]

JOB, TOPIC = "window-counts", "ws-in"
KEYS = "abc"
DELAY = 10  # the watermark's delay, seconds
COUNTS = (
    "SELECT CAST(key AS STRING) AS k, CAST(window.start AS BIGINT) AS w, count(*) AS c "
    "FROM src{where} GROUP BY CAST(key AS STRING), window(`timestamp`, '{size} seconds')"
)
#: v1's records, in seconds after the base: the watermark passes 42, so [0, 20) and [20, 40)
#: close and [40, 60) stays open.
FIRST = (1, 4, 7, 11, 15, 19, 22, 26, 29, 33, 38, 41, 44, 47, 52)
#: What the producer produces while v2 is deployed: into [40, 60) and [60, 80), never past 69,
#: so that the watermark stays below 60 and both windows are open at the change.
DURING = 40, 70
#: After the change: more into the open windows, then one far ahead (its watermark, 190,
#: closes every window but its own).
AFTER, FAR = (45, 58, 61, 79), 200


def test_a_kept_change_continues_from_kafka_and_a_changed_window_is_refused_or_rebuilt(
    kafka_workspace, kafka_broker, kafka_spark, spark
):
    ws, broker = kafka_workspace, kafka_broker
    broker.create_topic(TOPIC, partitions=2)
    use_connector(ws, kafka_spark, trigger="2 seconds")
    out = ws.root / "out" / JOB
    # Event times from a whole minute ten minutes ago (windows of 20 and 30 s align with it;
    # the broker keeps records that recent)
    base = int(time.time()) // 60 * 60 - 600
    produced: list[tuple[str, int]] = []  # (key, second after base) of every record

    def made(n: int, second: int) -> tuple[str, str, int]:
        return KEYS[n % len(KEYS)], f"{n}@{second}", (base + second) * 1000

    def produce(seconds: tuple[int, ...]) -> None:
        records = [made(len(produced) + i, s) for i, s in enumerate(seconds)]
        broker.produce(TOPIC, records)
        produced.extend((key, s) for (key, _, _), s in zip(records, seconds, strict=True))

    def truth(size: int, watermark: int) -> dict[tuple[str, int], int]:
        """The count of every (key, window start) whose window the watermark closed."""
        return dict(Counter(
            (key, s // size * size) for key, s in produced if s // size * size + size <= watermark
        ))  # fmt: skip

    def windows(*versions: int) -> list[dict]:
        return [
            {**row, "w": row["w"] - base}
            for row in sink_rows(spark, out)
            if row["__query_version"] in versions
        ]

    def written(versions: tuple[int, ...], expected: dict[tuple[str, int], int]) -> list[dict]:
        """The rows of `versions` once they hold every window of `expected`."""

        def done():
            rows = windows(*versions)
            return rows if {(r["k"], r["w"]) for r in rows} >= set(expected) else None

        return wait_for(done, timeout=240, what=f"v{versions}'s {len(expected)} windows")

    def counts(rows: list[dict]) -> dict[tuple[str, int], int]:
        found = Counter((r["k"], r["w"]) for r in rows)
        assert max(found.values()) == 1, f"windows written twice: {found.most_common(3)}"
        return {(r["k"], r["w"]): r["c"] for r in rows}

    def write(size: int, where: str = "") -> None:
        ws.write_job(JOB, **{"target-table": "out", "outputMode": "append",
                             "sql": COUNTS.format(where=where, size=size)})  # fmt: skip

    def deploy(*args: str, expect: int = 0) -> str:
        result = ws.deploy(*args)
        assert result.returncode == expect, result.stdout + result.stderr
        return result.stdout

    ws.write_tables([
        {"name": "src", "format": "kafka",
         "options": {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": TOPIC},
         "watermark": {"column": "timestamp", "delay": f"{DELAY} seconds"}},
        {"name": "out", "format": "parquet", "options": {"path": str(out)}},
    ])  # fmt: skip

    # 1. v1 from the earliest offset: [0, 20) and [20, 40) closed, [40, 60) open
    produce(FIRST)
    write(20)
    deploy("--kafka-start", "earliest")
    before = truth(20, max(FIRST) - DELAY)
    assert counts(written((1,), before)) == before

    # 2. kept: a filter every record passes, deployed while records arrive in the open windows
    write(20, where=" WHERE `partition` >= 0")

    def streamed(n: int) -> tuple[str, str, int]:
        """The producer's record n, its second in DURING."""
        low, high = DURING
        return made(len(FIRST) + n, low + n * 7 % (high - low))

    producer = Producer(broker, TOPIC, every=0.1, limit=5_000, seconds=600, record=streamed)
    producer.start()
    try:
        output = deploy()
        while_deploying = producer.next
    finally:
        sent = producer.stop()
    print(output)
    assert "state: continued" in output and "count(*): kept" in output, output  # its plan
    assert "continued from v1's state (" in output, output
    assert "running v2 (from v1's state)" in output, output
    assert "starts at v1's batch" not in output, output  # no carry: the copy's offsets go on
    assert while_deploying > 0, "nothing was produced while the deploy ran"
    produced.extend((key, at // 1000 - base) for key, _, at in map(streamed, range(sent)))
    # the windows open at the change hold records of both: v1 read some of what the producer
    # produced (its checkpoint, kept as it was), v2 the rest
    v1_read = read_checkpoint(FileStorage(), str(ws.state / "checkpoints" / JOB / "1"))
    assert v1_read is not None
    v1_offsets = v1_read.sources[0].committed[TOPIC]
    assert len(FIRST) < sum(v1_offsets.values()) < len(FIRST) + sent, v1_offsets
    produce(AFTER)
    produce((FAR,))
    closed = truth(20, FAR - DELAY)
    assert {w for _, w in closed} == {0, 20, 40, 60}, closed
    both = counts(written((1, 2), closed))
    assert both == closed  # every closed window once, with every record of it
    by_v2 = {(r["k"], r["w"]) for r in windows(2)}
    assert by_v2 == {window for window in closed if window[1] >= 40}, by_v2

    # 3. the window resized (rebuilt) while the source goes on: refused before anything stops
    running = ws.record(JOB)
    assert running is not None
    write(30, where=" WHERE `partition` >= 0")
    refused = deploy(expect=1)
    print(refused)
    assert "refused" in refused and "window 20 seconds -> 30 seconds" in refused, refused
    assert "state: partial, refused" in refused, refused
    still = ws.record(JOB)
    assert still is not None and (still["pid"], still["started"]) == (
        running["pid"],
        running["started"],
    ), "the running v2 was touched"
    assert ws.stored(JOB)["meta"]["query-version"] == 2
    assert not (ws.state / "checkpoints" / JOB / "3").exists()

    # 4. the same change with a declared start: v3 reads the topic again and rebuilds
    rebuilt = deploy("--kafka-start", "earliest")
    print(rebuilt)
    assert "state: rebuilt" in rebuilt and "window 20 seconds -> 30 seconds" in rebuilt, rebuilt
    assert "src starts from earliest (deploy --kafka-start)" in rebuilt, rebuilt
    assert ws.stored(JOB)["meta"]["query-version"] == 3
    resized = truth(30, FAR - DELAY)
    assert counts(written((3,), resized)) == resized
