"""What the cluster targets (standalone, yarn, kubernetes) share.

Each job runs as a cluster-mode driver, so it outlives the deployer that submitted it. What the
deployer knows about it comes from two places that outlive the deployer too:

- the cluster's own listing, read once per deploy: applications named
  `flink-sql-runner-<name>-v<version>` (`runtime.app_name`) are our jobs;
- the submission record `<checkpoint-root>/<name>/_control/v<N>.submission.json`, written beside
  the stop marker right after the cluster accepted the run: the submission id to ask about or
  kill, even when the listing does not carry it (standalone lists applications, not drivers).

Stopping writes the runner's stop marker on the checkpoint's storage, waits for the run to end,
and only after the timeout asks the cluster to kill it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.plan import RunningJob
from flink_sql_runner.runtime import app_name, parse_app_name, submission_record_beside
from flink_sql_runner.stored import utc_now_iso
from flink_sql_runner.targets import sparksubmit
from flink_sql_runner.targets.base import Started, Stopped, Submission

if TYPE_CHECKING:
    from flink_sql_runner.apply import ControlStorage

RECORD_SCHEMA_VERSION = 1
#: How long a kill may take before the stop is reported as failed.
KILL_WAIT_SECONDS = 60.0


class ClusterError(FsrError):
    """The cluster refused or failed a request; the message carries the cluster's own words."""


@dataclass(frozen=True)
class SubmissionRecord:
    """Which cluster submission runs one version of a job, kept beside its checkpoints."""

    target: str
    master: str
    submission_id: str
    app_name: str
    run_id: str
    submitted_at: str

    def to_json(self) -> str:
        return json.dumps({"schema-version": RECORD_SCHEMA_VERSION, **asdict(self)}, indent=2)

    @classmethod
    def from_json(cls, text: str, where: str) -> SubmissionRecord:
        try:
            doc = json.loads(text)
            if doc.pop("schema-version") != RECORD_SCHEMA_VERSION:
                raise ValueError(f"schema-version is not {RECORD_SCHEMA_VERSION}")
            return cls(**doc)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise ClusterError(f"submission record {where} is not readable: {exc}") from None


@dataclass(frozen=True)
class DriverState:
    """One run as the cluster reports it."""

    alive: bool
    state: str  # the cluster's own word: RUNNING, FINISHED, Failed, ...
    message: str = ""  # the cluster's explanation, when it gives one


@dataclass(frozen=True)
class Listed:
    """One application of the cluster's listing."""

    app_name: str
    detail: str  # for people: "app-2026...", "application_17..._0004", "ns:pod"
    submission_id: str | None = None  # when the listing carries it
    run_id: str | None = None
    started: float = 0.0  # for choosing the newest of two runs of one job


def running_jobs(listed: Iterable[Listed]) -> dict[str, RunningJob]:
    """Our jobs in a listing, by name (the newest run of a job wins); other applications are
    not ours and are left out."""
    found: dict[str, tuple[float, RunningJob]] = {}
    for entry in listed:
        parsed = parse_app_name(entry.app_name)
        if parsed is None:
            continue
        name, version = parsed
        if name in found and found[name][0] > entry.started:
            continue
        job = RunningJob(name, version, entry.run_id, entry.detail, entry.submission_id)
        found[name] = (entry.started, job)
    return {name: job for name, (_, job) in sorted(found.items())}


