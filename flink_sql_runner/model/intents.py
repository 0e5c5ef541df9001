"""Intents: what a command is doing to a job, written before its first side effect, and how the
next command settles one that was interrupted. This module is their one owner: the kinds and
phases, the record, the evidence, and `settle`, a pure function of the intent, what the target
lists, the run's status file, the intent's age and its kind.

A deploy, `stop`, a prune and a rollback each write `<store>/_intents/<name>.json` before they
stop or start anything for a job, move its `phase` forward as they go, and delete it once the
job's steps are done. A command killed in between leaves the record behind; the next one reads
it with the other facts and settles it on evidence of the interrupted command's own run:

- a start's run is up (its run id in the listing; or, once the old run was confirmed gone and
  the new one submitted, the one run of its version): wait until it is healthy and record it;
- it reported a completed trigger, or finished a batch its checkpoint did not have before (a
  new version's: any batch), and has ended: it took effect, record it (a run that wrote rows
  must not be undone by starting what it replaced again: `wrote_since`);
- it was submitted but is not listed: unknown until the target's own submit timeout has passed
  since that phase was written (a cluster may list a run long after it accepted it), then it
  did not take effect;
- a stop (deploy's, `stop NAME`'s, a prune's) whose job has no run up took effect: record it.

One record outlives its command on purpose: a job's first start whose run ended before it was
healthy (confirmed gone) keeps its record at phase `failed` with the error (`FailedStart`), since
nothing else is stored of the job; it settles as not taken, and a retry drops it before it starts.

Ages are measured on the store's clock (the record's modification time against the store's
"now"), so two deployers whose clocks differ agree on them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.control import HEALTHY_STATES
from flink_sql_runner.model.json_values import json_time_of_text
from flink_sql_runner.model.offsets import StartPlan, Starts
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import (
    ANY,
    SideDoc,
    StoredManifest,
    Token,
    Unconditional,
    utc_now_iso,
)

INTENTS_FOLDER = "_intents"
#: Version 4 added `error`: why a failed start failed (a first start's record is kept).
#: Version 5 added `prepared`: the new run was prepared beside the old one (a warm handover).
#: Version 6 added `starting` (where the new version's Kafka sources start, as planned, written
#: before the old run stops) and `starts` (resolved once it stopped, with the phase that submits
#: the new run or gives it its go).
INTENT_SCHEMA_VERSION = 6

#: What a clean start's record says was committed before it: nothing.
NONE_COMMITTED = -1

#: How long a submission may take to show in a listing when the record does not say (records
#: written before version 3): the longest submit timeout of any target.
DEFAULT_SUBMIT_TIMEOUT = 300.0


class Kind(str, Enum):
    """What the command that wrote an intent was doing to the job."""

    START = "start"  # start a run (after stopping the old one, if any); record it once healthy
    STOP = "stop"  # stop every run with its checkpoint; record desired-state stopped
    PRUNE = "prune"  # stop with its checkpoint; archive the manifest
    ROLLBACK = "rollback"  # start the stored manifest again after a failed start; record nothing

    @property
    def starts(self) -> bool:
        return self in (Kind.START, Kind.ROLLBACK)


class Phase(str, Enum):
    """How far the interrupted command got, in order."""

    INTENDED = "intended"  # nothing done yet
    #: A warm handover's new run is being prepared beside the old one: it may exist from here
    #: on, but writes nothing until the go, which is given only after SUBMITTED is written.
    PREPARING = "preparing"
    STOPPING = "stopping"  # a run is being stopped: it may be gone from here on
    OLD_STOPPED = "old-stopped"  # the previous run is confirmed gone
    SUBMITTING = "submitting"  # the new run is being submitted: it may exist from here on
    SUBMITTED = "submitted"  # the target accepted the new run
    HEALTHY = "healthy"  # the new run completed a trigger; only the record is missing
    FAILED = "failed"  # the new run is confirmed gone without being healthy

    @property
    def submitted(self) -> bool:
        """Whether the new run may exist."""
        return self in (Phase.SUBMITTING, Phase.SUBMITTED, Phase.HEALTHY)


# Actions of version 2 records, by the kind they were.
_KIND_OF_ACTION = {"stop": Kind.STOP, "prune": Kind.PRUNE}


@dataclass(frozen=True)
class Intent:
    #: What is recorded once the command is done: the new manifest of a start, the stopped
    #: manifest of a stop; the stored manifest of a prune (archived) or a rollback (kept).
    manifest: StoredManifest
    action: str  # the decision's action, for messages
    run_id: str  # the id the new run reports in its status file
    written: str  # the writer's clock, for people; ages come from the store's clock
    phase: Phase = Phase.INTENDED
    submission_id: str | None = None
    kind: Kind = Kind.START
    #: The target's submit timeout: a submission not listed after this long did not start.
    submit_timeout: float = DEFAULT_SUBMIT_TIMEOUT
    #: The last batch the version's checkpoint had finished before the new run started
    #: (NONE_COMMITTED for a clean start, from the record's first write on; None in records of
    #: older releases): a later one is the new run's, and a start that wrote is never undone.
    committed_before: int | None = None
    #: Seconds since the record was last written, on the store's clock (set when read).
    age: float = 0.0
    #: At phase FAILED: why the start failed, one line (Spark's error when it gave one).
    error: str | None = None
    #: The new run was prepared (a warm handover): before SUBMITTED it never got its go and
    #: writes nothing; from SUBMITTED on, the go may have been given.
    prepared: bool = False
    #: Where the new version's Kafka sources start, as the plan decided it (a declared "now
    #: minus" made a timestamp): written before the old run stops.
    starting: StartPlan | None = None
    #: What the new run's Kafka sources start at, resolved once the old run stopped: written
    #: with SUBMITTING or SUBMITTED, so that every go gives the same.
    starts: Starts | None = None

    @property
    def waits_for_go(self) -> bool:
        """Its new run may exist but can never write: prepared, and the go not yet due."""
        return self.prepared and not self.phase.submitted and self.phase is not Phase.FAILED

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> int:
        return self.manifest.meta.query_version

    def at(self, phase: Phase, submission_id: str | None = None) -> Intent:
        return replace(
            self,
            phase=phase,
            submission_id=submission_id or self.submission_id,
            written=utc_now_iso(),
            age=0.0,
        )

    @property
    def failed_start(self) -> FailedStart | None:
        """The start this record kept because it failed (a job's first start: nothing else
        would show it), or None for an interrupted command's record."""
        if self.kind is not Kind.START or self.phase is not Phase.FAILED or self.error is None:
            return None
        return FailedStart(self.version, self.written, self.error, self.run_id)

    def describe(self) -> str:
        """`an interrupted start of v3 (start-clean, at submitting)`, for reasons."""
        what = {Kind.START: "start", Kind.STOP: "stop", Kind.PRUNE: "prune",
                Kind.ROLLBACK: "rollback"}[self.kind]  # fmt: skip
        return f"an interrupted {what} of v{self.version} ({self.action}, at {self.phase.value})"

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema-version": INTENT_SCHEMA_VERSION,
                "kind": self.kind.value,
                "action": self.action,
                "run-id": self.run_id,
                "phase": self.phase.value,
                "submission-id": self.submission_id,
                "submit-timeout": self.submit_timeout,
                "committed-before": self.committed_before,
                "written": self.written,
                "error": self.error,
                "prepared": self.prepared,
                "starting": self.starting.to_dict() if self.starting is not None else None,
                "starts": self.starts.to_dict() if self.starts is not None else None,
                "manifest": self.manifest.to_dict(),
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str, source: str, age: float = 0.0) -> Intent:
        try:
            doc: Any = json.loads(text)
            version = doc.get("schema-version")
            if version not in (1, 2, 3, 4, 5, INTENT_SCHEMA_VERSION):
                raise ValueError(f"schema-version {version!r}")
            manifest = StoredManifest.from_dict(doc["manifest"], source)
            action = str(doc["action"])
            # Version 1 records (no phase) were written before anything was done and kept
            # until the record: the run may have been submitted. Version 2 had no kinds; its
            # rolling-back phase was a rollback's start that recorded no phase of its own.
            raw_phase = doc.get("phase", Phase.SUBMITTING.value)
            kind = Kind(doc["kind"]) if "kind" in doc else _KIND_OF_ACTION.get(action, Kind.START)
            if raw_phase == "rolling-back":
                kind, raw_phase = Kind.ROLLBACK, Phase.SUBMITTING.value
            committed = doc.get("committed-before")
            if committed is not None and (
                not isinstance(committed, int) or isinstance(committed, bool) or committed < -1
            ):
                raise ValueError(f"committed-before {committed!r} is not a batch (or -1)")
            error = doc.get("error")
            starting, starts = doc.get("starting"), doc.get("starts")
            if error is not None and not isinstance(error, str):
                raise ValueError(f"error {error!r} is not a string")
            return cls(
                manifest,
                action,
                str(doc["run-id"]),
                str(doc["written"]),
                Phase(raw_phase),
                doc.get("submission-id"),
                kind,
                float(doc.get("submit-timeout", DEFAULT_SUBMIT_TIMEOUT)),
                int(committed) if committed is not None else None,
                age,
                error,
                doc.get("prepared") is True,
                StartPlan.from_dict(starting) if starting is not None else None,
                Starts.from_dict(starts) if starts is not None else None,
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"intent record {source} is unreadable ({exc}); delete it") from None


