"""Commands that read only what users wrote: `validate` and `lineage` (offline); `load`, the
jobs under --path with their warnings, for every command that reads them."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    env_var,
    input_options,
    options,
    path_option,
    settings_from,
)
from flink_sql_runner.cli.original_flags import (
    FsrCommand,
    original_options,
)
from flink_sql_runner.decide.contracts import declared_conflicts
from flink_sql_runner.errors import (
    EXIT_FAILED,
    EXIT_OK,
    InvalidInput,
    Problem,
)
from flink_sql_runner.host import collector
from flink_sql_runner.model.lineage import build_lineage
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.paths import SourceCheck
from flink_sql_runner.render.lineage import OUTPUTS as LINEAGE_OUTPUTS
from flink_sql_runner.render.lineage import render_lineage
from flink_sql_runner.render.validation import validation_json

#: Allocations between two collections of the youngest generation (Python's default: 700), once
#: the collector runs again (host/collector.py): the commands that load jobs keep what they
#: loaded to their end. Process-wide, set by these commands only (not `watch`); the older
#: generations keep their defaults.
GC_YOUNG_THRESHOLD = 50_000


def load(
    deployment: Deployment, path: Path | None = None, sources: SourceCheck = SourceCheck.NONE
) -> list[Job]:
    """The jobs under --path (or the one file `path`); the warnings of loading them go to
    stderr, one line each, also when the input is invalid. `sources`: which source paths must
    exist (commands that start jobs: `deployment.sources_checked()`)."""
    gc.set_threshold(GC_YOUNG_THRESHOLD)
    collector.pause()  # to the command's end, or until a deploy acts
    try:
        if path is not None:
            return [deployment.load_one(path, sources)]
        return deployment.load(sources)
    finally:
        for warning in deployment.settings.properties.warnings:
            click.echo(f"warning: {warning}", err=True)


@click.command(cls=FsrCommand)
@path_option
@input_options
@options("--output")
@original_options(offline=True)
@handle_errors
def validate(paths: tuple[Path, ...], output: str, debug: bool, **kw: Any) -> int:
    """Check every job manifest and table definition, offline: also that a job reading what
    another writes declares no column the writer's declared schema does not give it as
    declared, and that the sources written as relative paths exist. Relative paths resolve
    against the folder this command runs in (deploy stores them absolute). Touches nothing.
    With --output json: one document, `{"ok", "jobs", "problems"}` (docs/reference/json.md).

    Exit codes: 0 every job is valid, 2 a problem (one line each, naming the file and the
    field)."""
    try:
        jobs = load(Deployment(settings_from(paths, **kw)), sources=SourceCheck.RELATIVE)
        conflicts = declared_conflicts(jobs, build_lineage(jobs))
        if conflicts:
            raise InvalidInput(
                [Problem(str(file), field, message) for file, field, message in conflicts]
            )
    except InvalidInput as exc:
        if output != "json":
            raise
        problems = [(p.file, p.field, p.message) for p in exc.problems]
        click.echo(validation_json([], problems, exc.hints))
        return exc.exit_code
    if output == "json":
        click.echo(validation_json(jobs, [], []))
        return EXIT_OK
    click.echo(
        f"{len(jobs)} job{'s' if len(jobs) != 1 else ''} valid: " + ", ".join(j.name for j in jobs)
    )
    relative = dict.fromkeys(written for job in jobs for _, written in job.relative)
    if relative:
        click.echo(
            f"relative paths resolve against {jobs[0].base} (the folder this command runs in; "
            f"deploy stores them absolute): {', '.join(relative)}"
        )
    return EXIT_OK


@click.command(cls=FsrCommand)
@path_option
@input_options
@click.option(
    "--output",
    type=click.Choice(LINEAGE_OUTPUTS),
    default="text",
    show_default=True,
    envvar=env_var("OUTPUT"),
    help="Text for people, JSON for machines, Mermaid or DOT (Graphviz) for a diagram.",
)
@handle_errors
def lineage(paths: tuple[Path, ...], output: str, debug: bool, **kw: Any) -> int:
    """Show which job writes what another reads, offline: the jobs (producers first), the
    tables and where their data is, the links between jobs, the tables no job uses, cycles.

    \b
    Exit codes: 0 ok, 1 jobs feed each other in a cycle (everything is printed all the
    same; each cycle is named on stderr), 2 invalid input.
    """
    deployment = Deployment(settings_from(paths, **kw))
    graph = build_lineage(load(deployment), catalog=deployment.catalog())
    click.echo(render_lineage(graph, output, base=str(Path.cwd())))
    for cycle in graph.cycles:
        click.echo(f"error: jobs feed each other: {' -> '.join((*cycle, cycle[0]))}", err=True)
    return EXIT_FAILED if graph.cycles else EXIT_OK
