"""Saved plans on the command line: `plan --out FILE` writes one, `deploy --plan FILE` and
`deploy-job --plan FILE NAME` carry one out or refuse it (act/saved_plan.py, act/stale.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from flink_sql_runner import __version__
from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.saved_plan import (
    BadSavedPlan,
    SavedPlan,
    StalePlan,
    read_saved_plan,
    write_saved_plan,
)
from flink_sql_runner.cli.options import env_var
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.errors import EXIT_INVALID
from flink_sql_runner.host import runtime
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.plan import plan_dict, plan_json, plan_text

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class Age(click.ParamType):
    """A duration: `7d`, `36h`, `90m`, `600s` or seconds."""

    name = "duration"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", str(value))
        if found is None:
            self.fail(f"{value!r}: give a duration such as 7d, 36h, 90m or 600s", param, ctx)
        return float(found.group(1)) * _UNITS[found.group(2) or "s"]


out_option = click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    envvar=env_var("PLAN_OUT"),
    help="Also save the plan to FILE (JSON, with its digest; no secret in it): "
    "`deploy --plan FILE` carries out exactly its steps, or refuses it whole (exit 2) when "
    "anything it was decided from changed.",
)


def plan_file_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--max-plan-age",
        type=Age(),
        default="7d",
        show_default=True,
        envvar=env_var("MAX_PLAN_AGE"),
        help="With --plan: refuse a saved plan older than this (7d, 36h, 90m, 600s).",
    )(func)
    return click.option(
        "--plan",
        "plan_file",
        type=click.Path(path_type=Path, dir_okay=False),
        envvar=env_var("SAVED_PLAN"),
        help="Carry out the saved plan FILE (`plan --out FILE`): exactly its steps, every other "
        "job left alone; refused whole before anything is touched (exit 2) when a job file, "
        "table file, the template, an environment value it names or the store changed since, "
        "or it was made by another release or is older than --max-plan-age.",
    )(func)


def saved_shown(
    deployment: Deployment, plan: Plan, jobs: list[Job], out: Path, kept: list[dict[str, Any]]
) -> tuple[str, str]:
    """The saved plan of `plan` (kept in `kept` until written) and what the Markdown plan says
    of it: its file name and digest."""
    doc = deployment.saved_plan(plan, plan_dict(plan), jobs, __version__)
    kept[:] = [doc]
    return out.name, str(doc["digest"])


def write(out: Path, doc: dict[str, Any]) -> None:
    write_saved_plan(out, doc)
    acting = sum(1 for d in doc["jobs"] if d.get("steps"))
    click.echo(
        f"Saved the plan to {out} ({doc['digest']}; {acting} job{'s' if acting != 1 else ''} "
        f"to act on): carry it out with `flink-sql-runner deploy --plan {out}`.",
        err=True,
    )


def read(path: Path, max_age: float) -> SavedPlan:
    return read_saved_plan(path, deployer=__version__, now=runtime.wall(), max_age=max_age)


def job_file(saved: SavedPlan, name: str) -> Path | None:
    """The file `deploy-job --plan FILE NAME` loads: the one the plan decided NAME from. None:
    the plan leaves NAME alone (nothing to do)."""
    decision = saved.decisions.get(name)
    if decision is None:
        raise BadSavedPlan(f"{saved.path}: jobs: no job {name} in the saved plan")
    if not decision.get("steps"):
        return None
    entry = saved.doc["inputs"].get(name)
    if entry is None:
        raise BadSavedPlan(
            f"{saved.path}: {name} is not deployed from a file (a stored job the plan stops or "
            "prunes): carry the plan out with deploy --plan"
        )
    return Path(entry["file"])


def check_inputs(
    deployment: Deployment, saved: SavedPlan, jobs: list[Job], acting: list[str] | None = None
) -> None:
    """StalePlan when an input of a job the plan acts on changed since (before the lock)."""
    lines = deployment.stale_inputs(saved, jobs, acting)
    if lines:
        raise StalePlan(saved.path, lines)


def refused(
    exc: StalePlan, deployment: Deployment, jobs: list[Job], output: str, include_orphans: bool
) -> int:
    """A stale plan: its lines (stderr), then a plan made now (stdout), to review again."""
    click.echo(f"error: {exc}", err=True)
    fresh = exc.fresh or deployment.plan(jobs, include_orphans=include_orphans, read_only=True)
    if output == "json":
        click.echo(plan_json(fresh, stale=exc.lines))
    else:
        click.echo("A plan made now, from what is (review it, then save it again):")
        click.echo(plan_text(fresh))
    return EXIT_INVALID
