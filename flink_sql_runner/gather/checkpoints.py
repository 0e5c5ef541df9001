"""Checkpoint inspection without Spark, through a `Storage` (local folders or S3).

The layout Spark writes: `metadata` (JSON with an "id"), `offsets/N`, `commits/N`; only numeric
names count, dot-files (`.0.crc`) and temporaries (`.1.tmp`) are ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from flink_sql_runner.stores.storage import IsAFolder, Storage

MAX_METADATA_BYTES = 1024 * 1024
_CONTROL = re.compile(r"v(\d+)\.")
_NUMERIC = re.compile(r"[0-9]+")


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint folder holds, as far as the deployer needs to know."""

    location: str
    exists: bool  # the folder holds any object at all, junk included
    valid: bool  # `metadata` has an "id" and `offsets/` holds a numeric file
    last_committed: int | None  # largest numeric name in commits/
    last_offset: int | None  # largest numeric name in offsets/

    @property
    def pending(self) -> bool:
        """A planned batch without its commit: re-run with the same offsets on restart."""
        if self.last_offset is None:
            return False
        return self.last_committed is None or self.last_offset > self.last_committed


def inspect_checkpoint(storage: Storage, location: str) -> CheckpointInfo:
    location = location.rstrip("/")
    offsets = numbers(storage.file_names(f"{location}/offsets"))
    commits = numbers(storage.file_names(f"{location}/commits"))
    try:
        metadata = storage.read_bytes(f"{location}/metadata")
    except IsAFolder:
        metadata = None
    exists = bool(metadata is not None or offsets or commits) or not storage.is_empty(location)
    if not exists:
        return CheckpointInfo(location, False, False, None, None)
    valid = _metadata_has_id(metadata) and bool(offsets)
    return CheckpointInfo(
        location, True, valid, max(commits, default=None), max(offsets, default=None)
    )


def highest_version(storage: Storage, job_location: str) -> int:
    """The largest version used under `<root>/<name>`, 0 when there is none: its numeric
    sub-folders (checkpoints) and the versions control files were written for
    (`_control/v<N>.*`, written before a run is submitted). A version a start was begun for is
    never started clean again, even when that run left no checkpoint: it may still appear."""
    location = job_location.rstrip("/")
    used = numbers(storage.dir_names(location))
    used += [
        int(m[1]) for f in storage.file_names(f"{location}/_control") if (m := _CONTROL.match(f))
    ]
    return max(used, default=0)


def numbers(names: list[str]) -> list[int]:
    return [int(n) for n in names if _NUMERIC.fullmatch(n)]


def _metadata_has_id(data: bytes | None) -> bool:
    if data is None or len(data) > MAX_METADATA_BYTES:
        return False
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and "id" in doc
