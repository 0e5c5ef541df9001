"""`jvm-archive`: make the class-data-sharing archive local drivers start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import options
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_OK
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.targets.jvm_archive import archive_folder, make_archive
from flink_sql_runner.targets.sparksubmit import find_spark_submit


@click.command("jvm-archive", cls=FsrCommand)
@options("--state-dir", "--spark-submit", "--debug")
@handle_errors
def jvm_archive(state_dir: Path, spark_submit: str | None, debug: bool, **kw: Any) -> int:
    """Make a class-data-sharing archive of Spark's classes, once, for the local target's
    drivers: from then on every local driver of this Spark and Java (a deploy's start or
    restart, a `watch` restart) maps those classes instead of loading them from Spark's jars,
    and reaches its first batch sooner (measured in docs/developers/benchmarks.md).

    It runs a small streaming job to its first batches under `-XX:ArchiveClassesAtExit`, about
    a minute, and keeps the archive as `<state-dir>/jvm/spark-<key>.jsa` (some 170 MiB), the
    key made from the Java, Spark's jars and the training job: another Java or Spark finds no
    archive and starts as before. Run it again after upgrading either; delete the folder to
    stop using it.

    \b
    Exit codes: 0 made (or there already), 1 it could not be made (the line says why).
    """
    made = make_archive(archive_folder(state_dir), find_spark_submit(spark_submit))
    size = human_size(made.path.stat().st_size)
    if made.made:
        click.echo(f"made {made.path} ({size}) in {made.seconds:.0f} s")
    else:
        click.echo(f"already made: {made.path} ({size})")
    click.echo("local drivers of this Spark and Java start from it")
    return EXIT_OK
