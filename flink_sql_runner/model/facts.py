"""The facts a decision is made from, one job at a time: what git wants, what the store recorded,
what runs, what state exists, and an interrupted deploy's intent with the evidence about its run.
gather/ reads them; decide/ decides on them."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from flink_sql_runner.model.contracts import ContractFacts
from flink_sql_runner.model.intents import Intent, Settlement
from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.state import StateFacts
from flink_sql_runner.model.stored import ABSENT, StoredManifest, Token
from flink_sql_runner.read.manifest import Job


@dataclass(frozen=True)
class CheckpointFacts:
    """What exists on the checkpoint storage for one job."""

    location: str  # the stored version's checkpoint
    valid: bool
    last_committed: int | None
    highest_version: int  # largest version folder under <root>/<name>/, 0 if none
    #: The Spark settings the checkpoint pins (the `conf` map of its latest offsets file),
    #: setting -> value; None when no checkpoint is readable (what it pins is unknown).
    pinned: dict[str, str] | None = field(default=None, hash=False)
    #: False when its `metadata` and commits were not read (a plan of a job that runs needs
    #: only its highest version and what it pins): `valid` and `last_committed` then say
    #: nothing, and a decision that needs them finds no valid checkpoint.
    inspected: bool = True
    #: Its `metadata` holds a query id but no batch was planned (no `offsets/`, no `commits/`):
    #: the version's first run stopped before its first batch; Spark starts it as new.
    unplanned: bool = False
    #: The source lines of its latest offsets file, one per source of the query (None: no
    #: offsets file, or none readable): what its Kafka sources read, for the plan of where a
    #: new version's start (model/offsets.py).
    latest_sources: tuple[Any, ...] | None = field(default=None, hash=False)


@dataclass(frozen=True)
class IntentFacts:
    """An interrupted command's intent record, settled on the evidence about its run."""

    settled: Settlement
    checkpoint: CheckpointFacts | None = None  # of the intent's version

    @property
    def intent(self) -> Intent:
        return self.settled.intent


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
    #: The schema contract of its sink, for a job whose start could change what it writes
    #: (gathered only for those, and only by commands that start jobs, before deciding): one
    #: for a start of any version, or one per version its start could take when its sink's
    #: place depends on the version (`contract_for`).
    contracts: tuple[ContractFacts, ...] = ()
    #: What the state of the running version's query and of the desired one means, for a job
    #: whose start could change its query (gathered with `contracts`, model/state.py).
    state: StateFacts | None = None
    #: The desired job and the stored manifest, when gather found them the same field for
    #: field (model/same.py::unchanged), so that the plan does not compare them again. Kept
    #: with the two it is about: facts made with another desired job or stored manifest
    #: (`replace`) are compared anew.
    found_same: tuple[Job, StoredManifest] | None = field(default=None, repr=False, compare=False)

    def contract_for(self, version: int) -> ContractFacts | None:
        """The contract facts of a start of `version`; None when none were gathered for it."""
        for contract in self.contracts:
            if contract.version is None or contract.version == version:
                return contract
        return None

    # The runs by liveness are asked many times of each job (gather, the tree, the one writer
    # per sink); its facts do not change, so they are found once.
    @cached_property
    def writers(self) -> tuple[Run, ...]:
        """Its listed runs, but for a run an interrupted warm handover prepared and never gave
        its go (its record says the go was not due, or its go file holds none): that one
        writes nothing and ends by itself (model/intents.py)."""
        intent = self.intent.intent if self.intent is not None else None
        if intent is None:
            return self.runs
        assert self.intent is not None
        if not (intent.waits_for_go or self.intent.settled.waiting):
            return self.runs
        return tuple(r for r in self.runs if r.run_id != intent.run_id)

    @cached_property
    def alive(self) -> tuple[Run, ...]:
        return tuple(r for r in self.writers if r.liveness is Liveness.ALIVE)

    @cached_property
    def unknown(self) -> tuple[Run, ...]:
        return tuple(r for r in self.writers if r.liveness is Liveness.UNKNOWN)
