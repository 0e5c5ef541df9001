"""Starting one run and waiting until it is healthy, and stopping one: what every step that
touches a run does, on any target.

A start counts only once its run reports a completed trigger (its status file, on the
checkpoint's storage). A run that does not get there is stopped; `StartFailed` says whether it is
confirmed gone, for a run that may still write must never be joined by another.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.decide.steps import checkpoint_location
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoints import inspect_checkpoint
from flink_sql_runner.host import runtime
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.control import HEALTHY_STATES, ControlFiles, app_name, run_status
from flink_sql_runner.model.intents import DEFAULT_SUBMIT_TIMEOUT
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.runtime import runtime_manifest, spark_conf
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Started, Submission, SubmitOutcomeUnknown, Target
from flink_sql_runner.targets.connectors import Connectors


@dataclass(frozen=True)
class Timeouts:
    start: float = 180.0  # until the first trigger completed
    stop: float = 60.0  # from the stop marker to a kill
    poll: float = 0.5


DEFAULT_TIMEOUTS = Timeouts()


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


class RunControl:
    """Starts, awaits and stops the runs of one target, with control files on `storage`."""

    def __init__(
        self,
        target: Target,
        storage: Storage,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        clock: Callable[[], float] = runtime.monotonic,
        sleep: Callable[[float], None] = runtime.sleep,
        still_acting: Callable[[], None] = lambda: None,
        connectors: Connectors | None = None,
    ):
        """`still_acting()` raises when the command must stop acting (its lease lost, or it
        was interrupted twice): a health wait ends at its next poll. `connectors`: how runs
        get the connectors their tables need (Kafka's); None: as their properties say."""
        self.target, self.storage, self.timeouts = target, storage, timeouts
        self.connectors = connectors
        self.clock, self.sleep, self.still_acting = clock, sleep, still_acting

    @property
    def submit_timeout(self) -> float:
        """How long a run the target accepted may take to show in its listing."""
        return float(getattr(self.target, "submit_timeout", DEFAULT_SUBMIT_TIMEOUT))

    def committed(self, manifest: StoredManifest) -> int:
        """The last batch the checkpoint of `manifest`'s version has committed; -1 if none."""
        info = inspect_checkpoint(self.storage, checkpoint_location(manifest))
        return info.last_committed if info.last_committed is not None else -1

    @staticmethod
    def control(manifest: StoredManifest, version: int | None) -> ControlFiles:
        root = str(manifest.job["checkpoint-root"]).rstrip("/")
        return ControlFiles.of(f"{root}/{manifest.name}", version or manifest.meta.query_version)

    def stop(self, run: Run, manifest: StoredManifest) -> str:
        """Stop `run` and return how; StopNotConfirmed (nothing is started then) when the
        target cannot confirm it is gone."""
        control = self.control(manifest, run.version)
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
        before_wait: Callable[[], None] | None = None,
        starting: dict[str, str] | None = None,
    ) -> Healthy:
        """Start one run and wait until it is healthy. StartFailed otherwise, saying whether
        the run is confirmed gone. `on_submitted` is told the run once the target accepted it,
        `before_wait` is called before the wait for its health begins. `starting`: Kafka
        source tables that start at given offsets (a clean start after another version)."""
        version = manifest.meta.query_version
        run_id = run_id or str(uuid.uuid4())
        control = self.control(manifest, version)
        location = checkpoint_location(manifest)
        if clean and not self.storage.is_empty(location):
            raise StartFailed(
                f"refusing a clean start: checkpoint folder {location} is not empty", True
            )
        try:
            document = runtime_manifest(
                manifest, run_id, control, source or manifest.name, starting
            )
            plain, secret = spark_conf(manifest, source or manifest.name)
            if self.connectors is not None:
                plain.update(self.connectors.conf(manifest.tables, {**secret, **plain}))
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
        if before_wait is not None:
            before_wait()
        problem, status = self._wait_healthy(started.run, control)
        self.target.launched(started.run)
        if problem is None:
            mark("healthy", job=manifest.name)
            return Healthy(started.run, self.clock() - begun, spark_version(status))
        raise self._not_healthy(started.run, control, problem)

    def await_healthy(self, run: Run, control: ControlFiles) -> Healthy:
        """Wait for a run started earlier (by an interrupted deploy) to be healthy."""
        begun = self.clock()
        problem, status = self._wait_healthy(run, control)
        if problem is None:
            return Healthy(run, self.clock() - begun, spark_version(status))
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
            self.still_acting()
            self.sleep(self.timeouts.poll)

    def _status(self, control: ControlFiles, run_id: str | None) -> dict[str, Any] | None:
        try:
            text = self.storage.read_text(control.status_file)
        except FsrError:
            return None  # not readable now: asked again at the next poll
        return run_status(text, run_id)


def spark_version(status: dict[str, Any] | None) -> str | None:
    found = (status or {}).get("spark-version")
    return str(found) if found else None
