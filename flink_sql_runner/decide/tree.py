"""The decision tree: from one job's gathered facts to its decision, following SPEC's table, with
the reason in words and the steps that carry it out. Nothing here acts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from flink_sql_runner.decide import contracts
from flink_sql_runner.decide.changes import Change, ChangeKind, diff, severity
from flink_sql_runner.decide.decisions import Action, Decision
from flink_sql_runner.decide.offsets import (
    Refused,
    first_starts,
    kafka_at_all,
    kafka_at_default,
    kafka_starts,
)
from flink_sql_runner.decide.state import check as check_state
from flink_sql_runner.decide.steps import (
    Archive,
    AwaitRun,
    DropIntent,
    EndPrepared,
    Record,
    StartRun,
    Step,
    StopRun,
    checkpoint_location,
)
from flink_sql_runner.model.facts import CheckpointFacts, JobFacts
from flink_sql_runner.model.intents import FailedStart, Kind, Outcome, Phase
from flink_sql_runner.model.offsets import NO_STARTS
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.same import unchanged
from flink_sql_runner.model.sparkversion import is_older, version_tuple
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.kafka_start import KafkaStart
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
    return Decision(facts.name, Action.ERROR, version, reason, tuple(changes), token=facts.token)


def describe_runs(runs: tuple[Run, ...]) -> str:
    return ", ".join(r.describe() for r in runs)


def decide(
    facts: JobFacts,
    prune: bool = False,
    spark: str | None = None,
    kafka_start: KafkaStart | None = None,
    now_ms: int | None = None,
    on_state_change: str | None = None,
) -> Decision:
    """One job's decision, following SPEC's decision tree, with its reason in words; a start
    that would break its sink's readers is refused (decide/contracts.py). `kafka_start`: the
    deploy's `--kafka-start`, where a new version's Kafka sources start (decide/offsets.py).
    `now_ms`: now on the store's clock, as gathered, where a start is now minus an interval:
    made a time then, so that the plan shows the time that runs (a saved plan too).
    `on_state_change`: the deploy's `--on-state-change`, over the job's (decide/state.py).

    An intent record left by an interrupted command is settled first, by its own rules
    (model/intents.py): what took effect is completed (recorded, or archived), a run that is up
    is waited for and recorded, what never took effect is dropped and the stored manifest
    stands; while its run may exist, nothing is started or recorded for the job.
    """
    asked = Asked(prune, spark, kafka_start, now_ms)
    decision = contracts.check(_settled_decision(facts, asked), facts)
    return check_state(decision, facts, on_state_change, spark)


@dataclass(frozen=True)
class Asked:
    """What the command asks of every decision: `--prune`, the Spark the target runs jobs on
    (when it can tell), the deploy's `--kafka-start`."""

    prune: bool = False
    spark: str | None = None
    kafka_start: KafkaStart | None = None
    now_ms: int | None = None  # now on the store's clock: "now minus" starts made a time


def _settled_decision(facts: JobFacts, asked: Asked) -> Decision:
    if facts.problem:
        return error(facts, f"cannot be decided: {facts.problem}")
    if facts.unknown:
        return error(
            facts,
            f"cannot tell whether it runs: {describe_runs(facts.unknown)}; nothing is stopped or "
            "started while a run may be alive (deploy again once the target answers, or stop it "
            "there)",
        )
    if facts.intent is None:
        return _decide(facts, asked)
    failed = facts.intent.intent.failed_start
    if failed is not None:
        return replace(_settled(facts, asked), failed_start=failed)
    return _settled(facts, asked)


def _settled(facts: JobFacts, asked: Asked) -> Decision:
    settled = settle_intent(facts, asked.prune)
    if isinstance(settled, Decision):
        return settled
    adopted, prefix, rollback, note = settled
    decision = _decide(adopted, asked)
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


