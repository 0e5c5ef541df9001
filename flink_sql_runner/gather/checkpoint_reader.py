"""What one version's checkpoint says, read from Spark's own files through a `Storage` (local
folders, S3, HDFS): its committed batches and when they were planned, per source the offsets
last committed and those the next batch reads, the watermark, the settings it pins and its
stateful operators (as their folders and, on Spark 4.x, their `_metadata` tell). Read only: it
writes nothing, takes no lock and may read while the job runs (Spark writes each file whole,
under a temporary name first).

The files (Spark 3.5 to 4.3): `metadata` (`{"id": query id}`); `offsets/N` (parsed by
`checkpoints.parse_offsets`); `commits/N` (`v1`, then `{"nextBatchWatermarkMs": ..}`);
`sources/<i>/N`, a file source's log of the files each batch read (`v1`, then one JSON line per
file), compacted every few batches into `N.compact`, which holds every entry before it too;
`state/<op>/<partition>/` per stateful operator, and `state/<op>/_metadata/metadata`
(`v1`, then `{"operatorInfo": {"operatorId", "operatorName"}, "stateStoreInfo": [..]}`) on 4.x.
A file that is there but not in that format is an error naming the file and what is wrong.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoints import (
    MAX_METADATA_BYTES,
    MAX_OFFSETS_BYTES,
    OffsetsFile,
    inspect_checkpoint,
    is_kafka_offsets,
    numbers,
    parse_offsets,
)
from flink_sql_runner.model.checkpoint_report import CheckpointReport, Operator, SourceProgress
from flink_sql_runner.stores.storage import IsAFolder, Storage

#: A file source's log is counted only while the files to read for it stay below this in all.
MAX_SOURCE_LOG_BYTES = 64 * 1024 * 1024
_COMPACT = re.compile(r"([0-9]+)\.compact")


class CheckpointUnreadable(FsrError):
    """A file of a checkpoint is there but cannot be read as Spark writes it."""


def read_checkpoint(storage: Storage, location: str) -> CheckpointReport | None:
    """The report of the checkpoint at `location`; None when nothing is there (no run of the
    version wrote one yet). CheckpointUnreadable naming the file when one cannot be read."""
    location = location.rstrip("/")
    info = inspect_checkpoint(storage, location)
    if not info.exists:
        return None
    reader = _Reader(storage, location)
    committed = tuple(sorted(numbers(storage.file_names(f"{location}/commits"))))
    planned = numbers(storage.file_names(f"{location}/offsets"))
    last = committed[-1] if committed else None
    pending = max(planned, default=None)
    if pending is not None and last is not None and pending <= last:
        pending = None
    last_offsets = reader.offsets(last) if last is not None else None
    next_offsets = reader.offsets(pending) if pending is not None else None
    first_offsets = last_offsets
    if committed and committed[0] != last and committed[0] in planned:
        first_offsets = reader.offsets(committed[0])
    watermark = reader.commit_watermark(last) if last is not None else None
    if watermark is None and next_offsets is not None:
        watermark = next_offsets.watermark_ms
    newest = next_offsets or last_offsets
    return CheckpointReport(
        location=location,
        query_id=reader.query_id(),
        committed=committed,
        first_time_ms=first_offsets.timestamp_ms if first_offsets else None,
        last_time_ms=last_offsets.timestamp_ms if last_offsets else None,
        pending=pending,
        watermark_ms=watermark,
        sources=reader.sources(last_offsets, next_offsets),
        pinned=newest.conf if newest else None,
        operators=reader.operators(),
    )


class _Reader:
    def __init__(self, storage: Storage, location: str):
        self.storage, self.location = storage, location

    def _bytes(self, rel: str, limit: int) -> bytes | None:
        where = f"{self.location}/{rel}"
        try:
            data = self.storage.read_bytes(where)
        except IsAFolder:
            raise CheckpointUnreadable(f"{where}: a folder where Spark writes a file") from None
        if data is not None and len(data) > limit:
            raise CheckpointUnreadable(f"{where}: larger than {limit} bytes; not read")
        return data

    def _fail(self, rel: str, why: str) -> CheckpointUnreadable:
        return CheckpointUnreadable(f"{self.location}/{rel}: {why}")

    def query_id(self) -> str | None:
        data = self._bytes("metadata", MAX_METADATA_BYTES)
        if data is None:
            return None
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._fail("metadata", "not JSON") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("id"), str):
            raise self._fail("metadata", 'no query id (a JSON object with "id")')
        return doc["id"]

    def offsets(self, batch: int) -> OffsetsFile | None:
        rel = f"offsets/{batch}"
        data = self._bytes(rel, MAX_OFFSETS_BYTES)
        if data is None:
            return None
        try:
            return parse_offsets(data)
        except ValueError as exc:
            raise self._fail(rel, str(exc)) from None

    def _log(self, rel: str, limit: int) -> list[Any] | None:
        """The JSON lines after the version line of one of Spark's log files (None: absent)."""
        data = self._bytes(rel, limit)
        if data is None:
            return None
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise self._fail(rel, "not UTF-8 text") from None
        if not lines or not re.fullmatch(r"v[0-9]+", lines[0]):
            raise self._fail(rel, "the first line is not a log version (v1)")
        entries = []
        for number, line in enumerate(lines[1:], start=2):
            try:
                entries.append(json.loads(line))
            except ValueError:
                raise self._fail(rel, f"line {number} is not JSON") from None
        return entries

    def commit_watermark(self, batch: int) -> int | None:
        rel = f"commits/{batch}"
        entries = self._log(rel, MAX_METADATA_BYTES)
        if entries is None:
            return None
        if len(entries) != 1 or not isinstance(entries[0], dict):
            raise self._fail(rel, "line 2 is not a JSON object")
        value = entries[0].get("nextBatchWatermarkMs", 0)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(rel, "nextBatchWatermarkMs is not a number")
        return value

    def sources(
        self, committed: OffsetsFile | None, following: OffsetsFile | None
    ) -> tuple[SourceProgress, ...]:
        count = max(len(committed.sources) if committed else 0,
                    len(following.sources) if following else 0)  # fmt: skip
        found = []
        for index in range(count):
            done = _at(committed, index)
            after = _at(following, index)
            kind = _kind(done if done is not None else after)
            if kind == "file" and isinstance(done, dict):
                read, last = self.files_read(index, done["logOffset"])
                found.append(SourceProgress(index, kind, done, after, read, last))
            else:
                found.append(SourceProgress(index, kind, done, after))
        return tuple(found)

    def files_read(self, index: int, upto: int) -> tuple[int | None, tuple[str, ...]]:
        """How many files source `index`'s log lists up to entry `upto`, and that entry's
        files: the newest compact file at or below it and the entries after it, as Spark reads
        them (None when they are more than MAX_SOURCE_LOG_BYTES in all: not counted)."""
        folder = f"sources/{index}"
        names = self.storage.file_names(f"{self.location}/{folder}")
        compacts = [int(m[1]) for n in names if (m := _COMPACT.fullmatch(n)) and int(m[1]) <= upto]
        start = max(compacts, default=None)
        plain = {n for n in numbers(names) if (start is None or n > start) and n <= upto}
        budget = MAX_SOURCE_LOG_BYTES
        files: list[dict[str, Any]] = []
        rels = ([f"{folder}/{start}.compact"] if start is not None else []) + [
            f"{folder}/{n}" for n in sorted(plain)
        ]
        if not rels:  # no log to count: not none read
            return None, ()
        for rel in rels:
            try:
                entries = self._log(rel, budget)
            except CheckpointUnreadable as exc:
                if "larger than" not in str(exc):
                    raise
                return None, ()
            for entry in entries or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                    raise self._fail(rel, "an entry without a file's path")
                files.append(entry)
            budget -= sum(len(json.dumps(e)) + 1 for e in entries or [])
        last = tuple(e["path"] for e in files if e.get("batchId") == upto)
        return len(files), last

    def operators(self) -> tuple[Operator, ...]:
        found = []
        for op in sorted(numbers(self.storage.dir_names(f"{self.location}/state"))):
            folder = f"state/{op}"
            partitions = numbers(self.storage.dir_names(f"{self.location}/{folder}"))
            name, stores = None, ()
            entries = self._log(f"{folder}/_metadata/metadata", MAX_METADATA_BYTES)
            if entries:
                name, stores = _operator_metadata(entries[0])
                if name is None:
                    raise self._fail(f"{folder}/_metadata/metadata", "no operatorInfo")
            schema = None
            if partitions:
                schema = self.schema_version(f"{folder}/{min(partitions)}/_metadata/schema")
            found.append(Operator(op, name, len(partitions), stores, schema))
        return tuple(found)

    def schema_version(self, rel: str) -> str | None:
        """The version a state schema file starts with (Java's writeUTF: a 2-byte length,
        then `v2`), None when there is no such file."""
        data = self._bytes(rel, MAX_OFFSETS_BYTES)
        if data is None:
            return None
        size = int.from_bytes(data[:2], "big")
        version = data[2 : 2 + size].decode("ascii", errors="replace")
        if len(data) < 2 + size or not re.fullmatch(r"v[0-9]+", version):
            raise self._fail(rel, "does not start with a schema version (v2)")
        return version


def _operator_metadata(doc: Any) -> tuple[str | None, tuple[str, ...]]:
    info = doc.get("operatorInfo") if isinstance(doc, dict) else None
    if not isinstance(info, dict) or not isinstance(info.get("operatorName"), str):
        return None, ()
    stores = doc.get("stateStoreInfo")
    names = tuple(
        str(s.get("storeName")) for s in stores or [] if isinstance(s, dict)
    ) if isinstance(stores, list) else ()  # fmt: skip
    return info["operatorName"], names


def _at(offsets: OffsetsFile | None, index: int) -> Any:
    if offsets is None or index >= len(offsets.sources):
        return None
    return offsets.sources[index]


def _kind(offset: Any) -> str:
    """What kind of source an offset is of, by its shape."""
    if offset is None:
        return "none"
    if isinstance(offset, dict):
        log = offset.get("logOffset")
        if set(offset) == {"logOffset"} and isinstance(log, int) and not isinstance(log, bool):
            return "file"
        if is_kafka_offsets(offset):
            return "kafka"
        if set(offset) == {"offset", "timestamp"}:  # rate-micro-batch
            return "rate"
    if isinstance(offset, int) and not isinstance(offset, bool):  # rate
        return "rate"
    return "other"
