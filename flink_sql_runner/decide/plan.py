"""The decision tree: from gathered facts to a plan, as plain data. Nothing here acts.

Each decision names its action (a label for people and JSON), says why, and carries the steps
the executor performs, in order, plus the steps that roll back a failed start. `plan` prints
exactly these steps; `deploy` carries them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from flink_sql_runner.decide.changes import Change, ChangeKind, diff, severity
from flink_sql_runner.decide.steps import (
    Archive,
    AwaitRun,
    DropIntent,
    Record,
    StartRun,
    Step,
    StopRun,
)
from flink_sql_runner.gather.facts import JobFacts
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.sparkversion import is_older, version_tuple
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.sinks import SinkId, target_sink


class Action(str, Enum):
    NOOP = "noop"
    START_CLEAN = "start-clean"
    RESTART = "restart-from-checkpoint"
    STOP_AND_RESTART = "stop-and-restart-from-checkpoint"
    STOP_AND_START_CLEAN = "stop-and-start-clean"
    STOP = "stop"
    PRUNE = "prune"
    ADOPT = "adopt"
    ERROR = "error"
    ORPHANED = "orphaned"


@dataclass(frozen=True)
class Impact:
    """What a job's decision does to one job downstream of it: `effect` is `reads-again`
    (it reads rows it has read before), `follows` (it starts clean as a new version with the
    producer), or `stays` (it keeps reading the producer's old output)."""

    job: str
    effect: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"job": self.job, "effect": self.effect, "detail": self.detail}


@dataclass(frozen=True)
class Decision:
    name: str
    action: Action
    version: int | None
    reason: str
    changes: tuple[Change, ...] = ()
    steps: tuple[Step, ...] = ()
    #: Run when a start of `steps` ends without a healthy run (confirmed gone): the previous
    #: run started again from its checkpoint; the store keeps the previous manifest.
    rollback: tuple[Step, ...] = ()
    #: Jobs whose steps must be done before this job's starts (the owner of the sink this job
    #: will write; the producers of what it reads). When one fails, its starts are held back.
    after: tuple[str, ...] = ()
    #: Jobs whose stops must be done before this job's stops (the consumers of what it writes).
    stop_after: tuple[str, ...] = ()
    #: Why, for each job of `after` (said when this job is held back).
    why_after: dict[str, str] = field(default_factory=dict, compare=False)
    #: What this decision means for the jobs downstream of it (lineage order).
    downstream: tuple[Impact, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "action": self.action.value,
            "query-version": self.version,
            "reason": self.reason,
            "changes": [c.to_dict() for c in self.changes],
            "steps": [s.to_dict() for s in self.steps],
            "rollback": [s.to_dict() for s in self.rollback],
        }
        if self.after:
            doc["after"] = list(self.after)
        if self.stop_after:
            doc["stop-after"] = list(self.stop_after)
        if self.downstream:
            doc["downstream"] = [i.to_dict() for i in self.downstream]
        return doc


@dataclass(frozen=True)
class Plan:
    decisions: tuple[Decision, ...]

    @property
    def pending(self) -> bool:
        """Whether applying the plan would do anything."""
        return any(d.steps for d in self.decisions)

    @property
    def errors(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.action is Action.ERROR)

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [d.to_dict() for d in self.decisions]}


def _summary(changes: list[Change], kind: ChangeKind) -> str:
    fields = [c.field for c in changes if c.kind is kind]
    shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more" if len(fields) > 3 else "")
    return shown


def manifest_of(job: Job, meta: Meta) -> StoredManifest:
    return StoredManifest(job.spec, job.tables, meta)


def as_stopped(manifest: StoredManifest) -> StoredManifest:
    return replace(manifest, job={**manifest.job, "desired-state": "stopped"})


def _error(facts: JobFacts, reason: str, version: int | None = None, changes=()) -> Decision:
    if version is None and facts.stored is not None:
        version = facts.stored.meta.query_version
    return Decision(facts.name, Action.ERROR, version, reason, tuple(changes))


def _runs(runs: tuple[Run, ...]) -> str:
    return ", ".join(r.describe() for r in runs)