def settle_intent(
    facts: JobFacts, prune: bool = False
) -> Decision | tuple[JobFacts, tuple[Step, ...], tuple[Step, ...], str]:
    """The steps that settle `facts`' intent, the facts as they stand once it is settled, the
    rollback of awaiting its run and the reason so far; or the job's decision when nothing else
    may be decided for it now."""
    assert facts.intent is not None
    settled, checkpoint = facts.intent.settled, facts.intent.checkpoint
    intent = settled.intent
    what = intent.describe()
    if settled.outcome is Outcome.UNKNOWN:
        return error(
            facts,
            f"{what}: {settled.why}; nothing is started or recorded for it until that is known",
            intent.version,
        )
    # A version an interrupted start may have submitted a run of (or prepared one) is never
    # started clean again; one stopped before that wrote nothing of it.
    begun = intent.phase.submitted or intent.phase is Phase.FAILED or intent.prepared
    if begun and facts.checkpoint is not None and facts.checkpoint.highest_version < intent.version:
        facts = replace(facts, checkpoint=replace(facts.checkpoint, highest_version=intent.version))
    # A run it prepared and never gave its go is not the job's run: it is ended, not decided on.
    untouched = replace(facts, intent=None, runs=facts.writers)
    note = f"{what}: {settled.why}; "
    failed = intent.failed_start
    if failed is not None and settled.outcome is Outcome.NOT_TAKEN:
        return _after_failed_start(untouched, failed, prune)
    left_up = _start_left_up(facts)
    if left_up is not None:
        # What runs is what that start meant to record: adopted as its UP branch adopts it.
        manifest = _as_started(intent.manifest, facts.desired)
        adopted = replace(untouched, stored=manifest, checkpoint=checkpoint)
        drop = DropIntent("the run it was to stop is up: a start's, recorded instead")
        why = (
            f"it was to stop v{intent.version}, which an interrupted start left up and the store "
            "does not record: wait until it is healthy, record it; "
        )
        return adopted, (AwaitRun(left_up, manifest), Record(manifest), drop), (), note + why
    told = _told_to_stop(facts)
    if told is not None and facts.stored is not None:
        # Its stop marker may still be there, and the run ending by it: the stop is finished
        # (confirmed), and what the job wants decided on a job that does not run.
        drop = DropIntent(f"it did not take effect: {settled.why}")
        why = (
            f"{told.describe()} was told to stop and may yet end by it: stop it, then "
            "decide as for a job that does not run; "
        )
        stopping = replace(untouched, runs=tuple(r for r in untouched.runs if r is not told))
        waiting = [r for r in facts.runs if intent.waits_for_go and r.run_id == intent.run_id]
        ends = tuple(EndPrepared(run, intent.manifest) for run in waiting)
        return stopping, (*ends, drop, StopRun(told, facts.stored)), (), note + why
    if settled.outcome is Outcome.NOT_TAKEN:
        drop = DropIntent(f"it did not take effect: {settled.why}")
        left = [r for r in facts.runs if intent.waits_for_go and r.run_id == intent.run_id]
        ends = tuple(EndPrepared(run, intent.manifest) for run in left)
        return untouched, (*ends, drop), (), note
    if intent.kind is Kind.STOP:
        recorded = (Record(intent.manifest), DropIntent("its stop took effect"))
        return replace(untouched, stored=intent.manifest), recorded, (), note + "record it; "
    if intent.kind is Kind.PRUNE:
        if facts.desired is not None:  # back under --path: not pruned after all
            return untouched, (DropIntent("the job is back under --path"),), (), note
        archive = (Archive(facts.name), DropIntent("its prune took effect"))
        return Decision(facts.name, Action.PRUNE, intent.version, note + "archive its manifest",
                        steps=archive)  # fmt: skip
    if intent.kind is Kind.ROLLBACK:
        if settled.outcome is Outcome.UP and not settled.healthy:
            assert settled.run is not None
            steps = (AwaitRun(settled.run, intent.manifest), DropIntent("its run is up"))
            return untouched, steps, (), note + "wait until it is healthy; "
        return untouched, (DropIntent(f"the rollback took effect: {settled.why}"),), (), note
    if settled.waiting and not _same_job(facts.desired, intent.manifest):
        # Its prepared run never had its go, and the job changed again since: that run read
        # nothing, so the change is planned from the version that read last (the stored one,
        # stopped), never on top of a version that has nothing to carry.
        assert settled.run is not None
        end = EndPrepared(settled.run, intent.manifest)
        why = (
            f"v{intent.version}'s prepared run never had its go, and the job changed since: "
            f"it is ended and the change planned from v{_stored_version(facts)}"
        )
        return untouched, (end, DropIntent(why)), (), note + why + "; "
    adopted = replace(untouched, stored=intent.manifest, checkpoint=checkpoint)
    if settled.waiting:  # it is the job's run from its go on, given now
        assert settled.run is not None
        adopted = replace(adopted, runs=(*adopted.runs, settled.run))
    if settled.outcome is Outcome.TOOK_EFFECT or settled.healthy:
        return (
            adopted,
            (Record(intent.manifest), DropIntent("it took effect")),
            (),
            note + ("record it; "),
        )
    assert settled.run is not None
    go = None
    if intent.prepared:  # its go, given again or for the first time: with the starts recorded
        go = (
            intent.starts
            if intent.starts is not None or kafka_at_all(intent.manifest)
            else NO_STARTS
        )
        if go is None:
            return error(
                facts,
                f"{what}: {settled.why}; its record (of an older release) does not say where "
                "its Kafka sources start, so it is not given its go; stop the job "
                f"(`flink-sql-runner stop {facts.name}`) and deploy again",
                intent.version,
            )
    steps = (AwaitRun(settled.run, intent.manifest, go=go,
                      committed_before=intent.committed_before),
             Record(intent.manifest), DropIntent("its run is up"))  # fmt: skip
    rollback: tuple[Step, ...] = ()
    # A run that fails is undone by starting the stored manifest again, but only where its
    # record says what was finished before it: one that finished a batch since is kept
    # instead (act/job_steps.py; a record of an older release cannot tell: no rollback).
    if (
        facts.stored is not None
        and intent.action.startswith("stop-and-")
        and intent.committed_before is not None
    ):
        rollback = (StartRun(facts.stored, clean=False, source="the store"),)
    return adopted, steps, rollback, note + "wait until it is healthy, record it; "


