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
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from flink_sql_runner.decide.changes import PINNED_SPARK_SETTINGS
from flink_sql_runner.decide.steps import checkpoint_location
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoint_reader import numbers
from flink_sql_runner.gather.offsets import version_finished
from flink_sql_runner.host import runtime
from flink_sql_runner.host.retries import retried
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.control import (
    HEALTHY_STATES,
    ControlFiles,
    PreparedFiles,
    app_name,
    run_status,
)
from flink_sql_runner.model.intents import DEFAULT_SUBMIT_TIMEOUT
from flink_sql_runner.model.offsets import Starts
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.runtime import (
    DEFAULT_TRIGGER,
    runtime_manifest,
    spark_conf,
    starts_by_view,
)
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.intervals import BadInterval, parse_trigger_interval
from flink_sql_runner.stores.storage import Storage, StorageError
from flink_sql_runner.targets.base import Started, Submission, SubmitOutcomeUnknown, Target
from flink_sql_runner.targets.connectors import Connectors

T = TypeVar("T")


#: The longest a prepared run warms up by default: its first micro-batch, and on a cluster its
#: executors' start, done while the old run still writes rather than in the pause after it.
WARM_UP_SECONDS = 20.0


@dataclass(frozen=True)
class Timeouts:
    start: float = 180.0  # until the first trigger completed
    stop: float = 60.0  # from the stop marker to a kill
    poll: float = 0.5
    prepare: float | None = None  # until a warm handover's new run is ready (None: `start`)
    warm: float | None = None  # a prepared run's warm-up, at most (None: `warm_up`'s default)

    @property
    def ready(self) -> float:
        """How long a prepared run has to say it is ready."""
        return self.start if self.prepare is None else self.prepare

    @property
    def warm_up(self) -> float:
        """How long a prepared run may spend on its warm-up before it says it is ready
        (runner/warm_up.py), on top of the time it has to be ready: as given; by default a
        quarter of that time, at most WARM_UP_SECONDS."""
        return min(WARM_UP_SECONDS, self.ready / 4) if self.warm is None else self.warm


DEFAULT_TIMEOUTS = Timeouts()

#: A warm handover stops the old run while it runs a batch (`RunControl.in_a_batch`): for a job
#: whose trigger interval and a second fit in this, it waits that long at most for the next
#: batch to begin, looking at the checkpoint's `offsets/` every BATCH_POLL_SECONDS. A longer
#: trigger is not waited for: a wait that ran out before its batch began would add its own
#: length to the pause.
BATCH_WAIT_SECONDS = 3.0
BATCH_POLL_SECONDS = 0.1


def trigger_seconds(trigger: Any) -> float | None:
    """A job's processing-time trigger interval in seconds (DEFAULT_TRIGGER's when none is
    written, as the run is started); None for any other trigger (`availableNow`, `once`,
    `continuous`) or one that cannot be read."""
    if trigger is None:
        trigger = DEFAULT_TRIGGER
    text = trigger.get("processingTime") if isinstance(trigger, dict) else None
    if not isinstance(text, str) or len(trigger) != 1:
        return None
    try:
        return parse_trigger_interval(text) / 1000
    except BadInterval:
        return None


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


class PrepareFailed(StartFailed):
    """A prepared run did not get ready and is confirmed gone; the run it was to replace was
    never touched. `cold`: it was not ready in time (no room for a second run on the cluster,
    or only slow), so the change may still be carried out the cold way; otherwise its
    pre-flight failed."""

    def __init__(self, message: str, gone: bool = True, cold: bool = False):
        super().__init__(message, gone)
        self.cold = cold


class GoNotGiven(FsrError):
    """A prepared run's go could not be given, surely (the storage took neither it nor the
    files it needs): the run waits, having read nothing, and may be ended."""


class PreparedGone(FsrError):
    """A prepared run ended before its go (it waited longer than its timeout): it wrote
    nothing."""


