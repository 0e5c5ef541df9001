"""The one reader of Spark's checkpoint files, through a `Storage` (local folders, S3, HDFS):
the lean reads a plan, `status`, the offset carry and a start make (whether a checkpoint is
there and valid, its last planned and committed batches, the settings it pins, the highest
version used under a job), and the full read `inspect` shows (`read_checkpoint`): its committed
batches and when they were planned, per source the offsets last committed and those the next
batch reads, the watermark, the settings it pins and its stateful operators (as their folders
and, on Spark 4.x, their `_metadata` tell). Read only: it writes nothing, takes no lock and may
read while the job runs (Spark writes each file whole, under a temporary name first).

The files (Spark 3.5 to 4.3): `metadata` (`{"id": query id}`); `offsets/N`, `v1` on its first
line, then a JSON line with the batch's metadata, whose `conf` map holds the Spark settings the
checkpoint pins (Spark restores them on restart and ignores the session's), then one line per
source (`parse_offsets`); `commits/N` (`v1`, then `{"nextBatchWatermarkMs": ..}`);
`sources/<i>/N`, a file source's log of the files each batch read (`v1`, then one JSON line per
file), compacted every few batches into `N.compact`, which holds every entry before it too;
`state/<op>/<partition>/` per stateful operator, and `state/<op>/_metadata/metadata`
(`v1`, then `{"operatorInfo": {"operatorId", "operatorName"}, "stateStoreInfo": [..]}`) on 4.x.
Only numeric names count as batches; dot-files (`.0.crc`) and temporaries (`.1.tmp`) are
ignored. The lean reads say None of a file they cannot read; the full read fails naming the
file and what is wrong.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.checkpoint_report import (
    CONTINUED_FILE,
    CheckpointReport,
    Operator,
    SourceProgress,
)
from flink_sql_runner.model.offsets import is_kafka_offsets
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


@dataclass(frozen=True)
class _Scan:
    """One look at a checkpoint folder: its planned and committed batches (one listing each)
    and its `metadata` (None: absent; `folder` when a folder is where Spark writes it)."""

    offsets: list[int]
    commits: list[int]
    metadata: bytes | None
    folder: bool = False


def _scan(storage: Storage, location: str) -> _Scan:
    offsets = numbers(storage.file_names(f"{location}/offsets"))
    commits = numbers(storage.file_names(f"{location}/commits"))
    try:
        return _Scan(offsets, commits, storage.read_bytes(f"{location}/metadata"))
    except IsAFolder:
        return _Scan(offsets, commits, None, folder=True)


def inspect_checkpoint(storage: Storage, location: str) -> CheckpointInfo:
    location = location.rstrip("/")
    return _info(storage, location, _scan(storage, location))


def _info(storage: Storage, location: str, scan: _Scan) -> CheckpointInfo:
    offsets, commits, metadata = scan.offsets, scan.commits, scan.metadata
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


def last_committed(storage: Storage, location: str) -> int | None:
    """The checkpoint's last committed batch (None: none), from one listing of `commits/`."""
    return max(numbers(storage.file_names(f"{location.rstrip('/')}/commits")), default=None)


def pinned_settings(
    storage: Storage, location: str, batch: int | None = None
) -> dict[str, str] | None:
    """The Spark settings the checkpoint pins, setting -> value as Spark wrote it: the `conf` map
    of its latest offsets file (`batch`, when the caller already listed `offsets/`). None when
    that is not readable (no offsets file, no `conf` map, not Spark's format): what it pins is
    then unknown."""
    found = latest_offsets(storage, location, batch, sources=False)
    return found.conf if found is not None else None


def latest_offsets(
    storage: Storage, location: str, batch: int | None = None, sources: bool = True
) -> OffsetsFile | None:
    """The checkpoint's latest offsets file (`batch`, when the caller already listed
    `offsets/`), parsed (its source lines only with `sources`); None when there is none or it
    is not readable."""
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
        return parse_offsets(data, sources=sources)
    except ValueError:
        return None


