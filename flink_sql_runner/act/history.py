"""Writing a job's history record (model/history.py) once its manifest is recorded: by a deploy's
or `watch`'s Record step and a start recorded though it failed (act/job_steps.py), by `stop`
(act/stop.py).

A record is written only after the manifest write it tells of succeeded, and only while the
command still holds the store's lease (checked as evidence: it tells of what happened, so a
command told to begin nothing more still writes it). It never fails the command, nor changes
its exit code or what it recorded: a record the store would not take, asked again as every side
write is (host/retries.py), or that the lease no longer allows, is one warning line in the job's
result, `history not written: ...`. A deployer killed between the two writes leaves the same
gap; `gather/history.py` tells the versions that have no record, and the page says so.

Each record is a new document (`If-None-Match`: another record is never overwritten; a retried
write that finds its own record there has written it)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from flink_sql_runner import __version__
from flink_sql_runner.act.results import first_line
from flink_sql_runner.act.tracker import retried
from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.history import HistoryEntry, new_entry
from flink_sql_runner.model.stored import ABSENT, StoredManifest
from flink_sql_runner.stores.base import ManifestStore

#: What a result's warning line begins with.
NOT_WRITTEN = "history not written"


def query_of(manifest: StoredManifest) -> str | None:
    """The job's SQL as the manifest holds it (None for a job of code)."""
    sql = manifest.job.get("sql")
    return sql if isinstance(sql, str) else None


@dataclass(frozen=True)
class HistoryWriter:
    """Writes one store's history records for one command (`deploy`, `watch`, `stop`)."""

    store: ManifestStore
    command: str = "deploy"
    #: Between the retries of a write the store failed.
    sleep: Callable[[float], None] = runtime.sleep
    release: str = __version__

    def entry(
        self,
        manifest: StoredManifest,
        action: str,
        reason: str,
        changes: Iterable[dict[str, Any]] = (),
        note: str | None = None,
    ) -> HistoryEntry:
        """The record of `manifest`, recorded by a decision's `action` for `reason`, now."""
        return new_entry(
            manifest.name,
            manifest.meta.query_version,
            action,
            reason,
            at=datetime.fromtimestamp(runtime.wall(), timezone.utc),
            release=self.release,
            changes=tuple(changes),
            query=query_of(manifest),
            command=self.command,
            note=note,
        )

    def write(
        self,
        manifest: StoredManifest,
        action: str,
        reason: str,
        check: Callable[[bool], None],
        changes: Iterable[dict[str, Any]] = (),
        note: str | None = None,
    ) -> str | None:
        """Write the record of `manifest` (call it once the manifest is recorded); `check(True)`
        (the lease, as evidence) before the first write and each retry. None when written, else
        the warning line to add to the job's result: nothing raises (Ctrl-C aside)."""
        try:
            entry = self.entry(manifest, action, reason, changes, note)
            text = entry.to_json()
            check(True)
            retried(
                lambda: self.store.write_side(entry.key, text, expected=ABSENT),
                self.sleep,
                lambda: check(True),
            )
        except FsrError as exc:  # the store, the lease (LeaseLost), a record already there
            return f"{NOT_WRITTEN}: {first_line(str(exc))}"
        except Exception as exc:  # noqa: BLE001 - a record for people never fails the command
            return f"{NOT_WRITTEN}: unexpected error: {type(exc).__name__}: {first_line(str(exc))}"
        return None
