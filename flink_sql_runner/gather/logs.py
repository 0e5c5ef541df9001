"""A job's driver log: which run's (the one up now, the failed first start's, the last one, or
the one asked for), where the target keeps it, and reading it (its last lines, or following it
while the run is up). Only reads."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from flink_sql_runner.errors import FsrError, UnknownJob
from flink_sql_runner.host import runtime
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.facts import IntentFacts, JobFacts
from flink_sql_runner.model.intents import FailedStart, IntentLog, settle
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.targets.base import DriverLog, LogQuery, Target

#: How often a followed log is read again, and the run asked whether it is still up.
FOLLOW_POLL_SECONDS = 0.5
#: Read at most this much of a log at a time.
CHUNK_BYTES = 64 * 1024


@dataclass(frozen=True)
class LogFacts:
    """What `logs NAME` found: the log (None: none yet), the run it is of when that run is up
    now (followed while it stays up), and the job's failed first start, if that is all of it."""

    name: str
    log: DriverLog | None
    run: Run | None = None
    failed: FailedStart | None = None


def log_query(facts: JobFacts, version: int | None = None, run_id: str | None = None) -> LogQuery:
    """Which log of the job `facts` describes: `run_id`'s, else the newest of `version`; with
    neither, that of the run up now, else of its failed first start, else its last run's."""
    intent = facts.intent.intent if facts.intent is not None else None
    failed = intent.failed_start if intent is not None else None
    up = facts.alive[0] if len(facts.alive) == 1 else None
    if version is None and run_id is None:
        if up is not None:
            version, run_id = up.version, up.run_id
        elif failed is not None and facts.stored is None:
            version, run_id = failed.version, failed.run_id
    manifest = facts.stored or (intent.manifest if intent is not None else None)
    record = ""
    of_version = version or (up.version if up else None)
    if manifest is not None:
        of_version = of_version or manifest.meta.query_version
        root = str(manifest.job.get("checkpoint-root", "")).rstrip("/")
        if root:
            record = ControlFiles.of(f"{root}/{facts.name}", of_version).submission_record
    mine = None
    if up is not None and run_id in (None, up.run_id) and version in (None, up.version):
        mine = up
    return LogQuery(facts.name, version, run_id, mine, record)


def find_log(
    name: str,
    store: ManifestStore,
    target: Target,
    version: int | None = None,
    run_id: str | None = None,
) -> LogFacts:
    """The log `logs NAME` prints. UnknownJob when the store, its intent records and the
    target know nothing of `name` and no log of it exists."""
    runs = target.list_runs().of(name)
    stored = store.read(name).manifest
    intent = IntentLog(store).read_all().intents.get(name)
    settled = IntentFacts(settle(intent, runs, None)) if intent is not None else None
    facts = JobFacts(name, None, stored, runs, intent=settled)
    query = log_query(facts, version, run_id)
    log = target.driver_log(query)
    failed = intent.failed_start if intent is not None and stored is None else None
    if log is None and stored is None and intent is None and not runs:
        raise UnknownJob(
            f"unknown job {name!r}: no manifest of it in {store.location}, no run of it on the "
            f"{target.name} target and no log of it"
        )
    run = query.run
    if log is None or run is None or log.run_id not in (None, run.run_id):
        run = None
    return LogFacts(name, log, run, failed)


def last_lines(path: str, count: int | None) -> tuple[list[str], int]:
    """The last `count` lines of the file at `path` (all with None), and the offset its end
    was at: where following it goes on."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            start = 0
            if count is not None:
                start = _start_of_last_lines(handle, size, count)
            handle.seek(start)
            data = handle.read(size - start)
    except OSError as exc:
        raise FsrError(f"cannot read the log {path}: {exc.strerror}") from None
    lines = data.decode("utf-8", errors="replace").splitlines()
    if count is not None:
        lines = lines[-count:] if count > 0 else []
    return lines, size


def _start_of_last_lines(handle: BinaryIO, size: int, count: int) -> int:
    """The offset where the last `count` lines of the open file begin, read backwards."""
    if count <= 0:
        return size
    position, seen = size, 0
    while position > 0:
        step = min(CHUNK_BYTES, position)
        position -= step
        handle.seek(position)
        block = handle.read(step)
        # A line ending at the very end of the file does not start a line after it.
        end = len(block) - 1 if position + step == size and block.endswith(b"\n") else len(block)
        for index in range(end - 1, -1, -1):
            if block[index : index + 1] == b"\n":
                seen += 1
                if seen == count:
                    return position + index + 1
    return 0


def follow(
    offsets: dict[str, int],
    alive: Callable[[], bool],
    write: Callable[[str, str], None],
    poll: float = FOLLOW_POLL_SECONDS,
) -> None:
    """Write what is added to each file (path -> offset read up to) as it comes, with the
    file's path, until `alive()` says the run ended (what it wrote last is written too)."""
    offsets = dict(offsets)
    while True:
        up = alive()
        for path, offset in offsets.items():
            offsets[path] = _copy_from(
                Path(path), offset, lambda text, at=path: write(at, text), whole_lines=up
            )
        if not up:
            return
        runtime.sleep(poll)


def _copy_from(path: Path, offset: int, write: Callable[[str], None], whole_lines: bool) -> int:
    """Write what was added to `path` since `offset` (only whole lines while it may still
    grow); the offset read up to."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            data = handle.read()
    except OSError:
        return offset
    end = data.rfind(b"\n") + 1 if whole_lines else len(data)
    if end:
        write(data[:end].decode("utf-8", errors="replace"))
    return offset + end


def still_up(target: Target, run: Run | None) -> Callable[[], bool]:
    """Whether `run` is still up, asked each time; unknown counts as up (it may still log)."""
    if run is None:
        return lambda: False
    return lambda: target.liveness(run) is not Liveness.GONE