def source_offsets(storage: Storage, location: str, batch: int) -> list[Any]:
    """The per-source lines of `offsets/<batch>`, parsed (None for a source without one); none
    when the file is not there or not readable."""
    data = storage.read_bytes(f"{location.rstrip('/')}/offsets/{batch}")
    if data is None or len(data) > MAX_OFFSETS_BYTES:
        return []
    try:
        return list(parse_offsets(data).sources)
    except ValueError:
        return []


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


# -- the full read, for `inspect` ------------------------------------------------------------

#: A file source's log is counted only while the files to read for it stay below this in all.
MAX_SOURCE_LOG_BYTES = 64 * 1024 * 1024
_COMPACT = re.compile(r"([0-9]+)\.compact")


class CheckpointUnreadable(FsrError):
    """A file of a checkpoint is there but cannot be read as Spark writes it."""


def read_checkpoint(storage: Storage, location: str) -> CheckpointReport | None:
    """The report of the checkpoint at `location`; None when nothing is there (no run of the
    version wrote one yet). CheckpointUnreadable naming the file when one cannot be read."""
    location = location.rstrip("/")
    scan = _scan(storage, location)
    if not _info(storage, location, scan).exists:
        return None
    reader = _Reader(storage, location)
    committed = tuple(sorted(scan.commits))
    planned = scan.offsets
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
        query_id=reader.query_id(scan),
        committed=committed,
        first_time_ms=first_offsets.timestamp_ms if first_offsets else None,
        last_time_ms=last_offsets.timestamp_ms if last_offsets else None,
        pending=pending,
        watermark_ms=watermark,
        sources=reader.sources(last_offsets, next_offsets),
        pinned=newest.conf if newest else None,
        operators=reader.operators(),
        continued_from=reader.continued_from(),
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

    def continued_from(self) -> str | None:
        """Where the deployer copied this checkpoint from (its marker); None: Spark began it here.
        A marker that is not one names itself (CheckpointUnreadable); a place that is no plain
        printable text is shown as Python writes it, so that it cannot forge `inspect`'s lines."""
        data = self._bytes(CONTINUED_FILE, MAX_METADATA_BYTES)
        if data is None:
            return None
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self._fail(CONTINUED_FILE, "not JSON") from None
        found = doc.get("continued-from") if isinstance(doc, dict) else None
        if not isinstance(found, str):
            raise self._fail(CONTINUED_FILE, "no continued-from")
        return found if found.isprintable() else repr(found)

    def query_id(self, scan: _Scan) -> str | None:
        if scan.folder:
            raise self._fail("metadata", "a folder where Spark writes a file")
        data = scan.metadata
        if data is not None and len(data) > MAX_METADATA_BYTES:
            raise self._fail("metadata", f"larger than {MAX_METADATA_BYTES} bytes; not read")
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
        files = self.log_entries(index, upto)
        if files is None:  # no log to count, or too large: not none read
            return None, ()
        last = tuple(e["path"] for e in files if e.get("batchId") == upto)
        return len(files), last

    def log_entries(self, index: int, upto: int) -> list[dict[str, Any]] | None:
        """Every entry of source `index`'s log up to entry `upto` (the newest compact file at or
        below it and the entries after it, as Spark reads them); None when there is no log or it
        is more than MAX_SOURCE_LOG_BYTES."""
        folder = f"sources/{index}"
        names = self.storage.file_names(f"{self.location}/{folder}")
        compacts = [int(m[1]) for n in names if (m := _COMPACT.fullmatch(n)) and int(m[1]) <= upto]
        start = max(compacts, default=None)
        plain = sorted(n for n in numbers(names) if (start is None or n > start) and n <= upto)
        rels = ([f"{folder}/{start}.compact"] if start is not None else []) + [
            f"{folder}/{n}" for n in plain
        ]
        if not rels:
            return None
        budget = MAX_SOURCE_LOG_BYTES
        found: list[dict[str, Any]] = []
        for rel in rels:
            try:
                entries = self._log(rel, budget)
            except CheckpointUnreadable as exc:
                if "larger than" not in str(exc):
                    raise
                return None
            for entry in entries or []:
                if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                    raise self._fail(rel, "an entry without a file's path")
                found.append(entry)
            budget -= sum(len(json.dumps(e)) + 1 for e in entries or [])
        return found

    def kafka_initial(self, index: int) -> Any:
        """Where Kafka source `index` began (its `sources/<index>/0`: a zero byte, `v1`, the
        offsets as JSON); None when that file is gone or not in that form."""
        data = self._bytes(f"sources/{index}/0", MAX_OFFSETS_BYTES)
        if data is None:
            return None
        lines = data.lstrip(b"\x00").decode("utf-8", errors="replace").splitlines()
        try:
            return json.loads(lines[1]) if len(lines) > 1 else None
        except ValueError:
            return None

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


