"""`inspect NAME`: what one version's checkpoint says, read only."""

from __future__ import annotations

from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import drop_options, input_options, remote_options, settings_from
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_FAILED, EXIT_OK
from flink_sql_runner.gather.inspection import inspect_job
from flink_sql_runner.render.inspect import inspect_json, inspect_text


@click.command(cls=FsrCommand)
@click.argument("name")
@click.option(
    "--version",
    "version",
    type=click.IntRange(1),
    help="This query version's checkpoint [default: the stored version's].",
)
@input_options
@remote_options
@handle_errors
def inspect(name: str, version: int | None, output: str, debug: bool, **kw: Any) -> int:
    """Show what job NAME's checkpoint says, read from Spark's own files: its committed
    batches and when they were planned, per source the last committed offsets (Kafka
    topic-partition offsets, a file source's files read, a rate source's position) and what a
    batch planned beyond the last commit reads, the watermark, the settings the checkpoint
    pins and whether the stored manifest's values agree, its stateful operators, and the runs
    of the version (with the first batch each completed, where the local target's logs tell).

    It only reads: no lock is taken, nothing is written, and it may run while the job runs.

    Exit codes: 0 shown, 1 the version has no checkpoint yet or a file of it cannot be read
    (the line names the file and why), 2 NAME is not stored.
    """
    deployment = Deployment(settings_from((), **kw))
    found = inspect_job(name, deployment.store, deployment.target, deployment.storage, version)
    click.echo(inspect_json(found) if output == "json" else inspect_text(found))
    return EXIT_OK if found.report is not None else EXIT_FAILED


#: `inspect` reads no job files, tables or template, and submits nothing.
drop_options(
    inspect, "table_paths", "template_file", "strict_properties", "no_cache", "runner_path"
)