def _told_to_stop(facts: JobFacts) -> Run | None:
    """The run an interrupted stop (`stop NAME`'s, a prune's, or a deploy's before its start)
    told to stop and could not confirm gone: its stop marker was written, so it may end by
    itself at any time. None if the job's intent is no such stop, or more than one run is up
    (an error elsewhere)."""
    assert facts.intent is not None
    settled = facts.intent.settled
    intent = settled.intent
    if settled.outcome is not Outcome.NOT_TAKEN or intent.kind is Kind.ROLLBACK:
        return None
    stops = (Phase.STOPPING, Phase.OLD_STOPPED) if not intent.kind.starts else (Phase.STOPPING,)
    if intent.phase not in stops or len(facts.alive) != 1:
        return None
    run = facts.alive[0]
    stored = facts.stored
    if stored is None or run.version not in (None, stored.meta.query_version):
        return None
    return run


def _same_job(desired: Job | None, manifest: StoredManifest) -> bool:
    """Whether `desired` is the job `manifest` was made of: nothing of it changed (None, a job
    no longer under --path: the same, what runs is kept as it was)."""
    if desired is None:
        return True
    job, tables = desired.resolved(manifest.job, manifest.tables)
    return severity(diff(job, tables, desired.spec, desired.tables)) is ChangeKind.NONE


def _stored_version(facts: JobFacts) -> str:
    return str(facts.stored.meta.query_version) if facts.stored is not None else "none"


