"""The facts a decision is made from, one job at a time: what git wants, what the store recorded,
what runs, what state exists, and an interrupted deploy's intent with the evidence about its run.
gather/ reads them; decide/ decides on them."""

from __future__ import annotations

from dataclasses import dataclass

from flink_sql_runner.model.intents import Intent
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import ABSENT, StoredManifest, Token
from flink_sql_runner.read.manifest import Job


@dataclass(frozen=True)
class CheckpointFacts:
    """What exists on the checkpoint storage for one job."""

    location: str  # the stored version's checkpoint
    valid: bool
    last_committed: int | None
    highest_version: int  # largest version folder under <root>/<name>/, 0 if none


@dataclass(frozen=True)
class IntentFacts:
    """An interrupted deploy's intent record, and the evidence about its run."""

    intent: Intent
    #: The interrupted deploy's new run: alive (by its run id, or as the only run of its
    #: version once the old run was confirmed gone), gone, or unknown.
    run: Liveness
    alive: Run | None = None  # the listed run that is it, when alive
    #: Its run reported a completed trigger (status file), or the record says it was healthy.
    healthy: bool = False
    checkpoint: CheckpointFacts | None = None  # of the intent's version


@dataclass(frozen=True)
class JobFacts:
    name: str
    desired: Job | None
    stored: StoredManifest | None
    runs: tuple[Run, ...] = ()
    checkpoint: CheckpointFacts | None = None
    intent: IntentFacts | None = None
    #: A fact that could not be read: the job cannot be decided.
    problem: str | None = None
    #: The version token of `stored` as read (ABSENT: none stored): the write that records
    #: the job passes it back, so it lands only on what was decided on.
    token: Token = ABSENT

    @property
    def alive(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.liveness is Liveness.ALIVE)

    @property
    def unknown(self) -> tuple[Run, ...]:
        return tuple(r for r in self.runs if r.liveness is Liveness.UNKNOWN)
