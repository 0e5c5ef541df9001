"""Carrying out a plan: stop, start, wait for health, and only then record the manifest."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from flink_sql_runner.errors import FsrError
from flink_sql_runner.intents import IntentLog, new_intent
from flink_sql_runner.manifest import Job
from flink_sql_runner.plan import Action, Decision, Plan, RunningJob
from flink_sql_runner.progress import Progress
from flink_sql_runner.runtime import ControlFiles, app_name, runtime_manifest, spark_conf
from flink_sql_runner.stored import Meta, StoredManifest
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.targets.base import Started, Submission, Target
from flink_sql_runner.timing import mark

HEALTHY_STATES = ("active", "finished")
#: Decisions that change nothing on the cluster: no progress line for them.
QUIET_ACTIONS = (Action.NOOP, Action.ORPHANED, Action.ERROR)


class ControlStorage(Protocol):
    """Files on the checkpoint's storage: the runner's control files and runtime manifests."""

    def read_text(self, location: str) -> str | None: ...

    def write_text(self, location: str, text: str) -> None: ...

    def delete(self, location: str) -> None: ...

    def is_empty(self, location: str) -> bool: ...


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

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "summary": self.summary, "steps": self.steps, "detail": self.detail}


class Executor:
    """Carries out a plan, `parallelism` jobs at a time; each job's result is reported as it
    completes. Before each start it writes an intent record (intents.py), so that a deployer
    killed at any moment leaves enough behind for the next deploy to converge."""

    def __init__(
        self,
        store: ManifestStore,
        target: Target,
        storage: ControlStorage,
        timeouts: Timeouts = Timeouts(),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        parallelism: int = 1,
    ):
        self.store = store
        self.intents = IntentLog(store)
        self.target = target
        self.storage = storage
        self.timeouts = timeouts
        self.clock = clock
        self.sleep = sleep
        self.parallelism = max(1, parallelism)

    def apply(self, plan: Plan, progress: Progress | None = None) -> dict[str, JobResult]:
        """Every decision's result, by job name in plan order."""

        def one(decision: Decision) -> JobResult:
            acts = decision.action not in QUIET_ACTIONS
            if progress and acts:
                progress.started(decision.name, decision.action.value)
            result = self.apply_one(decision)
            if progress and acts:
                progress.finished(decision.name, result.ok)
            return result

        if self.parallelism == 1 or len(plan.decisions) <= 1:
            results = [one(d) for d in plan.decisions]
        else:
            with ThreadPoolExecutor(self.parallelism, thread_name_prefix="deploy") as pool:
                results = list(pool.map(one, plan.decisions))
        return {d.name: r for d, r in zip(plan.decisions, results, strict=True)}

    def apply_one(self, decision: Decision) -> JobResult:
        result = JobResult(decision.name, True, "")
        try:
            self._settle_intent(decision, result)
            if decision.action is Action.NOOP:
                result.summary = "unchanged"
            elif decision.action is Action.ORPHANED:
                result.summary = "left alone (orphaned)"
            elif decision.action is Action.ERROR:
                result.ok, result.summary = False, decision.reason
            elif decision.action is Action.PRUNE:
                self._prune(decision, result)
            else:
                self._act(decision, result)
        except FsrError as exc:
            result.ok = False
            result.summary = str(exc).splitlines()[0]
            result.detail = "\n".join(str(exc).splitlines()[1:])
        return result

    def _settle_intent(self, decision: Decision, result: JobResult) -> None:
        if decision.adopt is not None:
            self.store.write(decision.adopt)
            self.intents.delete(decision.name)
            version = decision.adopt.meta.query_version
            result.steps.append(f"recorded v{version}, started by an interrupted deploy")
        elif decision.discard_intent:
            self.intents.delete(decision.name)
            result.steps.append("dropped the intent record of an interrupted deploy")

    def _act(self, decision: Decision, result: JobResult) -> None:
        facts = decision.facts
        assert facts is not None and facts.desired is not None
        job, stored = facts.desired, decision.adopt or facts.stored
        if decision.action is Action.STOP:
            assert stored is not None and facts.running is not None
            stopped = self._stop(stored, facts.running)
            result.steps.append(f"stopped v{stored.meta.query_version}: {stopped}")
            stopped_spec = {**stored.job, "desired-state": "stopped"}
            self.store.write(replace(stored, job=stopped_spec))
            result.summary = "stopped with its checkpoint; stays stopped"
            return
        assert decision.version is not None
        if decision.action.clean:
            meta = Meta.new(decision.version)
            location = job.checkpoint_location(decision.version)
            if not self.storage.is_empty(location):
                raise FsrError(f"refusing a clean start: checkpoint folder {location} is not empty")
        else:
            assert stored is not None
            meta = stored.meta
        manifest = StoredManifest(job.spec, job.tables, meta)
        run_id = str(uuid.uuid4())
        self.intents.write(new_intent(manifest, decision.action.value, run_id))
        try:
            if decision.action.stops:
                assert facts.running is not None and stored is not None
                stopped = self._stop(stored, facts.running)
                result.steps.append(f"stopped v{stored.meta.query_version}: {stopped}")
            started, seconds = self.start(job, meta, run_id)
        except FsrError:
            self.intents.delete(job.name)  # nothing new runs: the stored manifest stands
            raise
        result.steps.append(f"started v{meta.query_version} ({started.running.detail})")
        self.store.write(manifest)
        self.intents.delete(job.name)
        mark("recorded", job=job.name)
        how = "clean" if decision.action.clean else "from checkpoint"
        result.summary = (
            f"running v{meta.query_version} ({how}), healthy after {seconds:.1f} s; "
            "manifest recorded"
        )

    def _prune(self, decision: Decision, result: JobResult) -> None:
        facts = decision.facts
        assert facts is not None
        stored = decision.adopt or facts.stored
        assert stored is not None
        if facts.running is not None:
            stopped = self._stop(stored, facts.running)
            result.steps.append(f"stopped v{stored.meta.query_version}: {stopped}")
        where = self.store.archive(decision.name)
        result.summary = f"pruned: checkpoint kept, manifest archived to {where}"

    def _stop(self, stored: StoredManifest, running: RunningJob) -> str:
        root = str(stored.job["checkpoint-root"]).rstrip("/")
        control = ControlFiles.of(f"{root}/{stored.name}", stored.meta.query_version)
        mark("stopping", job=stored.name)
        stopped = self.target.stop(running, control.stop_marker, self.timeouts.stop)
        mark("stopped", job=stored.name)
        self.storage.delete(control.stop_marker)
        return stopped.how

    def start(self, job: Job, meta: Meta, run_id: str | None = None) -> tuple[Started, float]:
        """Start one run and wait until it is healthy; on failure, nothing keeps running."""
        version = meta.query_version
        run_id = run_id or str(uuid.uuid4())
        control = ControlFiles.of(f"{job.checkpoint_root}/{job.name}", version)
        document = runtime_manifest(job, meta, run_id, control)
        plain, secret = spark_conf(job, version)
        manifest_location = control.runtime_manifest
        self.storage.delete(control.stop_marker)
        self.storage.delete(control.status_file)
        self.storage.write_text(manifest_location, json.dumps(document, indent=2))
        submission = Submission(
            name=job.name,
            version=version,
            run_id=run_id,
            app_name=app_name(job.name, version),
            runtime_manifest=manifest_location,
            spark_conf=plain,
            secret_conf=secret,
            stop_marker=control.stop_marker,
            status_file=control.status_file,
        )
        begun = self.clock()
        mark("submitting", job=job.name)
        started = self.target.submit(submission)
        mark("submitted", job=job.name)
        problem = self._wait_healthy(started.running, control)
        if problem is None:
            mark("healthy", job=job.name)
            return started, self.clock() - begun
        if self.target.is_alive(started.running):
            self.target.stop(started.running, control.stop_marker, self.timeouts.stop)
        self.storage.delete(control.stop_marker)
        detail = self.target.failure_detail(started.running)
        raise FsrError(f"{problem}\n{detail}".rstrip())

    def _wait_healthy(self, running: RunningJob, control: ControlFiles) -> str | None:
        """None once the run reports a completed trigger; otherwise why it is not healthy."""
        deadline = self.clock() + self.timeouts.start
        while True:
            status = self._status(control, running.run_id)
            if status and status.get("state") in HEALTHY_STATES:
                return None
            if status and status.get("state") == "failed":
                return f"the job failed: {status.get('error') or 'no message'}"
            if not self.target.is_alive(running):
                status = self._status(control, running.run_id)
                if status and status.get("state") in HEALTHY_STATES:
                    return None
                error = status.get("error") if status else None
                return f"the job exited before it was healthy: {error or 'see its log'}"
            if self.clock() >= deadline:
                return f"the job was not healthy within {self.timeouts.start:.0f} s"
            self.sleep(self.timeouts.poll)

    def _status(self, control: ControlFiles, run_id: str | None) -> dict[str, Any] | None:
        text = self.storage.read_text(control.status_file)
        if not text:
            return None
        try:
            status = json.loads(text)
        except ValueError:
            return None
        return status if status.get("run-id") == run_id else None
