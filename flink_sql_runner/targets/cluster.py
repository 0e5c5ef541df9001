"""What the cluster targets (standalone, yarn, kubernetes) share.

Each job runs as a cluster-mode driver, so it outlives the deployer that submitted it. What the
deployer knows about it comes from two places that outlive the deployer too:

- the cluster's own listing, read once per deploy: applications named
  `flink-sql-runner-<name>-v<version>` (`runtime.app_name`) are our jobs;
- the submission record `<checkpoint-root>/<name>/_control/v<N>.submission.json`, written beside
  the stop marker right after the cluster accepted the run: the submission id to ask about or
  kill, even when the listing does not carry it (standalone lists applications, not drivers).

Stopping writes the runner's stop marker on the checkpoint's storage, waits for the run to end,
and only after the timeout asks the cluster to kill it. Every answer about a run is alive, gone
or unknown: an API that cannot be reached or answers with an error, or a driver in a state the
cluster itself calls unknown, is never taken for "gone", so a stop is confirmed only by the
cluster saying the run ended, and nothing starts beside a run that may be alive.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.checkpoint_report import RunSeen
from flink_sql_runner.model.control import app_name, parse_app_name, submission_record_beside
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.stored import utc_now_iso
from flink_sql_runner.targets import runner_files, sparksubmit
from flink_sql_runner.targets.base import (
    DriverLog,
    LogQuery,
    Started,
    StopNotConfirmed,
    Stopped,
    Submission,
    SubmitOutcomeUnknown,
)

if TYPE_CHECKING:
    from flink_sql_runner.stores.storage import Storage

RECORD_SCHEMA_VERSION = 1
#: How long a kill may take before the stop is reported as not confirmed.
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

    liveness: Liveness
    state: str  # the cluster's own word: RUNNING, FINISHED, Failed, ...
    message: str = ""  # the cluster's explanation, when it gives one


@dataclass(frozen=True)
class Listed:
    """One application of the cluster's listing."""

    app_name: str
    detail: str  # for people: "app-2026...", "application_17..._0004", "ns:pod"
    submission_id: str | None = None  # when the listing carries it
    run_id: str | None = None
    started: float = 0.0
    liveness: Liveness = Liveness.ALIVE  # UNKNOWN when the cluster itself does not know


def runs_of(listed: Iterable[Listed]) -> Listing:
    """Our jobs' runs in a listing, every one of them (two runs of one job are two runs);
    other applications are not ours and are left out."""
    found = []
    for entry in sorted(listed, key=lambda e: e.started):
        parsed = parse_app_name(entry.app_name)
        if parsed is None:
            continue
        name, version = parsed
        found.append(
            Run(name, version, entry.run_id, entry.detail, entry.submission_id, entry.liveness)
        )
    return Listing.of_runs(found)


