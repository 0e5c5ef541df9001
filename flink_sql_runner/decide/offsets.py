"""Where each Kafka source of a new version starts (a clean start after a query change).

A new checkpoint's Kafka source starts at its table's `startingOffsets` (Spark's default:
`latest`): whatever arrived while the old version stopped and the new one started would be
lost, or read twice with `earliest`. So, unless the job (`kafka-start`) or the deploy
(`--kafka-start`) declares where, a Kafka source table of the new version that reads what a
Kafka source table of the previous version read (its `subscribe` topics or its `assign`ment, on
the same cluster: brokers lists that share a broker) starts at the offsets the previous version
finished with, read after it stopped (act/). A table's own `startingOffsets` (or
`startingTimestamp`) wins over that rule, not over a declaration; topics the previous version
did not read start as the table says. A job's first version (`first_starts`) starts as
declared, else as its tables say; the plan names every source's start, `latest` included.

A carry that cannot be exact is never made silently: two sources of the previous version on one
topic, a topic missing from its offsets, removed from or added to the subscription, another way
of reading the partitions, the same topics on brokers none of which the previous version read
them from, a version that committed no batch, a `subscribePattern` (whose topics only the run
knows). The job is refused (`Refused`) unless a start is declared; a declared `carry` takes
what can be carried, the rest from the earliest offset. Partitions a topic gained start at their
earliest offset (Spark's rule for partitions found while running). Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.model.offsets import (
    AS_TABLE,
    CARRIED,
    DECLARED,
    OWN_START_OPTIONS,
    SourceStart,
    StartPlan,
    carry_from,
)
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.kafka_start import CARRY, EARLIEST, KAFKA_START_FORMS, KafkaStart
from flink_sql_runner.read.kafka_start import declared_starts as job_starts
from flink_sql_runner.read.sinks import kafka_servers, same_cluster, target_sink

#: Who declared a start, as the plan says it.
BY_JOB, BY_DEPLOY = "the job's kafka-start", "deploy --kafka-start"
#: How a refused carry begins its words (`Refused.describe`).
CANNOT_CARRY = "where its Kafka sources start cannot be carried exactly"


@dataclass(frozen=True)
class Refused:
    """A new version whose Kafka sources cannot start where the previous one stopped, exactly,
    and the job did not say where they start: each source with why."""

    why: tuple[str, ...]

    def describe(self) -> str:
        return (
            f"{CANNOT_CARRY}: {'; '.join(self.why)}; "
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
        if start is None and OWN_START_OPTIONS.keys() & set(options):
            why = table_start(options)
            sources.append(SourceStart(name, AS_TABLE, topics, reads or "subscribe", why=why))
            continue
        if found is None:
            refused.append(f"{name} reads a subscribePattern, whose topics only the run knows")
            continue
        servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
        related = [
            r
            for r in had
            if same_cluster(r.servers, servers) and (r.reads is None or set(r.topics) & set(topics))
        ]
        elsewhere = [r for r in had if r not in related and set(r.topics) & set(topics)]
        if not related and elsewhere and start is None:
            # The same topics on brokers none of which v(N) named: the offsets of another
            # cluster mean nothing here, and whether it is another cannot be told.
            old = elsewhere[0]
            shared = _listed(set(old.topics) & set(topics))
            refused.append(
                f"{name} reads {shared} from {servers or 'no brokers'}, none of the brokers "
                f"v{version} read them from ({old.servers or 'none'}): whether it is the same "
                "cluster cannot be told"
            )
            continue
        if not related:
            if start is not None:  # a declared carry of what v(N) never read: from the start
                why = (
                    f"v{version} read them from other brokers"
                    if elsewhere
                    else (f"v{version} did not read them")
                )
                sources.append(SourceStart(name, DECLARED, topics, reads,
                                           start=KafkaStart(EARLIEST, None, "earliest"), by=by,
                                           why=why))  # fmt: skip
                continue
            why = f"{table_start(options)} (topics not read by v{version})"
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


def first_starts(
    new: StoredManifest, declared: KafkaStart | None = None, first: str = "its first version"
) -> StartPlan | None:
    """Where the Kafka sources of a job's first version start (nothing stored of it: a new job,
    or one forgotten): as declared (the deploy's over the job's), else as each table says, the
    plan naming it (`latest`, Spark's default, included); None when it reads no Kafka table.
    A declared `carry` has nothing to carry from: the plan says it is not applied, and why
    (`first`: what the version is, a job's first, or its first on Spark)."""
    wanted = _kafka_sources(new)
    if not wanted:
        return None
    version = new.meta.query_version
    by_job = job_starts(new.job, tuple(wanted))
    sources: list[SourceStart] = []
    for name, options in sorted(wanted.items()):
        start, by = (declared, BY_DEPLOY) if declared is not None else (by_job.get(name), BY_JOB)
        reads, topics = _subscription(options) or ("subscribe", ())
        if start is not None and start.how != CARRY:
            sources.append(SourceStart(name, DECLARED, topics, reads, start=start, by=by))
            continue
        why = table_start(options)
        if start is not None:
            why += f" ({by} says carry, but v{version} is {first}: nothing to carry)"
        sources.append(SourceStart(name, AS_TABLE, topics, reads, why=why))
    return StartPlan(None, "", tuple(sources))


def table_start(options: dict[str, Any]) -> str:
    """Where a Kafka source starts on a new checkpoint as its table says (its options, keys in
    lower case), in words: `starts at its own startingOffsets (earliest)`, `starts at latest
    (Spark's default; the table sets no startingOffsets)`."""
    own = sorted((OWN_START_OPTIONS[k], options[k]) for k in options if k in OWN_START_OPTIONS)
    if not own:
        return "starts at latest (Spark's default; the table sets no startingOffsets)"
    said = ", ".join(f"{key} ({_short(value)})" for key, value in own)
    return f"starts at its own {said}"


def _short(value: Any, limit: int = 60) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _listed(topics: set[str]) -> str:
    return ", ".join(sorted(topics))


def kafka_at_default(manifest: StoredManifest) -> tuple[str, ...]:
    """Its Kafka source tables without a start of their own: a start from a new checkpoint (or
    one that planned no batch) puts them at Spark's default, `latest`."""
    return tuple(
        sorted(
            name
            for name, opts in _kafka_sources(manifest).items()
            if not OWN_START_OPTIONS.keys() & set(opts)
        )
    )


def kafka_at_all(manifest: StoredManifest) -> bool:
    """Whether the manifest's job reads a Kafka table."""
    return bool(_kafka_sources(manifest))
