"""What `inspect NAME` shows of one version of a job, gathered read only: its stored manifest,
its checkpoint (`checkpoint_reader.py`), the runs of it up now, the last run its status file
names, and each run of the version with when it started, the batch its first trigger reported
(a restart's: where it resumed) and how it ended. Those come from the version's run history,
which its runs keep beside the status file on the checkpoint's storage (runner/status.py), so
on every target; runs of an older release, which kept none, from the driver logs where the
target keeps them as files here (local). No lock is taken and nothing is written."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from flink_sql_runner.errors import FsrError, UnknownJob
from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.model.checkpoint_report import Inspection, RunSeen
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Target


def inspect_job(
    name: str,
    store: ManifestStore,
    target: Target,
    storage: Storage,
    version: int | None = None,
) -> Inspection:
    """Gather what `inspect` shows of `name`'s stored version, or of `version`. UnknownJob when
    the store holds no manifest of it."""
    manifest = store.read(name).manifest
    if manifest is None:
        raise UnknownJob(f"unknown job {name!r}: no manifest of it in {store.location}")
    version = version or manifest.meta.query_version
    # None: a manifest `migrate` converted, not deployed since: no checkpoint, no files of runs.
    root = manifest.checkpoint_root
    location = f"{root}/{name}/{version}" if root else None
    report = read_checkpoint(storage, location) if location else None
    notes: list[str] = []
    try:
        up = [r for r in target.list_runs().of(name) if r.version == version]
    except FsrError as exc:
        up = []
        notes.append(f"the {target.name} target's runs could not be listed: {exc}")
    control = ControlFiles.of(f"{root}/{name}", version) if root else None
    runs = _recorded_runs(storage, control.runs, notes) if control else []
    recorded = {r.run_id for r in runs}
    logged = [r for r in target.logged_runs(name, version) if r.run_id not in recorded]
    runs = sorted(runs + logged, key=lambda r: r.started or "")
    seen = {r.run_id for r in runs}
    runs += [RunSeen(r.run_id) for r in up if r.run_id not in seen]
    ids = {r.run_id for r in up}
    runs = [replace(r, up=r.run_id in ids) for r in runs]
    status = read_status_file(storage, control.status_file) if control else None
    return Inspection(name, version, manifest, location, report, tuple(runs), status, tuple(notes))


def read_status_file(storage: Storage, location: str) -> dict[str, Any] | None:
    """The runner's status document at `location`; None when there is none, or it cannot be
    read or parsed now."""
    try:
        text = storage.read_text(location)
        doc = json.loads(text) if text else None
    except (FsrError, ValueError, RecursionError):  # a forged one nested too deep, too
        return None
    return doc if isinstance(doc, dict) else None


def _recorded_runs(storage: Storage, location: str, notes: list[str]) -> list[RunSeen]:
    """The runs the version's run history lists, oldest first ([] when there is none: runs of
    a release before it, or none yet). One that cannot be read is a note, not an error."""
    try:
        text = storage.read_text(location)
    except FsrError as exc:
        notes.append(f"the run history {location} could not be read: {exc}")
        return []
    if not text:
        return []
    try:
        doc = json.loads(text)
        entries = doc["runs"]
        if not isinstance(entries, list):
            raise TypeError
        return [_entry(e) for e in entries]
    except (ValueError, KeyError, TypeError):
        notes.append(f"the run history {location} is not one the runner writes: not shown")
        return []


def _entry(doc: Any) -> RunSeen:
    run_id, started, first, ended = (doc[k] for k in ("run-id", "started", "first-batch", "ended"))
    if not isinstance(run_id, str) or not isinstance(started, (str, type(None))):
        raise TypeError
    if first is not None and (not isinstance(first, int) or isinstance(first, bool)):
        raise TypeError
    if ended not in (None, "stopped", "finished", "failed"):
        raise TypeError
    return RunSeen(run_id, started, first, ended)
