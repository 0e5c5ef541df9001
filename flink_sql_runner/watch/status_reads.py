"""What `status` read last time, kept in the state folder (`cache/status.json`), so that a
`status` of jobs whose runs are gone and that nothing changed since costs listings only.

Per job it keeps the runner's status file of the stored version and the last batch its
checkpoint committed, under the listing tokens (content and modification) of the version's
status beacon as listed when they were read. Only a run of that version writes either, and
every run writes its beacon when it starts (its run id is in it) and when its state changes
(runner/status.py): while the listing shows the same tokens, no run began or ended since, and
what was kept is given back unread. Everything else is read every time:
a job with a run that is alive or may be (its last batch and its checkpoint's last commit move
with every micro-batch, and a beacon that said so would change every batch and be read by every
look of `watch`: they cost one GET of its status file and one listing of its `commits/`), and
a job without a beacon (a run of an older runner) or whose listing failed. Watch records are
kept by their stamps, as a watcher remembers them (`records.py`).

The file is only ever a shortcut: one that is missing, unreadable, of another store or of
another schema is ignored, and one that cannot be written costs only the reads it would save.

The page (`ui`, ui/fleet.py) keeps its reads in memory and looks again and again: it gives a
running job's reads back for `fresh_for` seconds (a runner rewrites its status file every
heartbeat), then, up to `keep_for` seconds after they were made, gives them back still and
reads them again behind the look (`read_due`, on a thread of the page's), so that a look at a
fleet of running jobs costs its listings, not a GET and a listing per job; past `keep_for`, or
once the job's beacon lists another content (a new run, another state), it reads them in the
look, as `status` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoint_reader import last_committed
from flink_sql_runner.gather.inspection import read_status_file
from flink_sql_runner.host import runtime
from flink_sql_runner.host.atomic import replace_file
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Liveness
from flink_sql_runner.model.stored import SideDoc, StoredManifest
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.watch.beacons import Beacons, checkpoint_root
from flink_sql_runner.watch.records import WatchLog, WatchRecord
from flink_sql_runner.watch.stalls import Unreadable

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class JobReads:
    """What `status` shows of a job's runner and checkpoint: its status file (None: none or
    unreadable), its checkpoint's last committed batch, and what could not be read."""

    status: dict[str, Any] | None
    committed: int | None
    problem: str | None = None


@dataclass(frozen=True)
class Recent:
    """A running job's reads as the page keeps them: when (runtime.monotonic) they were made,
    from which checkpoint, under which content of its beacon's listing (None: not listed)."""

    at: float
    checkpoint: str
    beacon: str | None
    read: JobReads


@dataclass(frozen=True)
class Due:
    """A running job whose reads a look gave back past `fresh_for`: what to read again."""

    status_file: str
    checkpoint: str
    beacon: str | None


