"""Kafka sources of a new version that start where the previous version stopped.

A clean start (a query change) gets a new checkpoint, and a new checkpoint's Kafka source starts
at its table's `startingOffsets` (Spark's default: `latest`): whatever arrived while the old
version stopped and the new one started would be lost, or read twice with `earliest`. So a
Kafka source table of the new version that reads what a Kafka source table of the previous
version read (the same `subscribe` topics or the same `assign`ment, on the same brokers, as a
set of hosts) starts at the offsets the previous version's checkpoint committed last, read
after that version stopped (`act/`). An explicit `startingOffsets` in the table wins, and a
`subscribePattern` (whose topics are known only to the run) starts as its table says.
"""

from __future__ import annotations

import json
from typing import Any

from flink_sql_runner.model.offsets import CarriedSource, OffsetCarry
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.sinks import kafka_servers, target_sink


def _options(definition: Any) -> dict[str, Any]:
    if not isinstance(definition, dict):
        return {}
    return {str(k).lower(): v for k, v in (definition.get("options") or {}).items()}


def _subscription(options: dict[str, Any]) -> tuple[str, tuple[str, ...]] | None:
    """("subscribe", topics) or ("assign", topics); None for a pattern or nothing."""
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


def offset_carry(
    previous: StoredManifest, new: StoredManifest, checkpoint: str
) -> OffsetCarry | None:
    """How the new version's Kafka sources start; None when it reads no Kafka table."""
    wanted = _kafka_sources(new)
    if not wanted:
        return None
    had: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for name, options in _kafka_sources(previous).items():
        found = _subscription(options)
        if found is not None:
            servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
            had.setdefault((servers, found[0], found[1]), name)
    carried, not_carried = [], []
    for name, options in sorted(wanted.items()):
        found = _subscription(options)
        servers = kafka_servers(options.get("kafka.bootstrap.servers", ""))
        if "startingoffsets" in options:
            not_carried.append((name, "starts at its own startingOffsets"))
        elif found is None:
            not_carried.append((name, "starts as its table says (a subscribePattern)"))
        elif (servers, found[0], found[1]) in had:
            carried.append(CarriedSource(name, found[1]))
        else:
            why = "other brokers" if any(k[1:] == found for k in had) else "other topics"
            not_carried.append(
                (name, f"starts as its table says ({why} than v{previous.meta.query_version})")
            )
    sink = target_sink(previous.name, previous.job, previous.tables)
    return OffsetCarry(
        previous.meta.query_version,
        checkpoint,
        tuple(carried),
        not_carried=tuple(not_carried),
        sink_folder=sink.where if sink is not None and sink.kind == "folder" else None,
    )


def kafka_at_default(manifest: StoredManifest) -> tuple[str, ...]:
    """Its Kafka source tables without a `startingOffsets` of their own: a start from a new
    checkpoint (or one that planned no batch) puts them at Spark's default, `latest`."""
    return tuple(
        sorted(
            name for name, opts in _kafka_sources(manifest).items() if "startingoffsets" not in opts
        )
    )
