"""Where a Kafka source of a new version starts, as a job (`kafka-start`) or a deploy
(`--kafka-start`) declares it: `carry` (where the previous version stopped), `earliest`,
`latest`, a timestamp (ISO 8601 with its zone: `2026-11-25T02:00:00Z`), or now minus an interval
(`now - 2 hours`, the interval as Spark reads a trigger's). A timestamp becomes Spark's
`startingTimestamp`; now minus an interval is made a timestamp once, when the deploy that starts
the new version writes its intent record (act/)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flink_sql_runner.read.intervals import BadInterval, parse_trigger_interval
from flink_sql_runner.read.names import BadName, parse_name

CARRY, EARLIEST, LATEST, TIMESTAMP, AGO = "carry", "earliest", "latest", "timestamp", "ago"
#: What the job field and the deploy option take, in words (for messages and --help).
KAFKA_START_FORMS = (
    "carry, earliest, latest, a timestamp with its zone (2026-11-25T02:00:00Z) or now minus an "
    "interval (now - 2 hours)"
)
_AGO = re.compile(r"now\s*-\s*(.+)", re.IGNORECASE | re.DOTALL)
#: The longest interval a start may go back: 50 years (a time before 1970 is none Kafka has).
MAX_AGO_MS = 50 * 365 * 24 * 3600 * 1000


class BadKafkaStart(ValueError):
    """Text that says no start; the message says why, in words."""


@dataclass(frozen=True)
class KafkaStart:
    """One declared start. `how`: carry, earliest, latest, timestamp or ago; `ms`: the
    timestamp (epoch milliseconds) or the interval (milliseconds); `text`: as written."""

    how: str
    ms: int | None = None
    text: str = ""

    def describe(self) -> str:
        if self.how == TIMESTAMP:
            return f"from {self.text}" if self.text else f"from {self.ms} ms since the epoch"
        if self.how == AGO:
            return f"from {self.text}"
        return {CARRY: "where the previous version stopped"}.get(self.how, f"from {self.how}")

    def at(self, now_ms: int) -> KafkaStart:
        """Now minus an interval made a timestamp, `now_ms` being now; any other as it is."""
        if self.how != AGO or self.ms is None:
            return self
        when = now_ms - self.ms
        iso = datetime.fromtimestamp(when / 1000, tz=timezone.utc).isoformat(timespec="seconds")
        return KafkaStart(TIMESTAMP, when, f"{self.text} ({iso.replace('+00:00', 'Z')})")

    def options(self) -> dict[str, str]:
        """The Kafka source options it starts with (a `carry` has none of its own)."""
        if self.how in (EARLIEST, LATEST):
            return {"startingOffsets": self.how}
        if self.how == TIMESTAMP:
            # A partition with no record at or after the time starts at its end, as if it had
            # one at the next offset; Spark's default ("error") fails the query instead.
            return {
                "startingTimestamp": str(self.ms),
                "startingOffsetsByTimestampStrategy": "latest",
            }
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"how": self.how, "ms": self.ms, "text": self.text}

    @classmethod
    def from_dict(cls, doc: Any) -> KafkaStart:
        if not isinstance(doc, dict) or doc.get("how") not in (CARRY, EARLIEST, LATEST,
                                                                TIMESTAMP, AGO):  # fmt: skip
            raise ValueError(f"not a Kafka start: {doc!r}")
        ms = doc.get("ms")
        if ms is not None and (not isinstance(ms, int) or isinstance(ms, bool)):
            raise ValueError(f"not a Kafka start: {doc!r}")
        return cls(doc["how"], ms, str(doc.get("text") or ""))


def parse_kafka_start(text: Any) -> KafkaStart:
    """`text` as a start; BadKafkaStart where it says none."""
    if not isinstance(text, str):
        kind = "a date without quotes" if isinstance(text, datetime) else type(text).__name__
        raise BadKafkaStart(f"is {kind}, not text; write it in quotes")
    value = text.strip()
    if value.lower() in (CARRY, EARLIEST, LATEST):
        return KafkaStart(value.lower(), None, value.lower())
    ago = _AGO.fullmatch(value)
    if ago:
        try:
            ms = parse_trigger_interval(ago.group(1))
        except BadInterval as exc:
            raise BadKafkaStart(f"{value!r}: the interval: {exc}") from None
        if ms <= 0:
            raise BadKafkaStart(f"{value!r}: the interval must be more than nothing")
        if ms > MAX_AGO_MS:
            raise BadKafkaStart(f"{value!r}: the interval must be at most 50 years")
        return KafkaStart(AGO, ms, f"now - {ago.group(1).strip()}")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise BadKafkaStart(f"{value!r} is not a start") from None
    if when.tzinfo is None:
        raise BadKafkaStart(f"{value!r} has no zone: add one (Z for UTC, or +01:00)")
    if when.timestamp() < 0:
        raise BadKafkaStart(f"{value!r} is before 1970: no Kafka record is")
    return KafkaStart(TIMESTAMP, int(when.timestamp() * 1000), value)


def checked_kafka_start(
    value: Any,
    kafka_tables: tuple[str, ...] | None,
    problem: Callable[[str, str], None],
) -> Any:
    """A job's `kafka-start` (one start for every Kafka source, or one per Kafka source table),
    its table names as the job's tables are named; each problem told to `problem(field,
    message)`. `kafka_tables`: the job's Kafka source tables, None when they cannot be told
    (its tables have problems of their own)."""
    if not isinstance(value, dict):
        _check_one(value, "kafka-start", problem)
        return value
    named: dict[str, Any] = {}
    for table, text in value.items():
        field = f"kafka-start.{table}"
        _check_one(text, field, problem)
        if kafka_tables is None:
            continue
        found = _table_of(str(table), kafka_tables)
        if found is None:
            known = ", ".join(kafka_tables) or "none"
            problem(field, f"is not a Kafka source table of the job (its Kafka sources: {known})")
            continue
        named[found] = text
    return named


def _table_of(text: str, tables: tuple[str, ...]) -> str | None:
    try:
        key = parse_name(text).key
    except BadName:
        return None
    return next((t for t in tables if parse_name(t).key == key), None)


def _check_one(text: Any, field: str, problem: Callable[[str, str], None]) -> None:
    try:
        parse_kafka_start(text)
    except BadKafkaStart as exc:
        problem(field, f"{exc}; write {KAFKA_START_FORMS}")


def declared_starts(spec: dict[str, Any], tables: tuple[str, ...]) -> dict[str, KafkaStart]:
    """A job's `kafka-start` for each of its Kafka source `tables` that it declares one for
    (the job was validated: its text parses)."""
    value = spec.get("kafka-start")
    if value is None:
        return {}
    if isinstance(value, dict):
        return {t: parse_kafka_start(v) for t, v in value.items() if t in tables}
    start = parse_kafka_start(value)
    return {table: start for table in tables}


def declares_ago(spec: dict[str, Any]) -> bool:
    """Whether a job's `kafka-start` says now minus an interval, for any of its tables."""
    value = spec.get("kafka-start")
    texts = value.values() if isinstance(value, dict) else [value]
    return any(isinstance(t, str) and _AGO.fullmatch(t.strip()) for t in texts)
