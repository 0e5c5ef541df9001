"""What a target says about the runs of jobs: each run is alive, gone, or unknown.

"Unknown" is never "not running": a cluster API that answers 503, a pod in phase `Unknown`, a run
record that cannot be read all leave open that a run still writes, so nothing starts beside it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from enum import Enum


class Liveness(str, Enum):
    ALIVE = "alive"
    GONE = "gone"
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, state: str, alive: Collection[str], gone: Collection[str]) -> Liveness:
        """A cluster's word for a driver's state as liveness: gone only for a state known to
        be final; a word in neither list (the cluster's own "unknown", a state a later
        version adds, output that could not be read) is unknown, never gone."""
        if state in alive:
            return cls.ALIVE
        return cls.GONE if state in gone else cls.UNKNOWN


@dataclass(frozen=True)
class Run:
    """One run of a job, as a target lists it."""

    name: str
    version: int | None
    run_id: str | None = None
    detail: str = ""  # for people: "pid 4242", a cluster's submission or application id
    submission_id: str | None = None  # what the cluster calls this run, for status and kill
    #: A listed run is alive, or unknown (the target cannot tell, e.g. a pod in phase Unknown).
    liveness: Liveness = Liveness.ALIVE

    def describe(self) -> str:
        version = f"v{self.version}" if self.version is not None else "unknown version"
        state = "" if self.liveness is Liveness.ALIVE else f", {self.liveness.value}"
        return f"{version} ({self.detail}{state})" if self.detail else f"{version}{state}"


@dataclass(frozen=True)
class Listing:
    """Every run a target knows of, by job name, from one listing."""

    runs: dict[str, tuple[Run, ...]] = field(default_factory=dict)

    def of(self, name: str) -> tuple[Run, ...]:
        return self.runs.get(name, ())

    @classmethod
    def of_runs(cls, runs: list[Run]) -> Listing:
        grouped: dict[str, list[Run]] = {}
        for run in runs:
            grouped.setdefault(run.name, []).append(run)
        return cls({name: tuple(found) for name, found in sorted(grouped.items())})
