"""The jobs and the scenario of one seed: which deploys (of which job-set variant), stops and
prunes happen when, which Ctrl-Cs and kills, which faults with which probabilities.

Keep this generator stable: the seeds in FOUND.md replay their scenario only as long as it draws
the same numbers in the same order (append new draws at the end, never in between).
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field, replace

from flink_sql_runner.read.manifest import Job
from tests.simulation import kafka as kafka_world
from tests.simulation import windows
from tests.simulation.world import Faults

ROOT = "s3://ckpt/jobs"
NAMES = ("a", "b", "c")


def job(name: str, sink: dict, **overrides: object) -> Job:
    spec = {
        "name": name,
        "description": f"job {name}",
        "target-table": "out",
        "sql": f"SELECT id, ts FROM src WHERE id > {ord(name)}",
        "desired-state": "running",
        "outputMode": "append",
        "trigger": {"processingTime": "5 seconds"},
        "checkpoint-root": ROOT,
        "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
        "sparkProperties": {"spark.sql.shuffle.partitions": "4"},
    }
    spec.update(overrides)
    tables = {
        "src": {
            "format": "json",
            "options": {"path": f"/in/{name}"},
            "schema": "id BIGINT, ts TIMESTAMP",
        },
        "out": copy.deepcopy(sink),
    }
    return Job(spec=spec, tables=tables, source_tables=("src",), file=f"jobs/{name}.yaml")


def files(path: str) -> dict:
    return {"format": "parquet", "options": {"path": path}}


def kafka(topic: str) -> dict:
    return {"format": "kafka", "options": {"kafka.bootstrap.servers": "k1:9092", "topic": topic}}


A, B, C = job("a", files("/out/a")), job("b", files("/out/b")), job("c", kafka("c1"))

#: Job sets a deploy applies: (name, jobs, prune).
VARIANTS: tuple[tuple[str, tuple[Job, ...], bool], ...] = (
    ("base", (A, B, C), False),
    (
        "config",
        (job("a", files("/out/a"), description="job a, documented"), B, job("c", kafka("c2"))),
        False,
    ),
    (
        "query",
        (A, job("b", files("/out/b"), sql="SELECT id, ts FROM src WHERE id > 1000"), C),
        False,
    ),
    ("a-stopped", (job("a", files("/out/a"), **{"desired-state": "stopped"}), B, C), False),
    ("c-removed", (A, B), True),
    ("swap-sinks", (job("a", files("/out/b")), job("b", files("/out/a")), C), False),
)


#: The job that reads Kafka in the seeds that have it.
KAFKA_JOB = "b"


def with_kafka_source(found: Job) -> Job:
    """`found` reading the world's Kafka topic as its `src`."""
    return replace(found, tables={**found.tables, "src": kafka_world.source_table()})


#: The stateful job's query change in the `query` variant (Scenario.state_change): its window's
#: size and its filter. `kept`: a filter every record passes (the probe answers the same
#: aggregation, the filter before it: the state is kept); `resized`: windows of 30 s, not 20
#: (another aggregation: the state is not kept).
STATE_CHANGES: dict[str, tuple[int, str | None]] = {
    "kept": (20, "key IS NOT NULL"),
    "resized": (30, None),
}


def stateful(found: Job, change: str | None, partial: bool, rebuild: bool) -> Job:
    """`found`, reading the world's Kafka topic, as the stateful job (windows.py): a count per
    key in windows of event time, its source's watermark 10 s behind; `change`: its query
    changed so (STATE_CHANGES; None: as first deployed); `partial`: it says `on-state-change:
    partial`; `rebuild`: its changed query declares `kafka-start: earliest`."""
    size, where = (20, None) if change is None else STATE_CHANGES[change]
    spec = {**found.spec, "sql": windows.sql(size, where)}
    if partial:
        spec["on-state-change"] = "partial"
    if rebuild and change is not None:
        spec["kafka-start"] = "earliest"
    watermark = {"column": "timestamp", "delay": f"{windows.DELAY:g} seconds"}
    source = {**kafka_world.source_table(), "watermark": watermark}
    return replace(found, spec=spec, tables={**found.tables, "src": source})


def wants(jobs: tuple[Job, ...], prune: bool) -> dict[str, str]:
    """What a deploy of `jobs` wants of each job: running, stopped or (pruned) gone."""
    found = {j.name: str(j.spec.get("desired-state", "running")) for j in jobs}
    if prune:
        for name in NAMES:
            found.setdefault(name, "gone")
    return found


@dataclass
class Op:
    at: float  # seconds after the previous op
    kind: str  # deploy, stop, kill-watcher
    variant: int = 0
    name: str = ""
    parallelism: int = 1
    interrupts: int = 0  # Ctrl-Cs: 0, 1 or 2
    interrupt_after: float = 0.0
    second_after: float = 0.0
    kill_after: float | None = None


