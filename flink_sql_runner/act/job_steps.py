"""Carrying out one job's decision: its steps in order, and around them the promises that need
more than one step.

- An intent record (model/intents.py) is written before the job's first side effect and moved
  forward phase by phase, so a deployer killed at any moment leaves enough for the next deploy to
  settle on evidence of the run itself.
- Before every side effect it checks that it still holds the store's lease (stores/lock.py).
- A start that ends without a healthy run is undone once that run is confirmed gone: the
  decision's rollback starts the previous run again from its checkpoint and the store keeps the
  previous manifest. A new run that cannot be confirmed gone is never joined by another: the job
  is reported, the intent kept.
- A job's first run that ends before it is healthy keeps its intent record, at phase failed with
  the error: with nothing stored of the job, it is what `status`, `stop`, `logs` and the next
  plan know it by. A submission the target refused started nothing and keeps none.
- A warm handover prepares the new run before the old one stops (PrepareRun): one that cannot
  be prepared is stopped and the job fails with the old run untouched; one that never reports
  (no room for a second driver) falls back to the cold way. A prepared run is given its go only
  after the old run is confirmed gone, and told to end on every other way out.
- The steps pause once, after the stops and before the first start, so that the scheduler
  (executor.py) can wait for the jobs this one must follow; held back there, what the stops
  stopped is started again from its checkpoint.
- Each manifest recorded (a Record step, a start that wrote and then failed) is followed by its
  history record (act/history.py): one that cannot be written is a warning line in the job's
  result, never its failure.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace
from typing import Any

from flink_sql_runner.act.history import NOT_WRITTEN, HistoryWriter
from flink_sql_runner.act.results import JobResult, first_line
from flink_sql_runner.act.runs import (
    GoNotGiven,
    Healthy,
    PreparedGone,
    PreparedRun,
    PrepareFailed,
    RunControl,
    StartFailed,
)
from flink_sql_runner.act.state_copy import CopyFailed, copied_words, copy_state
from flink_sql_runner.act.tracker import KIND_OF_ACTION, Tracker, retried
from flink_sql_runner.decide.decisions import Action, Decision
from flink_sql_runner.decide.steps import (
    Archive,
    AwaitRun,
    DropIntent,
    EndPrepared,
    PrepareRun,
    Record,
    StartRun,
    Step,
    StopRun,
)
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.offsets import read_starts
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.intents import (
    NONE_COMMITTED,
    IntentLog,
    Kind,
    Phase,
    committed_words,
    wrote_since,
)
from flink_sql_runner.model.offsets import NO_STARTS, CarryRefused, StartPlan, Starts
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import ABSENT, ANY, Stored, StoredManifest, Token
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import LeaseLost, StoreLock


class JobSteps:
    """Carries out decisions on one store through `runs`; `doing(name, steps, index)` is told
    each step as it begins."""

    def __init__(
        self,
        store: ManifestStore,
        runs: RunControl,
        lease: StoreLock | None,
        doing: Callable[[str, tuple[Step, ...], int], None],
        debug: bool = False,
        command: str = "deploy",
    ):
        """`command`: the one carrying the decisions out (deploy, watch), for the history."""
        self.store = store
        self.intents = IntentLog(store)
        self.runs = runs
        self.lease = lease
        self.doing = doing
        self.debug = debug
        self.history = HistoryWriter(store, command, lambda seconds: self.runs.sleep(seconds))
        #: Per job being carried out: its decision (what its history record tells).
        self._decisions: dict[str, Decision] = {}
        #: Per job being carried out: the token of its stored manifest, from its decision
        #: (what the plan was made on), moved on by each of its own writes.
        self._tokens: dict[str, Token] = {}
        #: What this executor's Record steps wrote, with the tokens the store answered (the
        #: deploy hands them to the store's index, so it need not read them back).
        self.recorded: dict[str, Stored] = {}
        #: Per job: its run a PrepareRun prepared, until its go (or its end).
        self._prepared: dict[str, PreparedRun] = {}
        #: Per job: the versions whose runs its StopRun steps stopped (a decision's stops and
        #: starts are carried out in two parts), so its Record can tidy a replaced one's beacon.
        self._stopped: dict[str, list[tuple[StoredManifest, int]]] = {}

    def parts(self, decision: Decision, result: JobResult) -> Parts | None:
        """The decision as a generator paused between its stops and its starts; None when
        there is nothing to carry out (`result` then says why)."""
        if decision.action is Action.ERROR:
            result.ok, result.summary, result.outcome = False, decision.reason, "failed"
            return None
        if not decision.steps:
            orphaned = decision.action is Action.ORPHANED
            result.summary = "left alone (orphaned)" if orphaned else "unchanged"
            return None
        result.outcome = "done"
        return Parts(decision, self._carry_out(decision, result), result)

    def advance(self, parts: Parts, result: JobResult, held: list[str] | None) -> bool:
        """Run the next part (the first `send` runs the stops; the second the starts, or with
        `held` the hold-back); True when the decision paused before its starts."""
        try:
            if not parts.begun:
                parts.begun = True
                next(parts.steps)
            else:
                parts.steps.send(held)
            return True
        except StopIteration:
            return False
        except FsrError as exc:
            result.ok, result.outcome = False, "failed"
            result.summary = first_line(str(exc))
            result.detail = "\n".join(str(exc).splitlines()[1:])
        except Exception as exc:  # noqa: BLE001 - one job's surprise must not stop the others
            result.ok, result.outcome = False, "failed"
            result.summary = f"unexpected error: {type(exc).__name__}: {first_line(str(exc))}"
            if self.debug:
                result.detail = traceback.format_exc()
        return False

    # -- one decision ---------------------------------------------------------------------------
    def _check(self, evidence: bool = False) -> None:
        if self.lease is not None:
            self.lease.check(evidence)

    def _fresh_lease(self, what: str) -> None:
        """Before a step that may outlast the lease's trust: renewed, or the step not begun."""
        if self.lease is not None:
            self.lease.renewed_for_step(what)

    def _carry_out(self, decision: Decision, result: JobResult) -> Generator[None, Any, None]:
        """The decision's steps; on a start that is not healthy, its rollback. Sets `result`;
        FsrError when the job failed. Pauses (yields) once, after its stops, before its first
        start; sent a list of reasons there, it holds its starts back: what it stopped is
        started again from its checkpoint (its rollback) and the job is `skipped`."""
        name = decision.name
        self._tokens[name] = decision.token
        self._decisions[name] = decision
        record = [s.manifest for s in decision.steps if isinstance(s, Record)]
        first = next((s for s in decision.steps if isinstance(s, (StopRun, StartRun))), None)
        manifest = record[-1] if record else (first.manifest if first else None)
        warm = any(isinstance(s, PrepareRun) for s in decision.steps)
        clean = any(isinstance(s, (StartRun, PrepareRun)) and s.clean for s in decision.steps)
        tracker = Tracker(self.intents, self._check, manifest, decision.action.value,
                          KIND_OF_ACTION.get(decision.action, Kind.START),
                          self.runs.submit_timeout, prepared=warm,
                          starting=_starting(decision, self.store),
                          committed_before=NONE_COMMITTED if clean else None,
                          sleep=self.runs.sleep)  # fmt: skip
        split = first_start(decision.steps)
        try:
            self._steps(decision.steps[:split], result, tracker)
            held = (yield) if split < len(decision.steps) else None
            if held:
                self._hold_back(decision, result, held, tracker)
                return
            self._steps(decision.steps[split:], result, tracker)
        except StartFailed as failure:
            # A prepared run that will not get its go is told to end before anything else of
            # the job starts (a rollback's run would be up beside it).
            if not self._end_prepared(name, f"its go will not come: {first_line(str(failure))}"):
                result.steps.append(
                    "the prepared run could not be confirmed gone: it writes nothing and ends "
                    "by itself"
                )
            if not failure.gone:
                raise FsrError(
                    f"{first_line(str(failure))}; the run may still be up, so nothing else "
                    f"is started for {name} (the next deploy settles it)"
                ) from None
            tracker.new_run = False
            ran = tracker.intent is not None and tracker.intent.phase is Phase.SUBMITTED
            try:
                tracker.to(Phase.FAILED, error=redact_text(first_line(str(failure))))
            except LeaseLost:
                raise
            except FsrError:
                pass  # evidence only: the record says what was submitted, the run is gone
            self._after_failed_start(decision, result, tracker, failure, ran)
            return
        except LeaseLost as lost:
            # Not this deploy's store any more: no cleanup either; but what it leaves is said.
            left = self._left_as(name, tracker, lost=True)
            if left is not None:
                raise LeaseLost(f"{first_line(str(lost))}; {left[1]}") from None
            raise
        except BaseException as exc:
            # A prepared run is told to end (a kill runs nothing: it ends by itself); until it
            # is confirmed gone, the record is what tells it from a writer.
            pending = name in self._prepared
            if pending and isinstance(exc, Exception):
                why = f"the deploy did not go on: {first_line(str(exc))}"
                pending = not self._end_prepared(name, why)
            left = self._left_as(name, tracker) if isinstance(exc, FsrError) else None
            if left is not None and left[0] and not pending and decision.rollback:
                # The old run stopped and nothing new runs: what it ran is started again.
                assert isinstance(exc, FsrError)
                self._undo_after(decision, result, tracker, exc)
                return
            intent = tracker.intent
            # Nothing new can exist: the old facts stand. But a stop begun and not confirmed
            # (at STOPPING) may still end the old run by its marker: the record stays, so that
            # the next command finishes that stop (decide/tree.py::_told_to_stop).
            if intent is not None and (
                intent.phase is Phase.INTENDED
                or (intent.kind is Kind.START and intent.phase is Phase.OLD_STOPPED and not pending)
            ):
                self._forget_intent(tracker)
            if left is not None:
                raise FsrError(f"{str(exc).rstrip()}; {left[1]}") from None
            raise
        if tracker.written and not self._forget_intent(tracker):
            result.steps.append("its intent record could not be deleted: the next deploy drops it")
        if not result.summary:
            said = [s for s in result.steps if not s.startswith(NOT_WRITTEN)]
            result.summary = "; ".join(said[-1:]) or "done"

    def _after_failed_start(
        self,
        decision: Decision,
        result: JobResult,
        tracker: Tracker,
        failure: StartFailed,
        ran: bool = False,
    ) -> None:
        """A start that ended without a healthy run, confirmed gone. One whose runs finished a
        batch (a new version's any batch, a restart's one after its checkpoint's last) is not
        rolled back: what it replaced would read and write again what it wrote, or resume
        after its batches. Its manifest is recorded instead and the job is left down, said so
        (`_keep_what_wrote`). Otherwise: the rollback."""
        name = decision.name
        intent = tracker.intent
        awaited = next((s for s in decision.steps if isinstance(s, AwaitRun)), None)
        if intent is not None:
            started, before = intent.manifest, intent.committed_before
        elif awaited is not None:  # an interrupted command's run: its own record stays
            started, before = awaited.manifest, awaited.committed_before
        else:
            started, before = None, None
        if started is not None and before is not None:
            try:
                now = self.runs.finished(started)
            except StartFailed as unread:
                raise FsrError(
                    f"{first_line(str(failure))}; whether v{started.meta.query_version} "
                    f"finished a batch cannot be read ({first_line(str(unread))}), so nothing "
                    f"is rolled back: the job is down, no run of {name} is up; deploy again "
                    "once its checkpoint can be read"
                ) from None
            if wrote_since(before, now):
                self._keep_what_wrote(decision, result, tracker, started, before, now, failure)
        if intent is None and not decision.rollback:
            raise failure
        if not decision.rollback:
            # A job's first run that ended before it was healthy keeps its record at FAILED:
            # nothing else is stored of the job, and `status`, `stop`, `logs` and the next plan
            # show the failure from it. A submission refused started nothing: no record.
            first = intent is not None and intent.kind is Kind.START and decision.token is ABSENT
            if not (first and ran):
                self._forget_intent(tracker)
            raise failure
        self._undo_after(decision, result, tracker, failure)
        result.detail = "\n".join(str(failure).splitlines()[1:])

    def _keep_what_wrote(
        self,
        decision: Decision,
        result: JobResult,
        tracker: Tracker,
        started: StoredManifest,
        before: int,
        now: int,
        failure: StartFailed,
    ) -> None:
        """Record the manifest of a start that wrote (its runs finished batches after `before`,
        up to `now`) and failed: it is the job's version now, down; the next deploy or `watch`
        restarts it from its own checkpoint. Raises FsrError saying so, in words."""
        name, version = decision.name, started.meta.query_version
        done = committed_words(version, before, now)
        back = next((s for s in decision.rollback if isinstance(s, StartRun)), None)
        if back is None:
            kept = f"v{version} is recorded"
        elif back.manifest.meta.query_version == version:
            kept = (
                "not rolled back (the previous manifest would resume after those batches): "
                f"v{version} is recorded with the new manifest"
            )
        else:
            old = back.manifest.meta.query_version
            kept = (
                f"not rolled back (v{old} would read again what v{version} read): "
                f"v{version} is recorded"
            )
        head = f"{first_line(str(failure))}; {done}, then failed: {kept}"
        try:
            self._check()
            token = self.store.write(started, self._tokens[name])
        except FsrError as exc:
            raise FsrError(
                f"{head.removesuffix(' is recorded')}; but recording it failed "
                f"({first_line(str(exc))}): the job is down, no run of {name} is up; the next "
                "deploy records it"
            ) from None
        self._tokens[name] = token
        self.recorded[name] = Stored(started, token)
        unwritten = self._write_history(
            decision, started, f"{done}, then failed: recorded, the job down"
        )
        if unwritten:
            result.steps.append(unwritten)
        if tracker.written:
            self._forget_intent(tracker)
        else:  # the interrupted command's record: what it started is recorded now
            try:
                self.intents.delete(name)
            except FsrError:
                pass  # the next deploy settles it on the same evidence: it wrote
        raise FsrError(
            f"{head}, and the job is down: no run of {name} is up; fix it and deploy again "
            f"(`watch` restarts v{version} from its checkpoint)"
        ) from None

    def _roll_back(self, decision: Decision, result: JobResult, undone: Tracker) -> None:
        """Start the previous manifest again from its checkpoint, under an intent of its own
        that replaces the record of the start it undoes (a rollback's start is as much a start
        as any other): StartFailed if it fails."""
        back = next(s for s in decision.rollback if isinstance(s, StartRun))
        over = undone.token if undone.written else ANY  # replacing an interrupted one's record
        tracker = Tracker(self.intents, self._check, back.manifest, "rollback", Kind.ROLLBACK,
                          self.runs.submit_timeout, over=over, sleep=self.runs.sleep)  # fmt: skip
        try:
            self._steps(decision.rollback, result, tracker)
        except StartFailed as again:
            if again.gone:
                tracker.forget()
            raise
        tracker.forget()

    def _hold_back(
        self, decision: Decision, result: JobResult, held: list[str], tracker: Tracker
    ) -> None:
        """Skip the starts of `decision`; a run its stops stopped starts again from its
        checkpoint, the store unchanged."""
        result.ok, result.outcome = False, "skipped"
        result.summary = f"skipped: held back, {'; '.join(held)}"
        self._end_prepared(decision.name, f"held back: {'; '.join(held)}")
        if not tracker.written:
            return
        if not decision.rollback:
            result.summary += "; it stays stopped (no previous run to start again)"
            tracker.forget()
            return
        self._undo_after(decision, result, tracker, FsrError(f"held back ({'; '.join(held)})"))
        back = next(s for s in decision.rollback if isinstance(s, StartRun))
        result.ok, result.outcome = False, "skipped"
        result.summary = (
            f"skipped: held back, {'; '.join(held)}; v{back.manifest.meta.query_version} "
            "running again from its checkpoint, the store unchanged"
        )

    def _left_as(self, name: str, tracker: Tracker, lost: bool = False) -> tuple[bool, str] | None:
        """What a job whose steps failed after they stopped its run is left as: (down, in
        words); down when no run of it may be up, so that what was stopped may be started
        again. None when they stopped nothing. `lost`: the lease was lost, so another deploy
        (the one holding the store now, or the next) settles it from the record."""
        stopped = self._stopped.get(name)
        if not stopped:
            return None
        old = stopped[-1][1]
        intent = tracker.intent
        new = f"v{intent.version}" if intent is not None else "the new run"
        next_one = "the deploy holding the store now, or the next, " if lost else "the next deploy "
        if tracker.healthy:
            return False, (
                f"{new} runs and is healthy, but its record could not be written: "
                f"{next_one}records it"
            )
        if tracker.new_run:
            if intent is not None and intent.prepared:
                return False, (
                    f"v{old} was stopped; whether the prepared {new} had its go cannot be "
                    f"told (the storage did not answer): {next_one}settles it"
                )
            return False, f"v{old} was stopped and {new} may be up: {next_one}settles it"
        what = f"the job is down: v{old} was stopped and no run of it is up"
        return True, f"{what}; {next_one}starts it" if lost else f"{what}; deploy again"

    def _undo_after(
        self, decision: Decision, result: JobResult, tracker: Tracker, exc: FsrError
    ) -> None:
        """The decision's rollback, after the old run stopped and a start failed (its run
        confirmed gone, having written nothing), or another step did (a record the store would
        not take, even asked again, with nothing new submitted): the run it stopped is started
        again from its checkpoint, the store unchanged. Where that fails too, an error that
        says what the job is left as."""
        name = decision.name
        try:
            self._roll_back(decision, result, tracker)
        except LeaseLost as lost:
            said = self._left_as(name, tracker, lost=True)
            down = said[1] if said is not None else ""
            raise LeaseLost(f"{first_line(str(exc))}; {first_line(str(lost))}; {down}") from None
        except FsrError as again:
            up = isinstance(again, StartFailed) and not again.gone
            said = self._left_as(name, tracker)
            left = (
                "its run may still be up: the next deploy settles it"
                if up
                else said[1]
                if said is not None and said[0]
                else f"the job is down: no run of {name} is up; deploy again"
            )
            raise FsrError(
                f"{first_line(str(exc))}; and the rollback failed too: "
                f"{first_line(str(again))}; {left}"
            ) from None
        back = next(s for s in decision.rollback if isinstance(s, StartRun))
        result.ok, result.outcome = False, "rolled-back"
        result.summary = (
            f"rolled back: v{back.manifest.meta.query_version} running again from its "
            f"checkpoint, the store unchanged ({first_line(str(exc))})"
        )

    def _forget_intent(self, tracker: Tracker) -> bool:
        """Delete the record; False where the store would not (the next deploy drops it on
        the same evidence)."""
        try:
            tracker.forget()
        except LeaseLost:
            raise
        except FsrError:
            return False
        return True

    def _steps(self, steps: tuple[Step, ...], result: JobResult, tracker: Tracker) -> None:
        ran_on: str | None = None  # the Spark the healthy run of these steps reported
        stopped = self._stopped.setdefault(result.name, [])
        for index, step in enumerate(steps):
            self.doing(result.name, steps, index)
            self._check()
            if isinstance(step, DropIntent):
                self.intents.delete(result.name)
                record = (
                    "the record of its failed start"
                    if step.failed_start
                    else "the intent record of an interrupted command"
                )
                result.steps.append(f"dropped {record} ({step.why})")
            elif isinstance(step, StopRun):
                if result.name in self._prepared:  # a warm handover: its new run is ready
                    self.runs.in_a_batch(step.manifest)
                self._fresh_lease(f"stop {result.name}")
                tracker.to(Phase.INTENDED)
                tracker.to(Phase.STOPPING)
                how = self.runs.stop(step.run, step.manifest)
                old_version = step.run.version or step.manifest.meta.query_version
                stopped.append((step.manifest, old_version))  # known before it is recorded
                tracker.to(Phase.OLD_STOPPED)
                result.steps.append(f"stopped v{step.run.version}: {how}")
            elif isinstance(step, PrepareRun):
                self._prepare(step, result, tracker)
            elif isinstance(step, EndPrepared):
                prepared = self._as_prepared(step.run, step.manifest)
                self.runs.abort(prepared, "an interrupted deploy prepared it; no go will come")
                result.steps.append(f"ended {step.run.describe()}, prepared and never given its go")
            elif isinstance(step, StartRun):
                prepared = self._prepared.get(result.name) if step.prepared else None
                if step.prepared and prepared is None:
                    result.steps.append("no run was prepared: started the cold way")
                healthy = self._start(step, result, tracker, prepared)
                tracker.healthy = True
                self._evidence(tracker, Phase.HEALTHY)
                ran_on = healthy.spark_version
                if step.continues is not None:  # started on the copy, as a restart
                    how = f"from v{step.continues.meta.query_version}'s state"
                else:
                    how = "clean" if step.clean else "from checkpoint"
                version = step.manifest.meta.query_version
                result.steps.append(f"started v{version} ({healthy.run.detail})")
                result.summary = (
                    f"running v{version} ({how}), healthy after {healthy.seconds:.1f} s"
                )
            elif isinstance(step, AwaitRun):
                control = self.runs.control(step.manifest, step.run.version)
                self._fresh_lease(f"wait for {result.name}")
                if step.go is not None:  # the old run was confirmed gone by the interrupted deploy
                    healthy = self.runs.go(self._as_prepared(step.run, step.manifest), step.go)
                else:
                    healthy = self.runs.await_healthy(step.run, control)
                tracker.healthy = True
                self._evidence(tracker, Phase.HEALTHY)
                ran_on = healthy.spark_version
                result.steps.append(f"{step.run.describe()} became healthy")
                result.summary = (
                    f"running v{step.run.version}, healthy after {healthy.seconds:.1f} s"
                )
            elif isinstance(step, Record):
                manifest = step.manifest
                if ran_on:  # what the run just started reported: the store keeps it
                    manifest = replace(manifest, meta=replace(manifest.meta, spark_version=ran_on))
                token = self._tokens[result.name]
                self._tokens[result.name] = retried(
                    lambda m=manifest, t=token: self.store.write(m, t),  # type: ignore[misc]
                    self.runs.sleep,
                    self._check,
                )
                self.recorded[result.name] = Stored(manifest, self._tokens[result.name])
                mark("recorded", job=result.name)
                version = step.manifest.meta.query_version
                result.steps.append(f"recorded v{version}")
                unwritten = self._write_history(self._decisions[result.name], manifest)
                if unwritten:
                    result.steps.append(unwritten)
                for old, old_version in self._stopped.pop(result.name, []):
                    if old_version != version:  # replaced for good: its beacon only costs listings
                        self.runs.drop_beacon(old, old_version)
                if result.summary:
                    result.summary += "; manifest recorded"
                elif step.manifest.job.get("desired-state") == "stopped":
                    result.summary = "stopped with its checkpoint; stays stopped"
            elif isinstance(step, Archive):
                where = self.store.archive(step.name, self._tokens[result.name])
                for old, old_version in self._stopped.pop(result.name, []):
                    self.runs.drop_beacon(old, old_version)  # no watcher looks at it again
                result.summary = f"pruned: checkpoint kept, manifest archived to {where}"

    def _write_history(
        self, decision: Decision, manifest: StoredManifest, note: str | None = None
    ) -> str | None:
        """The history record of `manifest`, just recorded by `decision`; None when written,
        else the warning line (it never fails the job)."""
        changes = [change.to_dict() for change in decision.changes]
        return self.history.write(manifest, decision.action.value, decision.reason,
                                  self._check, changes, note)  # fmt: skip

    # -- starts ----------------------------------------------------------------------------------
    def _starts(self, tracker: Tracker, result: JobResult) -> Starts:
        """Where the new run's Kafka sources start, resolved now that the previous version has
        stopped, from the plan its intent record holds; StartFailed (nothing started) when a
        carry is not exact any more or the checkpoint cannot be read: never `latest` instead."""
        plan = tracker.starting
        if plan is None:
            return NO_STARTS
        try:
            starts = read_starts(self.runs.storage, plan)
        except CarryRefused as exc:
            raise StartFailed(str(exc), True) from None
        except FsrError as exc:
            raise StartFailed(f"cannot read where v{plan.version} stopped: {exc}", True) from None
        result.steps += starts.notes
        return starts

    def _start(
        self, step: StartRun, result: JobResult, tracker: Tracker, prepared: PreparedRun | None
    ) -> Healthy:
        """Start `step`'s manifest and wait until healthy: the prepared run given its go, or
        (none, or it ended before its go) a run submitted now. Either is given the starts its
        intent record holds from then on."""
        self._fresh_lease(f"start {result.name}")
        tracker.to(Phase.INTENDED)
        found = None if step.clean else self.runs.finished(step.manifest, True)
        before = NONE_COMMITTED if found is None else found
        starts = self._starts(tracker, result)
        if step.continues is not None:  # never prepared: the copy waits for the old run's stop
            before = self._continue_from(step, result, tracker)
        if prepared is not None:
            tracker.to(Phase.SUBMITTED, prepared.run.submission_id, committed_before=before,
                       starts=starts)  # fmt: skip
            del self._prepared[result.name]  # its go may be given from here on: not ended
            tracker.new_run = True
            try:
                return self.runs.go(prepared, starts)
            except PreparedGone as gone:
                result.steps.append(f"{gone}: started the cold way")
                tracker.fresh_run()
            except GoNotGiven:
                tracker.new_run = False  # it waits, having read nothing: it is ended
                self._prepared[result.name] = prepared
                raise
        tracker.to(Phase.SUBMITTING, committed_before=before, starts=starts)
        tracker.new_run = True
        return self.runs.start(
            step.manifest,
            step.clean and step.continues is None,  # a continued one starts on its copy
            tracker.run_id,
            step.source,
            on_submitted=lambda run: self._evidence(tracker, Phase.SUBMITTED, run.submission_id),
            before_wait=lambda: self._fresh_lease(f"wait for {result.name}"),
            starts=starts,
        )

    def _continue_from(self, step: StartRun, result: JobResult, tracker: Tracker) -> int:
        """Copy the state of the version `step` continues from (its run confirmed gone) into the
        new version's empty checkpoint folder (act/state_copy.py); the last batch that version
        finished, what the copy holds as finished. It is in the start's record before the copy
        begins: a copy cut short holds that version's batches, not the new version's writes, so
        it is rolled back (a run that finishes a later one wrote: it is never rolled back over).
        StartFailed, nothing started, when it cannot be copied: the rollback starts the old
        version again on its own checkpoint, untouched."""
        old = step.continues
        assert old is not None
        self._fresh_lease(f"copy the state of {result.name}")
        found = self.runs.finished(old, True)
        before = NONE_COMMITTED if found is None else found
        if tracker.intent is not None:
            tracker.to(tracker.intent.phase, committed_before=before)
        try:
            files, size = copy_state(
                self.runs.storage, old.checkpoint, step.manifest.checkpoint, self._check,
                self.runs.sleep,
            )  # fmt: skip
        except CopyFailed as exc:
            raise StartFailed(
                f"cannot continue from v{old.meta.query_version}'s state: {exc}", True
            ) from None
        result.steps.append(copied_words(old.meta.query_version, files, size))
        return before

    def _evidence(self, tracker: Tracker, phase: Phase, submission_id: str | None = None) -> None:
        """Move the record to a phase that only says what already happened (the target took
        the run, the run is healthy): where the store will not take it, even asked again, the
        record's phase before it says enough (a run of its version may be up), and the start
        goes on."""
        try:
            tracker.to(phase, submission_id)
        except LeaseLost:
            raise
        except FsrError:
            pass

    def _prepare(self, step: PrepareRun, result: JobResult, tracker: Tracker) -> None:
        """Prepare the new run beside the old one. A pre-flight that fails ends the job's
        steps with the old run untouched; a run not ready in time leaves the cold way open."""
        name = result.name
        self._fresh_lease(f"prepare {name}")
        tracker.to(Phase.INTENDED)
        tracker.to(Phase.PREPARING)
        try:
            prepared = self.runs.prepare(
                step.manifest,
                step.clean,
                tracker.run_id,
                step.source,
                on_submitted=lambda run: tracker.to(Phase.PREPARING, run.submission_id),
                before_wait=lambda: self._fresh_lease(f"wait for {name} to be ready"),
            )
        except PrepareFailed as failed:
            version = f"v{step.manifest.meta.query_version}"
            if failed.cold:
                tracker.fresh_run()
                result.steps.append(
                    f"could not prepare {version}: {first_line(str(failed))}; handing over "
                    "the cold way (stop, then start)"
                )
                return
            tracker.forget()
            raise FsrError(
                f"pre-flight failed: {str(failed).rstrip()}; v{step.beside} untouched, still "
                "running"
            ) from None
        self._prepared[name] = prepared
        result.steps.append(
            f"prepared v{step.manifest.meta.query_version} in {prepared.seconds:.1f} s "
            f"({prepared.run.detail}) while v{step.beside} ran"
        )

    def _end_prepared(self, name: str, why: str) -> bool:
        """Tell a run prepared for `name` that its go will not come; True once it is confirmed
        gone (or there was none). It writes nothing, and ends by itself anyway."""
        prepared = self._prepared.pop(name, None)
        if prepared is None:
            return True
        try:
            self.runs.abort(prepared, why)
        except FsrError:
            return False
        return True

    def _as_prepared(self, run: Run, manifest: StoredManifest) -> PreparedRun:
        """A run an interrupted warm handover prepared, as `go` and `abort` take it."""
        control = self.runs.control(manifest, run.version)
        return PreparedRun(run, manifest, control.prepared(run.run_id), 0.0, {})


