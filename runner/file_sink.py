"""File sinks exactly once across versions.

Spark's file sink skips every batch id its `_spark_metadata` log already holds, so a new
checkpoint (batch ids from 0 again) writing into a folder an earlier version wrote would lose its
first batches. The runner writes file sinks (path tables and catalog tables stored as files) that
already hold batches through `foreachBatch` into Spark's own file sink, with the batch ids shifted
past the log's last batch; the shift is fixed when the checkpoint is created and kept in it, so
restarts stay exactly-once. Each checkpoint claims the sink ids it writes from (in the sink's
`_flink-sql-runner/claims/`): a checkpoint restarted after another one wrote past it (a failed new
version, rolled back) moves its next batches past the log too. With nothing to shift past (a new
sink), Spark's own sink writes directly: foreachBatch turns each micro-batch into an RDD and copies
every row again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .failures import FAILURES, BadManifest, error_text
from .log import log, utc_now
from .schema_rules import fields_of
from .sink_walk import claim_bodies, claims_folder
from .spark_internals import catalog_file_table, is_file_format, new_file_sink
from .storage import Storage

#: In the checkpoint: how its batch ids map to the sink's (`sink_batch_segments`); the
#: deployer's gather/offsets.py keeps the same name and value.
SINK_OFFSET_FILE = "flink-sql-runner-sink.json"


#: In a checkpoint the deployer copied from an older version's, to continue from its state
#: (the deployer's act/state_copy.py keeps the same name): its first run claims the sink, and
#: its output is checked as a new version's.
CONTINUED_FILE = "flink-sql-runner-continued.json"


def last_sink_batch(storage: Storage, path: str) -> int:
    """The largest batch id in the file sink's `_spark_metadata` log, -1 if none."""
    ids = []
    for name in storage.names(f"{path.rstrip('/')}/_spark_metadata"):
        stem = name.removesuffix(".compact")
        if stem.isdigit():
            ids.append(int(stem))
    return max(ids, default=-1)


def sink_batch_segments(
    storage: Storage, doc: dict[str, Any], path: str, fields: list[dict[str, Any]] | None = None
) -> list[list[int]]:
    """How this checkpoint's batch ids map to the sink's: `[[from batch, offset], ...]`, a batch
    taking the offset of the last segment it reaches.

    The first segment is fixed when the checkpoint is new (past whatever earlier checkpoints
    wrote) and kept in the checkpoint, so a re-run batch keeps its sink batch id and is skipped
    if already written. Each segment is also claimed in the sink (`_flink-sql-runner/claims/`,
    in order): when this checkpoint restarts after another one claimed and wrote sink ids past
    it (a new version that failed and was rolled back), its next batches get a new segment past
    the sink's log instead of ids the other one wrote, which the sink would skip.
    """
    checkpoint = doc["checkpoint-location"].rstrip("/")
    record_location = f"{checkpoint}/{SINK_OFFSET_FILE}"
    recorded = recorded_segments(storage, checkpoint)
    offsets = numbers(storage.names(f"{checkpoint}/offsets"))
    if recorded is None:
        first = 0 if offsets else last_sink_batch(storage, path) + 1
        segments = [[0, first]]
        storage.write(record_location, json.dumps({"segments": segments, "sink-path": path}))
        if not offsets:  # a checkpoint that started before segments were kept claims nothing
            claim(storage, doc, path, first, fields)
        if first:
            log(
                f"the sink {path} already holds batches up to {first - 1}; this checkpoint's "
                f"batches are written as {first}, {first + 1}, ..."
            )
        return segments
    segments = recorded
    if continued_unclaimed(storage, checkpoint, path):
        # A copy of another version's checkpoint goes on with its batch ids; it claims them
        # from its next batch, so that the version it was copied from, restarted later, moves
        # past what this one wrote instead of writing ids the sink would skip.
        # Past what the sink holds too: a batch the old version's sink wrote and its checkpoint
        # did not commit (a kill between the two) is re-run here under its own id, and skipped.
        commits = numbers(storage.names(f"{checkpoint}/commits"))
        after = sink_batch_id(segments)(max(commits, default=-1) + 1)
        claim(storage, doc, path, max(after, last_sink_batch(storage, path) + 1), fields)
        return segments
    boundary = foreign_claim(storage, checkpoint, path, sum(segments[-1]))
    if boundary is None:
        return segments
    begin, offset = segments[-1]
    move_from = boundary - offset
    commits = numbers(storage.names(f"{checkpoint}/commits"))
    if commits and move_from <= max(commits):
        raise BadManifest(
            f"the sink {path} has batches from {boundary} on claimed by another checkpoint, "
            f"but this one committed batch {max(commits)} as sink batch {max(commits) + offset}: "
            "two writers; start a new version"
        )
    start = last_sink_batch(storage, path) + 1
    if start - move_from != offset:  # the other wrote: move past it (else the ids are free)
        segments.append([move_from, start - move_from])
        storage.write(record_location, json.dumps({"segments": segments, "sink-path": path}))
    claim(storage, doc, path, start, fields)
    log(
        f"another checkpoint wrote the sink {path} from batch {boundary} on; this checkpoint's "
        f"batches from {move_from} are written as {start}, {start + 1}, ..."
    )
    return segments


def recorded_segments(storage: Storage, checkpoint: str) -> list[list[int]] | None:
    """The segments kept in the checkpoint (`sink_batch_segments`), None before the first."""
    text = storage.read(f"{checkpoint.rstrip('/')}/{SINK_OFFSET_FILE}")
    if not text:
        return None
    record = json.loads(text)
    return record.get("segments") or [[0, int(record["sink-batch-offset"])]]