@dataclass
class StatusReads:
    path: Path | None
    store: str
    #: By beacon location: the listing's tokens and checkpoint they were read under, and what.
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    watch: dict[str, SideDoc] = field(default_factory=dict)
    #: Seconds a read of a job whose run is (or may be) alive is given back unread (None: read
    #: every time, as `status` does). The page (`ui`) looks again and again: a running job's
    #: status file changes every heartbeat (runner/status.py, 10 s), and its reads cost a GET
    #: and a listing per job each look.
    fresh_for: float | None = None
    #: With `fresh_for`: seconds after they were made that a running job's reads are still
    #: given back past `fresh_for`, while they are read again behind the look (`due`,
    #: `read_due`); past it they are read in the look. None: past `fresh_for`, read in the look.
    keep_for: float | None = None
    #: By beacon location: a running job's reads; only with `fresh_for`, kept in memory.
    recent: dict[str, Recent] = field(default_factory=dict)
    #: By beacon location: the reads the looks gave back past `fresh_for`, to be read again.
    due: dict[str, Due] = field(default_factory=dict)
    _lock: Any = field(default_factory=runtime.lock, repr=False, compare=False)

    @classmethod
    def load(cls, path: Path | None, store: str) -> StatusReads:
        kept = cls(path, store)
        try:
            doc = json.loads(path.read_text()) if path is not None else None
            if not isinstance(doc, dict) or doc.get("schema-version") != SCHEMA_VERSION:
                return kept
            if doc.get("store") != store:
                return kept
            kept.jobs = {str(k): v for k, v in doc["jobs"].items() if isinstance(v, dict)}
            kept.watch = {
                str(k): SideDoc(str(v[0]), v[1], 0.0, str(v[2])) for k, v in doc["watch"].items()
            }
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError,
                RecursionError):  # fmt: skip
            return cls(path, store)
        return kept

    def save(self) -> None:
        """Kept for the next `status`, in a state folder that exists (a command that only reads
        does not make one)."""
        if self.path is None or not self.path.parent.parent.is_dir():
            return
        doc = {
            "schema-version": SCHEMA_VERSION,
            "store": self.store,
            "jobs": self.jobs,
            "watch": {k: [d.text, d.token, d.stamp] for k, d in self.watch.items()},
        }
        try:
            self.path.parent.mkdir(exist_ok=True)
            replace_file(self.path, json.dumps(doc), mode=0o600)
        except OSError:
            pass  # costs the next status its reads only

    def watch_records(self, store: ManifestStore) -> dict[str, WatchRecord]:
        """Every watch record, read again only where its stamp changed."""
        log = WatchLog(store, known=self.watch)
        found = log.read_all()
        self.watch = log.seen
        return found

    def job(
        self, storage: Storage, beacons: Beacons, stored: StoredManifest, liveness: list[Liveness]
    ) -> JobReads:
        """The job's status file and last committed batch: kept ones while its beacon is
        listed unchanged and no run of it is or may be alive, else read now. Called from
        several threads at once, each for another job (another key)."""
        root = checkpoint_root(stored)
        if not root:
            return JobReads(None, None)
        control = ControlFiles.of(f"{root}/{stored.name}", stored.meta.query_version)
        checkpoint = f"{root}/{stored.name}/{stored.meta.query_version}"
        entry = beacons.listed(stored)
        idle = all(live is Liveness.GONE for live in liveness)
        key = control.beacon
        tokens = None
        if idle and entry is not None and not isinstance(entry, Unreadable):
            tokens = {"content": entry.content, "modified": entry.modified, "at": checkpoint}
            kept = self.jobs.get(key)
            if kept is not None and all(kept.get(k) == v for k, v in tokens.items()):
                return JobReads(kept.get("status"), kept.get("committed"))
        self.jobs.pop(key, None)
        unreadable = isinstance(entry, Unreadable)
        beacon = entry.content if entry is not None and not isinstance(entry, Unreadable) else None
        if self.fresh_for is not None and not idle:
            made = self.recent.get(key)
            # Kept while the beacon lists the same content: a new run, or another state, is
            # read now (a listing that failed says nothing: kept only within fresh_for).
            if made is not None and made.checkpoint == checkpoint:
                age = runtime.monotonic() - made.at
                if age < self.fresh_for and (unreadable or made.beacon == beacon):
                    return made.read
                if not unreadable and made.beacon == beacon and age < (self.keep_for or 0.0):
                    with self._lock:
                        self.due[key] = Due(control.status_file, checkpoint, beacon)
                    return made.read
        read = _read(storage, control.status_file, checkpoint)
        if read.problem is not None:
            self.recent.pop(key, None)
            return read
        if tokens is not None and read.status is not None:
            self.jobs[key] = {**tokens, "status": read.status, "committed": read.committed}
        if self.fresh_for is not None and not idle:
            self.recent[key] = Recent(runtime.monotonic(), checkpoint, beacon, read)
        else:
            self.recent.pop(key, None)
        return read

    def any_due(self) -> bool:
        """Whether a look gave back reads past `fresh_for` that no read behind it made fresh
        since (those are forgotten)."""
        now = runtime.monotonic()
        with self._lock:
            for key in list(self.due):
                made = self.recent.get(key)
                if made is not None and now - made.at < (self.fresh_for or 0.0):
                    del self.due[key]
            return bool(self.due)

    def read_due(self, storage: Storage, workers: int) -> int:
        """Read again, as a look would, the running jobs whose reads the looks gave back past
        `fresh_for` (but not those read since), and keep what they read for the next looks;
        how many were read. The page runs it on a thread of its own, behind its looks."""
        with self._lock:
            due, self.due = self.due, {}

        def one(item: tuple[str, Due]) -> None:
            key, job = item
            made = self.recent.get(key)
            if made is not None and runtime.monotonic() - made.at < (self.fresh_for or 0.0):
                return  # read by a look meanwhile
            read = _read(storage, job.status_file, job.checkpoint)
            with self._lock:
                if read.problem is None:
                    self.recent[key] = Recent(runtime.monotonic(), job.checkpoint, job.beacon, read)
                else:  # the next look reads it, and shows why
                    self.recent.pop(key, None)
                self.due.pop(key, None)  # given back by a look meanwhile, now read

        if workers <= 1 or len(due) <= 1:
            for item in due.items():
                one(item)
        else:
            with runtime.pool(workers, "behind") as pool:
                list(pool.map(one, due.items()))
        return len(due)

    def forget_others(self, keep: set[str]) -> None:
        """Drop what is kept of beacons no job of this look has."""
        self.jobs = {k: v for k, v in self.jobs.items() if k in keep}
        with self._lock:
            self.recent = {k: v for k, v in self.recent.items() if k in keep}
            self.due = {k: v for k, v in self.due.items() if k in keep}


def _read(storage: Storage, status_file: str, checkpoint: str) -> JobReads:
    """A job's status file and its checkpoint's last committed batch, read now."""
    status = read_status_file(storage, status_file)
    try:
        committed = last_committed(storage, checkpoint)
    except FsrError as exc:
        return JobReads(status, None, str(exc).splitlines()[0])
    return JobReads(status, committed)
