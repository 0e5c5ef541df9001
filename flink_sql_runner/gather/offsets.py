"""Where a stopped version's Kafka sources ended: the offsets its next version starts at.

Read after the previous version stopped, from its checkpoint (`offsets/N` holds, after two
lines of its own, one line per source: a Kafka source's `{"topic": {"partition": next offset}}`).
The batch whose end offsets count is the last one the version finished: its last committed batch
(`commits/N`), or the batch after it when the version's file sink already holds that batch's
output (a file sink commits its `_spark_metadata` entry before the checkpoint commits the batch,
so a run killed between the two has written a batch its checkpoint did not commit). A Kafka sink
has no such log: the last committed batch counts, and a batch written but not committed is read
again (Kafka sinks are at-least-once).
"""

from __future__ import annotations

import json

from flink_sql_runner.gather.checkpoint_reader import inspect_checkpoint, source_offsets
from flink_sql_runner.model.offsets import StartPlan, Starts, resolve_starts
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.sinks import target_sink
from flink_sql_runner.stores.storage import Storage, StorageError

#: Where in a checkpoint the runner records how its batch ids map to its file sink's
#: (runner/file_sink.py keeps the same name and value).
SINK_OFFSET_FILE = "flink-sql-runner-sink.json"


def finished_batch(
    storage: Storage, checkpoint: str, sink_folder: str | None, lenient: bool = False
) -> int | None:
    """The last batch the checkpoint's run finished (None: none). `lenient`: where the sink's
    record cannot be read, the last committed batch (StorageError otherwise)."""
    info = inspect_checkpoint(storage, checkpoint)
    last = info.last_committed
    following = -1 if last is None else last
    if info.last_offset is not None and info.last_offset > following:
        following += 1
        try:
            if _sink_holds(storage, checkpoint, sink_folder, following):
                return following
        except StorageError:
            if not lenient:
                raise
    return last


def version_finished(
    storage: Storage, manifest: StoredManifest, lenient: bool = False
) -> int | None:
    """The last batch the runs of `manifest`'s version finished (`finished_batch`, its file
    sink's folder from the manifest); None: none. What tells whether a run wrote since a batch
    (model/intents.py::wrote_since)."""
    checkpoint = manifest.checkpoint
    sink = target_sink(manifest.name, manifest.job, manifest.tables)
    folder = sink.where if sink is not None and sink.kind == "folder" else None
    return finished_batch(storage, checkpoint, folder, lenient)


def _sink_holds(storage: Storage, checkpoint: str, sink_folder: str | None, batch: int) -> bool:
    """Whether the version's file sink holds `batch` (its id shifted as the runner recorded)."""
    location = f"{checkpoint.rstrip('/')}/{SINK_OFFSET_FILE}"
    segments, recorded_path = sink_record(storage.read_text(location), location)
    folder = recorded_path or sink_folder
    if not folder:
        return False
    offset = 0
    for begin, shift in segments:
        if begin <= batch:
            offset = shift
    names = storage.file_names(f"{folder.rstrip('/')}/_spark_metadata")
    return str(batch + offset) in names or f"{batch + offset}.compact" in names


def sink_record(text: str | None, location: str) -> tuple[list[tuple[int, int]], str | None]:
    """The runner's record of how a checkpoint's batch ids map to its file sink's
    (runner/file_sink.py writes it): `[(first batch, shift), ...]` and the sink's path; none
    for no record. As the runner reads it: `segments`, or a record of an older runner's
    `sink-batch-offset` N (every batch shifted by N). StorageError for anything else: where the
    sink stopped cannot be told, and a guess would read records twice or skip them."""
    if not text:
        return [], None
    bad = f"{location}: not a record of the sink's batches"
    untold = "where the sink stopped cannot be told"
    try:
        record = json.loads(text)
    except ValueError:
        raise StorageError(f"{location}: not JSON; {untold}") from None
    if not isinstance(record, dict):
        raise StorageError(
            f"{bad} ({type(record).__name__}); where the sink stopped cannot be told"
        )
    path = record.get("sink-path")
    if path is not None and not isinstance(path, str):
        raise StorageError(f"{bad} (sink-path {path!r}); {untold}")
    raw = record.get("segments")
    if not raw and "sink-batch-offset" in record:
        raw = [[0, record["sink-batch-offset"]]]
    if raw is not None and not isinstance(raw, list):
        raise StorageError(f"{bad} (segments {raw!r}); {untold}")
    segments: list[tuple[int, int]] = []
    for item in raw or []:
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in item)
        ):
            raise StorageError(f"{bad} (segment {item!r}); {untold}")
        segments.append((item[0], item[1]))
    return segments, path


def read_starts(storage: Storage, plan: StartPlan) -> Starts:
    """What each Kafka source of the new version starts at, now that the previous version has
    stopped: the plan's carries resolved against the batch it finished. CarryRefused where a
    carry is not exact any more (model/offsets.py); StorageError where the checkpoint cannot
    be read."""
    if not plan.carried:
        return resolve_starts(plan, (), None)
    batch = finished_batch(storage, plan.checkpoint, plan.sink_folder)
    if batch is None:
        return resolve_starts(plan, None, None)
    return resolve_starts(plan, tuple(source_offsets(storage, plan.checkpoint, batch)), batch)