def decide(facts: JobFacts, prune: bool = False, spark: str | None = None) -> Decision:
    """One job's decision, following SPEC's decision tree, with its reason in words.

    An intent record left by an interrupted deploy is settled first, on evidence of its own
    run: a run that is up is waited for and recorded; one that was healthy and is gone is
    recorded and restarted from its checkpoint; one that never took effect is dropped, and the
    manifest stored before stands.
    """
    if facts.problem:
        return _error(facts, f"cannot be decided: {facts.problem}")
    if facts.unknown:
        return _error(
            facts,
            f"cannot tell whether it runs: {_runs(facts.unknown)}; nothing is stopped or started "
            "while a run may be alive (deploy again once the target answers, or stop it there)",
        )
    settled = facts.intent
    if settled is None:
        return _decide(facts, prune, spark)
    intent = settled.intent
    what = f"an interrupted deploy's {intent.action} of v{intent.version}"
    prefix: tuple[Step, ...]
    rollback: tuple[Step, ...] = ()
    if settled.run is Liveness.UNKNOWN:
        return _error(facts, f"{what} may be up: cannot tell ({_runs(facts.runs)}); not acting")
    if settled.run is Liveness.ALIVE:
        assert settled.alive is not None
        adopted = replace(facts, stored=intent.manifest, checkpoint=settled.checkpoint, intent=None)
        if settled.healthy:
            prefix = (Record(intent.manifest), DropIntent("its run is up and was healthy"))
            note = f"{what} is up ({settled.alive.detail}): record it; "
        else:
            prefix = (
                AwaitRun(settled.alive, intent.manifest),
                Record(intent.manifest),
                DropIntent("its run is up"),
            )
            note = f"{what} is up ({settled.alive.detail}): wait until it is healthy, record it; "
            if facts.stored is not None and intent.action.startswith("stop-and-"):
                rollback = (StartRun(facts.stored, clean=False, source="the store"),)
    elif settled.healthy:
        adopted = replace(facts, stored=intent.manifest, checkpoint=settled.checkpoint, intent=None)
        prefix = (Record(intent.manifest), DropIntent("its run was healthy, then ended"))
        note = f"{what} took effect (its run reported healthy) and has ended: record it; "
    else:
        adopted = replace(facts, intent=None)
        prefix = (DropIntent("its start did not take effect"),)
        note = f"{what} did not take effect (no run of it is up or was healthy); "
    decision = _decide(adopted, prune, spark)
    if decision.action is Action.ERROR:
        return replace(decision, reason=note + decision.reason)
    action = decision.action if decision.steps else Action.ADOPT
    return replace(
        decision,
        action=action,
        reason=note + decision.reason,
        steps=prefix + decision.steps,
        rollback=decision.rollback or rollback,
    )


def _decide(facts: JobFacts, prune: bool = False, spark: str | None = None) -> Decision:
    decision = _tree(facts, prune, spark)
    stored = facts.stored
    if stored is None or decision.action in (Action.ERROR, Action.ORPHANED):
        return decision
    return _with_spark_versions(decision, facts, stored.meta.spark_version, spark)


def _with_spark_versions(
    decision: Decision, facts: JobFacts, ran_on: str | None, next_on: str | None
) -> Decision:
    """What a change of Spark between the stored version's last run and the next start means
    for its checkpoint: a newer Spark restores an older one's; an older Spark is not promised to
    read a newer one's, so such a restart is refused."""
    if not ran_on or not next_on or version_tuple(ran_on) == version_tuple(next_on):
        return decision
    version = facts.stored.meta.query_version if facts.stored else decision.version
    restarts = any(isinstance(s, StartRun) and not s.clean for s in decision.steps)
    if restarts and is_older(next_on, ran_on):
        return _error(
            facts,
            f"{decision.reason}; but v{version}'s checkpoint was written by Spark {ran_on} and "
            f"the next run uses Spark {next_on}, which is older: not restored (run it on Spark "
            f"{ran_on} or newer, or change the query to start a new version)",
            decision.version,
            decision.changes,
        )
    if restarts:
        major = version_tuple(ran_on)[0] != version_tuple(next_on)[0]  # type: ignore[index]
        note = (
            f"Spark {ran_on} -> {next_on}: the newer Spark restores v{version}'s checkpoint"
            + ("; across major versions, see Spark's migration guide for stateful queries"
               if major else "")
        )  # fmt: skip
    elif any(isinstance(s, StartRun) for s in decision.steps):
        note = f"starts on Spark {next_on} (v{version} last ran on {ran_on})"
    else:
        note = f"v{version} runs on Spark {ran_on}; its next start will use Spark {next_on}"
    return replace(decision, reason=f"{decision.reason}; {note}")


