"""Checkpoint inspection without Spark, through a `Storage` (local folders or S3).

The layout Spark writes: `metadata` (JSON with an "id"), `offsets/N`, `commits/N`; only numeric
names count, dot-files (`.0.crc`) and temporaries (`.1.tmp`) are ignored. An offsets file is
`v1` on its first line, then a JSON line with the batch's metadata, whose `conf` map holds the
Spark settings the checkpoint pins (Spark restores them on restart and ignores the session's),
then one line per source.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.stores.storage import IsAFolder, Storage

MAX_METADATA_BYTES = 1024 * 1024
_CONTROL = re.compile(r"v(\d+)\.")
#: An offsets file larger than this is not read for its pins (one line per source; thousands of
#: Kafka partitions take a few hundred KiB).
MAX_OFFSETS_BYTES = 8 * 1024 * 1024
_NUMERIC = re.compile(r"[0-9]+")
_VERSION_LINE = re.compile(r"v[0-9]+")


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint folder holds, as far as the deployer needs to know."""

    location: str
    exists: bool  # the folder holds any object at all, junk included
    valid: bool  # `metadata` has an "id" and `offsets/` holds a numeric file
    last_committed: int | None  # largest numeric name in commits/
    last_offset: int | None  # largest numeric name in offsets/
    #: `metadata` has an "id" and neither `offsets/` nor `commits/` holds a numeric file: its
    #: first run stopped before it planned a batch. Spark starts such a query as new (every
    #: source at its configured starting position), as a clean start would.
    unplanned: bool = False

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
    has_id = _metadata_has_id(metadata)
    return CheckpointInfo(
        location,
        True,
        has_id and bool(offsets),
        max(commits, default=None),
        max(offsets, default=None),
        unplanned=has_id and not offsets and not commits,
    )


def pinned_settings(
    storage: Storage, location: str, batch: int | None = None
) -> dict[str, str] | None:
    """The Spark settings the checkpoint pins, setting -> value as Spark wrote it: the `conf` map
    of its latest offsets file (`batch`, when the caller already listed `offsets/`). None when
    that is not readable (no offsets file, no `conf` map, not Spark's format): what it pins is
    then unknown."""
    location = location.rstrip("/")
    if batch is None:
        batch = max(numbers(storage.file_names(f"{location}/offsets")), default=None)
        if batch is None:
            return None
    try:
        data = storage.read_bytes(f"{location}/offsets/{batch}")
    except IsAFolder:
        return None
    if data is None or len(data) > MAX_OFFSETS_BYTES:
        return None
    try:
        return parse_offsets(data, sources=False).conf
    except ValueError:
        return None


@dataclass(frozen=True)
class OffsetsFile:
    """One `offsets/N` file: the batch's watermark and time (epoch ms), the settings it pins
    (None: it writes none down, Spark 2.1), and one entry per source: its offset as JSON (None:
    the source had none, Spark's `-`)."""

    watermark_ms: int
    timestamp_ms: int
    conf: dict[str, str] | None
    sources: tuple[Any, ...]


def parse_offsets(data: bytes, sources: bool = True) -> OffsetsFile:
    """An offsets file's content, in Spark's format (`v1`, its metadata JSON, a line per
    source; those not read with `sources=False`). ValueError saying what is wrong when it is
    not that."""
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise ValueError("no metadata line after the version line")
    if not _VERSION_LINE.fullmatch(lines[0]):
        raise ValueError(f"the first line is not a log version (v1): {lines[0][:40]!r}")
    try:
        metadata = json.loads(lines[1])
    except ValueError:
        raise ValueError("line 2 (the batch's metadata) is not JSON") from None
    if not isinstance(metadata, dict):
        raise ValueError("line 2 (the batch's metadata) is not a JSON object")
    conf = metadata.get("conf")
    if conf is not None and not (
        isinstance(conf, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in conf.items())
    ):
        raise ValueError("line 2: conf is not a map of settings to text")
    found: list[Any] = []
    for number, line in enumerate(lines[2:] if sources else [], start=3):
        if line == "-":
            found.append(None)
            continue
        try:
            found.append(json.loads(line))
        except ValueError:
            raise ValueError(f"line {number} (source {number - 3}'s offset) is not JSON") from None
    return OffsetsFile(
        _epoch_ms(metadata, "batchWatermarkMs", 2),
        _epoch_ms(metadata, "batchTimestampMs", 2),
        None if conf is None else dict(conf),
        tuple(found),
    )


def _epoch_ms(doc: dict[str, Any], key: str, line: int) -> int:
    value = doc.get(key, 0)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"line {line}: {key} is not a number")
    return value


def highest_version(storage: Storage, job_location: str) -> int:
    """The largest version used under `<root>/<name>`, 0 when there is none: its numeric
    sub-folders (checkpoints) and the versions control files were written for
    (`_control/v<N>.*`, written before a run is submitted). A version a start was begun for is
    never started clean again, even when that run left no checkpoint: it may still appear."""
    location = job_location.rstrip("/")
    folders = storage.dir_names(location)
    used = numbers(folders)
    if "_control" in folders:  # not listed when the listing above shows it is not there
        control = storage.file_names(f"{location}/_control")
        used += [int(m[1]) for f in control if (m := _CONTROL.match(f))]
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


def is_kafka_offsets(line: Any) -> bool:
    """Whether a source's offset is a Kafka source's: `{"topic": {"partition": offset}}`."""
    return (
        isinstance(line, dict)
        and bool(line)
        and all(
            isinstance(parts, dict)
            and all(str(p).isdigit() and isinstance(o, int) for p, o in parts.items())
            for parts in line.values()
        )
    )
