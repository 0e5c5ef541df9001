"""Kafka handovers: what a restart from the checkpoint (a config change) and a new version (a
query change) do to records that keep arriving while `deploy` carries them out, on a real broker
through real spark-submit: records produced, read by the old and the new run, lost, repeated,
and the pause in commits (tests/support/kafka_handover.py has the scenario and how each figure
is counted; tests/kafka/test_kafka_handover.py asserts it).

The broker is started here (tests/support/kafka_broker.py, jars from Maven), the jobs run on the
Spark whose Kafka connector Maven serves (tests/support/kafka_spark.py), and the parquet sink is
read through Spark's file-sink log by a local SparkSession of this process.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.benchmarks.common import Stats
from tests.support.kafka_broker import Broker
from tests.support.kafka_handover import Result, Scenario
from tests.support.kafka_jobs import sink_rows, use_connector
from tests.support.kafka_spark import KafkaSpark, find_kafka_spark
from tests.support.workspace import Workspace


@dataclass(frozen=True)
class KafkaResult:
    rounds: tuple[Result, ...]
    spark: str  # the Spark release the jobs ran on
    load: tuple[float, float]

    def stats(self, index: int, measure: Callable[[Any], float]) -> Stats:
        """`measure` of handover `index` (0: the restart, 1: the new version) over the rounds."""
        return Stats(tuple(measure(r.handovers[index]) for r in self.rounds))


@contextmanager
def reader() -> Iterator[Callable[[Path], list[dict[str, Any]]]]:
    """Reads a parquet sink through Spark (its `_spark_metadata` log: committed batches only)."""
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("kafka-bench-reader")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield lambda path: sink_rows(spark, path)
    finally:
        spark.stop()


@contextmanager
def spark_env(spark: KafkaSpark) -> Iterator[None]:
    """The CLI calls of this process start drivers with the Python of `spark`'s release."""
    saved = dict(os.environ)
    os.environ.update(spark.env())
    os.environ.pop("SPARK_HOME", None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def run(scratch: Path, rounds: int = 3, say: Callable[[str], None] = print) -> KafkaResult:
    say("  the Spark with a Kafka connector, the broker")
    spark = find_kafka_spark()
    broker = Broker.start(scratch / "kafka-broker")
    done: list[Result] = []
    try:
        load_before = os.getloadavg()[0]
        with spark_env(spark), reader() as read:
            for index in range(1, rounds + 1):
                ws = Workspace(scratch / f"kafka-{index}", target_options=spark.target_options)
                use_connector(ws, spark)
                try:
                    scenario = Scenario(ws, broker, read, say=say, topic=f"handover-{index}")
                    done.append(scenario.run())
                finally:
                    ws.kill_all()
                result = done[-1]
                restart, clean = result.handovers
                say(
                    f"  round {index}/{rounds}: {result.produced} produced, lost "
                    f"{result.overall['lost']}, repeated {result.overall['repeated']}; pause in "
                    f"commits {restart.pause:.1f} s (restart), {clean.pause:.1f} s (new version)"
                )
        return KafkaResult(tuple(done), spark.version, (load_before, os.getloadavg()[0]))
    finally:
        broker.stop()
