"""Starts that cannot begin: what a run would need and cannot have (a connector), found before
anything is stopped, turns the decision into an `error` without steps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from flink_sql_runner.decide.decisions import Action, Plan
from flink_sql_runner.decide.steps import StartRun


def without_starts_that_cannot_begin(
    plan: Plan, missing: Callable[[dict[str, Any], dict[str, str]], str | None]
) -> Plan:
    """`missing(tables, spark properties)` says why a run of such a job could not begin."""
    decisions = []
    for decision in plan.decisions:
        why = None
        for step in decision.steps:
            if isinstance(step, StartRun):
                spec = step.manifest.job
                conf = {str(k): str(v) for k, v in spec.get("sparkProperties", {}).items()}
                why = why or missing(step.manifest.tables, conf)
        if why is not None:
            decision = replace(
                decision,
                action=Action.ERROR,
                reason=f"{decision.reason}; but {why}; nothing is stopped or started",
                steps=(),
                rollback=(),
            )
        decisions.append(decision)
    return replace(plan, decisions=tuple(decisions))