def writes_shifted(storage: Storage, doc: dict[str, Any], path: str) -> bool:
    """Whether the run's start will write the file sink at `path` through foreachBatch
    (`shifted_file_sink`), read without writing: its checkpoint's segments say so, or, before
    its first, whether it is new and the sink already holds batches. A guess where claims of
    other checkpoints move it (only the warm-up asks)."""
    checkpoint = doc["checkpoint-location"].rstrip("/")
    recorded = recorded_segments(storage, checkpoint)
    if recorded is not None:
        return recorded != [[0, 0]]
    if numbers(storage.names(f"{checkpoint}/offsets")):
        return False
    return last_sink_batch(storage, path) >= 0


def continued_unclaimed(storage: Storage, checkpoint: str, path: str) -> bool:
    """Whether `checkpoint` is a copy the deployer made to continue from another version's
    state and has not yet claimed the sink at `path`."""
    if storage.read(f"{checkpoint.rstrip('/')}/{CONTINUED_FILE}") is None:
        return False
    return not any(owner == checkpoint.rstrip("/") for _, _, owner in read_claims(storage, path))


def numbers(names: list[str]) -> list[int]:
    return [int(name) for name in names if name.isdigit()]


def read_claims(storage: Storage, path: str) -> list[tuple[int, int, str]]:
    """(order, first sink batch id, checkpoint) of every claim in the sink, in order."""
    return [
        (order, first, str(body.get("checkpoint", "")).rstrip("/"))
        for order, first, body in claim_bodies(storage, path)
    ]


def claim(
    storage: Storage,
    doc: dict[str, Any],
    path: str,
    first: int,
    fields: list[dict[str, Any]] | None = None,
) -> None:
    """Record in the sink that this checkpoint writes its batches from sink id `first` on, with
    the schema it writes (`fields`, as runner/schema_rules.py's `fields_of` makes them)."""
    order = max((c[0] for c in read_claims(storage, path)), default=0) + 1
    body: dict[str, Any] = {
        "checkpoint": doc["checkpoint-location"].rstrip("/"),
        "job": doc["name"],
        "query-version": doc["meta"]["query-version"],
        "run-id": doc["run-id"],
        "claimed": utc_now(),
    }
    if fields is not None:
        body["schema"] = fields
    storage.write(f"{claims_folder(path)}/{order:012d}-{first}.json", json.dumps(body))


def foreign_claim(storage: Storage, checkpoint: str, path: str, own_start: int) -> int | None:
    """The first sink batch id another checkpoint claimed after this one's latest claim (or,
    for a checkpoint without claims, past the start of its last segment); None if none."""
    claims = read_claims(storage, path)
    own = [order for order, _, owner in claims if owner == checkpoint]
    if own:
        later = [first for order, first, owner in claims if owner != checkpoint and order > own[-1]]
    else:
        later = [first for _, first, owner in claims if owner != checkpoint and first > own_start]
    return min(later, default=None)


def sink_batch_id(segments: list[list[int]]) -> Callable[[int], int]:
    """The sink batch id of each batch of this checkpoint."""

    def mapped(batch_id: int) -> int:
        offset = next(o for begin, o in reversed(segments) if begin <= batch_id)
        return batch_id + offset

    return mapped


def file_sink_writer(
    spark: Any,
    fmt: str,
    options: dict[str, str],
    sink_batch_id: Callable[[int], int],
    schema: Any,
    table: Any = None,
) -> Callable[[Any, int], None]:
    """A foreachBatch function that appends each micro-batch through Spark's own file sink under
    the sink batch id `sink_batch_id(batch_id)`; the sink is built as `writeStream` builds it
    (for a catalog table: its partitioning and metadata), for rows of `schema` (Java)."""
    sink = new_file_sink(spark, fmt, options, schema, table)

    def write(batch: Any, batch_id: int) -> None:
        try:
            sink.addBatch(sink_batch_id(batch_id), batch._jdf)
        except Exception as exc:
            # Spark reports a foreachBatch failure as "raised by the Python Proxy"; keep the
            # real cause for the status file.
            FAILURES.append(error_text(exc))
            raise

    return write


def file_sink_of(
    spark: Any, target: dict[str, Any], options: dict[str, str]
) -> tuple[str, str, Any] | None:
    """(format, path, catalog table or None) when Spark's file sink writes `target`: a path
    table of a file format, or a catalog table stored as files; None for any other sink."""
    if "table" in target:
        table = catalog_file_table(spark, target["table"])
        if table is None:
            return None
        return table.provider().get(), table.location().toString(), table
    if "format" in target and is_file_format(spark, target["format"]):
        if not options.get("path"):
            raise BadManifest(f"the {target['format']} target needs options.path")
        return target["format"], options["path"], None
    return None


def shifted_file_sink(
    spark: Any,
    storage: Storage,
    doc: dict[str, Any],
    target: dict[str, Any],
    options: Any,
    schema: Any,
) -> Any | None:
    """For a file sink that earlier versions wrote to: a foreachBatch function writing through
    Spark's own file sink with this checkpoint's batch ids shifted past theirs. None when there
    is nothing to shift past (not a file sink, or a checkpoint that started on an empty log):
    Spark's own sink then writes directly, without foreachBatch's copy of every row."""
    found = file_sink_of(spark, target, options)
    if found is None:
        return None
    fmt, path, table = found
    if table is not None:
        options = {**options, "path": path}
    fields = fields_of(json.loads(schema.json()))
    segments = sink_batch_segments(storage, doc, path, fields)
    if segments == [[0, 0]]:
        return None
    return file_sink_writer(spark, fmt, options, sink_batch_id(segments), schema, table)
