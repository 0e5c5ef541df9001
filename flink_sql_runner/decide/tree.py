"""The decision tree: from one job's gathered facts to its decision, following SPEC's table, with
the reason in words and the steps that carry it out. Nothing here acts."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.changes import Change, ChangeKind, diff, severity
from flink_sql_runner.decide.decisions import Action, Decision
from flink_sql_runner.decide.steps import (
    Archive,
    AwaitRun,
    DropIntent,
    Record,
    StartRun,
    Step,
    StopRun,
)
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.sparkversion import is_older, version_tuple
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job


def _summary(changes: list[Change], kind: ChangeKind) -> str:
    fields = [c.field for c in changes if c.kind is kind]
    shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more" if len(fields) > 3 else "")
    return shown


def manifest_of(job: Job, meta: Meta) -> StoredManifest:
    return StoredManifest(job.spec, job.tables, meta)


def as_stopped(manifest: StoredManifest) -> StoredManifest:
    return replace(manifest, job={**manifest.job, "desired-state": "stopped"})


def error(facts: JobFacts, reason: str, version: int | None = None, changes=()) -> Decision:
    if version is None and facts.stored is not None:
        version = facts.stored.meta.query_version
    return Decision(facts.name, Action.ERROR, version, reason, tuple(changes))


def describe_runs(runs: tuple[Run, ...]) -> str:
    return ", ".join(r.describe() for r in runs)


def decide(facts: JobFacts, prune: bool = False, spark: str | None = None) -> Decision:
    """One job's decision, following SPEC's decision tree, with its reason in words.

    An intent record left by an interrupted deploy is settled first, on evidence of its own
    run: a run that is up is waited for and recorded; one that was healthy and is gone is
    recorded and restarted from its checkpoint; one that never took effect is dropped, and the
    manifest stored before stands.
    """
    if facts.problem:
        return error(facts, f"cannot be decided: {facts.problem}")
    if facts.unknown:
        return error(
            facts,
            f"cannot tell whether it runs: {describe_runs(facts.unknown)}; nothing is stopped or "
            "started while a run may be alive (deploy again once the target answers, or stop it "
            "there)",
        )
    settled = facts.intent
    if settled is None:
        return _decide(facts, prune, spark)
    intent = settled.intent
    what = f"an interrupted deploy's {intent.action} of v{intent.version}"
    prefix: tuple[Step, ...]
    rollback: tuple[Step, ...] = ()
    if settled.run is Liveness.UNKNOWN:
        return error(
            facts, f"{what} may be up: cannot tell ({describe_runs(facts.runs)}); not acting"
        )
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
        return error(
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
        return error(
            facts,
            f"{len(facts.alive)} runs of this job are up: {describe_runs(facts.alive)}; stop them "
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
            return error(
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
        stored.job,
        stored.tables,
        desired.spec,
        desired.tables,
        spark or stored.meta.spark_version,
        checkpoint.pinned if checkpoint else None,
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
            return error(
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
        return error(
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


def replace_stalled(facts: JobFacts, why: str) -> Decision:
    """`watch`'s decision for a run that hangs: stop it (killed if it does not stop), restart
    the stored manifest from its checkpoint. An error where the facts leave doubt."""
    stored = facts.stored
    if stored is None or len(facts.alive) != 1 or facts.unknown:
        return error(facts, f"{why}; but not exactly one run of it is known to be up: not acting")
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