def new_intent(
    manifest: StoredManifest,
    action: str,
    run_id: str,
    kind: Kind = Kind.START,
    submit_timeout: float = DEFAULT_SUBMIT_TIMEOUT,
    committed_before: int | None = None,
    prepared: bool = False,
    starting: StartPlan | None = None,
) -> Intent:
    return Intent(
        manifest,
        action,
        run_id,
        utc_now_iso(),
        kind=kind,
        submit_timeout=submit_timeout,
        committed_before=committed_before,
        prepared=prepared,
        starting=starting,
    )


@dataclass(frozen=True)
class FailedStart:
    """A job's first start that failed, as its kept intent record tells it: shown by `status`,
    `plan` and `logs` until a start of the job succeeds (or the next deploy drops it)."""

    version: int
    at: str  # when it was found failed, UTC (the record's last write)
    error: str
    run_id: str

    def describe(self) -> str:
        """`v1 failed to start at 2026-11-25T02:27:45Z: Invalid value '-1' ...`"""
        return f"v{self.version} failed to start at {self.at}: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {"query-version": self.version, "at": json_time_of_text(self.at),
                "error": self.error, "run-id": self.run_id}  # fmt: skip


# -- settling ----------------------------------------------------------------------------------
class Outcome(str, Enum):
    """What an interrupted command's intent comes to."""

    UP = "up"  # its new run is alive: wait until it is healthy, then complete it
    TOOK_EFFECT = "took-effect"  # it did what it meant to, nothing of it runs: complete it
    NOT_TAKEN = "not-taken"  # nothing of it exists: drop it, the stored manifest stands
    UNKNOWN = "unknown"  # its run may exist: nothing is started or recorded for the job


