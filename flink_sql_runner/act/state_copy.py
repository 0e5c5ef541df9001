"""A new version that continues from the state of the version it replaces (decide/state.py):
that version's checkpoint copied, file for file, into the new version's empty checkpoint folder
once its run stopped, so that the new query starts on the copy as Spark restarts a checkpoint:
at the offsets the old version stopped at, with its windows open, and the runner's record of
its file sink's batch ids going on. The old checkpoint is only read: a rollback restarts it as
it was, and a copy cut short leaves a folder no start takes again (the next new version takes
the next number). The copy holds a marker (CONTINUED_FILE, written before its metadata): the
runner has its first run claim its file sink's next batch ids and check its output as a new
version's, not as a restart's, and `inspect` says where its first batches come from.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import runtime
from flink_sql_runner.host.retries import retried
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.checkpoint_report import CONTINUED_FILE
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.stores.storage import Storage, StorageError

#: Spark's record that a folder is a checkpoint: copied last, so a copy cut short says so.
METADATA = "metadata"
#: Files copied at once (docs/developers/benchmarks.md, "Continuing from a state").
COPY_WORKERS = 16


class CopyFailed(FsrError):
    """The state could not be copied; nothing was started."""


def copy_state(
    storage: Storage,
    old: str,
    new: str,
    check: Callable[[], None],
    sleep: Callable[[float], None],
    workers: int = COPY_WORKERS,
) -> tuple[int, int]:
    """Copy the checkpoint `old` into the empty folder `new`; (files, bytes) copied. The job is
    down meanwhile, so its files are copied `workers` at a time (a state store's files are many
    and small; each is two requests on S3); the marker, then `metadata`, last. `check` is called
    before each file (the lease: a copy never goes on for a deploy that lost it); a call the
    storage fails is asked again after a pause (host/retries.py), then CopyFailed, once every
    copy begun has ended: a copy that fails stops the others from beginning (the job is down
    until the rollback starts the old version again)."""
    old, new = old.rstrip("/"), new.rstrip("/")
    try:
        if not storage.is_empty(new):
            raise CopyFailed(f"refusing to continue into {new}: it is not empty")
        files = storage.tree(old)
    except CopyFailed:
        raise
    except FsrError as exc:
        raise CopyFailed(f"cannot list {old} to continue from it: {exc}") from None
    metadata = f"{old}/{METADATA}"
    if not any(location == metadata for location, _ in files):
        raise CopyFailed(f"{old} holds no checkpoint to continue from")

    failed = runtime.event()  # set by the first copy that fails: the others begin no more

    def copy(location: str) -> None:
        if failed.is_set():
            return
        try:
            check()
            try:
                data = retried(lambda: storage.read_bytes(location), sleep, check, (StorageError,))
            except FsrError as exc:
                raise CopyFailed(f"cannot copy {location} into {new}: {exc}") from None
            if data is None:
                raise CopyFailed(f"{location} went away while it was copied")
            _write(storage, new + location[len(old) :], data, sleep, check)
        except BaseException:
            failed.set()
            raise

    rest = sorted(location for location, _ in files if location != metadata)
    with runtime.pool(max(1, min(workers, len(rest))), "state copy") as pool:
        begun = [pool.submit(copy, location) for location in rest]
        runtime.wait_all(begun)
    for done in begun:
        done.result()  # the first failure, once none is still writing
    check()
    _write(storage, f"{new}/{CONTINUED_FILE}", json.dumps({"continued-from": old}).encode(),
           sleep, check)  # fmt: skip
    copy(metadata)
    size = sum(size for _, size in files)
    mark("state copied", files=len(files), bytes=size)
    return len(files), size


def _write(
    storage: Storage,
    location: str,
    data: bytes,
    sleep: Callable[[float], None],
    check: Callable[[], None],
) -> None:
    try:
        retried(lambda: storage.write_bytes(location, data), sleep, check, (StorageError,))
    except FsrError as exc:
        raise CopyFailed(f"cannot write {location}: {exc}") from None


def copied_words(old_version: int, files: int, size: int) -> str:
    """`continued from v1's state (12 files, 4.1 KB copied)`."""
    return f"continued from v{old_version}'s state ({files} files, {human_size(size)} copied)"
