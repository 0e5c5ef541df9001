"""What the runs' status beacons say, read by `watch` at a few requests per look.

Every run keeps a beacon of its version beside the other jobs' on its checkpoint root
(`<checkpoint-root>/_status/<name>.v<N>.json`, model/control.py; written by runner/status.py):
run id, state, error, Spark's version and the whole minutes of a long micro-batch. Its
heartbeat is a modification time that moves every few seconds: on a local folder or HDFS that
of an empty file beside it (`<name>.v<N>.beat`), rewritten every heartbeat while the beacon is
written only when what it says changes; on S3 (and for runs of an earlier release) the
beacon's own, rewritten unchanged. A look lists `_status/` once per checkpoint root in use (one
request per 1,000 keys on S3, one LISTSTATUS on HDFS) and reads a beacon only when the
listing's content token (S3's ETag; elsewhere size and modification time) changed since it last
read it, or on first sight: a look at unchanged jobs reads none, on every storage. The
heartbeat a job is judged by (`stalls.py`) is the beacon's modification token with its beat
file's, when listed: either moving is a run that writes. A job without a beacon (a run started
by an older runner) is judged from its full status file, read as before. A listing that fails
makes every job of its root UNREADABLE for this look: that says nothing about a run.

The full status file is read besides only for what metrics show of the last batch (id, time,
rates, lag), at most once per `metrics_refresh` seconds per job, and only when metrics are
served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.control import (
    ControlFiles,
    beacon_location,
    beacons_folder,
    beat_location,
)
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import Listed, Storage
from flink_sql_runner.watch.stalls import UNREADABLE, Unreadable

Status = dict[str, Any] | None | Unreadable


def checkpoint_root(manifest: StoredManifest) -> str:
    return str(manifest.job.get("checkpoint-root", "")).rstrip("/")


def read_status(storage: Storage, manifest: StoredManifest) -> Status:
    """The runner's full status file of the stored version: None if there is none, UNREADABLE
    if the storage did not answer (which says nothing about the run)."""
    control = ControlFiles.of(
        f"{checkpoint_root(manifest)}/{manifest.name}", manifest.meta.query_version
    )
    try:
        text = storage.read_text(control.status_file)
    except FsrError:
        return UNREADABLE
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        return UNREADABLE  # caught mid-write on a storage without atomic replaces
    return doc if isinstance(doc, dict) else None


def heartbeat(beacon: Listed, beat: Listed | None) -> str:
    """A run's heartbeat as a listing shows it: the beacon's modification token and, when
    listed, its beat file's. A run of this release on a local folder or HDFS moves the beat
    file's and writes the beacon only on a change; a run of an earlier release (or on S3)
    moves the beacon's, and a beat file a later run of the version left does not hide that."""
    if beat is None:
        return f"modified {beacon.modified}"
    return f"modified {beacon.modified}, beat {beat.modified}"


class Beacons:
    """The beacons of the jobs a watcher looks at, with what it read of them last."""

    def __init__(
        self, storage: Storage, clock: Callable[[], float], metrics_refresh: float | None = None
    ) -> None:
        self.storage, self.clock = storage, clock
        #: Seconds between two reads of a job's full status for its metrics; None: none served.
        self.metrics_refresh = metrics_refresh
        #: This look's listing of each checkpoint root's beacons (UNREADABLE: it failed).
        self._listed: dict[str, dict[str, Listed] | Unreadable] = {}
        #: Each beacon read, by location: the content token it was read under, and its document.
        self._read: dict[str, tuple[str, dict[str, Any]]] = {}
        #: Per job: when its full status was last read for metrics, from where, its last batch.
        self._batches: dict[str, tuple[float, str, Any]] = {}

    def look(self, manifests: Iterable[StoredManifest]) -> None:
        """List the beacons of every checkpoint root `manifests` use, once each."""
        self._listed = {}
        for root in sorted({checkpoint_root(m) for m in manifests}):
            folder = beacons_folder(root)
            try:
                found = {listed.location: listed for listed in self.storage.listing(folder)}
            except FsrError:
                self._listed[root] = UNREADABLE
                continue
            self._listed[root] = found
            gone = [where for where in self._read if where.startswith(folder + "/")]
            for where in gone:
                if where not in found:
                    del self._read[where]

    def listed(self, manifest: StoredManifest) -> Listed | None | Unreadable:
        """What this look's listing shows of the beacon of the job's stored version (None: not
        listed; UNREADABLE: the listing failed), read nothing."""
        listed = self._listed.get(checkpoint_root(manifest))
        if listed is None or isinstance(listed, Unreadable):
            return listed
        root = checkpoint_root(manifest)
        return listed.get(beacon_location(root, manifest.name, manifest.meta.query_version))

    def status(self, manifest: StoredManifest) -> Status:
        """What the job's stored version's run says, as the watcher judges it: the beacon's
        fields with the listing's modification tokens of the beacon and of its beat file as its
        `heartbeat` (and the whole minutes of a long batch as `batch-running-seconds`); the
        full status file when the version has no beacon; UNREADABLE when the listing or the
        read failed, or caught a beacon mid-write."""
        root = checkpoint_root(manifest)
        listed = self._listed.get(root)
        if isinstance(listed, Unreadable):
            return UNREADABLE
        version = manifest.meta.query_version
        where = beacon_location(root, manifest.name, version)
        beat = beat_location(root, manifest.name, version)
        entry = listed.get(where) if listed is not None else None
        if entry is None:
            return read_status(self.storage, manifest)  # an older runner's run, or not listed
        kept = self._read.get(where)
        if kept is not None and kept[0] == entry.content:
            doc = kept[1]
        else:
            try:
                text = self.storage.read_text(where)
            except FsrError:
                return UNREADABLE
            if text is None:  # deleted since the listing: a new run's start
                self._read.pop(where, None)
                return read_status(self.storage, manifest)
            try:
                parsed = json.loads(text)
            except ValueError:
                return UNREADABLE  # caught mid-write on a storage without atomic replaces
            if not isinstance(parsed, dict):
                return UNREADABLE
            doc = parsed
            self._read[where] = (entry.content, doc)
        minutes = doc.get("long-batch-minutes")
        running = minutes * 60 if isinstance(minutes, int) and minutes > 0 else None
        view = {
            "run-id": doc.get("run-id"),
            "state": doc.get("state"),
            "error": doc.get("error"),
            "spark-version": doc.get("spark-version"),
            "heartbeat": heartbeat(entry, listed.get(beat)),
            "batch-running-seconds": running,
        }
        if self.metrics_refresh is not None:
            view["last-batch"] = self._last_batch(manifest)
        return view

    def _last_batch(self, manifest: StoredManifest) -> Any:
        """The last batch as the full status file says, read again once per metrics_refresh
        seconds at the most; what was read last while the storage does not answer."""
        assert self.metrics_refresh is not None
        now = self.clock()
        control = ControlFiles.of(
            f"{checkpoint_root(manifest)}/{manifest.name}", manifest.meta.query_version
        )
        kept = self._batches.get(manifest.name)
        fresh = kept is not None and kept[1] == control.status_file
        if fresh and kept is not None and now - kept[0] < self.metrics_refresh:
            return kept[2]
        status = read_status(self.storage, manifest)
        if isinstance(status, Unreadable):
            return kept[2] if fresh and kept is not None else None
        batch = (status or {}).get("last-batch")
        self._batches[manifest.name] = (now, control.status_file, batch)
        return batch

    def forget(self, keep: set[str]) -> None:
        """Drop what is kept of jobs no longer in the store."""
        for name in [n for n in self._batches if n not in keep]:
            del self._batches[name]