@dataclass(frozen=True)
class Settlement:
    """An intent with what the evidence says of it."""

    intent: Intent
    outcome: Outcome
    why: str  # the evidence, in words
    run: Run | None = None  # the listed run that is its new run, when UP
    healthy: bool = False  # its run reported a completed trigger (or the record says so)
    #: Its new run was prepared and its go, though due, was never given (the go file holds
    #: none for it): it read and wrote nothing, and is up waiting for it.
    waiting: bool = False

    @property
    def completes(self) -> bool:
        """Whether the command's record is due: it took effect, or its run is up."""
        return self.outcome in (Outcome.UP, Outcome.TOOK_EFFECT)


def settle(
    intent: Intent,
    runs: tuple[Run, ...],
    status: dict[str, Any] | None,
    committed_now: int | None = None,
    go_given: bool | None = None,
) -> Settlement:
    """What `intent` comes to, from the job's listed runs, the status document its run wrote
    (None if none or another run's), the last batch its runs have finished now, and, for a
    prepared run whose go was due, whether its go file holds its go (None: not known).

    Pure: the same evidence always settles the same way."""
    if not intent.kind.starts:
        return _settle_stop(intent, runs)
    healthy = intent.phase is Phase.HEALTHY or (
        status is not None
        and status.get("run-id") == intent.run_id
        and status.get("state") in HEALTHY_STATES
    )
    if intent.waits_for_go:
        return Settlement(
            intent,
            Outcome.NOT_TAKEN,
            "its new run was prepared but never given its go: it wrote nothing and ends by itself",
        )
    if not intent.phase.submitted and intent.phase is not Phase.FAILED:
        return Settlement(intent, Outcome.NOT_TAKEN, "its new run was never submitted")
    mine = [r for r in runs if r.run_id == intent.run_id]
    if not mine and intent.phase.submitted:
        # A listing without run ids (some targets): the one run of its version, for only one
        # command acts at a time and it submits only once the old run was confirmed gone.
        mine = [r for r in runs if r.run_id is None and r.version in (intent.version, None)]
    for run in mine:
        if run.liveness is Liveness.UNKNOWN:
            return Settlement(intent, Outcome.UNKNOWN, f"cannot tell whether {run.describe()} "
                              f"is up ({run.detail})", run, healthy)  # fmt: skip
    alive = [r for r in mine if r.liveness is Liveness.ALIVE]
    never_went = intent.prepared and intent.phase is Phase.SUBMITTED and go_given is False
    if never_went and not healthy:
        if alive:
            return Settlement(
                intent,
                Outcome.UP,
                f"its prepared run is up ({alive[0].detail}) and never had its go: it read "
                "and wrote nothing",
                alive[0],
                waiting=True,
            )
        return Settlement(
            intent,
            Outcome.NOT_TAKEN,
            "its prepared run never had its go and is gone: it read and wrote nothing",
        )
    if alive:
        return Settlement(intent, Outcome.UP, f"its run is up ({alive[0].detail})", alive[0],
                          healthy)  # fmt: skip
    if healthy:
        return Settlement(intent, Outcome.TOOK_EFFECT, "its run was healthy, then ended",
                          healthy=True)  # fmt: skip
    if wrote_since(intent.committed_before, committed_now):
        assert intent.committed_before is not None and committed_now is not None
        done = committed_words(intent.version, intent.committed_before, committed_now)
        return Settlement(intent, Outcome.TOOK_EFFECT, f"{done}, then its run ended")
    if intent.phase is Phase.FAILED:
        return Settlement(intent, Outcome.NOT_TAKEN, "its run is confirmed gone, never healthy")
    if any(r.run_id == intent.run_id for r in mine):  # listed under its own id, ended
        return Settlement(
            intent, Outcome.NOT_TAKEN, "its run is listed as ended, never healthy, no batch done"
        )
    if intent.age < intent.submit_timeout:
        left = intent.submit_timeout - intent.age
        return Settlement(
            intent,
            Outcome.UNKNOWN,
            f"submitted {intent.age:.0f} s ago and not listed: it may still appear for "
            f"another {left:.0f} s (the target's submit timeout)",
        )
    return Settlement(
        intent,
        Outcome.NOT_TAKEN,
        f"not listed {intent.age:.0f} s after it was submitted, never healthy",
    )


