"""Properties Spark ignores, and what a Flink setting is called in Spark.

Spark reads only properties whose key starts with `spark.` (spark-submit drops the others with
a warning in its own log). Such a key in `sparkProperties` is a warning naming the file and the
key, or, with `--strict-properties`, an error. For the keys of the original tool's
`flinkProperties` the warning says what does the same in Spark, or that nothing does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flink_sql_runner.errors import Problem
from flink_sql_runner.read.schemas import key_text
from flink_sql_runner.read.secrets import is_secret_key

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
DEFAULT_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
IGNORED = "Spark ignores properties whose key does not start with 'spark.'"


@dataclass
class PropertyRules:
    """How jobs' properties are checked and completed while loading, for one command."""

    #: Ignored properties are errors (exit 2), not warnings.
    strict: bool = False
    #: Properties merged over the template's (a job's own still win): the original tool's
    #: --pyexec-path gives spark.pyspark.python here.
    defaults: dict[str, str] = field(default_factory=dict)
    #: The warnings found (when not strict), one per file and key.
    warnings: list[Problem] = field(default_factory=list)

    def check(self, properties: Any, source: str, problems: list[Problem]) -> None:
        """Report the keys of `properties` (a mapping) that Spark ignores: as problems when
        strict, else as warnings."""
        if not isinstance(properties, dict):
            return
        found = [
            Problem(source, f"sparkProperties.{key_text(key)}", ignored_message(str(key), value))
            for key, value in properties.items()
            if not str(key).startswith("spark.")
        ]
        if self.strict:
            problems.extend(found)
        else:
            self.warnings.extend(p for p in found if p not in self.warnings)

    def complete(self, template: dict[str, Any]) -> dict[str, Any]:
        """The template with `defaults` merged over its sparkProperties."""
        if not self.defaults:
            return template
        own = template.get("sparkProperties")
        merged = {**(own if isinstance(own, dict) else {}), **self.defaults}
        return {**template, "sparkProperties": merged}


