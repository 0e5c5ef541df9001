"""Saved plans on the command line: `plan --out FILE` writes one, `deploy --plan FILE` and
`deploy-job --plan FILE NAME` carry one out or refuse it (act/saved_plan.py, act/stale.py)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from flink_sql_runner import __version__
from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.plan_inputs import where
from flink_sql_runner.act.saved_plan import (
    KEY_VARIABLE,
    SavedPlan,
    StalePlan,
    plan_key,
    read_saved_plan,
    write_saved_plan,
)
from flink_sql_runner.cli.options import env_var
from flink_sql_runner.cli.original_flags import BadFlags
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
    help="Also save the plan to FILE (JSON, with its digest; no secret in it; signed when "
    f"{KEY_VARIABLE} is set): `deploy --plan FILE` carries out exactly its steps, or refuses it "
    "whole (exit 2) when anything it was decided from changed.",
)


def plan_file_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--expect-digest",
        envvar=env_var("EXPECT_DIGEST"),
        help="With --plan: the digest the review approved (shown in the plan's Markdown); a "
        "file with another is refused. Without it and without the plan key "
        f"({KEY_VARIABLE}, which must have signed the plan), the file is trusted as it is.",
    )(func)
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
        "job left alone, with the job paths, catalog and template it was made from; refused "
        "whole before anything is touched (exit 2) when a job file, table file, the template, "
        "an environment value it names, the store or where jobs run changed since, or it was "
        "made by another release or is older than --max-plan-age.",
    )(func)


def saved_shown(
    deployment: Deployment,
    plan: Plan,
    jobs: list[Job],
    out: Path,
    kept: list[dict[str, Any]],
    prune: bool = False,
    keys: dict[str, Any] | None = None,
) -> tuple[str, str]:
    """The saved plan of `plan` (kept in `kept` until written) and what the Markdown plan says
    of it: its file name and digest. `keys`: what its document holds beside its jobs for its
    Markdown (render/plan.py's `shown_keys`)."""
    shown = {**plan_dict(plan), **(keys or {})}
    doc = deployment.saved_plan(
        plan, shown, jobs, __version__, prune=prune, key=plan_key(), saved_as=out.name
    )
    kept[:] = [doc]
    return out.name, str(doc["digest"])


def write(out: Path, doc: dict[str, Any]) -> None:
    write_saved_plan(out, doc)
    acting = sum(1 for d in doc["jobs"] if d.get("steps"))
    signed = ", signed" if "signature" in doc else ""
    click.echo(
        f"Saved the plan to {out} ({doc['digest']}{signed}; {acting} "
        f"job{'s' if acting != 1 else ''} to act on): carry it out with `flink-sql-runner "
        f"deploy --plan {out} --expect-digest {doc['digest']}`.",
        err=True,
    )


def read(path: Path, max_age: float, expect_digest: str | None = None) -> SavedPlan:
    """The saved plan at `path`, checked (act/saved_plan.py); a warning when nothing binds it
    to its review."""
    variable = env_var("EXPECT_DIGEST")
    if expect_digest is None and variable in os.environ:
        # click reads an empty variable as none given: a binding dropped without a word.
        raise BadFlags(f"{variable} is set but empty: give the approved digest, or unset it")
    saved = read_saved_plan(
        path,
        deployer=__version__,
        now=runtime.wall(),
        max_age=max_age,
        key=plan_key(),
        expect_digest=expect_digest,
    )
    if not saved.bound:
        click.echo(
            f"warning: {path}: carried out as the file says: neither --expect-digest nor the "
            f"plan key ({KEY_VARIABLE}) binds it to the plan that was reviewed "
            "(docs/tutorials/pull-request-gate.md)",
            err=True,
        )
    return saved


def from_plan(
    saved: SavedPlan, paths: tuple[Path, ...], kw: dict[str, Any], prune: bool = False
) -> tuple[Path, ...]:
    """The job paths a deploy of `saved` reads, and its catalog and template put in `kw`: the
    plan's own; given again, they must be the same. How it was decided (--handover, --kafka-start,
    --on-state-change, --prune) is the plan's: given again, it must be the same."""
    template = kw.get("template_file")
    for option, values, planned in (
        ("--path", [where(p) for p in paths], saved.paths),
        ("--table-definition-path", [where(p) for p in kw.get("table_paths") or ()],
         saved.table_paths),
        ("--template-file", [where(template)] if template else [],
         [saved.template_file] if saved.template_file else []),
    ):  # fmt: skip
        if values and sorted(values) != sorted(planned):
            raise BadFlags(
                f"{option} {' '.join(values)}: the saved plan was made from "
                f"{' '.join(planned) or 'none'}; give the same, or none"
            )
    ctx = click.get_current_context()
    for option, name, planned in (
        ("--handover", "handover", saved.doc["handover"]),
        ("--kafka-start", "kafka_start", saved.doc["kafka-start"]),
        ("--on-state-change", "on_state_change", saved.doc["on-state-change"]),
        ("--prune", "prune", saved.doc["prune"]),
    ):
        if ctx.get_parameter_source(name) in (None, ParameterSource.DEFAULT):
            continue
        value = prune if name == "prune" else kw.get(name)
        value = getattr(value, "text", value)
        if value != planned:
            said = f"{option} {value}: the saved plan was made with {planned or 'none'}"
            if isinstance(value, bool):
                said = f"{option}: the saved plan was made {'with' if planned else 'without'} it"
            raise BadFlags(f"{said}; a plan is carried out as it was decided")
    kw["table_paths"] = [Path(p) for p in saved.table_paths]
    kw["template_file"] = Path(saved.template_file) if saved.template_file else None
    return tuple(Path(p) for p in saved.paths)


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
