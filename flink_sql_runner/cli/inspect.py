"""`inspect NAME`: what one version's checkpoint says, read only."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    JOB_NAME,
    NO_FILES_NOR_SUBMITS,
    drop_options,
    input_options,
    or_spelled_before,
    remote_options,
    settings_from,
    spelled_before,
    version_option,
)
from flink_sql_runner.cli.original_flags import BadFlags, FsrCommand
from flink_sql_runner.errors import EXIT_FAILED, EXIT_OK
from flink_sql_runner.gather.inspection import inspect_job
from flink_sql_runner.gather.state_reader import ask_state_probe, state_of
from flink_sql_runner.render.inspect import inspect_json, inspect_text


@click.command(cls=FsrCommand)
@click.argument("name", type=JOB_NAME)
@click.option(
    "--state",
    "with_state",
    is_flag=True,
    help="Also read the state stores through Spark's state sources (4.0+; a local Spark in a "
    "child process): rows per partition, and bytes on disk.",
)
@click.option(
    "--sample-keys",
    type=click.IntRange(0),
    default=0,
    metavar="N",
    callback=or_spelled_before,
    help="With --state: a sample of N keys and their values per store.",
)
@spelled_before("--keys", "sample_keys", "--keys N is now --sample-keys N", type=click.IntRange(0))
@version_option("This query version's checkpoint [default: the stored version's].")
@input_options
@remote_options
@handle_errors
def inspect(
    name: str,
    version: int | None,
    with_state: bool,
    sample_keys: int,
    output: str,
    debug: bool,
    **kw: Any,
) -> int:
    """Show what job NAME's checkpoint says, read from Spark's own files: its committed
    batches and when they were planned, per source the last committed offsets (Kafka
    topic-partition offsets, a file source's files read, a rate source's position) and what a
    batch planned beyond the last commit reads, the watermark, the settings the checkpoint
    pins and whether the stored manifest's values agree, its stateful operators, and the runs
    of the version with the batch each one's first trigger reported (a restart's: where it
    resumed), from the run history the runs keep beside the checkpoint (for runs of older
    releases, the local target's driver logs).

    With --state it also reads each state store through Spark's own `state-metadata` and
    `statestore` sources (Spark 4.0+, in a local Spark it starts as a child process): its rows
    per partition at the last committed batch and the bytes its partitions take, and with
    --sample-keys N a sample of N keys and values. The Spark 3.5 line has no such sources: it
    says so. That Spark starts with the job's spark.hadoop.* settings and, for a checkpoint on S3 or
    HDFS, its spark.jars and spark.jars.packages (S3A needs hadoop-aws: without it, one line
    says so), ${ENV} in them resolved from this environment as a deploy resolves them (one not
    set: one line says so).

    It only reads: no lock is taken, nothing is written, and it may run while the job runs.

    Exit codes: 0 shown, 1 the version has no checkpoint yet or a file of it cannot be read
    (the line names the file and why), 2 NAME is not stored.
    """
    if sample_keys and not with_state:
        raise BadFlags("--sample-keys samples the state: give --state with it")
    deployment = Deployment(settings_from((), **kw))
    deployment.existing_store()
    found = inspect_job(name, deployment.store, deployment.target, deployment.storage, version)
    if with_state and found.report is not None:
        ask = functools.partial(ask_state_probe, spark_submit=deployment.settings.spark_submit)
        found = replace(found, state=state_of(deployment.storage, found, sample_keys, ask))
    click.echo(inspect_json(found) if output == "json" else inspect_text(found))
    return EXIT_OK if found.report is not None else EXIT_FAILED


#: `inspect` reads no job files, tables or template, and submits nothing.
drop_options(
    inspect,
    *NO_FILES_NOR_SUBMITS,
)
