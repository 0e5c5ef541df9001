"""What every target (local, standalone, yarn, kubernetes) offers the deployer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from flink_sql_runner.plan import RunningJob


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


@dataclass(frozen=True)
class Started:
    running: RunningJob
    log: str = ""  # where the job's own output goes, for messages


@dataclass(frozen=True)
class Stopped:
    graceful: bool
    seconds: float
    how: str  # e.g. "stopped gracefully through the stop marker in 1.2 s"


class Target(Protocol):
    name: str

    def list_running(self) -> dict[str, RunningJob]:
        """Every job this target runs now: one listing per deploy, not one call per job."""
        ...

    def submit(self, submission: Submission) -> Started:
        """Start a run; returns once the submission is accepted (not yet healthy)."""
        ...

    def is_alive(self, running: RunningJob) -> bool:
        """Whether that run is still up."""
        ...

    def failure_detail(self, running: RunningJob) -> str:
        """What the target knows about why a run ended (log tail, cluster message)."""
        ...

    def stop(self, running: RunningJob, stop_marker: str, timeout: float) -> Stopped:
        """Stop through the stop marker; kill only after `timeout` seconds."""
        ...