@dataclass
class Scenario:
    seed: int
    faults: Faults
    ops: list[Op] = field(default_factory=list)
    #: How every deploy of the seed carries out a change of a running job (--handover).
    handover: str = "cold"
    #: Job b reads a Kafka topic (of two partitions) instead of files, in every variant.
    kafka: bool = False
    #: When (virtual s) that topic gains a third partition; None: never.
    partition_added_at: float | None = None
    #: Job b (reading Kafka) is the stateful job (windows.py); its `query` variant changes its
    #: query as `state_change` says (STATE_CHANGES); `partial`: it says `on-state-change:
    #: partial`; `rebuild`: its changed query declares `kafka-start: earliest`.
    stateful: bool = False
    state_change: str = "kept"
    partial: bool = False
    rebuild: bool = False

    def jobs(self, variant: int) -> tuple[Job, ...]:
        """The jobs a deploy of `variant` applies, in this seed's world."""
        jobs = VARIANTS[variant][1]
        if not self.kafka:
            return jobs
        if self.stateful:
            change = self.state_change if VARIANTS[variant][0] == "query" else None
            return tuple(stateful(j, change, self.partial, self.rebuild)
                         if j.name == KAFKA_JOB else j for j in jobs)  # fmt: skip
        return tuple(with_kafka_source(j) if j.name == KAFKA_JOB else j for j in jobs)

    def describe(self) -> list[str]:
        lines = [
            f"seed {self.seed}: faults "
            + ", ".join(f"{k}={v:g}" for k, v in vars(self.faults).items() if v)
            + f"; handover {self.handover}"
            + (
                f"; b reads Kafka (a partition added at {self.partition_added_at:.0f} s)"
                if self.kafka and self.partition_added_at is not None
                else "; b reads Kafka"
                if self.kafka
                else ""
            )
            + (
                f"; b is stateful (a windowed count; its query change {self.state_change}"
                + (", on-state-change partial" if self.partial else "")
                + (", declared kafka-start earliest" if self.rebuild else "")
                + ")"
                if self.stateful
                else ""
            )
        ]
        for op in self.ops:
            if op.kind == "deploy":
                name, _, prune = VARIANTS[op.variant]
                extra = " --prune" if prune else ""
                extra += f" --parallelism {op.parallelism}"
                if op.interrupts:
                    extra += f", Ctrl-C x{op.interrupts} after {op.interrupt_after:.0f} s"
                if op.kill_after is not None:
                    extra += f", killed after {op.kill_after:.0f} s"
                lines.append(f"  +{op.at:.0f} s deploy {name}{extra}")
            elif op.kind == "stop":
                kill = f", killed after {op.kill_after:.0f} s" if op.kill_after is not None else ""
                lines.append(f"  +{op.at:.0f} s stop {op.name}{kill}")
            else:
                lines.append(f"  +{op.at:.0f} s {op.kind}")
        return lines


def generate(seed: int) -> Scenario:
    rng = random.Random(f"scenario-{seed}")

    def maybe(p: float, value: float) -> float:
        return value if rng.random() < p else 0.0

    faults = Faults(
        s3_503=maybe(0.3, 0.03),
        s3_lost_answer=maybe(0.3, 0.03),
        s3_stale_listing=maybe(0.15, 0.05),
        lock_slow=maybe(0.25, 0.2),
        storage_503=maybe(0.25, 0.03),
        submit_refused=maybe(0.25, 0.1),
        submit_lost=maybe(0.3, 0.2),
        submit_slow=maybe(0.3, 0.3),
        liveness_unknown=maybe(0.15, 0.05),
        listing_503=maybe(0.2, 0.03),
        stop_unconfirmed=maybe(0.15, 0.2),
        run_dies=maybe(0.5, 0.3),
        run_dies_after_commit=maybe(0.3, 0.2),
        run_hangs=maybe(0.15, 0.1),
        run_stalls=maybe(0.15, 0.1),
        kill_per_step=maybe(0.3, 0.003),
    )
    scenario = Scenario(seed, faults)
    for index in range(rng.randint(4, 9)):
        at = rng.uniform(5, 120)
        kind = rng.choices(("deploy", "stop", "kill-watcher"), (6, 3, 1))[0]
        if index == 0:
            kind = "deploy"
        op = Op(at, kind)
        op.variant = 0 if index == 0 else rng.randrange(len(VARIANTS))
        op.name = rng.choice(NAMES)
        op.parallelism = rng.choice((1, 2))
        op.interrupts = rng.choices((0, 1, 2), (5, 2, 3))[0]
        op.interrupt_after = rng.uniform(0, 60)
        op.second_after = rng.uniform(0, 20)
        op.kill_after = rng.uniform(0, 90) if rng.random() < 0.3 else None
        scenario.ops.append(op)
    # Draws appended later (those above stay as they were, so older seeds keep their scenario
    # unless one of these picks them): a store that often answers 503 while runs die.
    if rng.random() < 0.15:
        faults.s3_503 = max(faults.s3_503, 0.12)
        faults.run_dies = max(faults.run_dies, 0.5)
    if rng.random() < 0.15:  # manifest writes (the record after a healthy start) often fail
        faults.manifest_put_503 = 0.3
        faults.run_dies = max(faults.run_dies, 0.5)
    if rng.random() < 0.5:  # half the seeds deploy their changes warm (decide/warm.py)
        scenario.handover = "warm"
    if rng.random() < 0.5:  # half the seeds: job b reads Kafka (issue 39)
        scenario.kafka = True
        if rng.random() < 0.5:
            scenario.partition_added_at = rng.uniform(30, 600)
        if rng.random() < 0.3:  # the checkpoint storage often fails: mid-handover too
            faults.storage_503 = max(faults.storage_503, 0.1)
    if rng.random() < 0.35:  # batches that run long (issue 52): one in flight at a stop, or a
        faults.batch_slow = 0.25  # first one that keeps its run from being healthy in time
    if scenario.kafka and rng.random() < 0.5:  # half the Kafka seeds: b is stateful (windows.py)
        scenario.stateful = True
        scenario.state_change = rng.choice(sorted(STATE_CHANGES))
        scenario.partial = rng.random() < 0.5
        scenario.rebuild = rng.random() < 0.25
    return scenario