def _start_left_up(facts: JobFacts) -> Run | None:
    """The run of an interrupted start that a stop, interrupted before it stopped it, was to
    stop; None if the job's intent is not such a stop. `stop NAME` records a start's manifest
    whose run is up, stopped (act/stop.py): its own intent, written over the start's, carries
    that manifest, of a version the store does not record. So a stop intent that did not take
    effect, of another version than the store's, whose one run up is of its version, stands
    for that start: its run is up, and it is completed as a start's would be."""
    assert facts.intent is not None
    settled = facts.intent.settled
    intent = settled.intent
    if intent.kind is not Kind.STOP or settled.outcome is not Outcome.NOT_TAKEN:
        return None
    if facts.stored is None or facts.stored.meta.query_version == intent.version:
        return None
    alive = facts.alive
    if len(alive) != 1 or alive[0].version != intent.version:
        return None
    return alive[0]


def _as_started(manifest: StoredManifest, desired: Job | None) -> StoredManifest:
    """A start's manifest from the stopped copy a stop's intent carries (`as_stopped`): its
    desired-state as the job file writes it (a start is of a job that runs)."""
    job = dict(manifest.job)
    if desired is not None and "desired-state" not in desired.spec:
        job.pop("desired-state", None)
    else:
        job["desired-state"] = "running"
    return replace(manifest, job=job)


def _after_failed_start(
    facts: JobFacts, failed: FailedStart, prune: bool
) -> Decision | tuple[JobFacts, tuple[Step, ...], tuple[Step, ...], str]:
    """A job whose first start failed (its record kept, model/intents.py): a deploy that starts
    it again drops the record first; one whose job left git keeps it (nothing runs: not an
    orphan to stop), unless --prune, which drops it."""
    note = f"{failed.describe()}; "
    if facts.desired is None and facts.stored is None:
        if prune:
            drop = DropIntent("its manifest is no longer under --path", failed_start=True)
            return Decision(facts.name, Action.PRUNE, failed.version,
                            f"{note}its manifest is no longer under --path: drop the record "
                            "of the failed start", steps=(drop,))  # fmt: skip
        return Decision(facts.name, Action.ORPHANED, failed.version,
                        f"{note}its manifest is no longer under --path; nothing runs, left "
                        "alone (deploy --prune drops the record of the failed start)")  # fmt: skip
    return facts, (DropIntent("started again", failed_start=True),), (), note


def _decide(facts: JobFacts, asked: Asked) -> Decision:
    decision = _tree(facts, asked)
    stored = facts.stored
    if stored is None or decision.action in (Action.ERROR, Action.ORPHANED):
        return decision
    return _with_spark_versions(decision, facts, stored.meta.spark_version, asked.spark)


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


