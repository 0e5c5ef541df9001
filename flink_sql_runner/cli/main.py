"""The `flink-sql-runner` command line: the group and its commands (each built in the module of its
group), the entry point."""

from __future__ import annotations

import click

from flink_sql_runner import __version__
from flink_sql_runner.cli import deploy, inputs, inspect, jobs, logs, migrate, watch
from flink_sql_runner.cli.original_flags import (
    FsrGroup,
)


@click.group(
    cls=FsrGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="flink-sql-runner")
def main() -> None:
    """Deploy streaming SQL jobs on Apache Spark from YAML manifests kept in git.

    For each job: merge with the template, diff against the manifest deployed last, then leave
    it alone, restart it from its checkpoint, or start it clean as a new query version.

    \b
    Exit codes: 0 ok / nothing to do, 1 a job failed or is in error,
    2 invalid input (nothing touched), 3 the store is locked by another deploy,
    4 changes pending (plan --detailed-exitcode).
    """


for command in (
    inputs.validate,
    inputs.lineage,
    deploy.plan,
    deploy.deploy,
    deploy.deploy_job,
    jobs.status,
    jobs.stop,
    jobs.forget,
    logs.logs,
    inspect.inspect,
    migrate.migrate,
    watch.watch,
    watch.resume,
):
    main.add_command(command)