def _starting(decision: Decision, store: ManifestStore) -> StartPlan | None:
    """Where the new version of `decision` starts its Kafka sources, as planned, a declared "now
    minus" made a timestamp now on the store's clock (every deployer's times agree on it, and
    with the records' ages): once, for the intent record written before anything stops."""
    for step in decision.steps:
        if isinstance(step, StartRun) and step.starting is not None:
            if not step.starting.relative:
                return step.starting
            try:
                now = store.clock()
            except FsrError as exc:
                raise FsrError(
                    f"cannot read the store's clock ({first_line(str(exc))}), so where its Kafka "
                    "sources start (now minus an interval) cannot be made a time; nothing was "
                    "stopped or started"
                ) from None
            made = step.starting.at(int(now * 1000))
            if any(s.start is not None and (s.start.ms or 0) < 0 for s in made.sources):
                raise FsrError(
                    f"where its Kafka sources start comes to before 1970 by the store's clock "
                    f"(now {int(now)} s after the epoch there); nothing was stopped or started"
                )
            return made
    return None


@dataclass
class Parts:
    """A decision being carried out: `JobSteps._carry_out`'s generator and its result."""

    decision: Decision
    steps: Generator[None, Any, None]
    result: JobResult
    begun: bool = False


def first_start(steps: tuple[Step, ...]) -> int:
    """Where a decision's starts begin: its first StartRun or AwaitRun (len(steps) if none)."""
    for i, step in enumerate(steps):
        if isinstance(step, (StartRun, AwaitRun)):
            return i
    return len(steps)
