"""The steps a decision hands the executor: what to do, as data.

`plan` prints them and `deploy` carries them out; the executor interprets steps and never
re-derives why. A decision's `rollback` steps run only when one of its starts ends without a
healthy run, after the new run is confirmed gone. A warm handover (decide/warm.py) is
PrepareRun, StopRun, then a StartRun that gives the prepared run its go.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flink_sql_runner.model.offsets import StartPlan, Starts
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import StoredManifest


def _version(manifest: StoredManifest) -> str:
    return f"v{manifest.meta.query_version}"


def checkpoint_location(manifest: StoredManifest) -> str:
    return manifest.checkpoint


@dataclass(frozen=True)
class StopRun:
    """Stop a run gracefully, with its checkpoint; kill it only after the stop timeout."""

    run: Run
    manifest: StoredManifest  # the manifest the run was started with: its control files

    def describe(self) -> str:
        return f"stop {self.run.describe()}"

    def to_dict(self) -> dict[str, Any]:
        return {"step": "stop", "query-version": self.run.version, "run": self.run.detail}


@dataclass(frozen=True)
class StartRun:
    """Start a manifest, clean in a new checkpoint folder or from its checkpoint, and wait
    until it has completed a trigger. `prepared`: the run a PrepareRun step of the same decision
    prepared is given its go instead (the old run is confirmed gone by then); when none could
    be prepared for lack of resources, the manifest is started as any other (the cold way)."""

    manifest: StoredManifest
    clean: bool
    source: str  # where the manifest comes from, for messages (a job file, the store)
    #: Where a clean start's Kafka sources begin (after a previous version): the plan's.
    starting: StartPlan | None = None
    prepared: bool = False
    #: A new version that continues from the state of the version it replaces (decide/state.py):
    #: that version's checkpoint, copied into the new one's empty folder once its run stopped,
    #: and the query started on the copy as a restart (its offsets, its windows open).
    continues: StoredManifest | None = None

    def describe(self) -> str:
        said = self.starting.describe() if self.starting is not None else ""
        carried = f" ({said})" if said else ""
        if self.prepared:
            return f"go: the prepared {_version(self.manifest)} starts its query{carried}"
        if self.continues is not None:
            return (
                f"start {_version(self.manifest)} from {_version(self.continues)}'s state: "
                f"{checkpoint_location(self.continues)} copied into "
                f"{checkpoint_location(self.manifest)} once {_version(self.continues)} stopped "
                f"(its offsets and windows go on; {_version(self.continues)}'s checkpoint is "
                "kept as it is)"
            )
        how = (
            f"clean in {checkpoint_location(self.manifest)}"
            if self.clean
            else ("from its checkpoint")
        )
        return f"start {_version(self.manifest)} {how}{carried}"

    def to_dict(self) -> dict[str, Any]:
        doc = {
            "step": "start",
            "query-version": self.manifest.meta.query_version,
            "clean": self.clean,
            "checkpoint": checkpoint_location(self.manifest),
        }
        if self.prepared:
            doc["prepared"] = True
        if self.starting is not None:
            doc["starting-offsets"] = self.starting.to_dict()
        if self.continues is not None:
            doc["continues-from"] = {
                "query-version": self.continues.meta.query_version,
                "checkpoint": checkpoint_location(self.continues),
            }
        return doc


@dataclass(frozen=True)
class PrepareRun:
    """Start the new run prepared, beside the run it replaces (a warm handover): JVM, session,
    tables, the query analysed, the sink checked, the checkpoint read, nothing written; wait
    until it says it is ready. A run that cannot get there is stopped and the old run was never
    touched."""

    manifest: StoredManifest
    clean: bool
    source: str
    beside: int  # the version of the run it replaces, which keeps running meanwhile

    def describe(self) -> str:
        how = (
            f"clean in {checkpoint_location(self.manifest)}"
            if self.clean
            else "from its checkpoint"
        )
        return (
            f"prepare {_version(self.manifest)} {how} while v{self.beside} runs "
            "(session, tables, query, sink and checkpoint checked; nothing written)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": "prepare",
            "query-version": self.manifest.meta.query_version,
            "clean": self.clean,
            "checkpoint": checkpoint_location(self.manifest),
        }


@dataclass(frozen=True)
class AwaitRun:
    """Wait for a run an interrupted deploy started until it has completed a trigger. `go`: the
    run was prepared by an interrupted warm handover that had confirmed the old run gone; it is
    given its go (again: a go is given by run id, so twice is once) before the wait, with where
    its Kafka sources start, as the interrupted deploy's intent record holds it (a go without
    it cannot be made)."""

    run: Run
    manifest: StoredManifest
    go: Starts | None = None
    #: The last batch its version had finished before the interrupted start (its intent
    #: record's): a run that finishes a later one and then fails is not rolled back over.
    committed_before: int | None = None

    def describe(self) -> str:
        if self.go is not None:
            starts = f" ({'; '.join(self.go.notes)})" if self.go.notes else ""
            return (
                f"give {self.run.describe()}, prepared by an interrupted deploy, its go{starts} "
                "and wait until it is healthy"
            )
        return f"wait for {self.run.describe()}, started by an interrupted deploy, to be healthy"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "step": "await",
            "query-version": self.run.version,
            "run": self.run.detail,
        }
        if self.go is not None:
            doc["go"] = True
            if self.go.by_table:
                doc["starting"] = self.go.to_dict()
        return doc


@dataclass(frozen=True)
class EndPrepared:
    """End a run an interrupted warm handover prepared and never gave its go: it wrote nothing,
    and ends by itself after its timeout anyway, but until then it is one more run of the job."""

    run: Run
    manifest: StoredManifest  # the manifest it was prepared with: its control files

    def describe(self) -> str:
        return (
            f"end {self.run.describe()}, prepared by an interrupted deploy and never given its go"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"step": "end-prepared", "query-version": self.run.version, "run": self.run.detail}


@dataclass(frozen=True)
class Record:
    """Record a manifest in the store (conditional on what the deploy read there)."""

    manifest: StoredManifest

    def describe(self) -> str:
        stopped = self.manifest.job.get("desired-state") == "stopped"
        return f"record {_version(self.manifest)}" + (" as stopped" if stopped else "")

    def to_dict(self) -> dict[str, Any]:
        state = self.manifest.job.get("desired-state", "running")
        return {
            "step": "record",
            "query-version": self.manifest.meta.query_version,
            "desired-state": state,
        }


@dataclass(frozen=True)
class Archive:
    """Move a job's manifest to the store's archive (its checkpoint is kept)."""

    name: str

    def describe(self) -> str:
        return "archive its manifest"

    def to_dict(self) -> dict[str, Any]:
        return {"step": "archive"}


@dataclass(frozen=True)
class DropIntent:
    """Delete the intent record an interrupted deploy left behind, or the one a job's failed
    first start kept (`failed_start`)."""

    why: str
    failed_start: bool = False

    @property
    def record(self) -> str:
        return (
            "the failed start's record"
            if self.failed_start
            else "the interrupted deploy's intent record"
        )

    def describe(self) -> str:
        return f"drop {self.record} ({self.why})"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"step": "drop-intent", "why": self.why}
        if self.failed_start:
            doc["failed-start"] = True
        return doc


Step = StopRun | PrepareRun | StartRun | AwaitRun | EndPrepared | Record | Archive | DropIntent
