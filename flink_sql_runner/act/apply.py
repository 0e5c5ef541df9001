"""Carrying out a plan: each decision's steps, in order, for `parallelism` jobs at a time.

The executor interprets steps (steps.py); it does not re-derive why. Around them it keeps the
promises that need more than one step:

- An intent record (intents.py) is written before a job's first side effect and moved forward
  phase by phase, so a deployer killed at any moment leaves enough for the next deploy to settle
  on evidence of the run itself.
- Before every side effect it checks that it still holds the store's lease (lock.py).
- Interrupted (`interrupt()`, on the first Ctrl-C), it begins no other job but finishes the jobs
  in flight, each to the end of its steps (a job whose stops are done still gets its starts), so
  none is left half done; a job never begun writes nothing, not even an intent record.
  Interrupted again (a KeyboardInterrupt while it waits), it stops acting at once: `Abandoned`,
  the in-flight jobs' intent records left for the next deploy.
- A start counts only once its run reports a completed trigger. When it does not, the new run
  is stopped and, once it is confirmed gone, the decision's rollback runs: the previous run is
  started again from its checkpoint and the store keeps the previous manifest. A new run that
  cannot be confirmed gone is never joined by another: the job is reported, the intent kept.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Generator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from flink_sql_runner.act.progress import Progress
from flink_sql_runner.act.runtime import runtime_manifest, spark_conf
from flink_sql_runner.decide.decisions import Action, Decision, Plan
from flink_sql_runner.decide.steps import (
    Archive,
    AwaitRun,
    DropIntent,
    Record,
    StartRun,
    Step,
    StopRun,
    checkpoint_location,
)
from flink_sql_runner.errors import FsrError
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.control import HEALTHY_STATES, ControlFiles, app_name, run_status
from flink_sql_runner.model.intents import Intent, IntentLog, Phase, new_intent
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import LeaseLost, StoreLock
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Started, Submission, SubmitOutcomeUnknown, Target


@dataclass(frozen=True)
class Timeouts:
    start: float = 180.0  # until the first trigger completed
    stop: float = 60.0  # from the stop marker to a kill
    poll: float = 0.5


@dataclass
class JobResult:
    name: str
    ok: bool
    summary: str
    detail: str = ""
    steps: list[str] = field(default_factory=list)
    #: done, unchanged, failed, rolled-back, skipped (held back: a job it waits for failed),
    #: and for an interrupted deploy not-begun, left-in-flight
    outcome: str = "done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "outcome": self.outcome,
            "summary": self.summary,
            "steps": self.steps,
            "detail": self.detail,
        }


@dataclass(frozen=True)
class Healthy:
    """A run that completed a trigger, and what it reported."""

    run: Run
    seconds: float
    spark_version: str | None = None


class StartFailed(FsrError):
    """A start ended without a healthy run. `gone`: its run is confirmed gone (or never
    existed), so another may start; otherwise it may still write."""

    def __init__(self, message: str, gone: bool):
        super().__init__(message)
        self.gone = gone


class Abandoned(FsrError):
    """A deploy interrupted twice stopped at once: every job's result (`left-in-flight` for the
    jobs in flight, whose intent records stay; `not-begun`), and what those in flight were
    doing."""

    exit_code = 130

    def __init__(self, results: dict[str, JobResult], in_flight: dict[str, str]):
        doing = "; ".join(f"{name}: {what}" for name, what in in_flight.items())
        super().__init__(
            "left at once"
            + (
                f" while in flight ({doing}); the next deploy settles these from their intent "
                "records"
                if in_flight
                else ""
            )
        )
        self.results, self.in_flight = results, in_flight


def _first_line(text: str) -> str:
    lines = str(text).splitlines()
    return lines[0] if lines else ""


class Executor:
    """Carries out a plan, `parallelism` jobs at a time, each job after the jobs its decision
    names in `after`; each job's result is reported as it completes."""

    def __init__(
        self,
        store: ManifestStore,
        target: Target,
        storage: Storage,
        timeouts: Timeouts = Timeouts(),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        parallelism: int = 1,
        lease: StoreLock | None = None,
        debug: bool = False,
    ):
        self.store = store
        self.intents = IntentLog(store)
        self.target = target
        self.storage = storage
        self.timeouts = timeouts
        self.clock = clock
        self.sleep = sleep
        self.parallelism = max(1, parallelism)
        self.lease = lease
        self.debug = debug
        #: Set by interrupt(): no job is begun from then on.
        self.stopping = threading.Event()
        #: The jobs in flight: what each is doing now and what it will still do.
        self._doing: dict[str, str] = {}
        #: The jobs with steps not begun yet.
        self._todo: list[str] = []
        self._begin = threading.Lock()  # one job begins, or the deploy stops beginning jobs

    # -- interrupting -------------------------------------------------------------------------
    def interrupt(self) -> tuple[dict[str, str], list[str]]:
        """Begin no other job; the jobs in flight finish their steps. What each job in flight
        is doing, and the jobs that will not be begun."""
        with self._begin:
            self.stopping.set()
            return dict(self._doing), list(self._todo)

    def in_flight(self) -> dict[str, str]:
        with self._begin:
            return dict(self._doing)

    def _doing_now(self, name: str, steps: tuple[Step, ...], index: int) -> None:
        now = steps[index].describe()
        then = ", ".join(step.describe() for step in steps[index + 1 :])
        with self._begin:
            if name in self._doing:
                self._doing[name] = now + (f" (then {then})" if then else "")

    def _begins(self, decision: Decision) -> bool:
        """Whether `decision` may begin (it is then in flight): not once interrupted."""
        with self._begin:
            if self.stopping.is_set():
                return False
            if decision.name in self._todo:
                self._todo.remove(decision.name)
            self._doing[decision.name] = "beginning"
            return True

    def _done(self, name: str) -> None:
        with self._begin:
            self._doing.pop(name, None)
            if name in self._todo:
                self._todo.remove(name)

    # -- scheduling ---------------------------------------------------------------------------
    def apply(self, plan: Plan, progress: Progress | None = None) -> dict[str, JobResult]:
        """Every decision's result, by job name in plan order.

        A decision runs in two parts: its stops (everything before its first start), once the
        jobs in its `stop_after` have stopped; then its starts, once every job in its `after`
        is done. When one of those failed, its starts are held back (`skipped`), and what its
        stops stopped is started again from its checkpoint (its rollback).

        Once interrupted, no decision begins (`not-begun`); one whose stops are done still gets
        its starts. A KeyboardInterrupt while it waits abandons the jobs in flight: Abandoned,
        with every result so far."""
        results: dict[str, JobResult] = {}
        names = {d.name for d in plan.decisions}
        with self._begin:
            self._todo = [d.name for d in plan.decisions if d.steps]
        waiting = list(plan.decisions)  # nothing done yet
        stopped: dict[str, tuple[Decision, _Parts]] = {}  # stops done, starts waiting
        stops_done: set[str] = set()

        announced: set[str] = set()

        def announce(decision: Decision) -> None:
            """Progress says a job began when it acts, not while it waits for another."""
            if progress and decision.steps and decision.name not in announced:
                announced.add(decision.name)
                progress.started(decision.name, decision.action.value)

        def begin(decision: Decision) -> tuple[_Parts | None, JobResult]:
            if decision.steps and not self._begins(decision):
                return None, _not_begun(decision)
            result = JobResult(decision.name, True, "", outcome="unchanged")
            if _first_start(decision.steps) > 0:
                announce(decision)
            parts = self._parts(decision, result)
            if parts is not None and not self._advance(parts, result, None):
                parts = None
            return parts, result

        def resume(parts: _Parts, result: JobResult, held: list[str] | None) -> JobResult:
            if not held:
                announce(parts.decision)
            self._advance(parts, result, held)
            return result

        pool = ThreadPoolExecutor(self.parallelism, thread_name_prefix="deploy")
        running: dict[Future[Any], tuple[str, Decision]] = {}

        def finish(decision: Decision, result: JobResult) -> None:
            results[decision.name] = result
            stops_done.add(decision.name)
            self._done(decision.name)
            if progress and decision.steps and result.outcome != "not-begun":
                progress.finished(decision.name, result.ok, skipped=result.outcome == "skipped")

        try:
            index = {d.name: i for i, d in enumerate(plan.decisions)}
            while waiting or stopped or running:
                ready: list[tuple[int, str, Decision]] = []
                for decision in waiting:
                    if not any(s in names and s not in stops_done for s in decision.stop_after):
                        ready.append((index[decision.name], "begin", decision))
                for decision, _parts in stopped.values():
                    if all(a in results for a in decision.after if a in names):
                        ready.append((index[decision.name], "resume", decision))
                # Plan order within --parallelism: a job that began goes on before the next.
                for _, kind, decision in sorted(ready, key=lambda r: r[0]):
                    if len(running) >= self.parallelism:
                        break
                    if kind == "begin":
                        waiting.remove(decision)
                        running[pool.submit(begin, decision)] = ("begin", decision)
                        continue
                    _, parts = stopped.pop(decision.name)
                    before = [a for a in decision.after if a in names]
                    failed = [a for a in before if not results[a].ok]
                    held = [_why_held(a, results[a], decision) for a in failed] or None
                    running[pool.submit(resume, parts, parts.result, held)] = ("resume", decision)
                if not running:  # a cycle of `after`/`stop_after`: the plan never makes one
                    for decision in waiting:
                        finish(decision, _held_back(decision, ["in a cycle of jobs"]))
                    waiting.clear()
                    for decision, parts in stopped.values():
                        held = ["in a cycle of jobs"]
                        running[pool.submit(resume, parts, parts.result, held)] = (
                            "resume",
                            decision,
                        )
                    stopped.clear()
                    if not running:
                        break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    kind, decision = running.pop(future)
                    if kind == "resume":
                        finish(decision, future.result())
                        continue
                    parts, result = future.result()
                    stops_done.add(decision.name)
                    if parts is None:
                        finish(decision, result)
                    else:
                        stopped[decision.name] = (decision, parts)
        except KeyboardInterrupt:
            in_flight, _ = self.interrupt()
            if self.lease is not None:
                self.lease.abandon("the deploy was interrupted twice")
            pool.shutdown(wait=False, cancel_futures=True)
            for future, (kind, decision) in running.items():
                if kind == "resume" and future.done() and not future.cancelled():
                    results[decision.name] = future.result()
            left = {n: w for n, w in in_flight.items() if n not in results}
            for decision in plan.decisions:
                if decision.name in left:
                    results[decision.name] = _left_in_flight(decision, left[decision.name])
                elif decision.steps and decision.name not in results:
                    results[decision.name] = _not_begun(decision)
            raise Abandoned(
                {d.name: results[d.name] for d in plan.decisions if d.name in results}, left
            ) from None
        except BaseException:
            pool.shutdown(wait=True)
            raise
        pool.shutdown(wait=True)
        return {d.name: results[d.name] for d in plan.decisions}

    def apply_one(self, decision: Decision) -> JobResult:
        """One decision, stops and starts in one go (no other job to wait for)."""
        result = JobResult(decision.name, True, "", outcome="unchanged")
        parts = self._parts(decision, result)
        if parts is not None and self._advance(parts, result, None):
            self._advance(parts, result, None)
        return result

    def _parts(self, decision: Decision, result: JobResult) -> _Parts | None:
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
        return _Parts(decision, self._carry_out(decision, result), result)

    def _advance(self, parts: _Parts, result: JobResult, held: list[str] | None) -> bool:
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
            result.summary = _first_line(str(exc))
            result.detail = "\n".join(str(exc).splitlines()[1:])
        except Exception as exc:  # noqa: BLE001 - one job's surprise must not stop the others
            result.ok, result.outcome = False, "failed"
            result.summary = f"unexpected error: {type(exc).__name__}: {_first_line(str(exc))}"
            if self.debug:
                result.detail = traceback.format_exc()
        return False

    # -- one decision ---------------------------------------------------------------------------
    def _check(self) -> None:
        if self.lease is not None:
            self.lease.check()

    def _carry_out(self, decision: Decision, result: JobResult) -> Generator[None, Any, None]:
        """The decision's steps; on a start that is not healthy, its rollback. Sets `result`;
        FsrError when the job failed. Pauses (yields) once, after its stops, before its first
        start; sent a list of reasons there, it holds its starts back: what it stopped is
        started again from its checkpoint (its rollback) and the job is `skipped`."""
        name = decision.name
        run_id = str(uuid.uuid4())
        record = [s.manifest for s in decision.steps if isinstance(s, Record)]
        intent: Intent | None = None

        def phase(to: Phase, submission_id: str | None = None) -> None:
            """Write the intent record before the first stop or start (an interrupted deploy's
            own record, if any, stays until its DropIntent step), then move it forward."""
            nonlocal intent
            self._check()
            if intent is None:
                if to is not Phase.INTENDED:
                    return
                first = next(s for s in decision.steps if isinstance(s, (StopRun, StartRun)))
                manifest = record[-1] if record else first.manifest
                intent = new_intent(manifest, decision.action.value, run_id)
            elif to is Phase.INTENDED:
                return
            else:
                intent = intent.at(to, submission_id)
            self.intents.write(intent)

        split = _first_start(decision.steps)
        try:
            self._steps(decision.steps[:split], result, run_id, phase)
            held = (yield) if split < len(decision.steps) else None
            if held:
                self._hold_back(decision, result, held, intent is not None, phase)
                return
            self._steps(decision.steps[split:], result, run_id, phase)
        except StartFailed as failure:
            if not failure.gone:
                raise FsrError(
                    f"{_first_line(str(failure))}; the run may still be up, so nothing else "
                    f"is started for {name} (the next deploy settles it)"
                ) from None
            phase(Phase.FAILED)
            if not decision.rollback:
                self.intents.delete(name)
                raise
            phase(Phase.ROLLING_BACK)
            try:
                self._steps(decision.rollback, result, str(uuid.uuid4()), lambda *_: None)
            except StartFailed as again:
                if again.gone:
                    self.intents.delete(name)
                raise FsrError(
                    f"{_first_line(str(failure))}; and the rollback failed too: "
                    f"{_first_line(str(again))}"
                ) from None
            self.intents.delete(name)
            back = next(s for s in decision.rollback if isinstance(s, StartRun))
            result.ok, result.outcome = False, "rolled-back"
            result.summary = (
                f"rolled back: v{back.manifest.meta.query_version} running again from its "
                f"checkpoint, the store unchanged ({_first_line(str(failure))})"
            )
            result.detail = "\n".join(str(failure).splitlines()[1:])
            return
        except LeaseLost:
            raise  # not this deploy's store any more: no cleanup either
        except BaseException:
            if intent is not None and not intent.phase.submitted:
                self._forget_intent(name)  # nothing new can exist: the old facts stand
            raise
        if intent is not None or any(isinstance(s, DropIntent) for s in decision.steps):
            self.intents.delete(name)
        if not result.summary:
            result.summary = "; ".join(result.steps[-1:]) or "done"

    def _hold_back(
        self,
        decision: Decision,
        result: JobResult,
        held: list[str],
        stopped: bool,
        phase: Callable[..., None],
    ) -> None:
        """Skip the starts of `decision`; a run its stops stopped starts again from its
        checkpoint, the store unchanged."""
        result.ok, result.outcome = False, "skipped"
        result.summary = f"skipped: held back, {'; '.join(held)}"
        if not stopped:
            return
        if not decision.rollback:
            result.summary += "; it stays stopped (no previous run to start again)"
            self.intents.delete(decision.name)
            return
        phase(Phase.ROLLING_BACK)
        try:
            self._steps(decision.rollback, result, str(uuid.uuid4()), lambda *_: None)
        except StartFailed as again:
            if again.gone:
                self.intents.delete(decision.name)
            raise FsrError(
                f"held back ({'; '.join(held)}), and starting the previous run again failed: "
                f"{_first_line(str(again))}"
            ) from None
        self.intents.delete(decision.name)
        back = next(s for s in decision.rollback if isinstance(s, StartRun))
        result.ok, result.outcome = False, "skipped"
        result.summary = (
            f"skipped: held back, {'; '.join(held)}; v{back.manifest.meta.query_version} "
            "running again from its checkpoint, the store unchanged"
        )

    def _forget_intent(self, name: str) -> None:
        try:
            self.intents.delete(name)
        except FsrError:
            pass  # the next deploy drops it on the same evidence

    def _steps(
        self,
        steps: tuple[Step, ...],
        result: JobResult,
        run_id: str,
        phase: Callable[..., None],
    ) -> None:
        ran_on: str | None = None  # the Spark the healthy run of these steps reported
        for index, step in enumerate(steps):
            self._doing_now(result.name, steps, index)
            self._check()
            if isinstance(step, DropIntent):
                self.intents.delete(result.name)
                result.steps.append(
                    f"dropped the intent record of an interrupted deploy ({step.why})"
                )
            elif isinstance(step, StopRun):
                phase(Phase.INTENDED)
                how = self._stop(step.run, step.manifest)
                phase(Phase.OLD_STOPPED)
                result.steps.append(f"stopped v{step.run.version}: {how}")
            elif isinstance(step, StartRun):
                phase(Phase.INTENDED)
                phase(Phase.SUBMITTING)
                healthy = self.start(
                    step.manifest,
                    step.clean,
                    run_id,
                    step.source,
                    on_submitted=lambda run: phase(Phase.SUBMITTED, run.submission_id),
                )
                phase(Phase.HEALTHY)
                ran_on = healthy.spark_version
                how = "clean" if step.clean else "from checkpoint"
                version = step.manifest.meta.query_version
                result.steps.append(f"started v{version} ({healthy.run.detail})")
                result.summary = (
                    f"running v{version} ({how}), healthy after {healthy.seconds:.1f} s"
                )
            elif isinstance(step, AwaitRun):
                control = self._control(step.manifest, step.run.version)
                healthy = self.await_healthy(step.run, control)
                phase(Phase.HEALTHY)
                ran_on = healthy.spark_version
                result.steps.append(f"{step.run.describe()} became healthy")
                result.summary = (
                    f"running v{step.run.version}, healthy after {healthy.seconds:.1f} s"
                )
            elif isinstance(step, Record):
                manifest = step.manifest
                if ran_on:  # what the run just started reported: the store keeps it
                    manifest = replace(manifest, meta=replace(manifest.meta, spark_version=ran_on))
                self.store.write(manifest)
                mark("recorded", job=result.name)
                result.steps.append(f"recorded v{step.manifest.meta.query_version}")
                if result.summary:
                    result.summary += "; manifest recorded"
                elif step.manifest.job.get("desired-state") == "stopped":
                    result.summary = "stopped with its checkpoint; stays stopped"
            elif isinstance(step, Archive):
                where = self.store.archive(step.name)
                result.summary = f"pruned: checkpoint kept, manifest archived to {where}"

    # -- stopping and starting ------------------------------------------------------------------
    @staticmethod
    def _control(manifest: StoredManifest, version: int | None) -> ControlFiles:
        root = str(manifest.job["checkpoint-root"]).rstrip("/")
        return ControlFiles.of(f"{root}/{manifest.name}", version or manifest.meta.query_version)

    def _stop(self, run: Run, manifest: StoredManifest) -> str:
        """Stop `run` and return how; StopNotConfirmed (nothing is started then) when the
        target cannot confirm it is gone."""
        control = self._control(manifest, run.version)
        mark("stopping", job=run.name)
        stopped = self.target.stop(run, control.stop_marker, self.timeouts.stop)
        mark("stopped", job=run.name)
        self.storage.delete(control.stop_marker)
        return stopped.how

    def start(
        self,
        manifest: StoredManifest,
        clean: bool,
        run_id: str | None = None,
        source: str = "",
        on_submitted: Callable[[Run], None] | None = None,
    ) -> Healthy:
        """Start one run and wait until it is healthy. StartFailed otherwise, saying whether
        the run is confirmed gone."""
        version = manifest.meta.query_version
        run_id = run_id or str(uuid.uuid4())
        control = self._control(manifest, version)
        location = checkpoint_location(manifest)
        if clean and not self.storage.is_empty(location):
            raise StartFailed(
                f"refusing a clean start: checkpoint folder {location} is not empty", True
            )
        try:
            document = runtime_manifest(manifest, run_id, control, source or manifest.name)
            plain, secret = spark_conf(manifest, source or manifest.name)
        except FsrError as exc:
            raise StartFailed(str(exc), True) from None
        self.storage.delete(control.stop_marker)
        self.storage.delete(control.status_file)
        self.storage.write_text(
            control.runtime_manifest, json.dumps(document, indent=2), private=True
        )
        submission = Submission(
            name=manifest.name,
            version=version,
            run_id=run_id,
            app_name=app_name(manifest.name, version),
            runtime_manifest=control.runtime_manifest,
            spark_conf=plain,
            secret_conf=secret,
            stop_marker=control.stop_marker,
            status_file=control.status_file,
        )
        begun = self.clock()
        mark("submitting", job=manifest.name)
        try:
            started = self.target.submit(submission)
        except SubmitOutcomeUnknown as exc:
            liveness = self.target.liveness(exc.run)
            if liveness is Liveness.GONE:
                raise StartFailed(f"{exc} (it is not running)", True) from None
            if liveness is Liveness.UNKNOWN:
                raise StartFailed(f"{exc}; whether it started cannot be told", False) from None
            started = Started(exc.run)
        except FsrError as exc:
            raise StartFailed(str(exc), True) from None
        mark("submitted", job=manifest.name)
        if on_submitted is not None:
            on_submitted(started.run)
        problem, status = self._wait_healthy(started.run, control)
        self.target.launched(started.run)
        if problem is None:
            mark("healthy", job=manifest.name)
            return Healthy(started.run, self.clock() - begun, _spark_version(status))
        raise self._not_healthy(started.run, control, problem)

    def await_healthy(self, run: Run, control: ControlFiles) -> Healthy:
        """Wait for a run started earlier (by an interrupted deploy) to be healthy."""
        begun = self.clock()
        problem, status = self._wait_healthy(run, control)
        if problem is None:
            return Healthy(run, self.clock() - begun, _spark_version(status))
        raise self._not_healthy(run, control, problem)

    def _not_healthy(self, run: Run, control: ControlFiles, problem: str) -> StartFailed:
        """Stop a run that did not become healthy; say whether it is confirmed gone."""
        if self.target.liveness(run) is not Liveness.GONE:
            try:
                self.target.stop(run, control.stop_marker, self.timeouts.stop)
            except FsrError as exc:
                return StartFailed(f"{problem}; it could not be stopped: {exc}", False)
        self.storage.delete(control.stop_marker)
        detail = self.target.failure_detail(run)
        return StartFailed(f"{problem}\n{detail}".rstrip(), True)

    def _wait_healthy(
        self, run: Run, control: ControlFiles
    ) -> tuple[str | None, dict[str, Any] | None]:
        """(None, its status) once the run reports a completed trigger; otherwise (why it is not
        healthy, its last status)."""
        deadline = self.clock() + self.timeouts.start
        while True:
            status = self._status(control, run.run_id)
            if status:
                self.target.launched(run)
            if status and status.get("state") in HEALTHY_STATES:
                return None, status
            if status and status.get("state") == "failed":
                return f"the job failed: {status.get('error') or 'no message'}", status
            if self.target.liveness(run) is Liveness.GONE:
                status = self._status(control, run.run_id)
                if status and status.get("state") in HEALTHY_STATES:
                    return None, status
                error = status.get("error") if status else None
                return f"the job exited before it was healthy: {error or 'see its log'}", status
            if self.clock() >= deadline:
                return f"the job was not healthy within {self.timeouts.start:.0f} s", status
            self.sleep(self.timeouts.poll)

    def _status(self, control: ControlFiles, run_id: str | None) -> dict[str, Any] | None:
        try:
            text = self.storage.read_text(control.status_file)
        except FsrError:
            return None  # not readable now: asked again at the next poll
        return run_status(text, run_id)


