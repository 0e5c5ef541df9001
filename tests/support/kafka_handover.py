"""A Kafka job changed while records keep arriving: the scenario behind the Kafka handover test
(tests/kafka/test_kafka_handover.py asserts it, then goes on with the same job) and the `kafka`
benchmark (python -m tests.benchmarks --only kafka prints it, docs/how-to/kafka.md shows it).

One Kafka topic (three partitions), one job copying every record with its partition and offset
into a parquet sink (`PASS_THROUGH`), its source table with no `startingOffsets` (what Spark
defaults to: `latest`). v1 is deployed, then a producer keeps producing (a record every 20 ms
in the benchmark, every 100 ms in the test) while `deploy` carries out, one after the other,
each once the run before it has read 100 rows (20 in the test):

1. a config change (the description): stop with checkpoint, restart from it (v1 again);
2. a query change (a filter that keeps every record): stop, start clean as v2, whose source
   starts at the offsets v1 committed last.

Each run is told apart by what its rows carry (`__query_version`, `__query_description`); each
handover's figures come from the source records' partitions and offsets: what the new run read
that the old one had read too (repeated), and what neither read between the old run's last
offset and the new run's first, partition by partition (lost). The pause in commits is the
longest time without a committed batch from before the deploy began to the first batch after it
(the checkpoints' `commits/` files, by their modification time; the trigger is the template's:
1 second in the benchmark, 3 in the test).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.kafka_broker import Broker
from tests.support.kafka_jobs import PASS_THROUGH, Producer, exactly_once, per_version
from tests.support.workspace import Workspace, planned_by, wait_for

JOB, TOPIC, PARTITIONS = "orders", "handover", 3
#: A record every 20 ms: 50 a second, across the topic's partitions.
EVERY = 0.02
#: Rows each run reads before the next change is deployed.
STEADY = 100
QUERY_CHANGE = PASS_THROUGH + " WHERE `offset` >= 0"
DESCRIPTIONS = ("first run", "second run")


@dataclass(frozen=True)
class Handover:
    """One decision carried out while records arrived, and what it did to them."""

    decision: str  # for people
    action: str  # the plan's action
    reason: str  # the plan's reason
    deploy_seconds: float
    produced_during: int  # records produced while `deploy` ran
    read_before: int  # records the old run read
    read_after: int  # records the new run read
    lost: int
    repeated: int
    pause: float  # longest time without a committed batch, seconds
    deploy_output: str = ""


@dataclass(frozen=True)
class Result:
    produced: int
    handovers: tuple[Handover, ...]
    overall: dict[str, int]  # exactly_once over every row
    versions: dict[int, int]  # rows per query version
    runs: dict[str, int] = field(default_factory=dict)  # rows per run
    started: str = ""  # what the first deploy (v1's start) printed


def source_table(bootstrap: str, topic: str) -> dict[str, Any]:
    """The Kafka source without `startingOffsets`: a new checkpoint starts at `latest`."""
    return {
        "name": "src",
        "format": "kafka",
        "options": {"kafka.bootstrap.servers": bootstrap, "subscribe": topic},
    }


def run_of(row: dict[str, Any]) -> str:
    """Which run wrote a row: its version, and for v1 its description."""
    if row["__query_version"] == 1:
        return f"v1 {row['__query_description']}"
    return f"v{row['__query_version']}"


def handover_counts(rows: list[dict[str, Any]], before: str, after: str) -> dict[str, int]:
    """Read by the run `before` and by the run `after`, and per partition: offsets both read
    (repeated) and offsets between the old run's last and the new run's first that neither
    read (lost)."""
    old: dict[int, set[int]] = {}
    new: dict[int, set[int]] = {}
    for row in rows:
        which = run_of(row)
        if which in (before, after):
            (old if which == before else new).setdefault(row["p"], set()).add(row["o"])
    lost = repeated = 0
    for partition in set(old) | set(new):
        was, now = old.get(partition, set()), new.get(partition, set())
        repeated += len(was & now)
        if was and now:
            gap = range(max(was) + 1, min(now))
            lost += sum(1 for offset in gap if offset not in was and offset not in now)
    return {
        "read_before": sum(len(s) for s in old.values()),
        "read_after": sum(len(s) for s in new.values()),
        "lost": lost,
        "repeated": repeated,
    }


def commit_times(checkpoint: Path) -> list[float]:
    folder = checkpoint / "commits"
    if not folder.is_dir():
        return []
    return sorted(p.stat().st_mtime for p in folder.iterdir() if p.name.isdigit())


def longest_pause(times: list[float], began: float, ended: float) -> float:
    """The longest time without a commit from the last one before `began` to the first one
    after `ended`."""
    before = [t for t in times if t <= began]
    after = [t for t in times if t > ended]
    window = [t for t in times if began < t <= ended]
    points = before[-1:] + window + after[:1]
    return max((b - a for a, b in zip(points, points[1:], strict=False)), default=0.0)


class Scenario:
    """The workspace, broker and a reader of the parquet sink (`read(path) -> rows`)."""

    def __init__(
        self,
        ws: Workspace,
        broker: Broker,
        read: Callable[[Path], list[dict[str, Any]]],
        say: Callable[[str], None] = lambda _: None,
        timeout: float = 240,
        topic: str = TOPIC,
        every: float = EVERY,
        steady: int = STEADY,
    ) -> None:
        """`every`: seconds between two records produced; `steady`: rows each run reads before
        the next change is deployed (the benchmark's: EVERY, STEADY)."""
        self.ws, self.broker, self.read, self.say, self.timeout = ws, broker, read, say, timeout
        self.topic, self.every, self.steady = topic, every, steady
        self.out = ws.root / "out" / JOB
        self.job = {"target-table": "out", "sql": PASS_THROUGH}

    def rows(self) -> list[dict[str, Any]]:
        return self.read(self.out)

    def wait_rows(self, run: str, at_least: int) -> list[dict[str, Any]]:
        def enough():
            rows = self.rows()
            return rows if sum(1 for r in rows if run_of(r) == run) >= at_least else None

        return wait_for(enough, timeout=self.timeout, what=f"{at_least} rows of {run}")

    def checkpoints(self) -> list[Path]:
        return sorted((self.ws.state / "checkpoints" / JOB).glob("[0-9]*"))

    def deploy(self, producer: Producer, decision: str, before: str, after: str) -> Handover:
        produced_before, began = producer.next, time.time()
        self.say(f"  deploy: {decision}")
        done = self.ws.deploy()
        ended, produced_after = time.time(), producer.next
        if done.returncode != 0:
            raise RuntimeError(f"deploy failed: {done.stdout}{done.stderr}")
        planned = planned_by(done.stdout, JOB)
        self.say(f"    planned: {planned['action']} ({planned['reason']})")
        self.wait_rows(after, self.steady)
        times = sorted(t for c in self.checkpoints() for t in commit_times(c))
        counts = handover_counts(self.rows(), before, after)
        return Handover(
            decision,
            planned["action"],
            planned["reason"],
            ended - began,
            produced_after - produced_before,
            counts["read_before"],
            counts["read_after"],
            counts["lost"],
            counts["repeated"],
            longest_pause(times, began, ended),
            done.stdout,
        )

    def settled(self, produced: int) -> list[dict[str, Any]]:
        """The sink's rows once every record produced is in it, or once it stopped growing for
        a while (then the figures say what is missing)."""
        deadline = time.monotonic() + self.timeout
        rows, grew = self.rows(), time.monotonic()
        while len({r["k"] for r in rows}) < produced and time.monotonic() < deadline:
            if time.monotonic() - grew > 60:
                break
            time.sleep(1)
            now = self.rows()
            if len(now) != len(rows):
                grew = time.monotonic()
            rows = now
        return rows

    def run(self) -> Result:
        ws, broker = self.ws, self.broker
        broker.create_topic(self.topic, partitions=PARTITIONS)
        ws.write_tables(
            [
                source_table(broker.bootstrap, self.topic),
                {"name": "out", "format": "parquet", "options": {"path": str(self.out)}},
            ]
        )
        ws.write_job(JOB, description=DESCRIPTIONS[0], **self.job)
        self.say("  deploy: v1")
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        producer = Producer(broker, self.topic, every=self.every, limit=60_000, seconds=900)
        producer.start()
        try:
            self.wait_rows("v1 first run", self.steady)
            ws.write_job(JOB, description=DESCRIPTIONS[1], **self.job)
            restart = self.deploy(
                producer,
                "restart from the checkpoint (config change)",
                "v1 first run",
                "v1 second run",
            )
            ws.write_job(JOB, description=DESCRIPTIONS[1], **{**self.job, "sql": QUERY_CHANGE})
            clean = self.deploy(producer, "new version (query change)", "v1 second run", "v2")
        finally:
            produced = producer.stop()

        rows = self.settled(produced)
        runs: dict[str, int] = {}
        for row in rows:
            runs[run_of(row)] = runs.get(run_of(row), 0) + 1
        return Result(
            produced,
            (restart, clean),
            exactly_once(rows, produced, self.topic),
            per_version(rows),
            dict(sorted(runs.items())),
            first.stdout,
        )