def _tree(facts: JobFacts, asked: Asked) -> Decision:
    desired, stored, checkpoint = facts.desired, facts.stored, facts.checkpoint
    name = facts.name

    def decision(action: Action, version: int | None, reason: str, changes=(), **kw: Any):
        return Decision(name, action, version, reason, tuple(changes), token=facts.token, **kw)

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
        if asked.prune:
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
        # Its Kafka sources start as declared, or as their tables say: the plan names each.
        rooted = "checkpoint-root" in manifest.job
        starting = first_starts(manifest, asked.kafka_start) if rooted else None
        if starting is not None and asked.now_ms is not None:
            starting = starting.at(asked.now_ms)
        said = starting.describe() if starting is not None else ""
        steps = (
            StartRun(manifest, clean=True, source=desired.file, starting=starting),
            Record(manifest),
        )
        reason += f"; {said}" if said else ""
        return decision(Action.START_CLEAN, version, reason, steps=steps)

    changes: list[Change] = []
    # Most jobs of a plan are stored as git has them, field for field: nothing to resolve or
    # compare (the job's paths were resolved at load, so such a manifest holds none relative).
    if not unchanged(facts):
        # A manifest stored with relative paths means them against the folder this deploy
        # runs in.
        stored_job, stored_tables = desired.resolved(stored.job, stored.tables)
        changes = diff(
            stored_job,
            stored_tables,
            desired.spec,
            desired.tables,
            asked.spark or stored.meta.spark_version,
            checkpoint.pinned if checkpoint else None,
        )
    kind = severity(changes)
    version = stored.meta.query_version
    clean_version = max(version, highest) + 1
    # What a change says, and the steps of one, are made only where the decision has them:
    # most jobs of a plan run and change nothing.
    query_reason = f"query changed ({_summary(changes, ChangeKind.QUERY)})" if changes else ""
    config_reason = f"config changed ({_summary(changes, ChangeKind.CONFIG)})" if changes else ""

    def start_clean() -> tuple[StartRun, Record, str] | Refused:
        """The clean start of a new version, its record, and what it says of where its Kafka
        sources start (or why they cannot start where this version stopped); made only where
        the decision starts one (most jobs of a plan change nothing)."""
        new_version = manifest_of(desired, Meta.new(clean_version))
        # A new version's Kafka sources start where this one stopped (decide/offsets.py); a
        # manifest converted from the original tool has no checkpoint of Spark's to start from:
        # its first version on Spark starts as declared, or as its tables say.
        starting = (
            kafka_starts(
                stored,
                new_version,
                checkpoint_location(stored),
                _latest_batch(checkpoint),
                asked.kafka_start,
            )
            if "checkpoint-root" in stored.job
            else first_starts(new_version, asked.kafka_start, "its first version on Spark")
        )
        if isinstance(starting, Refused):
            return starting
        if starting is not None and asked.now_ms is not None:
            starting = starting.at(asked.now_ms)
        said = starting.describe() if starting is not None else ""
        start = StartRun(new_version, True, desired.file, starting=starting)
        return start, Record(new_version), f"; {said}" if said else ""

    def refused(reason: str, refusal: Refused) -> Decision:
        return error(
            facts,
            f"{reason}; but {refusal.describe()}; nothing is stopped or started",
            version,
            changes,
        )

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
        if desired.desired_state == "stopped":
            return decision(
                Action.STOP,
                version,
                "desired-state is stopped: stop with checkpoint",
                changes,
                steps=(StopRun(running, stored), Record(as_stopped(stored))),
            )
        if kind is ChangeKind.NONE:
            return decision(Action.NOOP, version, "running, nothing changed")
        stop = StopRun(running, stored)
        back = (StartRun(stored, clean=False, source="the store"),)
        if kind is ChangeKind.CONFIG:
            same_version = manifest_of(desired, stored.meta)
            return decision(
                Action.STOP_AND_RESTART,
                version,
                f"{config_reason}: stop with checkpoint, restart from it",
                changes,
                steps=(stop, StartRun(same_version, False, desired.file), Record(same_version)),
                rollback=back,
            )
        reason = f"{query_reason}: stop, start clean as version {clean_version}"
        clean = start_clean()
        if isinstance(clean, Refused):
            return refused(reason, clean)
        start_new, record_new, carried = clean
        return decision(
            Action.STOP_AND_START_CLEAN,
            clean_version,
            f"{reason}{carried}",
            changes,
            steps=(stop, start_new, record_new),
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
        reason = f"not running; {query_reason}: start clean as version {clean_version}"
        clean = start_clean()
        if isinstance(clean, Refused):
            return refused(reason, clean)
        start_new, record_new, carried = clean
        return decision(
            Action.START_CLEAN,
            clean_version,
            f"{reason}{carried}",
            changes,
            steps=(start_new, record_new),
        )
    same_version = manifest_of(desired, stored.meta)
    if checkpoint is not None and checkpoint.unplanned:
        return _unplanned(facts, checkpoint.location, kind, changes, config_reason, same_version)
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


def _latest_batch(checkpoint: CheckpointFacts | None) -> tuple[Any, ...] | None:
    """The source lines of the stored version's latest batch, as the plan knows them; None
    when it has none (nothing planned, or, where its commits were read, nothing committed)."""
    if checkpoint is None or (checkpoint.inspected and checkpoint.last_committed is None):
        return None
    return checkpoint.latest_sources


def _unplanned(
    facts: JobFacts,
    where: str,
    kind: ChangeKind,
    changes: list[Change],
    config_reason: str,
    same_version: StoredManifest,
) -> Decision:
    """A stored version whose checkpoint holds only its query id: its first run was stopped
    before it planned a batch, so it read and wrote nothing. Spark starts such a checkpoint as a
    new query, every source at its configured starting position: for file and rate sources
    (from their beginning) and Kafka sources with a `startingOffsets` of their own that is
    the version's clean start again, and the file sink keeps the shift the first run fixed
    (`flink-sql-runner-sink.json`), or fixes it now as a clean start would. A Kafka source at
    its table's default would start at `latest`, not where the previous version stopped (the
    clean start carried that, decide/offsets.py): refused, since that loses data."""
    assert facts.stored is not None and facts.desired is not None
    version = facts.stored.meta.query_version
    what = (
        f"v{version}'s first run was stopped before it planned a batch ({where} holds its query "
        "id, no offsets or commits)"
    )
    at_default = kafka_at_default(same_version)
    if at_default:
        tables = ", ".join(at_default)
        return error(
            facts,
            f"not running; {what}: a restart would start Kafka source {tables} at its table's "
            "startingOffsets (default latest), not where the previous version stopped, losing "
            f"what arrived since; set startingOffsets on {tables} (the previous version's last "
            "offsets are in its checkpoint's offsets/) and deploy again, which restarts from "
            "this checkpoint there; remove it once a batch is committed (a later new version "
            "would start there too)",
            version,
            changes,
        )
    config = f"{config_reason}; " if kind is ChangeKind.CONFIG else ""
    return Decision(
        facts.name,
        Action.RESTART,
        version,
        f"not running; {config}{what}: restart from it, which Spark starts as new, every source "
        "at its configured start, as its clean start did",
        tuple(changes),
        steps=(StartRun(same_version, False, facts.desired.file), Record(same_version)),
    )


def replace_stalled(facts: JobFacts, why: str, spark: str | None = None) -> Decision:
    """`watch`'s decision for a run that hangs: stop it (killed if it does not stop), restart
    the stored manifest from its checkpoint, on the rules a deploy's restart follows: only the
    stored version's run is replaced, a job recorded as stopped is stopped and stays so, and a
    checkpoint is not restored onto an older Spark. An error where the facts leave doubt."""
    stored = facts.stored
    if facts.problem:
        return error(facts, f"{why}; but it cannot be decided: {facts.problem}")
    if stored is None or len(facts.alive) != 1 or facts.unknown:
        return error(facts, f"{why}; but not exactly one run of it is known to be up: not acting")
    if facts.intent is not None:
        return error(
            facts, f"{why}; but {facts.intent.intent.describe()} is open: left to the next deploy"
        )
    run, version = facts.alive[0], stored.meta.query_version
    if run.version is not None and run.version != version:
        return error(
            facts,
            f"{why}; but it runs v{run.version} and the store records v{version}: not replaced "
            "(the next deploy decides)",
        )
    if stored.job.get("desired-state") == "stopped":
        return Decision(
            facts.name,
            Action.STOP,
            version,
            f"{why}; it is recorded as stopped: stop it (killed if it does not stop)",
            steps=(StopRun(run, stored),),
        )
    decision = Decision(
        facts.name,
        Action.STOP_AND_RESTART,
        version,
        f"{why}: stop it (killed if it does not stop), restart from its checkpoint",
        steps=(
            StopRun(run, stored),
            StartRun(stored, clean=False, source="the store"),
            Record(stored),
        ),
    )
    return _with_spark_versions(decision, facts, stored.meta.spark_version, spark)