def _tree(facts: JobFacts, prune: bool = False, spark: str | None = None) -> Decision:
    desired, stored, checkpoint = facts.desired, facts.stored, facts.checkpoint
    name = facts.name

    def decision(action: Action, version: int | None, reason: str, changes=(), **kw: Any):
        return Decision(name, action, version, reason, tuple(changes), **kw)

    if len(facts.alive) > 1:
        return _error(
            facts,
            f"{len(facts.alive)} runs of this job are up: {_runs(facts.alive)}; stop them "
            f"(`flink-sql-runner stop {name}` stops every run) and deploy again",
        )
    running = facts.alive[0] if facts.alive else None
    highest = checkpoint.highest_version if checkpoint else 0
    if desired is None:
        version = stored.meta.query_version if stored else None
        state = f"running ({running.detail})" if running else "not running"
        if stored is None:
            return decision(
                Action.ORPHANED,
                version or (running.version if running else None),
                f"{state}, but neither under --path nor in the store; left alone",
            )
        if prune:
            stop = (StopRun(running, stored),) if running else ()
            what = "stop it with its checkpoint, " if running else ""
            return decision(
                Action.PRUNE,
                version,
                f"its manifest is no longer under --path; {state}: {what}archive its manifest",
                steps=(*stop, Archive(name)),
            )
        return decision(
            Action.ORPHANED,
            version,
            f"its manifest is no longer under --path; {state}, left alone "
            "(deploy --prune stops it and archives its manifest)",
        )
    if stored is None:
        if running is not None:
            return _error(
                facts,
                f"already running ({running.detail}) but no manifest is stored: not starting "
                f"it a second time; stop it with `flink-sql-runner stop {name}` first",
                running.version,
            )
        if desired.desired_state == "stopped":
            return decision(Action.NOOP, None, "new job with desired-state stopped: not started")
        version = highest + 1
        reason = "new job"
        if highest:
            reason += (
                f"; checkpoint folders up to version {highest} exist, so it starts at {version}"
            )
        manifest = manifest_of(desired, Meta.new(version))
        steps = (StartRun(manifest, clean=True, source=desired.file), Record(manifest))
        return decision(Action.START_CLEAN, version, reason, steps=steps)

    changes = diff(
        stored.job, stored.tables, desired.spec, desired.tables, spark or stored.meta.spark_version
    )
    kind = severity(changes)
    version = stored.meta.query_version
    clean_version = max(version, highest) + 1
    query_reason = f"query changed ({_summary(changes, ChangeKind.QUERY)})"
    config_reason = f"config changed ({_summary(changes, ChangeKind.CONFIG)})"
    same_version = manifest_of(desired, stored.meta)
    new_version = manifest_of(desired, Meta.new(clean_version))
    back = (StartRun(stored, clean=False, source="the store"),)

    if running is not None:
        if running.version is not None and running.version != version:
            return _error(
                facts,
                f"runs version {running.version} ({running.detail}) but the store records "
                f"version {version}; stop it with `flink-sql-runner stop {name}` and "
                "deploy again",
                running.version,
                changes,
            )
        stop = StopRun(running, stored)
        if desired.desired_state == "stopped":
            return decision(
                Action.STOP,
                version,
                "desired-state is stopped: stop with checkpoint",
                changes,
                steps=(stop, Record(as_stopped(stored))),
            )
        if kind is ChangeKind.NONE:
            return decision(Action.NOOP, version, "running, nothing changed")
        if kind is ChangeKind.CONFIG:
            return decision(
                Action.STOP_AND_RESTART,
                version,
                f"{config_reason}: stop with checkpoint, restart from it",
                changes,
                steps=(stop, StartRun(same_version, False, desired.file), Record(same_version)),
                rollback=back,
            )
        return decision(
            Action.STOP_AND_START_CLEAN,
            clean_version,
            f"{query_reason}: stop, start clean as version {clean_version}",
            changes,
            steps=(stop, StartRun(new_version, True, desired.file), Record(new_version)),
            rollback=back,
        )

    if desired.desired_state == "stopped":
        later = "; changes apply once desired-state is running" if changes else ""
        if stored.job.get("desired-state") != "stopped":
            return decision(
                Action.STOP,
                version,
                f"not running; desired-state is stopped: record it, so that watch leaves it "
                f"down{later}",
                changes,
                steps=(Record(as_stopped(stored)),),
            )
        return decision(Action.NOOP, version, f"stopped, as desired{later}", changes)
    if kind is ChangeKind.QUERY:
        return decision(
            Action.START_CLEAN,
            clean_version,
            f"not running; {query_reason}: start clean as version {clean_version}",
            changes,
            steps=(StartRun(new_version, True, desired.file), Record(new_version)),
        )
    if checkpoint is None or not checkpoint.valid:
        where = checkpoint.location if checkpoint else "its checkpoint"
        return _error(
            facts,
            f"not running and no valid checkpoint at {where}: restarting would lose or repeat "
            "data; restore the checkpoint, or change the query to start a new version",
            version,
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
        steps=(StartRun(same_version, False, desired.file), Record(same_version)),
    )


