"""The plan as plain data: each job's decision (its action, why, and the steps that carry it out),
and what it means for the jobs downstream. Nothing here reads or acts; `plan` prints these values
and `deploy` hands their steps to the executor."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from flink_sql_runner.decide.changes import Change
from flink_sql_runner.decide.steps import Step
from flink_sql_runner.model.stored import ABSENT, Token


class Action(str, Enum):
    NOOP = "noop"
    START_CLEAN = "start-clean"
    RESTART = "restart-from-checkpoint"
    STOP_AND_RESTART = "stop-and-restart-from-checkpoint"
    STOP_AND_START_CLEAN = "stop-and-start-clean"
    STOP = "stop"
    PRUNE = "prune"
    ADOPT = "adopt"
    ERROR = "error"
    ORPHANED = "orphaned"


@dataclass(frozen=True)
class Impact:
    """What a job's decision does to one job downstream of it: `effect` is `reads-again`
    (it reads rows it has read before), `follows` (it starts clean as a new version with the
    producer), or `stays` (it keeps reading the producer's old output)."""

    job: str
    effect: str
    detail: str

    def to_dict(self) -> dict[str, str]:
        return {"job": self.job, "effect": self.effect, "detail": self.detail}


@dataclass(frozen=True)
class Decision:
    name: str
    action: Action
    version: int | None
    reason: str
    changes: tuple[Change, ...] = ()
    steps: tuple[Step, ...] = ()
    #: Run when a start of `steps` ends without a healthy run (confirmed gone): the previous
    #: run started again from its checkpoint; the store keeps the previous manifest.
    rollback: tuple[Step, ...] = ()
    #: Jobs whose steps must be done before this job's starts (the owner of the sink this job
    #: will write; the producers of what it reads). When one fails, its starts are held back.
    after: tuple[str, ...] = ()
    #: Jobs whose stops must be done before this job's starts, not their whole decision: each
    #: lets go of the sink this job will write, and neither starts its old run there again (no
    #: rollback into it). Where `after` would wait in a circle (two jobs swapping sinks). When a
    #: stop fails, this job's starts are held back.
    after_stops: tuple[str, ...] = ()
    #: Jobs whose stops must be done before this job's stops (the consumers of what it writes).
    stop_after: tuple[str, ...] = ()
    #: Why, for each job of `after` and `after_stops` (said when this job is held back).
    why_after: dict[str, str] = field(default_factory=dict, compare=False)
    #: What this decision means for the jobs downstream of it (lineage order).
    downstream: tuple[Impact, ...] = ()
    #: The version token of the stored manifest the decision was made on (its facts'): its
    #: Record and Archive steps write only while the store still holds that version.
    token: Token = field(default=ABSENT, compare=False)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "action": self.action.value,
            "query-version": self.version,
            "reason": self.reason,
            "changes": [c.to_dict() for c in self.changes],
            "steps": [s.to_dict() for s in self.steps],
            "rollback": [s.to_dict() for s in self.rollback],
        }
        if self.after:
            doc["after"] = list(self.after)
        if self.after_stops:
            doc["after-stops"] = list(self.after_stops)
        if self.stop_after:
            doc["stop-after"] = list(self.stop_after)
        if self.downstream:
            doc["downstream"] = [i.to_dict() for i in self.downstream]
        return doc


@dataclass(frozen=True)
class Plan:
    decisions: tuple[Decision, ...]

    @property
    def pending(self) -> bool:
        """Whether applying the plan would do anything."""
        return any(d.steps for d in self.decisions)

    @property
    def errors(self) -> tuple[Decision, ...]:
        return tuple(d for d in self.decisions if d.action is Action.ERROR)

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [d.to_dict() for d in self.decisions]}
