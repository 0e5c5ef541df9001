"""What every target (local, standalone, yarn, kubernetes) offers the deployer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.checkpoint_report import RunSeen
from flink_sql_runner.model.runs import Listing, Liveness, Run


@dataclass(frozen=True)
class Submission:
    """Everything a target needs to start one run of a job."""

    name: str
    version: int
    run_id: str
    app_name: str
    runtime_manifest: str  # path or URI the runner reads (--manifest)
    spark_conf: dict[str, str] = field(default_factory=dict)
    secret_conf: dict[str, str] = field(default_factory=dict)  # never on a command line
    stop_marker: str = ""
    status_file: str = ""
    #: Cluster targets: the runner's modules as a zip the driver reads (--package).
    runner_package: str = ""
    #: A run prepared beside the run it replaces (a warm handover): it writes nothing until
    #: the deployer gives it its go, so it may run beside another run of the job.
    prepared: bool = False


@dataclass(frozen=True)
class Started:
    run: Run
    log: str = ""  # where the job's own output goes, for messages


@dataclass(frozen=True)
class Stopped:
    graceful: bool
    seconds: float
    how: str  # e.g. "stopped gracefully through the stop marker in 1.2 s"


@dataclass(frozen=True)
class LogQuery:
    """Which driver log of job `name` is asked for: run `run_id` when given, else the newest
    run of `version` (any version when None). `run`: the job's run the target lists now, if
    one; `submission_record`: where a cluster target recorded the version's submission id."""

    name: str
    version: int | None = None
    run_id: str | None = None
    run: Run | None = None
    submission_record: str = ""


@dataclass(frozen=True)
class DriverLog:
    """Where one run's driver log is. `path`: a file on this machine the deployer reads;
    empty when it cannot be read from here, and then `where` says where it is."""

    where: str
    path: str = ""
    run_id: str | None = None
    version: int | None = None
    #: Other files of the same run, read after `path` (a standalone driver's stdout, where
    #: the runner's own lines go, beside its stderr).
    more: tuple[str, ...] = ()

    @property
    def files(self) -> tuple[str, ...]:
        return (self.path, *self.more) if self.path else ()


class SubmitOutcomeUnknown(FsrError):
    """A submission failed in a way that leaves open whether the run started (a timeout after
    the request was sent, a gateway error): nothing may start beside it until that is known."""

    def __init__(self, message: str, run: Run):
        super().__init__(message)
        self.run = run


class StopNotConfirmed(FsrError):
    """A stop (and the kill after it) could not be confirmed: the run may still write."""


class Target(Protocol):
    name: str
    #: Seconds within which a run this target accepted shows in its listing (its submission's
    #: own timeout): a submitted run not listed for longer did not start.
    submit_timeout: float

    def spark_version(self) -> str | None:
        """The Spark version the next run will use, when the target can tell ("4.3.0")."""
        ...

    def list_runs(self) -> Listing:
        """Every run of our jobs this target knows of: one listing per command, not one call
        per job. A listing that fails raises FsrError (nothing can be decided without it)."""
        ...

    def submit(self, submission: Submission) -> Started:
        """Start a run; returns once the submission is accepted (not yet healthy). FsrError:
        nothing started. SubmitOutcomeUnknown: it may have started."""
        ...

    def liveness(self, run: Run) -> Liveness:
        """Whether that run is still up, gone, or cannot be told now."""
        ...

    def launched(self, run: Run) -> None:
        """The run reported in (or ended): files kept only for its launch can go."""
        ...

    def failure_detail(self, run: Run) -> str:
        """What the target knows about why a run ended (log tail, cluster message)."""
        ...

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        """Where the driver log `query` asks for is; None when the target knows of no such
        run. Cheap (a folder listing, one small record): `status` asks it for every job."""
        ...

    def logged_runs(self, name: str, version: int) -> list[RunSeen]:
        """The runs of `version` its driver logs show, where the target keeps them as files
        on this machine (`inspect` of runs of a release that kept no run history); else []."""
        ...

    def stop(self, run: Run, stop_marker: str, timeout: float) -> Stopped:
        """Stop through the stop marker; kill only after `timeout` seconds. Returns only once
        the run is confirmed gone; StopNotConfirmed otherwise."""
        ...
