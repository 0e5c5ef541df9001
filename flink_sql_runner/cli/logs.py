"""`logs NAME`: the driver log of a job's current or last run."""

from __future__ import annotations

from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    JOB_NAME,
    NO_FILES_NOR_SUBMITS,
    drop_options,
    input_options,
    remote_options,
    settings_from,
    version_option,
)
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_FAILED, EXIT_OK
from flink_sql_runner.gather.logs import find_log, follow, last_lines, still_up


@click.command(cls=FsrCommand)
@click.argument("name", type=JOB_NAME)
@version_option("The last run of this query version [default: the run up now, else the last one].")
@click.option(
    "--run",
    "run_id",
    metavar="RUN_ID",
    help="This run, by its whole id: as `inspect` and `status --output json` show it, and the "
    "end of its log file's name.",
)
@click.option("--tail", type=click.IntRange(0), metavar="N", help="Only the last N lines.")
@click.option(
    "-f",
    "--follow",
    "following",
    is_flag=True,
    help="Keep printing what the run logs until it ends (or Ctrl-C).",
)
@input_options
@remote_options
@handle_errors
def logs(
    name: str,
    version: int | None,
    run_id: str | None,
    tail: int | None,
    following: bool,
    debug: bool,
    **kw: Any,
) -> int:
    """Print the driver log of job NAME: the run up now, else its failed first start, else its
    last run (or the run --query-version / --run names).

    The local target's logs are files, `<state-dir>/logs/<name>/<UTC start>-<run id>.log`;
    standalone drivers log to `<driver id>/stderr` and `stdout` in their worker's work folder,
    printed when that is on this machine ($SPARK_WORKER_DIR, else $SPARK_HOME/work); YARN and
    Kubernetes keep the log with the application or pod: the command says where (`yarn logs
    ...`, `kubectl logs ...`) and does not read it.

    Exit codes: 0 the log was printed, 1 no log to print here (none yet, or the target keeps
    it elsewhere: the line says where), 2 NAME is unknown (neither stored, nor failed to
    start, nor running, nor logged).
    """
    deployment = Deployment(settings_from((), **kw))
    found = find_log(name, deployment.store, deployment.target, version, run_id)
    if found.failed is not None:
        click.echo(f"{name}: {found.failed.describe()}", err=True)
    if found.log is None:
        which = f"run {run_id}" if run_id else f"v{version}" if version else "any run"
        click.echo(f"{name}: no log of {which} yet", err=True)
        return EXIT_FAILED
    if not found.log.files:
        click.echo(f"{name}: the driver log is not read from here; {found.log.where}", err=True)
        return EXIT_FAILED
    ends = {}
    for path in found.log.files:
        click.echo(f"==> {path} <==", err=True)
        lines, ends[path] = last_lines(path, tail)
        for line in lines:
            click.echo(line)
    if following:
        shown = [found.log.files[-1]]

        def write(path: str, text: str) -> None:
            if len(ends) > 1 and shown[0] != path:  # which file it comes from, as tail -f
                click.echo(f"==> {path} <==", err=True)
                shown[0] = path
            click.echo(text, nl=False)

        try:
            follow(ends, still_up(deployment.target, found.run), write)
        except KeyboardInterrupt:
            pass
    return EXIT_OK


#: `logs` reads no manifests, tables or template, submits nothing, and prints the log itself.
drop_options(
    logs,
    *NO_FILES_NOR_SUBMITS,
    "output",
)
