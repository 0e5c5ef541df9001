"""Kafka jobs as the Kafka scenarios and the benchmark build them: tables on the test broker, a
query that keeps each record's topic, partition and offset, a producer that keeps producing, and
the checks of what a sink holds (every record read exactly once, counted per version)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tests.support import warm_cli
from tests.support.kafka_broker import Broker
from tests.support.kafka_spark import KafkaSpark, job_properties
from tests.support.workspace import TEST_TEMPLATE, Workspace

#: Each record's identity travels with it: where the source holds it.
PASS_THROUGH = (
    "SELECT CAST(key AS STRING) AS k, CAST(value AS STRING) AS v, topic AS t, "
    "`partition` AS p, `offset` AS o FROM src"
)


def kafka_source(bootstrap: str, topic: str, name: str = "src", **options: str) -> dict[str, Any]:
    return {
        "name": name,
        "format": "kafka",
        "options": {
            "kafka.bootstrap.servers": bootstrap,
            "subscribe": topic,
            "startingOffsets": "earliest",
            **options,
        },
    }


def kafka_sink(bootstrap: str, topic: str, name: str = "out") -> dict[str, Any]:
    return {
        "name": name,
        "format": "kafka",
        "options": {"kafka.bootstrap.servers": bootstrap, "topic": topic},
    }


def use_connector(
    ws: Workspace, spark: KafkaSpark, trigger: str | None = None, **extra: str
) -> None:
    """The workspace's template gives every job the connector, its driver the JVM options of
    its release (kafka_spark.job_properties), and `extra` Spark properties; `trigger` (e.g.
    "3 seconds") instead of the template's 1 second."""
    import yaml

    template = json.loads(json.dumps(TEST_TEMPLATE))
    template["sparkProperties"].update(job_properties(spark))
    template["sparkProperties"].update(extra)
    if trigger is not None:
        template["trigger"] = {"processingTime": trigger}
    ws.template.write_text(yaml.safe_dump(template))


def watch_once(ws: Workspace) -> subprocess.CompletedProcess[str]:
    """`watch --once` over the workspace's store, as the local e2e tests run it (forked warm,
    as `Workspace.cli` runs a command: tests/support/warm_cli.py)."""
    argv = ws.argv("watch", "--once", "--stop-timeout", "30", "--start-timeout", "120", paths=False)
    for option in ("--table-definition-path", "--template-file"):
        at = argv.index(option)
        del argv[at : at + 2]
    done = warm_cli.run(argv[3:], cwd=ws.root, env=dict(os.environ), stdin=None, timeout=300)
    ws._remember_pids()  # noqa: SLF001 - kill_all must stop what watch started
    return done


#: What a Producer produces as its record n: key, value, and the record's timestamp in ms since
#: the epoch (None: the producer's clock).
Made = tuple[str, str, int | None]


def numbered(n: int) -> Made:
    return f"key-{n}", f"value-{n}", None


class Producer(threading.Thread):
    """Produces `key-<n>` records, n = 0, 1, 2, ..., one every `every` seconds, until stopped,
    or until `limit` records or `seconds` have gone by (a scenario that fails midway never
    leaves it producing). `record` makes record n otherwise (its key, value and timestamp)."""

    def __init__(
        self,
        broker: Broker,
        topic: str,
        every: float = 0.02,
        start: int = 0,
        limit: int = 100_000,
        seconds: float = 900.0,
        record: Callable[[int], Made] = numbered,
    ) -> None:
        super().__init__(daemon=True)
        self.broker, self.topic, self.every, self.record = broker, topic, every, record
        self.next = start
        self.limit, self.seconds = start + limit, seconds
        self.halt = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            producer = self.broker.producer()
            deadline = time.monotonic() + self.seconds
            while not self.halt.is_set() and self.next < self.limit:
                if time.monotonic() > deadline:
                    break
                key, value, at = self.record(self.next)
                extra = {} if at is None else {"timestamp": at}
                producer.produce(self.topic, key=key, value=value, **extra)
                producer.poll(0)
                self.next += 1
                self.halt.wait(self.every)
            if producer.flush(60):
                raise RuntimeError("records not delivered")
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> int:
        """Stop producing; how many records were produced (all delivered)."""
        self.halt.set()
        self.join(90)
        if self.error is not None:
            raise self.error
        return self.next


def sink_rows(spark, path) -> list[dict[str, Any]]:
    """The rows a file sink holds (through its log: only committed batches)."""
    try:
        frame = spark.read.parquet(str(path))
    except Exception:  # noqa: BLE001 - nothing committed yet
        return []
    return [row.asDict() for row in frame.collect()]


def read_counts(rows: list[dict[str, Any]]) -> Counter[tuple[str, int, int]]:
    """How many times the sink holds each source record (topic, partition, offset)."""
    return Counter((row["t"], row["p"], row["o"]) for row in rows)


def per_version(rows: list[dict[str, Any]]) -> dict[int, int]:
    return dict(sorted(Counter(row["__query_version"] for row in rows).items()))


def exactly_once(rows: list[dict[str, Any]], produced: int, topic: str) -> dict[str, int]:
    """lost, repeated and read of `produced` records `key-0`... of `topic`."""
    keys = Counter(row["k"] for row in rows if row["t"] == topic)
    expected = {f"key-{n}" for n in range(produced)}
    return {
        "produced": produced,
        "read": sum(keys.values()),
        "lost": len(expected - set(keys)),
        "repeated": sum(count - 1 for count in keys.values() if count > 1),
        "unexpected": len(set(keys) - expected),
    }