class ClusterTarget:
    """The Target protocol on top of four questions each cluster answers its own way."""

    name = "cluster"
    #: Words for messages: "through <kill_via>".
    kill_via = "the cluster's API"
    #: Seconds for which one answer about a submission is reused (each question may be costly).
    state_ttl = 0.0

    def __init__(
        self,
        storage: ControlStorage,
        master: str,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        poll: float = 1.0,
    ):
        self.storage = storage
        self.master = master
        self.clock = clock
        self.sleep = sleep
        self.poll = poll
        self._answers: dict[str, tuple[float, DriverState]] = {}

    # -- what each cluster implements -------------------------------------------------------
    def listing(self) -> list[Listed]:
        """Every application the cluster runs now, in one call."""
        raise NotImplementedError

    def submit_run(self, submission: Submission) -> str:
        """Submit in cluster deploy mode; the submission id once the cluster accepted it."""
        raise NotImplementedError

    def driver_state(self, submission_id: str) -> DriverState:
        raise NotImplementedError

    def kill(self, submission_id: str) -> None:
        raise NotImplementedError

    # -- the Target protocol ----------------------------------------------------------------
    def list_running(self) -> dict[str, RunningJob]:
        return running_jobs(self.listing())

    def submit(self, submission: Submission) -> Started:
        submission_id = self.submit_run(submission)
        record = SubmissionRecord(
            target=self.name,
            master=self.master,
            submission_id=submission_id,
            app_name=submission.app_name,
            run_id=submission.run_id,
            submitted_at=utc_now_iso(),
        )
        location = submission_record_beside(submission.stop_marker)
        try:
            self.storage.write_text(location, record.to_json())
        except FsrError as exc:
            try:
                self.kill(submission_id)
                outcome = "killed it"
            except FsrError as kill_failed:
                outcome = f"and killing it failed too ({kill_failed}); stop it on the cluster"
            raise ClusterError(
                f"{submission_id} was submitted but cannot be recorded ({exc}); {outcome}"
            ) from None
        running = RunningJob(
            submission.name, submission.version, submission.run_id, submission_id, submission_id
        )
        return Started(running, log=f"{self.name} submission {submission_id}")

    def is_alive(self, running: RunningJob) -> bool:
        submission_id = running.submission_id
        return bool(submission_id) and self._state(submission_id).alive

    def failure_detail(self, running: RunningJob) -> str:
        if not running.submission_id:
            return ""
        state = self._state(running.submission_id, fresh=True)
        said = f": {state.message}" if state.message else ""
        return f"{self.name} reports {running.submission_id} {state.state}{said}"

    def stop(self, running: RunningJob, stop_marker: str, timeout: float) -> Stopped:
        begun = self.clock()
        submission_id = running.submission_id or self._recorded_id(running, stop_marker)
        if not self._state(submission_id, fresh=True).alive:
            return Stopped(True, 0.0, "was not running")
        self.storage.write_text(stop_marker, f"stop requested at {time.time():.0f}\n")
        if self._wait_gone(submission_id, timeout):
            seconds = self.clock() - begun
            return Stopped(True, seconds, f"stopped gracefully in {seconds:.1f} s (stop marker)")
        self.kill(submission_id)
        if not self._wait_gone(submission_id, KILL_WAIT_SECONDS):
            state = self._state(submission_id, fresh=True)
            raise ClusterError(
                f"{submission_id} did not stop within {timeout:.0f} s of the stop marker and is "
                f"still {state.state} {KILL_WAIT_SECONDS:.0f} s after the kill through "
                f"{self.kill_via}"
            )
        seconds = self.clock() - begun
        return Stopped(
            False,
            seconds,
            f"did not stop within {timeout:.0f} s of the stop marker; killed {submission_id} "
            f"through {self.kill_via}",
        )

    # -- helpers ----------------------------------------------------------------------------
    def _state(self, submission_id: str, fresh: bool = False) -> DriverState:
        now = self.clock()
        known = self._answers.get(submission_id)
        if known and not fresh and now - known[0] < self.state_ttl:
            return known[1]
        state = self.driver_state(submission_id)
        self._answers[submission_id] = (now, state)
        return state

    def _wait_gone(self, submission_id: str, seconds: float) -> bool:
        deadline = self.clock() + seconds
        while self._state(submission_id, fresh=True).alive:
            if self.clock() >= deadline:
                return False
            self.sleep(max(self.poll, self.state_ttl))
        return True

    def _recorded_id(self, running: RunningJob, stop_marker: str) -> str:
        """The submission id recorded beside the stop marker for the run the cluster lists."""
        location = submission_record_beside(stop_marker)
        text = self.storage.read_text(location)
        if not text:
            raise ClusterError(
                f"{running.name} runs ({running.detail}) but {location} does not exist: "
                f"no submission id to stop it with; stop it on the cluster"
            )
        record = SubmissionRecord.from_json(text, location)
        if running.version is not None and record.app_name != app_name(
            running.name, running.version
        ):
            raise ClusterError(
                f"{location} records {record.app_name}, but the cluster runs "
                f"{app_name(running.name, running.version)}; stop it on the cluster"
            )
        return record.submission_id


class SparkSubmitTarget(ClusterTarget):
    """A cluster where spark-submit runs Python drivers in cluster mode (yarn, kubernetes)."""

    cluster = "the cluster"  # for messages: "spark-submit to <cluster> failed: ..."

    def __init__(
        self,
        storage: ControlStorage,
        master: str,
        spark_submit: str | None = None,
        runner: str | None = None,
        submit_timeout: float = 300.0,
        **kwargs: Any,
    ):
        super().__init__(storage, master, **kwargs)
        self.spark_submit = spark_submit
        self.runner = runner or sparksubmit.runner_script()
        self.submit_timeout = submit_timeout

    def spark_submit_cluster_mode(
        self, submission: Submission, target_conf: dict[str, str]
    ) -> None:
        """Run `spark-submit --deploy-mode cluster` until the cluster has accepted the run;
        secret properties only in a private properties file that is gone afterwards."""
        spark_submit = sparksubmit.find_spark_submit(self.spark_submit)
        with sparksubmit.private_properties(submission.secret_conf, spark_submit) as properties:
            args = sparksubmit.submit_command(
                spark_submit,
                self.master,
                submission,
                runner=self.runner,
                properties_file=properties,
                deploy_mode="cluster",
                target_conf=target_conf,
            )
            done = sparksubmit.run(args, self.submit_timeout)
        if done.returncode != 0:
            message = sparksubmit.failure_message(done.output)
            raise ClusterError(f"spark-submit to {self.cluster} failed: {message}")
