"""`migrate`: the original tool's stored manifests in this product's format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.settings import DEFAULT_LOCK_TIMEOUT
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    Seconds,
    env_var,
)
from flink_sql_runner.cli.original_flags import (
    BadFlags,
    FsrCommand,
)
from flink_sql_runner.errors import (
    EXIT_OK,
)
from flink_sql_runner.migrate.migration import migrate as migrate_stores
from flink_sql_runner.migrate.migration import migration_lines
from flink_sql_runner.stores import open_store, store_uri_from_legacy


@click.command(cls=FsrCommand)
@click.option(
    "--from",
    "source",
    envvar=env_var("MIGRATE_FROM"),
    help="The original tool's store: s3://bucket/prefix/ or a folder [or the original's "
    "--external-job-config-bucket and --external-job-config-prefix].",
)
@click.option(
    "--external-job-config-bucket",
    envvar=env_var("EXTERNAL_JOB_CONFIG_BUCKET"),
    help="The original tool's store bucket (with --external-job-config-prefix: --from).",
)
@click.option(
    "--external-job-config-prefix",
    envvar=env_var("EXTERNAL_JOB_CONFIG_PREFIX"),
    help="The original tool's store prefix.",
)
@click.option(
    "--to",
    "destination",
    envvar=env_var("MIGRATE_TO"),
    help="Where the converted manifests go: s3://bucket/prefix/ or a folder [default: --from, "
    "in place].",
)
@click.option("--dry-run", is_flag=True, help="Print what would be converted; write nothing.")
@click.option(
    "--lock-timeout",
    type=Seconds(),
    default=DEFAULT_LOCK_TIMEOUT,
    show_default=True,
    envvar=env_var("LOCK_TIMEOUT"),
    help="Seconds to wait while a deploy holds the destination's lock; then exit 3.",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def migrate(
    source: str | None,
    destination: str | None,
    dry_run: bool,
    lock_timeout: float,
    debug: bool,
    **kw: Any,
) -> int:
    """Convert the original tool's stored manifests into this product's format.

    Keeps each job's query-id, query-version and query-create-timestamp and marks it
    `migrated-from`, so the next deploy starts it clean as the next version (Spark cannot
    restore Flink's state). Every manifest is checked before anything is written; a manifest
    of this product's format is never overwritten. Run it with --dry-run first.

    Exit codes: 0 converted (with --dry-run: shown), 2 a manifest that cannot be converted or
    no store given (nothing written), 3 a store stayed locked past --lock-timeout.
    """
    legacy = store_uri_from_legacy(
        kw.get("external_job_config_bucket"), kw.get("external_job_config_prefix")
    )
    source = source or legacy
    if not source:
        raise BadFlags(
            "give the original tool's store: --from, or --external-job-config-bucket (with "
            "--external-job-config-prefix)"
        )
    state_dir = Path(".flink-sql-runner")  # not used: both stores are named
    from_store = open_store(source, state_dir)
    to_store = open_store(destination, state_dir) if destination else from_store
    result = migrate_stores(from_store, to_store, dry_run, lock_timeout)
    for line in migration_lines(result, dry_run):
        click.echo(line)
    return EXIT_OK
