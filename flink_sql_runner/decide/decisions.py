"""The plan as plain data: each job's decision (its action, why, and the steps that carry it out),
and what it means for the jobs downstream. Nothing here reads or acts; `plan` prints these values
and `deploy` hands their steps to the executor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from flink_sql_runner._runner.schema_rules import describe
from flink_sql_runner.decide.changes import Change
from flink_sql_runner.decide.steps import Step
from flink_sql_runner.model.intents import FailedStart
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
    #: A start its sink's schema contract refuses (decide/contracts.py): nothing done.
    REFUSED = "refused"
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
class SchemaReport:
    """What a decision's start does to its sink's schema, for people and JSON."""

    sink: str
    policy: str
    verdict: str  # same, additive, breaking, new-location, unknown, error
    change: dict[str, Any] = field(default_factory=dict)
    conflicts: tuple[str, ...] = ()  # declared schemas (the sink's, its readers') not met
    readers: tuple[str, ...] = ()  # jobs of this deploy that read the sink
    notes: tuple[str, ...] = ()
    output: tuple[dict[str, Any], ...] | None = None
    refused: bool = False

    @property
    def worth_saying(self) -> bool:
        """Whether people need to hear of it: a change, a conflict, or something unknown."""
        return self.verdict != "same" or bool(self.conflicts or self.notes)

    def summary(self) -> str:
        """One line: `value bigint -> string; readers: tick-count`."""
        parts = []
        if self.change and self.verdict not in ("same", "unknown", "error"):
            parts.append(describe(self.change))
        parts += list(self.conflicts)
        parts += list(self.notes)
        if self.readers:
            parts.append("read by " + ", ".join(self.readers))
        return "; ".join(parts) or "no change"

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "sink": self.sink,
            "policy": self.policy,
            "verdict": self.verdict,
            "refused": self.refused,
        }
        for key in ("added", "required", "dropped", "renamed", "retyped", "moved"):
            doc[key] = list(self.change.get(key, []))
        doc["conflicts"] = list(self.conflicts)
        doc["readers"] = list(self.readers)
        doc["notes"] = list(self.notes)
        doc["output"] = list(self.output) if self.output is not None else None
        return doc


@dataclass(frozen=True)
class OperatorVerdict:
    """One stateful operator of a new version's query: whether the previous version's state
    would keep its meaning for it (`kept`, `rebuilt`, `unknown`), why, and what a kept state
    mixes at the change."""

    operator: str  # as people read it: `aggregation by k, window(ts, 20 seconds): count(*)`
    verdict: str
    reasons: tuple[str, ...] = ()
    mixes: tuple[str, ...] = ()

    def line(self) -> str:
        why = f": {'; '.join(self.reasons)}" if self.reasons else ""
        mixes = f" ({'; '.join(self.mixes)})" if self.mixes else ""
        return f"{self.operator}: {self.verdict}{why}{mixes}"

    def to_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "verdict": self.verdict,
                "reasons": list(self.reasons), "mixes": list(self.mixes)}  # fmt: skip


@dataclass(frozen=True)
class StateReport:
    """What a query change's new version does with state (decide/state.py): a verdict per
    stateful operator of its query, how its state comes to be (`how`: `rebuilt` from sources
    that read again what the state was built from, `partial` where windows open at the change
    are written with only the records after it, `unknown`), and whether that refuses it."""

    how: str
    summary: str
    operators: tuple[OperatorVerdict, ...] = ()
    policy: str = "refuse"
    policy_from: str = "default"
    refused: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "summary": self.summary,
            "operators": [o.to_dict() for o in self.operators],
            "on-state-change": self.policy,
            "refused": self.refused,
        }


def step_dict(step: Step) -> dict[str, Any]:
    """A step for JSON: what it does, then `text`, as the text and Markdown plans say it."""
    return {**step.to_dict(), "text": step.describe()}


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
    #: What its start does to the schema of its sink (decide/contracts.py), when checked.
    schema: SchemaReport | None = None
    #: The job's first start that failed (the record it kept), shown beside the retry.
    failed_start: FailedStart | None = None
    #: What a query change's new version does with state (decide/state.py), when stateful.
    state: StateReport | None = None

    def to_dict(
        self, change: Callable[[Change], dict[str, Any]] = Change.to_dict
    ) -> dict[str, Any]:
        """For JSON; `change`: how each change is shown (render/ masks the secrets in them)."""
        doc: dict[str, Any] = {
            "name": self.name,
            "action": self.action.value,
            "query-version": self.version,
            "reason": self.reason,
            "changes": [change(c) for c in self.changes],
            "steps": [step_dict(s) for s in self.steps],
            "rollback": [step_dict(s) for s in self.rollback],
        }
        if self.after:
            doc["after"] = list(self.after)
        if self.after_stops:
            doc["after-stops"] = list(self.after_stops)
        if self.stop_after:
            doc["stop-after"] = list(self.stop_after)
        if self.downstream:
            doc["downstream"] = [i.to_dict() for i in self.downstream]
        if self.schema is not None:
            doc["schema"] = self.schema.to_dict()
        if self.failed_start is not None:
            doc["failed-start"] = self.failed_start.to_dict()
        if self.state is not None:
            doc["state"] = self.state.to_dict()
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
        """The decisions that fail the command: errors, and starts refused by a contract."""
        return tuple(d for d in self.decisions if d.action in (Action.ERROR, Action.REFUSED))

    def to_dict(self) -> dict[str, Any]:
        return {"jobs": [d.to_dict() for d in self.decisions]}
