"""Where a Kafka source of a new version starts, as the deployer decided it: a table's `start`
in the runtime manifest (a run started at once), or the go word's `starting` (a prepared run),
`{view: {"options": {...}, "new-partitions": "earliest"}}`.

`options` replace every starting option the table had (`startingOffsets`, `startingTimestamp`,
`startingOffsetsByTimestamp` and its strategy). `new-partitions: earliest` comes with offsets
carried from the previous version: Spark refuses specific starting offsets that do not name
every partition of a subscribed topic ("you must specify all TopicPartitions"), so the run asks
the brokers which partitions its topics have now and starts those the offsets do not name (a
topic that gained partitions, or one the previous version did not read) at their earliest
offset (`-2`), Spark's own rule for partitions it discovers while running.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .log import log

#: Spark's Kafka options that say where a new query starts (lower case).
START_OPTIONS = frozenset(
    {
        "startingoffsets",
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
    }
)
EARLIEST = -2

#: (the table's Kafka options, its topics) -> partitions by topic, as the brokers list them.
PartitionLister = Callable[[dict[str, str], list[str]], dict[str, list[int]]]


def with_start(table: dict[str, Any], spec: Any) -> bool:
    """Give `table` the start `spec` names; False when it names none."""
    if not isinstance(spec, dict) or not isinstance(spec.get("options"), dict):
        return False
    options = {
        k: v for k, v in (table.get("options") or {}).items() if str(k).lower() not in START_OPTIONS
    }
    options.update({str(k): str(v) for k, v in spec["options"].items()})
    table["options"] = options
    if spec.get("new-partitions") == "earliest":
        table["new-partitions"] = "earliest"
    else:
        table.pop("new-partitions", None)
    return True


def apply_starts(doc: dict[str, Any]) -> None:
    """The runtime manifest's tables given their own `start`, if any."""
    for table in (doc.get("tables") or {}).values():
        if isinstance(table, dict) and "start" in table:
            with_start(table, table.pop("start"))


def starts_from_word(doc: dict[str, Any], word: dict[str, Any]) -> bool:
    """The tables the go word names given their start; True when it named any (their views
    must then be registered again). A go of an older deployer names offsets only
    (`starting-offsets`: {view: JSON})."""
    named = False
    starting = word.get("starting")
    if isinstance(starting, dict):
        for view, spec in starting.items():
            table = doc["tables"].get(view)
            if isinstance(table, dict):
                named = with_start(table, spec) or named
    older = word.get("starting-offsets")
    if isinstance(older, dict):
        for view, where in older.items():
            table = doc["tables"].get(view)
            if isinstance(table, dict) and isinstance(where, str):
                named = with_start(table, {"options": {"startingOffsets": where}}) or named
    return named


def _subscribed(options: dict[str, str]) -> list[str]:
    lower = {k.lower(): v for k, v in options.items()}
    return sorted({t.strip() for t in str(lower.get("subscribe", "")).split(",") if t.strip()})


def filled_offsets(options: dict[str, str], partitions_of: PartitionLister) -> dict[str, str]:
    """`options` whose specific `startingOffsets` name every partition the subscribed topics
    have now: those they did not name at the earliest offset. As they are when the brokers
    cannot be asked (Spark then says which partitions are missing) or there is nothing to
    fill."""
    key = next((k for k in options if k.lower() == "startingoffsets"), None)
    topics = _subscribed(options)
    if key is None or not topics:
        return options
    try:
        offsets = json.loads(options[key])
    except ValueError:
        return options
    if not isinstance(offsets, dict):
        return options
    try:
        found = partitions_of(options, topics)
    except Exception as exc:  # noqa: BLE001 - Spark refuses the start and says why instead
        log(f"cannot list the partitions of {', '.join(topics)}: {exc}")
        return options
    added = []
    for topic in topics:
        named = offsets.setdefault(topic, {})
        for partition in found.get(topic, []):
            if str(partition) not in named:
                named[str(partition)] = EARLIEST
                added.append(f"{topic}[{partition}]")
    if added:
        log(f"partitions not named in the carried offsets start at their earliest: {added}")
    return {**options, key: json.dumps(offsets)}


def kafka_partitions(spark: Any) -> PartitionLister:
    """Lists partitions through Kafka's own consumer on the driver (the connector brings it),
    with the table's `kafka.*` options (brokers, security)."""

    def partitions_of(options: dict[str, str], topics: list[str]) -> dict[str, list[int]]:
        jvm = spark._jvm
        props = jvm.java.util.Properties()
        for key, value in options.items():
            if key.lower().startswith("kafka."):
                props.put(key[len("kafka.") :], str(value))
        deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
        props.put("key.deserializer", deserializer)
        props.put("value.deserializer", deserializer)
        consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
        try:
            found = {}
            for topic in topics:
                infos = consumer.partitionsFor(topic)
                found[topic] = sorted(int(info.partition()) for info in (infos or []))
            return found
        finally:
            consumer.close()

    return partitions_of