def _duration(value: str) -> str | None:
    """A Flink duration (`60s`, `1 min`, `500`, in ms without a unit) as Spark's interval text."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", value.lower())
    if not match:
        return None
    amount, unit = match.groups()
    units = {
        "": "millisecond",
        "ms": "millisecond",
        "milli": "millisecond",
        "millis": "millisecond",
        "millisecond": "millisecond",
        "milliseconds": "millisecond",
        "s": "second",
        "sec": "second",
        "secs": "second",
        "second": "second",
        "seconds": "second",
        "m": "minute",
        "min": "minute",
        "mins": "minute",
        "minute": "minute",
        "minutes": "minute",
        "h": "hour",
        "hour": "hour",
        "hours": "hour",
        "d": "day",
        "day": "day",
        "days": "day",
    }
    if unit not in units:
        return None
    word = units[unit]
    return f"{amount} {word}" if amount == "1" else f"{amount} {word}s"


def _state_backend(value: str) -> str:
    backend = value.strip().lower()
    if backend == "rocksdb":
        return (
            f"set spark.sql.streaming.stateStore.providerClass: {ROCKSDB_PROVIDER} (the "
            "checkpoint pins it)"
        )
    if backend in ("hashmap", "filesystem", "jobmanager", "memory"):
        return f"Spark's default state store ({DEFAULT_PROVIDER}) does the same; drop it"
    return "Spark's state store is chosen with spark.sql.streaming.stateStore.providerClass"


def _interval(value: str) -> str:
    interval = _duration(value)
    what = f"{{processingTime: {interval}}}" if interval else "{processingTime: <interval>}"
    return f"set the job's `trigger: {what}` (Spark checkpoints every micro-batch)"


def _incremental(value: str) -> str:
    if value.strip().lower() == "true":
        return (
            "with the RocksDB state store, set "
            'spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled: "true"'
        )
    return "nothing to set"


NO_SETTING = "Spark has no such setting"

#: Flink keys (the original's flinkProperties) and what does the same in Spark.
FLINK_KEYS: dict[str, Callable[[str], str]] = {
    "state.backend": _state_backend,
    "state.backend.type": _state_backend,
    "state.backend.incremental": _incremental,
    "state.backend.rocksdb.localdir": lambda _: (
        "set spark.local.dir (YARN: the NodeManagers' local dirs are used)"
    ),
    "state.checkpoints.dir": lambda _: (
        "set the job's `checkpoint-root` (the deployer adds <name>/<version>/; on S3 write s3a://)"
    ),
    "state.checkpoint-storage": lambda _: "set the job's `checkpoint-root`",
    "state.savepoints.dir": lambda _: (
        f"{NO_SETTING}: Spark has no savepoints; a stop keeps "
        "the checkpoint, and the next start resumes from it"
    ),
    "state.checkpoints.num-retained": lambda _: (
        "set spark.sql.streaming.minBatchesToRetain "
        "(batches of metadata and state kept; default 100)"
    ),
    "execution.checkpointing.interval": _interval,
    "execution.checkpointing.min-pause": lambda _: (
        f"{NO_SETTING}: the trigger's interval spaces the micro-batches"
    ),
    "execution.checkpointing.timeout": lambda _: NO_SETTING,
    "execution.checkpointing.mode": lambda _: (
        f"{NO_SETTING}: each micro-batch is "
        "checkpointed; replayable sources and the file sink give exactly once"
    ),
    "execution.checkpointing.externalized-checkpoint-retention": lambda _: (
        f"{NO_SETTING}: Spark keeps the checkpoint when a query stops"
    ),
    "execution.checkpointing.max-concurrent-checkpoints": lambda _: (
        f"{NO_SETTING}: one micro-batch runs at a time"
    ),
    "execution.checkpointing.unaligned": lambda _: NO_SETTING,
    "execution.runtime-mode": lambda _: f"{NO_SETTING}: these jobs always stream",
    "pipeline.name": lambda _: (
        f"{NO_SETTING}: the application is named flink-sql-runner-<name>-v<version>"
    ),
    "pipeline.object-reuse": lambda _: NO_SETTING,
    "pipeline.jars": lambda _: "set spark.jars (or spark.jars.packages)",
    "pipeline.classpaths": lambda _: (
        "set spark.driver.extraClassPath and spark.executor.extraClassPath"
    ),
    "parallelism.default": lambda _: (
        "set spark.sql.shuffle.partitions (the checkpoint pins it) and the executors' cores"
    ),
    "taskmanager.numberOfTaskSlots": lambda _: "set spark.executor.cores",
    "taskmanager.memory.process.size": lambda _: (
        "set spark.executor.memory and spark.executor.memoryOverhead"
    ),
    "jobmanager.memory.process.size": lambda _: "set spark.driver.memory",
    "table.exec.state.ttl": lambda _: f"{NO_SETTING}: Spark drops state behind the watermark",
    "table.local-time-zone": lambda _: "set spark.sql.session.timeZone",
    "python.executable": lambda _: "set spark.pyspark.python",
    "python.client.executable": lambda _: "set spark.pyspark.driver.python",
    "yarn.application.queue": lambda _: "set spark.yarn.queue",
}
#: Key prefixes of Flink settings, and what does the same in Spark.
FLINK_PREFIXES: dict[str, Callable[[str], str]] = {
    "restart-strategy": lambda _: (
        f"{NO_SETTING}: a failed query stops; Spark retries failed tasks (spark.task.maxFailures)"
    ),
    "high-availability": lambda _: f"{NO_SETTING} for a query",
}


def ignored_message(key: str, value: Any) -> str:
    """The warning for one key Spark ignores: what to set instead, where something does."""
    if key.startswith(("fs.", "hadoop.")):
        return f"{IGNORED}; a Hadoop setting: write spark.hadoop.{key_text(key)}"
    text = "" if is_secret_key(key) else str(value)
    hint = FLINK_KEYS.get(key)
    if hint is None:
        hint = next((h for p, h in FLINK_PREFIXES.items() if key.startswith(p)), None)
    if hint is None:
        return IGNORED
    return f"{IGNORED}; for Flink's {key_text(key)}: {hint(text)}"
