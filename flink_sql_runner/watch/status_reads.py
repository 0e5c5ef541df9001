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
    #: By beacon location: when (runtime.monotonic) a running job's reads were made, from
    #: which checkpoint, and what they were; only with `fresh_for`, kept in memory.
    recent: dict[str, tuple[float, str, JobReads]] = field(default_factory=dict)

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
        except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
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
        if self.fresh_for is not None and not idle:
            made = self.recent.get(key)
            if made is not None and made[1] == checkpoint:
                if runtime.monotonic() - made[0] < self.fresh_for:
                    return made[2]
        status = read_status_file(storage, control.status_file)
        try:
            committed = last_committed(storage, checkpoint)
        except FsrError as exc:
            self.recent.pop(key, None)
            return JobReads(status, None, str(exc).splitlines()[0])
        if tokens is not None and status is not None:
            self.jobs[key] = {**tokens, "status": status, "committed": committed}
        read = JobReads(status, committed)
        if self.fresh_for is not None and not idle:
            self.recent[key] = (runtime.monotonic(), checkpoint, read)
        else:
            self.recent.pop(key, None)
        return read

    def forget_others(self, keep: set[str]) -> None:
        """Drop what is kept of beacons no job of this look has."""
        self.jobs = {k: v for k, v in self.jobs.items() if k in keep}
        self.recent = {k: v for k, v in self.recent.items() if k in keep}
