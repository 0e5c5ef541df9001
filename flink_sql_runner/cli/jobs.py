"""Commands on deployed jobs: `status` and `stop`."""

from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.inputs import load
from flink_sql_runner.cli.options import (
    EXISTING,
    drop_options,
    env_var,
    input_options,
    remote_options,
    settings_from,
    timeout_options,
)
from flink_sql_runner.cli.original_flags import (
    FsrCommand,
)
from flink_sql_runner.errors import (
    EXIT_OK,
    FsrError,
)
from flink_sql_runner.render.status import status_json, status_text
from flink_sql_runner.watch.status import status_rows


@click.command(cls=FsrCommand)
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=EXISTING,
    envvar=env_var("PATH"),
    help="Job manifests, to show where git and the store disagree.",
)
@input_options
@remote_options
@handle_errors
def status(paths: tuple[Path, ...], output: str, debug: bool, **kw: Any) -> int:
    """Per job: stored version, health (healthy, starting, restarting, backing-off,
    crash-looping, stalled, stopped, finished, down, unknown), what runs, the last batch with
    its rates and lag, restarts by `watch` and the last failure, checkpoint, drift from git
    (with --path). The JSON form is described in docs/status.md."""
    deployment = Deployment(settings_from(paths, **kw))
    jobs = load(deployment) if paths else []
    rows = status_rows(deployment, jobs)
    click.echo(status_json(rows) if output == "json" else status_text(rows))
    return EXIT_OK


#: `status` submits nothing: the runner's path is of no use to it.
drop_options(status, "runner_path")


@click.command(cls=FsrCommand)
@click.argument("name")
@input_options
@remote_options
@timeout_options
@handle_errors
def stop(name: str, output: str, debug: bool, **kw: Any) -> int:
    """Stop job NAME gracefully with its checkpoint; its manifest is kept.

    The next deploy restarts it from that checkpoint unless its manifest says
    `desired-state: stopped`. Either way the stored manifest records it as stopped. A job that
    is not running is left as it is (exit 0); a name that is neither stored nor running is an
    unknown job (exit 2).
    """
    try:
        result = Deployment(settings_from((), **kw)).stop(name)
    except FsrError as exc:
        if output != "json":
            raise
        if debug:
            traceback.print_exc()
        # One document on stdout, the error in it: a script reads the same shape either way.
        click.echo(json.dumps({"name": name, "outcome": "failed", "error": str(exc)}))
        return exc.exit_code
    click.echo(json.dumps(result.to_dict()) if output == "json" else result.message)
    return EXIT_OK


#: Options of the shared groups that `stop` has no use for: it reads no manifests, tables or
#: template, and submits nothing.
drop_options(
    stop,
    "table_paths",
    "template_file",
    "strict_properties",
    "runner_path",
    "start_timeout",
)
