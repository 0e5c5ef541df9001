"""Where each Kafka source of a new version starts (a clean start after a query change).

A new checkpoint's Kafka source starts at its table's `startingOffsets` (Spark's default:
`latest`): whatever arrived while the old version stopped and the new one started would be
lost, or read twice with `earliest`. So, unless the job (`kafka-start`) or the deploy
(`--kafka-start`) declares where, a Kafka source table of the new version that reads what a
Kafka source table of the previous version read (its `subscribe` topics or its `assign`ment, on
the same brokers, as a set of hosts) starts at the offsets the previous version finished with,
read after it stopped (act/). A table's own `startingOffsets` (or `startingTimestamp`) wins
over that rule, not over a declaration; topics the previous version did not read start as the
table says.

A carry that cannot be exact is never made silently: two sources of the previous version on one
topic, a topic missing from its offsets, removed from or added to the subscription, another way
of reading the partitions, a version that committed no batch, a `subscribePattern` (whose topics
only the run knows). The job is refused (`Refused`) unless a start is declared; a declared
`carry` takes what can be carried, the rest from the earliest offset. Partitions a topic gained
start at their earliest offset (Spark's rule for partitions found while running). Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.model.offsets import (
    AS_TABLE,
    CARRIED,
    DECLARED,
    START_OPTIONS,
    SourceStart,
    StartPlan,
    carry_from,
)
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.kafka_start import CARRY, EARLIEST, KAFKA_START_FORMS, KafkaStart
from flink_sql_runner.read.kafka_start import declared_starts as job_starts
from flink_sql_runner.read.sinks import kafka_servers, target_sink

#: Who declared a start, as the plan says it.
BY_JOB, BY_DEPLOY = "the job's kafka-start", "deploy --kafka-start"


@dataclass(frozen=True)
class Refused:
    """A new version whose Kafka sources cannot start where the previous one stopped, exactly,
    and the job did not say where they start: each source with why."""

    why: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"where its Kafka sources start cannot be carried exactly: {'; '.join(self.why)}; "
            f"say where they start: the job's kafka-start ({KAFKA_START_FORMS}; or one per "
            "table) or deploy --kafka-start"
        )


def _options(definition: Any) -> dict[str, Any]:
    if not isinstance(definition, dict):
        return {}
    return {str(k).lower(): v for k, v in (definition.get("options") or {}).items()}


def _subscription(options: dict[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """("subscribe", topics) or ("assign <json>", topics); None for a pattern or nothing."""
    if "subscribe" in options:
        topics = {t.strip() for t in str(options["subscribe"]).split(",") if t.strip()}
        return "subscribe", tuple(sorted(topics))
    if "assign" in options:
        try:
            assigned = json.loads(str(options["assign"]))
        except ValueError:
            return None
        if not isinstance(assigned, dict):
            return None
        text = json.dumps({t: sorted(p) for t, p in sorted(assigned.items())}, sort_keys=True)
        return f"assign {text}", tuple(sorted(assigned))
    return None


def _kafka_sources(manifest: StoredManifest) -> dict[str, dict[str, Any]]:
    return {
        name: _options(manifest.tables.get(name))
        for name in source_tables(manifest)
        if isinstance(manifest.tables.get(name), dict)
        and manifest.tables[name].get("format") == "kafka"
    }


@dataclass(frozen=True)
class _Read:
    """What one Kafka source table of the previous version read."""

    table: str
    servers: str
    reads: str | None  # None: a subscribePattern
    topics: tuple[str, ...]


def kafka_starts(
    previous: StoredManifest,
    new: StoredManifest,
    checkpoint: str,
    latest: tuple[Any, ...] | None,
    declared: KafkaStart | None = None,
) -> StartPlan | Refused | None:
    """Where the new version's Kafka sources start; None when it reads no Kafka table.
    `latest`: the source lines of the previous version's latest batch (None: it has none);
    `declared`: the deploy's `--kafka-start`, which wins over the job's."""
    wanted = _kafka_sources(new)
    if not wanted:
        return None
    version = previous.meta.query_version
    by_job = job_starts(new.job, tuple(wanted))
    had = []
    for name, options in _kafka_sources(previous).items():
        found = _subscription(options)
        servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
        had.append(_Read(name, servers, *(found or (None, ()))))
    sources: list[SourceStart] = []
    refused: list[str] = []
    for name, options in sorted(wanted.items()):
        start, by = (declared, BY_DEPLOY) if declared is not None else (by_job.get(name), BY_JOB)
        found = _subscription(options)
        reads, topics = found or ("", ())
        if start is not None and start.how != CARRY:
            sources.append(SourceStart(name, DECLARED, topics, reads or "subscribe", start=start,
                                       by=by))  # fmt: skip
            continue
        own = sorted(START_OPTIONS[k] for k in options if k in START_OPTIONS)
        if start is None and own:
            why = f"starts at its own {', '.join(own)}"
            sources.append(SourceStart(name, AS_TABLE, topics, reads or "subscribe", why=why))
            continue
        if found is None:
            refused.append(f"{name} reads a subscribePattern, whose topics only the run knows")
            continue
        servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
        related = [
            r
            for r in had
            if r.servers == servers and (r.reads is None or set(r.topics) & set(topics))
        ]
        if not related:
            if start is not None:  # a declared carry of what v(N) never read: from the start
                sources.append(SourceStart(name, DECLARED, topics, reads,
                                           start=KafkaStart(EARLIEST, None, "earliest"), by=by,
                                           why=f"v{version} did not read them"))  # fmt: skip
                continue
            elsewhere = any(set(r.topics) & set(topics) for r in had)
            what = "other brokers than" if elsewhere else "topics not read by"
            why = f"starts as its table says ({what} v{version})"
            sources.append(SourceStart(name, AS_TABLE, topics, reads, why=why))
            continue
        if len(related) > 1 or related[0].reads is None:
            names = ", ".join(r.table for r in related)
            refused.append(
                f"{name}: v{version} read its topics through {len(related)} tables ({names})"
                if len(related) > 1
                else f"{name}: v{version} read a subscribePattern on its brokers ({names})"
            )
            continue
        old = related[0]
        source = SourceStart(name, CARRIED, topics, reads, old.topics, old.reads or "",
                             start=start, by=by if start is not None else "")  # fmt: skip
        carried = carry_from(source, latest, version, None)
        if carried.refusal is not None:
            refused.append(f"{name}: {carried.refusal}")
        elif carried.gaps and start is None:
            refused.append(f"{name}: {'; '.join(carried.gaps)}")
        else:
            sources.append(source)
    if refused:
        return Refused(tuple(refused))
    sink = target_sink(previous.name, previous.job, previous.tables)
    return StartPlan(
        version,
        checkpoint,
        tuple(sources),
        sink_folder=sink.where if sink is not None and sink.kind == "folder" else None,
    )


def kafka_at_default(manifest: StoredManifest) -> tuple[str, ...]:
    """Its Kafka source tables without a start of their own: a start from a new checkpoint (or
    one that planned no batch) puts them at Spark's default, `latest`."""
    return tuple(
        sorted(
            name
            for name, opts in _kafka_sources(manifest).items()
            if not START_OPTIONS.keys() & set(opts)
        )
    )


def kafka_at_all(manifest: StoredManifest) -> bool:
    """Whether the manifest's job reads a Kafka table."""
    return bool(_kafka_sources(manifest))