@dataclass(frozen=True)
class PreparedRun:
    """A run prepared beside the one it replaces, ready for its go."""

    run: Run
    manifest: StoredManifest
    files: PreparedFiles
    seconds: float  # from its submission to `ready`
    status: dict[str, Any]  # its `ready` status: what it found in the checkpoint, its settings


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

    def finished(self, manifest: StoredManifest, lenient: bool = False) -> int | None:
        """The last batch the runs of `manifest`'s version have finished (committed, or held by
        its file sink: gather/offsets.py::version_finished); None if none.
        StartFailed (nothing started) when it cannot be read. `lenient`: a file sink's record
        that cannot be read is not asked (what a restart's record says before it starts: a
        batch the sink holds is its run's to finish again)."""
        try:
            found = version_finished(self.storage, manifest, lenient)
        except FsrError as exc:
            location = checkpoint_location(manifest)
            raise StartFailed(f"cannot read {location}: {exc}", True) from None
        return found

    @staticmethod
    def control(manifest: StoredManifest, version: int | None) -> ControlFiles:
        root = str(manifest.job["checkpoint-root"]).rstrip("/")
        return ControlFiles.of(f"{root}/{manifest.name}", version or manifest.meta.query_version)

    def drop_beacon(self, manifest: StoredManifest, version: int) -> bool:
        """Delete the status beacon (and its beat file) of a version a newer one replaced, so
        `watch`'s listing of the beacons stays one job's current files per job. Housekeeping
        only: a delete that fails leaves a key no watcher reads (it reads the stored
        version's), and changes nothing else."""
        return self._delete_beacon(self.control(manifest, version))

    def _delete_beacon(self, control: ControlFiles) -> bool:
        """Delete a version's beacon and its beat file, best effort: one left behind is a run's
        that is gone, which the next run of its version overwrites within a heartbeat; a
        storage that fails here must not fail a start or a go. Each is tried whatever the
        other's delete did; True when both are gone."""
        done = True
        for location in (control.beat, control.beacon):
            if not location:  # no beat file on S3
                continue
            try:
                self.storage.delete(location)
            except FsrError:
                done = False
        return done

    def in_a_batch(self, manifest: StoredManifest) -> bool:
        """Wait until the run of `manifest`'s version begins its next micro-batch (its offsets
        written), for one trigger interval and a second at most (and a listing in flight
        then), where that fits in BATCH_WAIT_SECONDS. A warm handover then stops the old run:
        a run told to stop in a batch stops as soon as that batch committed
        (runner/lifecycle.py), so the pause from its last commit to the new run's first holds
        neither its wait for the next trigger nor the time it takes to see its stop marker.
        True if a batch was seen to begin. Only reads; no wait for a longer trigger, one that
        is not a processing time, or a manifest with no checkpoint of this tool; a storage
        that fails ends it at once; a lease lost or given up ends it (`still_acting`)."""
        interval = trigger_seconds(manifest.job.get("trigger"))
        too_long = interval is None or interval + 1.0 > BATCH_WAIT_SECONDS
        if too_long or manifest.checkpoint_root is None:
            return False
        offsets = f"{checkpoint_location(manifest)}/offsets"
        deadline = self.clock() + interval + 1.0
        first = self._last_planned(offsets)
        while first is not None and self.clock() < deadline:
            self.still_acting()
            self.sleep(BATCH_POLL_SECONDS)
            now = self._last_planned(offsets)
            if now is None:
                return False
            if now > first:
                mark("batch begun", job=manifest.name, batch=now)
                return True
        return False

    def _last_planned(self, offsets: str) -> int | None:
        """The last batch id in a checkpoint's `offsets/` (-1: none); None if it cannot be
        listed."""
        try:
            return max(numbers(self.storage.file_names(offsets)), default=-1)
        except FsrError:
            return None

    def stop(self, run: Run, manifest: StoredManifest) -> str:
        """Stop `run` and return how; StopNotConfirmed (nothing is started then) when the
        target cannot confirm it is gone."""
        control = self.control(manifest, run.version)
        mark("stopping", job=run.name)
        stopped = self.target.stop(run, control.stop_marker, self.timeouts.stop)
        mark("stopped", job=run.name)
        try:
            self.storage.delete(control.stop_marker)
        except FsrError:
            pass  # housekeeping: the version's next start deletes its marker before it starts
        return stopped.how

    def start(
        self,
        manifest: StoredManifest,
        clean: bool,
        run_id: str | None = None,
        source: str = "",
        on_submitted: Callable[[Run], None] | None = None,
        before_wait: Callable[[], None] | None = None,
        starts: Starts | None = None,
    ) -> Healthy:
        """Start one run and wait until it is healthy. StartFailed otherwise, saying whether
        the run is confirmed gone. `on_submitted` is told the run once the target accepted it,
        `before_wait` is called before the wait for its health begins. `starts`: where its
        Kafka source tables start (a clean start after another version)."""
        run_id = run_id or str(uuid.uuid4())
        control = self.control(manifest, manifest.meta.query_version)
        self._refuse_used_checkpoint(manifest, clean, StartFailed)
        document, plain, secret = self._documents(manifest, run_id, control, source, starts)
        try:
            self.storage.delete(control.stop_marker)
            self.storage.delete(control.status_file)
            self._delete_beacon(control)  # the last run's: the new run writes its own
            self.storage.write_text(
                control.runtime_manifest, json.dumps(document, indent=2), private=True
            )
        except FsrError as exc:  # nothing submitted: nothing of it runs
            raise StartFailed(f"cannot write its control files: {exc}", True) from None
        submission = self._submission(manifest, run_id, control, plain, secret)
        begun = self.clock()
        started = self._submit(submission, on_submitted, before_wait)
        problem, status = self._wait_healthy(started.run, control)
        self.target.launched(started.run)
        if problem is None:
            mark("healthy", job=manifest.name)
            return Healthy(started.run, self.clock() - begun, spark_version(status))
        raise self._not_healthy(started.run, control, problem)

    # -- what start and prepare share ----------------------------------------------------------
    def _refuse_used_checkpoint(self, manifest: StoredManifest, clean: bool, error: type) -> None:
        location = checkpoint_location(manifest)
        if not clean:
            return
        try:
            empty = self.storage.is_empty(location)
        except StartFailed:
            raise
        except FsrError as exc:  # nothing submitted: nothing of it runs
            raise error(f"cannot tell whether {location} is empty: {exc}", True) from None
        if not empty:
            raise error(f"refusing a clean start: checkpoint folder {location} is not empty", True)

    def _documents(
        self,
        manifest: StoredManifest,
        run_id: str,
        control: ControlFiles,
        source: str,
        starts: Starts | None,
    ) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
        """The runtime manifest, and the Spark properties: plain ones and secret ones."""
        try:
            document = runtime_manifest(manifest, run_id, control, source or manifest.name, starts)
            plain, secret = spark_conf(manifest, source or manifest.name)
            if self.connectors is not None:
                plain.update(self.connectors.conf(manifest.tables, {**secret, **plain}))
        except FsrError as exc:
            raise StartFailed(str(exc), True) from None
        return document, plain, secret

    @staticmethod
    def _submission(
        manifest: StoredManifest,
        run_id: str,
        files: ControlFiles | PreparedFiles,
        plain: dict[str, str],
        secret: dict[str, str],
    ) -> Submission:
        version = manifest.meta.query_version
        return Submission(
            name=manifest.name,
            version=version,
            run_id=run_id,
            app_name=app_name(manifest.name, version),
            runtime_manifest=files.runtime_manifest,
            spark_conf=plain,
            secret_conf=secret,
            stop_marker=files.stop_marker,
            status_file=files.status_file,
        )

    def _submit(
        self,
        submission: Submission,
        on_submitted: Callable[[Run], None] | None,
        before_wait: Callable[[], None] | None,
    ) -> Started:
        """Submit; StartFailed when nothing started, or when whether it did cannot be told."""
        mark("submitting", job=submission.name)
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
        mark("submitted", job=submission.name)
        if on_submitted is not None:
            on_submitted(started.run)
        if before_wait is not None:
            before_wait()
        return started

    # -- a warm handover (decide/warm.py) --------------------------------------------------------
    def prepare(
        self,
        manifest: StoredManifest,
        clean: bool,
        run_id: str,
        source: str = "",
        on_submitted: Callable[[Run], None] | None = None,
        before_wait: Callable[[], None] | None = None,
    ) -> PreparedRun:
        """Submit a run of `manifest` that prepares everything but its query, beside the run it
        replaces, and wait until it says it is ready. PrepareFailed otherwise, once it is
        stopped: `cold` when it was not ready within the prepare timeout (a cluster without room
        for a second driver or its executors), not when it failed or ended; StartFailed (not
        gone) when it cannot be confirmed gone."""
        control = self.control(manifest, manifest.meta.query_version)
        files = control.prepared(run_id)
        self._refuse_used_checkpoint(manifest, clean, PrepareFailed)
        try:
            document, plain, secret = self._documents(manifest, run_id, control, source, None)
        except StartFailed as exc:
            raise PrepareFailed(str(exc), True) from None
        document["prepare"] = {
            "status-file": files.status_file,
            "go-file": files.go_file,
            "stop-marker": files.stop_marker,
            "timeout-seconds": self.go_timeout,
            "warm-up-seconds": round(self.timeouts.warm_up, 3),
            "pinned-settings": sorted(PINNED_SPARK_SETTINGS),
        }
        for stale in (files.stop_marker, files.status_file, files.go_file):
            self.storage.delete(stale)
        self.storage.write_text(
            files.runtime_manifest, json.dumps(document, indent=2), private=True
        )
        begun = self.clock()
        try:
            submission = self._submission(manifest, run_id, files, plain, secret)
            started = self._submit(replace(submission, prepared=True), on_submitted, before_wait)
        except StartFailed as exc:
            if not exc.gone:
                raise
            raise PrepareFailed(str(exc), True) from None
        run = started.run
        waits = self.timeouts.ready + self.timeouts.warm_up  # its warm-up on top
        deadline = self.clock() + waits
        said = None
        while True:
            status = self._status_at(files.status_file, run_id)
            said = status or said
            if status:
                self.target.launched(run)
            state = (status or {}).get("state")
            if state == "ready":
                mark("prepared", job=manifest.name)
                return PreparedRun(run, manifest, files, self.clock() - begun, status or {})
            if state == "failed":
                problem = status.get("error") if status else None
                raise self._not_prepared(run, files, problem or "no message")
            if self.target.liveness(run) is Liveness.GONE:
                error = (self._status_at(files.status_file, run_id) or {}).get("error")
                raise self._not_prepared(run, files, error or "it exited; see its log")
            if self.clock() >= deadline:
                # Not placed, or placed without room for its executors, or only slow: the
                # change may still go the cold way, once this run is confirmed gone.
                why = (
                    "it did not report (no room for a second driver?)"
                    if said is None
                    else "it was not ready (no room for its executors, or a slow start?)"
                )
                raise self._not_prepared(
                    run,
                    files,
                    f"{why} within {round(waits, 1):g} s",
                    cold=True,
                    at_once=said is None,
                )
            self.still_acting()
            self.sleep(self.timeouts.poll)

    @property
    def go_timeout(self) -> float:
        """How long a prepared run waits for its go before it ends by itself: the old run's
        stop (and kill), and a start of another job the scheduler may make it wait for."""
        return max(self.timeouts.start, self.timeouts.ready) + 2 * self.timeouts.stop + 60.0

    def _not_prepared(
        self,
        run: Run,
        files: PreparedFiles,
        problem: str,
        cold: bool = False,
        at_once: bool = False,
    ) -> StartFailed:
        """`at_once`: the run never reported (never placed, or not started yet): it has read
        nothing and can write nothing before its go, so it is killed without waiting for it to
        read its stop marker (the abort word is there too, should it start after all)."""
        try:
            self._stop_prepared(run, files, problem, at_once)
        except FsrError as exc:
            return StartFailed(
                f"pre-flight failed: {problem}; the prepared run could not be stopped ({exc}): "
                "it writes nothing and ends by itself",
                False,
            )
        return PrepareFailed(problem, True, cold)

    def _stop_prepared(
        self, run: Run, files: PreparedFiles, why: str, at_once: bool = False
    ) -> None:
        """Tell a prepared run to end, and confirm it gone (a kill after the stop timeout, or
        `at_once`)."""
        word = {"run-id": run.run_id, "abort": why}
        self._asked(lambda: self.storage.write_text(files.go_file, json.dumps(word)))
        if self.target.liveness(run) is not Liveness.GONE:
            self.target.stop(run, files.stop_marker, 0.0 if at_once else self.timeouts.stop)
        self.storage.delete(files.stop_marker)

    def abort(self, prepared: PreparedRun, why: str) -> None:
        """End a prepared run that will not get its go; StopNotConfirmed when it cannot be
        confirmed gone (it writes nothing, and ends by itself)."""
        self._stop_prepared(prepared.run, prepared.files, why)

    def go(self, prepared: PreparedRun, starts: Starts) -> Healthy:
        """Give a prepared run its go, once the run it replaces is confirmed gone, with where its
        Kafka sources start (the intent record's: every go of a run gives the same), and wait
        until it is healthy. PreparedGone when it ended before its go (its timeout): nothing
        of it ran, and the manifest may be started the cold way; GoNotGiven when the storage
        took neither the files the go needs nor the go (asked again each time; the run waits,
        it read nothing); StartFailed otherwise. A go whose answer was lost is read back: one
        the storage holds was given."""
        run, manifest = prepared.run, prepared.manifest
        control = self.control(manifest, manifest.meta.query_version)
        liveness = self.target.liveness(run)
        if liveness is Liveness.GONE:
            raise PreparedGone(f"the prepared {run.describe()} ended before its go")
        if liveness is Liveness.UNKNOWN:
            raise StartFailed(
                f"cannot tell whether the prepared {run.describe()} is still up", False
            )
        try:
            self._asked(lambda: self.storage.delete(control.stop_marker))
            self._asked(lambda: self.storage.delete(control.status_file))
            self._delete_beacon(control)  # the last run's: the new run writes its own
            # From here on it is the version's run: a cluster finds its submission where it
            # finds the version's (the old run's record is the old run's no more).
            record = self._asked(lambda: self.storage.read_text(prepared.files.submission_record))
            if record:
                self._asked(lambda: self.storage.write_text(control.submission_record, record))
        except StorageError as exc:
            raise GoNotGiven(f"cannot give the prepared {run.describe()} its go: {exc}") from None
        word: dict[str, Any] = {"run-id": run.run_id, "go": True}
        if starts.by_table:
            word["starting"] = starts_by_view(manifest, starts)
        begun = self.clock()
        mark("go", job=manifest.name)
        self._word(prepared.files.go_file, json.dumps(word), run)
        problem, status = self._wait_healthy(run, control)
        if problem is None:
            mark("healthy", job=manifest.name)
            return Healthy(run, self.clock() - begun, spark_version(status))
        raise self._not_healthy(run, control, problem)

    def _asked(self, call: Callable[[], T]) -> T:
        """`call()` of the storage, asked again after a pause where it failed (a 503)."""
        return retried(call, self.sleep, self.still_acting, (StorageError,))

    def _word(self, location: str, text: str, run: Run) -> None:
        """Write the word a run waits for, asked again where the storage failed (the same
        word twice is the word once). Where every write failed, what the file holds says
        whether it was given after all (an answer lost); GoNotGiven where it surely was not,
        StorageError where that cannot be read either (it may have been given)."""
        try:
            self._asked(lambda: self.storage.write_text(location, text))
            return
        except StorageError as failed:
            try:
                held = self.storage.read_text(location)
            except StorageError:
                raise failed from None
            if held == text:
                return  # it landed: its answer was lost
            raise GoNotGiven(
                f"cannot give the prepared {run.describe()} its go: {failed}"
            ) from None

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
        return self._status_at(control.status_file, run_id)

    def _status_at(self, location: str, run_id: str | None) -> dict[str, Any] | None:
        try:
            text = self.storage.read_text(location)
        except FsrError:
            return None  # not readable now: asked again at the next poll
        return run_status(text, run_id)


def spark_version(status: dict[str, Any] | None) -> str | None:
    found = (status or {}).get("spark-version")
    return str(found) if found else None
