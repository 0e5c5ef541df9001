"""The decision tree: from gathered facts to a plan, as plain data. Nothing here acts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from flink_sql_runner.changes import Change, ChangeKind, diff, severity
from flink_sql_runner.intents import Intent
from flink_sql_runner.manifest import Job
from flink_sql_runner.stored import StoredManifest


class Action(str, Enum):
    NOOP = "noop"
    START_CLEAN = "start-clean"
    RESTART = "restart-from-checkpoint"
    STOP_AND_RESTART = "stop-and-restart-from-checkpoint"
    STOP_AND_START_CLEAN = "stop-and-start-clean"
    STOP = "stop"
    PRUNE = "prune"
    ERROR = "error"
    ORPHANED = "orphaned"

    @property
    def stops(self) -> bool:
        return self in (
            Action.STOP,
            Action.PRUNE,
            Action.STOP_AND_RESTART,
            Action.STOP_AND_START_CLEAN,
        )

    @property
    def starts(self) -> bool:
        return self in (
            Action.START_CLEAN,
            Action.RESTART,
            Action.STOP_AND_RESTART,
            Action.STOP_AND_START_CLEAN,
        )

    @property
    def clean(self) -> bool:
        return self in (Action.START_CLEAN, Action.STOP_AND_START_CLEAN)


@dataclass(frozen=True)
class RunningJob:
    """A job the target reports as running."""

    name: str
    version: int | None
    run_id: str | None = None
    detail: str = ""  # e.g. "pid 4242" or a cluster's submission id
    submission_id: str | None = None  # what the cluster calls this run, for status and kill


@dataclass(frozen=True)
class CheckpointFacts:
    """What exists on the checkpoint storage for one job."""

    location: str  # the stored version's checkpoint
    valid: bool
    last_committed: int | None
    highest_version: int  # largest version folder under <root>/<name>/, 0 if none


@dataclass(frozen=True)
class JobFacts:
    name: str
    desired: Job | None
    stored: StoredManifest | None
    running: RunningJob | None
    checkpoint: CheckpointFacts | None
    #: Left by a deploy that was interrupted mid-action (intents.py), with its checkpoint.
    intent: Intent | None = None
    intent_checkpoint: CheckpointFacts | None = None


@dataclass(frozen=True)
class Decision:
    name: str
    action: Action
    version: int | None
    reason: str
    changes: tuple[Change, ...] = ()
    facts: JobFacts | None = field(default=None, compare=False, repr=False)
    #: An interrupted deploy's start took effect: record this manifest before acting.
    adopt: StoredManifest | None = field(default=None, compare=False, repr=False)
    #: An interrupted deploy's start did not take effect: drop its intent record.
    discard_intent: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "action": self.action.value,
            "query-version": self.version,
            "reason": self.reason,
            "changes": [c.to_dict() for c in self.changes],
        }


@dataclass(frozen=True)
class Plan:
    decisions: tuple[Decision, ...]

    @property
    def pending(self) -> bool:
        """Whether applying the plan would change anything."""
        return any(
            d.action not in (Action.NOOP, Action.ORPHANED) or d.adopt or d.discard_intent
            for d in self.decisions
        )

    @property
    def errors(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.action is Action.ERROR)

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [d.to_dict() for d in self.decisions]}


def _summary(changes: list[Change], kind: ChangeKind) -> str:
    fields = [c.field for c in changes if c.kind is kind]
    shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more" if len(fields) > 3 else "")
    return shown


def _intent_took_effect(facts: JobFacts) -> str | None:
    """How an interrupted deploy's start shows it took effect, or None if it did not."""
    intent, running, stored = facts.intent, facts.running, facts.stored
    assert intent is not None
    if running is not None:
        if running.run_id is not None:
            return "its run is up" if running.run_id == intent.run_id else None
        new_version = stored is None or stored.meta.query_version != intent.version
        return "its version runs" if new_version and running.version == intent.version else None
    checkpoint = facts.intent_checkpoint
    if checkpoint is not None and checkpoint.valid:
        return "its checkpoint holds batches"
    return None


def decide(facts: JobFacts, prune: bool = False) -> Decision:
    """One job's decision, following SPEC's decision tree, with its reason in words.

    An intent record left by an interrupted deploy is settled first: adopted when its start
    took effect (the decision then starts from the manifest it was recording), else discarded.
    """
    intent = facts.intent
    if intent is None:
        return _decide(facts, prune)
    how = _intent_took_effect(facts)
    if how is None:
        decision = _decide(replace(facts, intent=None), prune)
        note = (
            f" (an interrupted deploy's {intent.action} of v{intent.version} did not take "
            "effect; its intent record is dropped)"
        )
        return replace(decision, reason=decision.reason + note, discard_intent=True, facts=facts)
    adopted = replace(
        facts, stored=intent.manifest, checkpoint=facts.intent_checkpoint, intent=None
    )
    decision = _decide(adopted, prune)
    note = f"an interrupted deploy's {intent.action} of v{intent.version} took effect ({how}); "
    return replace(decision, reason=note + decision.reason, adopt=intent.manifest)


