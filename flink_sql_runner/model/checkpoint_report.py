"""What a version's checkpoint says, as `inspect` shows it and a pre-flight may weigh it:
committed batches, offsets per source, the watermark, the settings it pins, its stateful
operators (read by `gather/checkpoint_reader.py`), and the runs of the version
(`gather/inspection.py`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flink_sql_runner.model.json_values import json_time_field, json_time_of_text
from flink_sql_runner.model.stored import StoredManifest


@dataclass(frozen=True)
class SourceProgress:
    """One source of the query (in the order of the offsets files' lines): what kind its
    offsets say it is, the offsets of the last committed batch and those the next batch reads
    (None: no batch is planned beyond the last commit). A file source (`{"logOffset": N}`) also
    has the number of files its log lists up to its committed entry and that entry's files."""

    index: int
    kind: str  # kafka, file, rate, other (its offset as Spark wrote it), none (no offset yet)
    committed: Any = None
    next: Any = None
    files_read: int | None = None
    last_files: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        doc = {"index": self.index, "kind": self.kind, "committed": self.shown(self.committed),
               "next": self.shown(self.next)}  # fmt: skip
        if self.kind == "file":
            doc["files-read"] = self.files_read
            doc["last-files"] = list(self.last_files)
        return doc

    def shown(self, offset: Any) -> Any:
        """An offset as output gives it: the times inside the offsets the reader knows as
        times (a rate-micro-batch source's `timestamp`, epoch ms in Spark's file); the rest, a
        Kafka source's offsets among it, as Spark wrote it (they are positions, not times)."""
        if self.kind == "rate" and isinstance(offset, dict) and "timestamp" in offset:
            return {**offset, **json_time_field("timestamp", offset["timestamp"])}
        return offset


@dataclass(frozen=True)
class Operator:
    """A stateful operator: its id (its folder under `state/`), name and state stores as its
    `_metadata` says (Spark 4.x; None and () before), its partitions (numeric folders), and
    the version of its state schema file (`v2`; None when it has none)."""

    id: int
    name: str | None
    partitions: int
    stores: tuple[str, ...] = ()
    schema_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "partitions": self.partitions,
                "stores": list(self.stores), "schema-version": self.schema_version}  # fmt: skip


#: Written by the deployer into a checkpoint it copied from an older version's, to continue from
#: its state (act/state_copy.py; runner/file_sink.py keeps the same name): `{"continued-from":
#: the older checkpoint}`.
CONTINUED_FILE = "flink-sql-runner-continued.json"


@dataclass(frozen=True)
class CheckpointReport:
    """What `inspect` shows of a checkpoint. Batches are numbered as Spark numbers them; times
    are epoch milliseconds (`*_ms`), as Spark writes them: a batch's time is when it was
    planned (its offsets file's `batchTimestampMs`)."""

    location: str
    query_id: str | None
    committed: tuple[int, ...] = ()  # the batches `commits/` holds (Spark keeps the last 100)
    first_time_ms: int | None = None
    last_time_ms: int | None = None
    pending: int | None = None  # a batch planned beyond the last commit: re-run on restart
    watermark_ms: int | None = None  # the watermark the next batch runs with
    sources: tuple[SourceProgress, ...] = ()
    pinned: dict[str, str] | None = None
    operators: tuple[Operator, ...] = field(default=())
    #: The older version's checkpoint this one was copied from to continue from its state (its
    #: batches up to the copy are that version's); None for one Spark began here.
    continued_from: str | None = None

    @property
    def first_committed(self) -> int | None:
        return self.committed[0] if self.committed else None

    @property
    def last_committed(self) -> int | None:
        return self.committed[-1] if self.committed else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "query-id": self.query_id,
            "batches": {
                "first": self.first_committed,
                "last": self.last_committed,
                "count": len(self.committed),
                **json_time_field("first-planned", self.first_time_ms),
                **json_time_field("last-planned", self.last_time_ms),
                "pending": self.pending,
            },
            **json_time_field("watermark", self.watermark_ms or None),  # 0: none yet
            "sources": [s.to_dict() for s in self.sources],
            "pinned": self.pinned,
            "operators": [o.to_dict() for o in self.operators],
            "continued-from": self.continued_from,
        }


@dataclass(frozen=True)
class RunSeen:
    """A run of the version: its id, when it started (UTC, as the version's run history or its
    log's name says), the batch its first trigger reported (a restart's: where it resumed), how
    it ended (stopped, finished, failed; None: not said: up, or killed), and whether the target
    lists it up now."""

    run_id: str | None
    started: str | None = None
    first_batch: int | None = None
    ended: str | None = None
    up: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"run-id": self.run_id, "started": json_time_of_text(self.started),
                "first-batch": self.first_batch, "ended": self.ended, "up": self.up}  # fmt: skip


@dataclass(frozen=True)
class Inspection:
    """One version of a job as `inspect` shows it. `report` is None when the version has no
    checkpoint yet; `location` too when the manifest names no checkpoint root (`migrate`
    converted it, no deploy recorded it since); `status` is its status file's document (the
    last run's), if readable."""

    name: str
    version: int
    manifest: StoredManifest
    location: str | None
    report: CheckpointReport | None
    runs: tuple[RunSeen, ...] = ()
    status: dict[str, Any] | None = None
    notes: tuple[str, ...] = ()
    state: StateReport | None = None  # with --state only

    @property
    def spark_version(self) -> str | None:
        """The Spark the version last ran on: its status file's, else the stored manifest's."""
        found = (self.status or {}).get("spark-version")
        if isinstance(found, str) and found:
            return found
        if self.version == self.manifest.meta.query_version:
            return self.manifest.meta.spark_version
        return None


@dataclass(frozen=True)
class StoreState:
    """One state store of a stateful operator at its last committed batch, as Spark's state
    sources read it: rows per partition and a sample of keys and values (JSON), or why the
    store could not be read (`error`)."""

    operator: int
    name: str | None
    store: str
    partitions: int | None = None
    min_batch: int | None = None
    max_batch: int | None = None
    rows: dict[str, int] = field(default_factory=dict)
    sample: tuple[dict[str, Any], ...] = ()
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        doc = {"operator": self.operator, "name": self.name, "store": self.store}
        if self.error is not None:
            return {**doc, "error": self.error}
        return {
            **doc,
            "partitions": self.partitions,
            "min-batch": self.min_batch,
            "max-batch": self.max_batch,
            "rows": self.rows,
            "sample": list(self.sample),
        }


@dataclass(frozen=True)
class StateReport:
    """`inspect --state`: the stores Spark's state sources read (`spark`: the Spark that read
    them), or why they were not read (`unavailable`: a Spark without the sources, a probe that
    failed), and the bytes each operator's partitions take on the checkpoint's storage
    (operator -> partition -> bytes, every file kept: deltas, snapshots, metadata)."""

    spark: str | None
    stores: tuple[StoreState, ...] = ()
    unavailable: str | None = None
    disk: dict[int, dict[str, int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"spark": self.spark, "unavailable": self.unavailable,
                "stores": [s.to_dict() for s in self.stores],
                "bytes-on-disk": {str(op): parts for op, parts in self.disk.items()}}  # fmt: skip
