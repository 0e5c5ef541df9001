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
from dataclasses import dataclass

from flink_sql_runner.gather.checkpoint_reader import (
    inspect_checkpoint,
    is_kafka_offsets,
    source_offsets,
)
from flink_sql_runner.model.offsets import OffsetCarry
from flink_sql_runner.stores.storage import Storage, StorageError

#: Where in a checkpoint the runner records how its batch ids map to its file sink's
#: (runner/file_sink.py keeps the same name and value).
SINK_OFFSET_FILE = "flink-sql-runner-sink.json"


@dataclass(frozen=True)
class StartingOffsets:
    """What a new version's Kafka sources start at: `startingOffsets` JSON per table, and one
    line per table saying what was done."""

    by_table: dict[str, str]
    notes: tuple[str, ...]


def finished_batch(storage: Storage, checkpoint: str, sink_folder: str | None) -> int | None:
    """The last batch the checkpoint's run finished (None: none)."""
    info = inspect_checkpoint(storage, checkpoint)
    last = info.last_committed
    following = -1 if last is None else last
    if info.last_offset is not None and info.last_offset > following:
        following += 1
        if _sink_holds(storage, checkpoint, sink_folder, following):
            return following
    return last


def _sink_holds(storage: Storage, checkpoint: str, sink_folder: str | None, batch: int) -> bool:
    """Whether the version's file sink holds `batch` (its id shifted as the runner recorded)."""
    location = f"{checkpoint.rstrip('/')}/{SINK_OFFSET_FILE}"
    text = storage.read_text(location)
    try:
        record = json.loads(text) if text else {}
    except ValueError:
        raise StorageError(f"{location}: not JSON; where the sink stopped cannot be told") from None
    folder = record.get("sink-path") or sink_folder
    if not folder:
        return False
    offset = 0
    for begin, shift in record.get("segments") or []:
        if begin <= batch:
            offset = shift
    names = storage.file_names(f"{folder.rstrip('/')}/_spark_metadata")
    return str(batch + offset) in names or f"{batch + offset}.compact" in names


def starting_offsets(storage: Storage, carry: OffsetCarry) -> StartingOffsets:
    """The offsets each carried source starts at, by table name."""
    notes = [f"{table} {why}" for table, why in carry.not_carried]
    by_table: dict[str, str] = {}
    if not carry.sources:
        return StartingOffsets(by_table, tuple(notes))
    batch = finished_batch(storage, carry.checkpoint, carry.sink_folder)
    if batch is None:
        for source in carry.sources:
            notes.append(
                f"{source.table} starts as its table says: v{carry.version} committed no batch"
            )
        return StartingOffsets(by_table, tuple(notes))
    lines = [s for s in source_offsets(storage, carry.checkpoint, batch) if isinstance(s, dict)]
    for source in carry.sources:
        matching = [line for line in lines if set(line) == set(source.topics)]
        if len(matching) != 1 or not is_kafka_offsets(matching[0]):
            why = "no" if not matching else "more than one"
            notes.append(
                f"{source.table} starts as its table says: v{carry.version}'s batch {batch} "
                f"has {why} offsets for {', '.join(source.topics)}"
            )
            continue
        offsets = {
            topic: dict(sorted(parts.items(), key=lambda item: int(item[0])))
            for topic, parts in sorted(matching[0].items())
        }
        by_table[source.table] = json.dumps(offsets)
        where = " ".join(
            f"{t}[{','.join(f'{p}:{o}' for p, o in parts.items())}]"
            for t, parts in sorted(offsets.items())
        )
        notes.append(f"{source.table} starts at v{carry.version}'s batch {batch}: {where}")
    return StartingOffsets(by_table, tuple(notes))
