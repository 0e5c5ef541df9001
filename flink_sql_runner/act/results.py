"""What carrying out a plan reports: each job's result, and a deploy abandoned mid-way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flink_sql_runner.decide.decisions import Decision
from flink_sql_runner.errors import FsrError


@dataclass
class JobResult:
    name: str
    ok: bool
    summary: str
    detail: str = ""
    steps: list[str] = field(default_factory=list)
    #: done, unchanged, failed, rolled-back, skipped (held back: a job it waits for failed),
    #: and for an interrupted deploy not-begun, left-in-flight
    outcome: str = "done"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "outcome": self.outcome,
            "summary": self.summary,
            "steps": self.steps,
            "detail": self.detail,
        }


class Abandoned(FsrError):
    """A deploy interrupted twice stopped acting once the calls in flight returned: every
    job's result (`left-in-flight` for the jobs in flight, whose intent records stay;
    `not-begun`), and what those in flight were doing."""

    exit_code = 130

    def __init__(self, results: dict[str, JobResult], in_flight: dict[str, str]):
        doing = "; ".join(f"{name}: {what}" for name, what in in_flight.items())
        super().__init__(
            "stopped acting"
            + (
                f" while in flight ({doing}); the next deploy settles these from their intent "
                "records"
                if in_flight
                else ""
            )
        )
        self.results, self.in_flight = results, in_flight


def first_line(text: str) -> str:
    lines = str(text).splitlines()
    return lines[0] if lines else ""


def why_held(other: str, result: JobResult, decision: Decision) -> str:
    if result.outcome == "skipped":
        return f"{other} was held back"
    what = decision.why_after.get(other, "must finish first")
    return f"{other} ({what}) {result.outcome.replace('-', ' ')}"


def not_begun(decision: Decision) -> JobResult:
    return JobResult(
        decision.name,
        False,
        "not begun: the deploy was interrupted before it (deploy again to carry it out)",
        outcome="not-begun",
    )


def left_in_flight(decision: Decision, doing: str) -> JobResult:
    return JobResult(
        decision.name,
        False,
        f"left in flight ({doing}): its intent record stays; the next deploy settles it",
        outcome="left-in-flight",
    )


def held_back(decision: Decision, why: list[str]) -> JobResult:
    return JobResult(
        decision.name, False, f"skipped: held back, {'; '.join(why)}", outcome="skipped"
    )