def _decide(facts: JobFacts, prune: bool = False) -> Decision:
    desired, stored, running, checkpoint = (
        facts.desired,
        facts.stored,
        facts.running,
        facts.checkpoint,
    )

    def decision(action: Action, version: int | None, reason: str, changes=()) -> Decision:
        return Decision(facts.name, action, version, reason, tuple(changes), facts)

    highest = checkpoint.highest_version if checkpoint else 0
    if desired is None:
        version = stored.meta.query_version if stored else None
        state = f"running ({running.detail})" if running else "not running"
        if prune and stored is not None:
            what = "stop it with its checkpoint, " if running else ""
            return decision(
                Action.PRUNE,
                version,
                f"its manifest is no longer under --path; {state}: {what}archive its manifest",
            )
        return decision(
            Action.ORPHANED,
            version,
            f"its manifest is no longer under --path; {state}, left alone "
            "(deploy --prune stops it and archives its manifest)",
        )
    if stored is None:
        if running is not None:
            return decision(
                Action.ERROR,
                running.version,
                f"already running ({running.detail}) but no manifest is stored: not starting "
                f"it a second time; stop it with `flink-sql-runner stop {facts.name}` first",
            )
        if desired.desired_state == "stopped":
            return decision(Action.NOOP, None, "new job with desired-state stopped: not started")
        version = highest + 1
        reason = "new job"
        if highest:
            reason += (
                f"; checkpoint folders up to version {highest} exist, so it starts at {version}"
            )
        return decision(Action.START_CLEAN, version, reason)

    changes = diff(stored.job, stored.tables, desired.spec, desired.tables)
    kind = severity(changes)
    version = stored.meta.query_version
    clean_version = max(version, highest) + 1
    query_reason = f"query changed ({_summary(changes, ChangeKind.QUERY)})"
    config_reason = f"config changed ({_summary(changes, ChangeKind.CONFIG)})"

    if running is not None:
        if running.version is not None and running.version != version:
            return decision(
                Action.ERROR,
                running.version,
                f"runs version {running.version} ({running.detail}) but the store records "
                f"version {version}; stop it with `flink-sql-runner stop {facts.name}` and "
                "deploy again",
                changes,
            )
        if desired.desired_state == "stopped":
            return decision(
                Action.STOP, version, "desired-state is stopped: stop with checkpoint", changes
            )
        if kind is ChangeKind.NONE:
            return decision(Action.NOOP, version, "running, nothing changed")
        if kind is ChangeKind.CONFIG:
            return decision(
                Action.STOP_AND_RESTART,
                version,
                f"{config_reason}: stop with checkpoint, restart from it",
                changes,
            )
        return decision(
            Action.STOP_AND_START_CLEAN,
            clean_version,
            f"{query_reason}: stop, start clean as version {clean_version}",
            changes,
        )

    if desired.desired_state == "stopped":
        later = "; changes apply once desired-state is running" if changes else ""
        return decision(Action.NOOP, version, f"stopped, as desired{later}", changes)
    if kind is ChangeKind.QUERY:
        return decision(
            Action.START_CLEAN,
            clean_version,
            f"not running; {query_reason}: start clean as version {clean_version}",
            changes,
        )
    if checkpoint is None or not checkpoint.valid:
        where = checkpoint.location if checkpoint else "its checkpoint"
        return decision(
            Action.ERROR,
            version,
            f"not running and no valid checkpoint at {where}: restarting would lose or repeat "
            "data; restore the checkpoint, or change the query to start a new version",
            changes,
        )
    batch = checkpoint.last_committed
    resumed = f"last committed batch {batch}" if batch is not None else "no batch committed yet"
    what = f"{config_reason}; " if kind is ChangeKind.CONFIG else ""
    return decision(
        Action.RESTART,
        version,
        f"not running; {what}restart from checkpoint ({resumed})",
        changes,
    )


def build_plan(facts: list[JobFacts], prune: bool = False) -> Plan:
    """The decisions for every job, sorted by name. With `prune`, jobs whose manifest left
    --path are stopped and archived instead of left alone."""
    return Plan(tuple(decide(f, prune) for f in sorted(facts, key=lambda f: f.name)))