def wrote_since(before: int | None, now: int | None) -> bool:
    """Whether a start's runs finished a batch after `before` (the last batch its checkpoint
    had finished when it began; NONE_COMMITTED for a clean start), `now` being the last they
    have finished now (None: none). Such a start is never undone by starting what it replaced
    again: that would read and write again what it wrote. The one rule for a rollback, a settle
    and `watch` (act/job_steps.py, `settle`)."""
    return before is not None and now is not None and now > before


def committed_words(version: int, before: int, now: int) -> str:
    """`v2 committed 4 batches (0 to 3)`, `v1 committed batch 8`."""
    if now - before == 1:
        return f"v{version} committed batch {now}"
    return f"v{version} committed {now - before} batches ({before + 1} to {now})"


def _settle_stop(intent: Intent, runs: tuple[Run, ...]) -> Settlement:
    unknown = [r for r in runs if r.liveness is Liveness.UNKNOWN]
    if unknown:
        return Settlement(intent, Outcome.UNKNOWN, f"cannot tell whether "
                          f"{unknown[0].describe()} is up ({unknown[0].detail})")  # fmt: skip
    alive = [r for r in runs if r.liveness is Liveness.ALIVE]
    if alive:
        return Settlement(intent, Outcome.NOT_TAKEN, f"{alive[0].describe()} is still up")
    return Settlement(intent, Outcome.TOOK_EFFECT, "no run of it is up")


# -- the records -------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntentReads:
    """The store's intent records: readable ones by job name, unreadable ones with why."""

    intents: dict[str, Intent]
    problems: dict[str, str]


class SideFiles(Protocol):
    """What the intent records need of a manifest store (stores/base.py): documents beside
    the manifests, written and deleted on condition of their version token."""

    location: str

    def write_side(
        self, key: str, text: str, *, expected: Token | Unconditional = ANY
    ) -> Token: ...

    def read_side_docs(self, folder: str) -> dict[str, SideDoc]: ...

    def delete_side(self, key: str, *, expected: Token | Unconditional = ANY) -> None: ...


class IntentLog:
    """The intent records of one manifest store. A command writes and deletes its own record
    on condition that it is still the version it wrote (`expected`), so one that lost the lock
    without knowing cannot overwrite or delete what the next one wrote: StoreConflict."""

    def __init__(self, store: SideFiles):
        self.store = store

    def _key(self, name: str) -> str:
        return f"{INTENTS_FOLDER}/{name}.json"

    def write(self, intent: Intent, expected: Token | Unconditional = ANY) -> Token:
        return self.store.write_side(self._key(intent.name), intent.to_json(), expected=expected)

    def delete(self, name: str, expected: Token | Unconditional = ANY) -> None:
        self.store.delete_side(self._key(name), expected=expected)

    def read_all(self) -> IntentReads:
        """Every pending intent, by job name: one listing (normally empty). A record that
        cannot be read is that job's problem, not every job's."""
        found: dict[str, Intent] = {}
        problems: dict[str, str] = {}
        for file_name, doc in self.store.read_side_docs(INTENTS_FOLDER).items():
            if not file_name.endswith(".json"):
                continue
            source = f"{self.store.location.rstrip('/')}/{INTENTS_FOLDER}/{file_name}"
            try:
                intent = Intent.from_json(doc.text, source, doc.age)
            except StoreError as exc:
                problems[file_name.removesuffix(".json")] = str(exc)
                continue
            found[intent.name] = intent
        return IntentReads(found, problems)
