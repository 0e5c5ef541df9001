"""The lean reads of a checkpoint, under the names they had before `checkpoint_reader.py`
became the one reader of Spark's checkpoint files: nothing is read here."""

from __future__ import annotations

from flink_sql_runner.gather.checkpoint_reader import (
    MAX_METADATA_BYTES,
    MAX_OFFSETS_BYTES,
    CheckpointInfo,
    OffsetsFile,
    highest_version,
    inspect_checkpoint,
    is_kafka_offsets,
    last_committed,
    numbers,
    parse_offsets,
    pinned_settings,
)

__all__ = [
    "MAX_METADATA_BYTES",
    "MAX_OFFSETS_BYTES",
    "CheckpointInfo",
    "OffsetsFile",
    "highest_version",
    "inspect_checkpoint",
    "is_kafka_offsets",
    "last_committed",
    "numbers",
    "parse_offsets",
    "pinned_settings",
]
