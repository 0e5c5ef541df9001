"""`jvm-archive`: make the class-data-sharing archive local drivers start from, or with
`--for-plan` the one the plan's probes start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import options
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_OK, FsrError
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.targets.jvm_archive import (
    USER_CACHE_ENV,
    archive_folder,
    make_archive,
    untrusted,
    user_archive_folder,
)
from flink_sql_runner.targets.sparksubmit import find_spark_submit


@click.command("jvm-archive", cls=FsrCommand)
@options("--state-dir", "--spark-submit", "--debug")
@click.option(
    "--for-plan",
    is_flag=True,
    help="Make the archive the plan's probes start from instead (a plan that checks a changed "
    "query starts one), in this user's own cache folder, never the state folder or a checkout.",
)
@handle_errors
def jvm_archive(
    state_dir: Path, spark_submit: str | None, for_plan: bool, debug: bool, **kw: Any
) -> int:
    """Make a class-data-sharing archive of Spark's classes, once, for the local target's
    drivers: from then on every local driver of this Spark and Java (a deploy's start or
    restart, a `watch` restart) maps those classes instead of loading them from Spark's jars,
    and reaches its first batch sooner (measured in docs/developers/benchmarks.md).

    It runs a small streaming job to its first batches under `-XX:ArchiveClassesAtExit`, about
    a minute, and keeps the archive as `<state-dir>/jvm/spark-<key>.jsa` (some 170 MiB), the
    key made from the Java, Spark's jars and the training job: another Java or Spark finds no
    archive and starts as before. Run it again after upgrading either; delete the folder to
    stop using it.

    With --for-plan, the archive is kept for the plan's probes instead (the local Spark a plan
    starts to check a changed query, `preview` and `inspect --state`): in this user's own cache
    folder, `$FLINK_SQL_RUNNER_USER_CACHE/jvm/` (default `$XDG_CACHE_HOME/flink-sql-runner/jvm/`,
    else `~/.cache/flink-sql-runner/jvm/`), made 0700. A probe maps it only while it and every
    folder above it are this user's (or root's) and writable by no one else, and it is in no
    checkout (a git work tree, the folder CI names as its checkout, the folder the command runs
    in); never the state folder's, which a checkout may hold. One archive per Java and Spark:
    other projects' are kept.

    \b
    Exit codes: 0 made (or there already), 1 it could not be made (the line says why).
    """
    submit = find_spark_submit(spark_submit)
    folder = user_archive_folder() if for_plan else archive_folder(state_dir)
    if folder is None:
        raise FsrError(f"{USER_CACHE_ENV} must be an absolute path (or this user has no home)")
    # One cache folder serves every project of this user, on whatever Spark: others kept.
    made = make_archive(folder, submit, keep_others=for_plan, private=for_plan)
    problem = untrusted(made.path) if for_plan else None
    if problem:
        raise FsrError(f"{made.path}: the plan's probes would not map it: {problem}")
    size = human_size(made.path.stat().st_size)
    if made.made:
        click.echo(f"made {made.path} ({size}) in {made.seconds:.0f} s")
    else:
        click.echo(f"already made: {made.path} ({size})")
    who = "the plan's probes" if for_plan else "local drivers"
    click.echo(f"{who} of this Spark and Java start from it")
    return EXIT_OK
