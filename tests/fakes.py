"""In-memory fakes of every side effect, with failure switches, for the decision logic."""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flink_sql_runner.checkpoints import CheckpointInfo
from flink_sql_runner.errors import FsrError, StoreError
from flink_sql_runner.plan import RunningJob
from flink_sql_runner.stored import StoredManifest
from flink_sql_runner.targets.base import Started, Stopped, Submission


class FakeStore:
    location = "memory://store/"

    def __init__(self) -> None:
        self.manifests: dict[str, StoredManifest] = {}
        self.archived: dict[str, StoredManifest] = {}
        self.side: dict[str, str] = {}
        self.lock = MemoryLockBackend()
        #: Called before each manifest write, e.g. to simulate a deployer killed right there.
        self.before_write: Callable[[StoredManifest], None] | None = None
        self.fail_reads = False
        self.fail_writes = False
        self.writes: list[str] = []

    def list_names(self) -> list[str]:
        if self.fail_reads:
            raise StoreError("store unreachable (switch)")
        return sorted(self.manifests)

    def read(self, name: str) -> StoredManifest | None:
        if self.fail_reads:
            raise StoreError("store unreachable (switch)")
        return self.manifests.get(name)

    def read_many(self, names, max_workers: int) -> dict[str, StoredManifest | None]:
        return {name: self.read(name) for name in names}

    def refresh_index(self) -> bool:
        return False

    def write(self, manifest: StoredManifest) -> None:
        if self.before_write is not None:
            self.before_write(manifest)
        if self.fail_writes:
            raise StoreError("store refuses writes (switch)")
        self.manifests[manifest.name] = manifest
        self.writes.append(manifest.name)

    def archive(self, name: str) -> str:
        if name not in self.manifests:
            raise StoreError(f"cannot archive {name}: it does not exist")
        self.archived[name] = self.manifests.pop(name)
        return f"memory://archive/{name}"

    # side documents (intent records) and the lock
    def write_side(self, key: str, text: str) -> None:
        if self.fail_writes:
            raise StoreError("store refuses writes (switch)")
        self.side[key] = text

    def read_side_folder(self, folder: str) -> dict[str, str]:
        if self.fail_reads:
            raise StoreError("store unreachable (switch)")
        prefix = folder + "/"
        return {k[len(prefix) :]: v for k, v in sorted(self.side.items()) if k.startswith(prefix)}

    def delete_side(self, key: str) -> None:
        self.side.pop(key, None)

    def lock_backend(self) -> MemoryLockBackend:
        return self.lock


class MemoryLockBackend:
    """The lock of FakeStore: the same contract as the file and S3 backends."""

    location = "memory://store/_lock"

    def __init__(self) -> None:
        self.holder = None
        self.version = 0

    def create(self, holder) -> bool:
        if self.holder is not None:
            return False
        self.holder, self.version = holder, self.version + 1
        return True

    def read(self):
        return self.holder, (self.version if self.holder is not None else None)

    def replace(self, holder, token) -> bool:
        if token != self.version or self.holder is None:
            return False
        self.holder, self.version = holder, self.version + 1
        return True

    def delete(self, token) -> None:
        if token == self.version:
            self.holder = None


@dataclass
class FakeTarget:
    name: str = "fake"
    running: dict[str, RunningJob] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)
    fail_submit: bool = False
    die_after_submit: bool = False
    graceful: bool = True
    on_submit: object = None  # callable(submission) -> None, e.g. to write a status file
    #: Called first in submit / stop, e.g. to simulate a deployer killed right there.
    before_submit: object = None
    before_stop: object = None
    #: Every submit made while a run of the same job was still up: must stay empty.
    double_starts: list[str] = field(default_factory=list)

    def list_running(self) -> dict[str, RunningJob]:
        return dict(self.running)

    def submit(self, submission: Submission) -> Started:
        if callable(self.before_submit):
            self.before_submit(submission)
        if submission.name in self.running:
            self.double_starts.append(submission.name)
        if self.fail_submit:
            raise FsrError("cluster refused the submission (switch)")
        self.submissions.append(submission)
        job = RunningJob(submission.name, submission.version, submission.run_id, "fake 1")
        if not self.die_after_submit:
            self.running[submission.name] = job
        if callable(self.on_submit):
            self.on_submit(submission)
        return Started(job)

    def is_alive(self, running: RunningJob) -> bool:
        current = self.running.get(running.name)
        return current is not None and current.run_id == running.run_id

    def failure_detail(self, running: RunningJob) -> str:
        return "fake log tail"

    def stop(self, running: RunningJob, stop_marker: str, timeout: float) -> Stopped:
        if callable(self.before_stop):
            self.before_stop(running)
        self.stops.append(running.name)
        self.running.pop(running.name, None)
        return Stopped(self.graceful, 0.1, "stopped gracefully" if self.graceful else "killed")


class FakeState:
    """Checkpoint storage: which checkpoints exist, and control files."""

    def __init__(self) -> None:
        self.checkpoints: dict[str, CheckpointInfo] = {}
        self.files: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    def add_checkpoint(self, location: str, last_committed: int | None = 3) -> None:
        self.checkpoints[location] = CheckpointInfo(
            location, True, True, last_committed, last_committed
        )
        job_root, _, version = location.rpartition("/")
        self.versions[job_root] = max(self.versions.get(job_root, 0), int(version))

    def inspect(self, location: str) -> CheckpointInfo:
        return self.checkpoints.get(location, CheckpointInfo(location, False, False, None, None))

    def highest_version(self, job_location: str) -> int:
        return self.versions.get(job_location, 0)

    # ControlStorage
    def read_text(self, location: str) -> str | None:
        return self.files.get(location)

    def write_text(self, location: str, text: str) -> None:
        self.files[location] = text

    def delete(self, location: str) -> None:
        self.files.pop(location, None)

    def is_empty(self, location: str) -> bool:
        return location not in self.checkpoints and not any(
            f.startswith(location + "/") for f in self.files
        )


class FakeClock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def stand_in(path: Path, source: str) -> Path:
    """An executable script at `path` (a stand-in for spark-submit); `{python}` in `source`
    becomes this interpreter."""
    import sys

    path.write_text(source.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path
