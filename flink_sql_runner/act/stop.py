"""`stop NAME`: every run of a job stopped with its checkpoint, and the job recorded as stopped
(desired-state: stopped), as a deploy that stops it records it."""

from __future__ import annotations

from dataclasses import dataclass

from flink_sql_runner.decide.tree import as_stopped
from flink_sql_runner.errors import FsrError, UnknownJob
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Liveness
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Target


@dataclass(frozen=True)
class StopResult:
    """What `stop NAME` did: `stopped` (every run of the job is gone now) or `not-running`
    (there was nothing to stop)."""

    name: str
    outcome: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "outcome": self.outcome, "result": self.message}


def stop_job(
    store: ManifestStore,
    target: Target,
    storage: Storage,
    name: str,
    timeout: float,
    lease: StoreLock | None = None,
) -> StopResult:
    """Stop every run of job `name` the target lists, with its checkpoint, and record it as
    stopped (desired-state: stopped), as a deploy that stops it does: `watch` leaves it
    down, and a deploy whose manifest says running resumes it from its checkpoint."""
    runs = target.list_runs().of(name)
    stored = store.read(name)
    if stored is None:
        if not runs:
            raise UnknownJob(
                f"unknown job {name!r}: no manifest of it in {store.location} and no "
                f"run of it on the {target.name} target"
            )
        raise FsrError(f"job {name!r} runs but has no stored manifest; cannot find its stop marker")
    recorded = stored.job.get("desired-state") == "stopped"
    if not runs and recorded:
        return StopResult(name, "not-running", f"{name}: already stopped; checkpoint kept")
    root = str(stored.job["checkpoint-root"]).rstrip("/")
    said = []
    for run in runs:
        if lease is not None:
            lease.check()
        if run.liveness is Liveness.UNKNOWN and run.version is None:
            raise FsrError(f"{name}: cannot stop {run.describe()}: {run.detail}")
        control = ControlFiles.of(f"{root}/{name}", run.version or stored.meta.query_version)
        stopped = target.stop(run, control.stop_marker, timeout)
        storage.delete(control.stop_marker)
        said.append(stopped.how if len(runs) == 1 else f"v{run.version}: {stopped.how}")
    if not recorded:
        if lease is not None:
            lease.check()
        store.write(as_stopped(stored))
    if not runs:
        message = f"{name}: was not running; recorded as stopped (checkpoint kept)"
        return StopResult(name, "not-running", message)
    message = f"{name}: {'; '.join(said)}; checkpoint kept, recorded as stopped"
    return StopResult(name, "stopped", message)
