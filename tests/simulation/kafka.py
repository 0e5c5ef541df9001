"""Kafka in the simulated world: a topic whose partitions receive records at a steady rate from
the virtual clock (no draw of the seed's generator: a seed replays the same with or without it),
may gain a partition mid-scenario, and is read by one job's runs from where their checkpoint,
their deployer's start or their table says, as Spark's Kafka source does.

The check, `boundary_violation`: a new version's first batch begins where the version the
store records (the one it replaces) finished its last batch, partition by partition, and a
partition that version did not read at its earliest offset: no record skipped (`kafka-gap`),
none read again (`kafka-repeat`), and no start when that version committed nothing
(`kafka-start-unproven`), unless the job or the deploy declared where to start."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

TOPIC = "orders"
BROKERS = "k1:9092"
#: Records per second per partition.
RATE = 1.0


def source_table() -> dict[str, Any]:
    """The Kafka table a job reads: the topic subscribed, no start of its own (Spark's default,
    `latest`, for a new checkpoint)."""
    return {"format": "kafka", "options": {"kafka.bootstrap.servers": BROKERS, "subscribe": TOPIC}}


@dataclass
class Topic:
    """One topic: when each partition was created (virtual s); partition p holds
    `(now - created[p]) * RATE` records, the i-th produced at `created[p] + i / RATE`."""

    name: str = TOPIC
    created: list[float] = field(default_factory=lambda: [0.0, 0.0])

    def event_time(self, partition: str | int, offset: int) -> float:
        """When a record was produced (virtual s): its event time, Kafka's `timestamp`."""
        return self.created[int(partition)] + offset / RATE

    def ends(self, now: float) -> dict[str, int]:
        """The next offset of each partition that exists at `now`."""
        return {
            str(p): int(max(0.0, now - at) * RATE) for p, at in enumerate(self.created) if at <= now
        }

    def at_time(self, ms: int, now: float, epoch: float) -> dict[str, int]:
        """Each partition's first offset at or after the time `ms` (epoch ms; the virtual clock's
        0 is `epoch`), its end where there is none (startingOffsetsByTimestampStrategy=latest)."""
        when = ms / 1000 - epoch
        ends = self.ends(now)
        return {
            p: min(end, max(0, math.ceil((when - self.created[int(p)]) * RATE)))
            for p, end in ends.items()
        }


@dataclass
class Start:
    """Where a run's Kafka source begins on a new checkpoint, and whether that was declared
    (by the job or the deploy) rather than carried or left to the table."""

    offsets: dict[str, int]
    declared: bool
    how: str


def start_of(table: dict[str, Any], spec: Any, topic: Topic, now: float, epoch: float) -> Start:
    """Where a run's source starts on a new checkpoint: the deployer's start (`spec`: the
    runtime manifest's table `start`, or the go's), else the table's own `startingOffsets`,
    else Spark's default, `latest`."""
    ends = topic.ends(now)
    options = dict((spec or {}).get("options") or {}) if isinstance(spec, dict) else {}
    if not options:
        own = {str(k).lower(): v for k, v in (table.get("options") or {}).items()}
        options = {"startingOffsets": own.get("startingoffsets", "latest")}
        declared = False
    else:
        declared = "startingTimestamp" in options or options.get("startingOffsets") in (
            "earliest",
            "latest",
        )
    if "startingTimestamp" in options:
        found = topic.at_time(int(options["startingTimestamp"]), now, epoch)
        return Start(found, declared, f"at time {options['startingTimestamp']}")
    where = str(options.get("startingOffsets", "latest"))
    if where == "earliest":
        return Start({p: 0 for p in ends}, declared, "earliest")
    if where == "latest":
        return Start(dict(ends), declared, "latest")
    named = {str(p): int(o) for p, o in (json.loads(where).get(topic.name) or {}).items()}
    if (spec or {}).get("new-partitions") == "earliest":  # the runner names the others -2
        named = {p: named.get(p, 0) for p in ends}
    if set(named) != set(ends):
        raise SparkRefuses(
            "assertion failed: If startingOffsets contains specific offsets, you must specify "
            f"all TopicPartitions (specified {sorted(named)}, assigned {sorted(ends)}) (sim)"
        )
    found = {p: (0 if o == -2 else ends[p] if o == -1 else o) for p, o in named.items()}
    return Start(found, declared, "carried offsets")


class SparkRefuses(Exception):
    """Spark's Kafka source refuses the start: the query fails before its first batch."""


def offsets_line(ends: dict[str, int]) -> str:
    return json.dumps({TOPIC: ends})


def boundary_violation(
    name: str,
    version: int,
    start: Start,
    replaced: int | None,
    finished: dict[str, int] | None,
) -> tuple[str, str] | None:
    """(kind, text) when the first batch of `name` v`version` does not begin where v`replaced`
    (the version the store records, None: none, or the same) finished (`finished`: the end
    offsets of its last batch, None: it committed none); None when it does, or when the
    start was declared."""
    if start.declared or replaced is None or replaced >= version:
        return None
    if finished is None:
        return (
            "kafka-start-unproven",
            f"{name} v{version} starts at {start.how} {start.offsets} although v{replaced}, which "
            "it replaces, committed no batch and no start was declared",
        )
    for partition, begun in sorted(start.offsets.items()):
        expected = finished.get(partition, 0)
        if begun != expected:
            kind = "kafka-gap" if begun > expected else "kafka-repeat"
            return (
                kind,
                f"{name} v{version} starts partition {partition} at {begun} ({start.how}) but "
                f"v{replaced} finished it at {expected}: {abs(begun - expected)} records "
                + ("never read" if begun > expected else "read twice"),
            )
    return None