# -- the input of a version's last batches, for `preview` ------------------------------------


@dataclass(frozen=True)
class BatchesInput:
    """What the committed batches `first`..`last` of a checkpoint read, per source (in the
    order of its offsets files' lines): a file source's files (`files`), a Kafka source's
    offsets before the first batch and after the last (`start`, `end`: topic -> partition ->
    offset), or why not (`missing`, for that source); `missing` of the whole when no batch was
    committed or their offsets are gone."""

    first: int | None
    last: int | None
    sources: tuple[tuple[str, Any], ...] = ()  # (kind, files | (start, end) | why not)
    missing: str | None = None


def batches_input(storage: Storage, location: str, count: int) -> BatchesInput:
    """The input of the last `count` committed batches of the checkpoint at `location`.
    CheckpointUnreadable naming the file when one cannot be read."""
    location = location.rstrip("/")
    scan = _scan(storage, location)
    if not scan.commits:
        why = "the version committed no batch" if scan.offsets or scan.metadata else (
            "the version has no checkpoint")  # fmt: skip
        return BatchesInput(None, None, missing=why)
    last = max(scan.commits)
    first = max(min(scan.commits), last - count + 1)
    planned = set(scan.offsets)
    if first > 0 and first - 1 not in planned:
        kept = min(planned, default=last)
        first = kept + 1 if kept < last else last
    reader = _Reader(storage, location)
    end = reader.offsets(last)
    if end is None:
        return BatchesInput(first, last, missing=f"offsets/{last} is gone")
    before = reader.offsets(first - 1) if first > 0 else None
    found: list[tuple[str, Any]] = []
    for index, offset in enumerate(end.sources):
        kind = _kind(offset)
        prior = _at(before, index)
        if kind == "file":
            upto = offset["logOffset"]
            since = prior["logOffset"] if isinstance(prior, dict) else -1
            entries = reader.log_entries(index, upto)
            if entries is None:
                found.append((kind, f"the log of source {index} is gone or too large"))
                continue
            batch_ids = [(e["path"], e.get("batchId")) for e in entries]
            files = tuple(p for p, b in batch_ids if isinstance(b, int) and since < b <= upto)
            found.append((kind, files))
        elif kind == "kafka":
            start = prior if first > 0 else reader.kafka_initial(index)
            if not isinstance(start, dict):
                found.append((kind, f"where source {index} began before batch {first} is gone"))
                continue
            found.append((kind, (_partitions(start), _partitions(offset))))
        elif kind == "rate":
            found.append((kind, "a rate source makes its rows up: no input to read again"))
        else:
            found.append((kind, f"a source whose offsets this reader does not know ({kind})"))
    return BatchesInput(first, last, tuple(found))


def _partitions(offsets: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()
            if isinstance(parts, dict)}  # fmt: skip