def _spark_version(status: dict[str, Any] | None) -> str | None:
    found = (status or {}).get("spark-version")
    return str(found) if found else None


@dataclass
class _Parts:
    """A decision being carried out: `_carry_out`'s generator and its result."""

    decision: Decision
    steps: Generator[None, Any, None]
    result: JobResult
    begun: bool = False


def _first_start(steps: tuple[Step, ...]) -> int:
    """Where a decision's starts begin: its first StartRun or AwaitRun (len(steps) if none)."""
    for i, step in enumerate(steps):
        if isinstance(step, (StartRun, AwaitRun)):
            return i
    return len(steps)


def _why_held(other: str, result: JobResult, decision: Decision) -> str:
    if result.outcome == "skipped":
        return f"{other} was held back"
    what = decision.why_after.get(other, "must finish first")
    return f"{other} ({what}) {result.outcome.replace('-', ' ')}"


def _not_begun(decision: Decision) -> JobResult:
    return JobResult(
        decision.name,
        False,
        "not begun: the deploy was interrupted before it (deploy again to carry it out)",
        outcome="not-begun",
    )


def _left_in_flight(decision: Decision, doing: str) -> JobResult:
    return JobResult(
        decision.name,
        False,
        f"left in flight ({doing}): its intent record stays; the next deploy settles it",
        outcome="left-in-flight",
    )


def _held_back(decision: Decision, why: list[str]) -> JobResult:
    return JobResult(
        decision.name, False, f"skipped: held back, {'; '.join(why)}", outcome="skipped"
    )