class ClusterTarget:
    """The Target protocol on top of four questions each cluster answers its own way."""

    name = "cluster"
    #: How long an accepted submission may take to show in the cluster's listing.
    submit_timeout = 300.0
    #: Words for messages: "through <kill_via>".
    kill_via = "the cluster's API"
    #: Seconds for which one answer about a submission is reused (each question may be costly).
    state_ttl = 0.0

    def __init__(
        self,
        storage: Storage,
        master: str,
        clock: Callable[[], float] = runtime.monotonic,
        sleep: Callable[[float], None] = runtime.sleep,
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
        """Every application the cluster runs now, in one call; FsrError if it cannot say."""
        raise NotImplementedError

    def submit_run(self, submission: Submission) -> str:
        """Submit in cluster deploy mode; the submission id once the cluster accepted it.
        FsrError: refused, nothing runs. SubmitOutcomeUnknown: it may run."""
        raise NotImplementedError

    def driver_state(self, submission_id: str) -> DriverState:
        """May raise FsrError when the cluster cannot be asked: that answer is unknown."""
        raise NotImplementedError

    def kill(self, submission_id: str) -> None:
        raise NotImplementedError

    def find_run(self, run: Run) -> Liveness:
        """Liveness of a run whose submission id is not known (a submission whose answer was
        lost); clusters that can look a run up by its run id override this."""
        return Liveness.UNKNOWN

    # -- the Target protocol ----------------------------------------------------------------
    def spark_version(self) -> str | None:
        """The cluster's Spark, where it says (standalone's gateway); None otherwise: the
        version the last run reported stands in."""
        return None

    def list_runs(self) -> Listing:
        return runs_of(self.listing())

    def submit(self, submission: Submission) -> Started:
        package = runner_files.place_runner_package(self.storage, submission.runtime_manifest)
        submission = replace(submission, runner_package=package)
        submission_id = self.submit_run(submission)
        run = Run(
            submission.name, submission.version, submission.run_id, submission_id, submission_id
        )
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
            except FsrError as kill_failed:
                raise SubmitOutcomeUnknown(
                    f"{submission_id} was submitted but cannot be recorded ({exc}), and killing "
                    f"it failed too ({kill_failed}); stop it on the cluster",
                    run,
                ) from None
            raise ClusterError(
                f"{submission_id} was submitted but cannot be recorded ({exc}); killed it"
            ) from None
        return Started(run, log=f"{self.name} submission {submission_id}")

    def liveness(self, run: Run) -> Liveness:
        if not run.submission_id:
            return self.find_run(run)
        return self._state(run.submission_id).liveness

    def launched(self, run: Run) -> None:
        """Cluster submissions keep nothing for their launch (spark-submit's private properties
        file is gone when it returns)."""

    def failure_detail(self, run: Run) -> str:
        if not run.submission_id:
            return ""
        state = self._state(run.submission_id, fresh=True)
        said = f": {state.message}" if state.message else ""
        return f"{self.name} reports {run.submission_id} {state.state}{said}"

    def logged_runs(self, name: str, version: int) -> list[RunSeen]:
        """A cluster keeps its drivers' logs: none are files here."""
        return []

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        """The driver of the run listed now, else the one the version's submission record
        names; where its log is (`log_of`)."""
        run = query.run
        if run is not None and run.submission_id and query.run_id in (None, run.run_id):
            return self.log_of(run.submission_id, run.run_id, run.version)
        if not query.submission_record:
            return None
        try:
            text = self.storage.read_text(query.submission_record)
            record = SubmissionRecord.from_json(text, query.submission_record) if text else None
        except FsrError:
            record = None
        if record is None or query.run_id not in (None, record.run_id):
            return None
        parsed = parse_app_name(record.app_name)
        return self.log_of(record.submission_id, record.run_id, parsed[1] if parsed else None)

    def log_of(self, submission_id: str, run_id: str | None, version: int | None) -> DriverLog:
        """Where the driver log of `submission_id` is, in words (each cluster says its own)."""
        return DriverLog(f"the {self.name} cluster keeps the log of {submission_id}", "",
                         run_id, version)  # fmt: skip

    def stop(self, run: Run, stop_marker: str, timeout: float) -> Stopped:
        begun = self.clock()
        try:
            submission_id = run.submission_id or self._recorded_id(run, stop_marker)
        except ClusterError as exc:
            raise StopNotConfirmed(str(exc)) from None
        if self._state(submission_id, fresh=True).liveness is Liveness.GONE:
            return Stopped(True, 0.0, "was not running")
        self.storage.write_text(stop_marker, f"stop requested at {runtime.wall():.0f}\n")
        if self._wait_gone(submission_id, timeout):
            seconds = self.clock() - begun
            return Stopped(True, seconds, f"stopped gracefully in {seconds:.1f} s (stop marker)")
        try:
            self.kill(submission_id)
        except FsrError as exc:
            killed = f"the kill through {self.kill_via} failed ({exc})"
        else:
            killed = f"killed {submission_id} through {self.kill_via}"
        if not self._wait_gone(submission_id, KILL_WAIT_SECONDS):
            state = self._state(submission_id, fresh=True)
            said = f": {state.message}" if state.message else ""
            raise StopNotConfirmed(
                f"{submission_id} did not stop within {timeout:.0f} s of the stop marker; "
                f"{killed}, and {KILL_WAIT_SECONDS:.0f} s later the cluster still reports it "
                f"{state.state} ({state.liveness.value}){said}"
            )
        seconds = self.clock() - begun
        return Stopped(
            False,
            seconds,
            f"did not stop within {timeout:.0f} s of the stop marker; {killed}",
        )

    # -- helpers ----------------------------------------------------------------------------
    def _state(self, submission_id: str, fresh: bool = False) -> DriverState:
        now = self.clock()
        known = self._answers.get(submission_id)
        if known and not fresh and now - known[0] < self.state_ttl:
            return known[1]
        try:
            state = self.driver_state(submission_id)
        except FsrError as exc:
            state = DriverState(Liveness.UNKNOWN, "not known", str(exc).splitlines()[0])
        self._answers[submission_id] = (now, state)
        return state

    def _wait_gone(self, submission_id: str, seconds: float) -> bool:
        """True once the cluster says the run ended; an unknown answer is not an end. It asks
        every `poll` seconds (every `state_ttl` where a question is costly), the last time at
        the deadline, never later: a stop's timeout is when its kill comes."""
        deadline = self.clock() + seconds
        while self._state(submission_id, fresh=True).liveness is not Liveness.GONE:
            left = deadline - self.clock()
            if left <= 0:
                return False
            self.sleep(min(max(self.poll, self.state_ttl), left))
        return True

    def _recorded_id(self, run: Run, stop_marker: str) -> str:
        """The submission id recorded beside the stop marker for the run the cluster lists."""
        location = submission_record_beside(stop_marker)
        text = self.storage.read_text(location)
        if not text:
            raise ClusterError(
                f"{run.name} runs ({run.detail}) but {location} does not exist: "
                f"no submission id to stop it with; stop it on the cluster"
            )
        record = SubmissionRecord.from_json(text, location)
        if run.version is not None and record.app_name != app_name(run.name, run.version):
            raise ClusterError(
                f"{location} records {record.app_name}, but the cluster runs "
                f"{app_name(run.name, run.version)}; stop it on the cluster"
            )
        return record.submission_id


class SparkSubmitTarget(ClusterTarget):
    """A cluster where spark-submit runs Python drivers in cluster mode (yarn, kubernetes)."""

    cluster = "the cluster"  # for messages: "spark-submit to <cluster> failed: ..."

    def __init__(
        self,
        storage: Storage,
        master: str,
        spark_submit: str | None = None,
        runner: str | None = None,
        submit_timeout: float = 300.0,
        **kwargs: Any,
    ):
        super().__init__(storage, master, **kwargs)
        self.spark_submit = spark_submit
        self.runner = runner or runner_files.runner_script()
        self.submit_timeout = submit_timeout

    def spark_version(self) -> str | None:
        """The Spark of the spark-submit that submits the drivers (on YARN the driver runs the
        Spark it uploads, unless spark.yarn.archive says otherwise)."""
        try:
            return sparksubmit.spark_release(sparksubmit.find_spark_submit(self.spark_submit))
        except FsrError:
            return None

    def spark_submit_cluster_mode(
        self, submission: Submission, target_conf: dict[str, str], submission_id: str | None = None
    ) -> None:
        """Run `spark-submit --deploy-mode cluster` until the cluster has accepted the run;
        secret properties only in a private properties file that is gone afterwards. A
        spark-submit that runs out of time may have submitted: SubmitOutcomeUnknown."""
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
            try:
                done = sparksubmit.run(args, self.submit_timeout)
            except sparksubmit.SparkSubmitTimeout as exc:
                run = Run(
                    submission.name,
                    submission.version,
                    submission.run_id,
                    submission_id or "submission unknown",
                    submission_id,
                )
                raise SubmitOutcomeUnknown(f"spark-submit to {self.cluster}: {exc}", run) from None
        if done.returncode != 0:
            message = sparksubmit.failure_message(done.output)
            raise ClusterError(f"spark-submit to {self.cluster} failed: {message}")