def build_plan(facts: list[JobFacts], prune: bool = False, spark: str | None = None) -> Plan:
    """The decisions for every job, sorted by name. With `prune`, jobs whose manifest left
    --path are stopped and archived instead of left alone. No job starts into a sink another
    job writes (stored or running), unless that job is stopped first in the same deploy.
    Along the lineage (pipeline.py): producers start first and consumers stop first, consumers
    with `reprocessing: consistent` follow a producer's new version, and a job that starts
    clean as a new version names what happens downstream of it.
    `spark`: the Spark version the target will run jobs on, when it can tell."""
    from flink_sql_runner.decide import pipeline  # it builds on this module's Decision
    from flink_sql_runner.decide.lineage import build_lineage

    ordered = sorted(facts, key=lambda f: f.name)
    by_name = {f.name: f for f in ordered}
    lineage = build_lineage(
        [f.desired for f in ordered if f.desired is not None],
        stored={f.name: f.stored for f in ordered if f.stored is not None},
    )
    decisions = {f.name: decide(f, prune, spark) for f in ordered}
    decisions = pipeline.follow_producers(
        decisions, by_name, lineage, lambda f: decide(f, prune, spark)
    )
    owners = {
        f.name: sink
        for f in ordered
        if f.stored is not None
        and (sink := target_sink(f.name, f.stored.job, f.stored.tables)) is not None
    }
    for name, decision in decisions.items():
        for sink in _sinks_started(decision):
            decisions[name] = _respect_owners(decision, sink, owners, decisions, by_name)
            decision = decisions[name]
    decisions = pipeline.order_by_lineage(decisions, lineage)
    decisions = pipeline.downstream_impact(decisions, by_name, lineage)
    return Plan(tuple(decisions[f.name] for f in ordered))


def _sinks_started(decision: Decision) -> list[SinkId]:
    found = []
    for step in decision.steps:
        if isinstance(step, StartRun):
            sink = target_sink(decision.name, step.manifest.job, step.manifest.tables)
            if sink is not None and sink not in found:
                found.append(sink)
    return found


def _respect_owners(
    decision: Decision,
    sink: SinkId,
    owners: dict[str, SinkId],
    decisions: dict[str, Decision],
    facts: dict[str, JobFacts],
) -> Decision:
    """`decision` ordered after every other job that writes `sink` and lets go of it in this
    deploy; an error when one keeps writing it."""
    if decision.action is Action.ERROR:
        return decision
    after = list(decision.after)
    why = dict(decision.why_after)
    for other, owned in owners.items():
        if other == decision.name or not owned.overlaps(sink):
            continue
        theirs = decisions[other]
        desired = facts[other].desired
        moves = desired is not None and not (
            (new := target_sink(other, desired.spec, desired.tables)) and new.overlaps(sink)
        )
        running = any(isinstance(s, StopRun) for s in theirs.steps) or not facts[other].alive
        if theirs.action is Action.PRUNE or (moves and running and theirs.steps):
            after.append(other)
            why.setdefault(other, f"the writer of {sink} until now")
            continue
        state = f"running {_runs(facts[other].alive)}" if facts[other].alive else "not running"
        return _error(
            facts[decision.name],
            f"would write {sink}, which job {other} (stored v"
            f"{facts[other].stored.meta.query_version}, {state}) writes: two writers of one "  # type: ignore[union-attr]
            f"sink lose rows; stop and remove {other} first (deploy --prune stops and archives "
            "jobs no longer under --path)",
            decision.version,
            decision.changes,
        )
    return replace(decision, after=tuple(after), why_after=why)


def replace_stalled(facts: JobFacts, why: str) -> Decision:
    """`watch`'s decision for a run that hangs: stop it (killed if it does not stop), restart
    the stored manifest from its checkpoint. An error where the facts leave doubt."""
    stored = facts.stored
    if stored is None or len(facts.alive) != 1 or facts.unknown:
        return _error(facts, f"{why}; but not exactly one run of it is known to be up: not acting")
    run = facts.alive[0]
    return Decision(
        facts.name,
        Action.STOP_AND_RESTART,
        stored.meta.query_version,
        f"{why}: stop it (killed if it does not stop), restart from its checkpoint",
        steps=(
            StopRun(run, stored),
            StartRun(stored, clean=False, source="the store"),
            Record(stored),
        ),
    )
