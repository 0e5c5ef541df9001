"""Commands on deployed jobs: `status`, `stop` of some or all of them, and `forget`, which
removes them for good."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.forget import Survey
from flink_sql_runner.act.interrupts import EXIT_INTERRUPTED
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.inputs import load
from flink_sql_runner.cli.options import (
    EXISTING,
    JOB_NAME,
    NO_FILES_NOR_SUBMITS,
    drop_options,
    env_var,
    input_options,
    parallelism_option,
    remote_options,
    settings_from,
    timeout_options,
)
from flink_sql_runner.cli.original_flags import BadFlags, FsrCommand
from flink_sql_runner.errors import (
    EXIT_OK,
    FsrError,
)
from flink_sql_runner.model.sizes import human_size
from flink_sql_runner.render.status import status_json, status_text
from flink_sql_runner.watch.status import status_rows


class Shown:
    """What `stop` or `forget` shows of each job's result: its line as it comes, or with
    `--output json` one document at the end, `{"jobs": [...]}`, one object per job."""

    def __init__(self, output: str) -> None:
        self.json = output == "json"
        self.jobs: list[dict[str, Any]] = []
        self.count = 0  # results shown, either way

    def add(self, result: Any) -> None:
        self.count += 1
        if self.json:
            self.jobs.append(result.to_dict())
        elif result.outcome == "failed":
            click.echo(f"error: {result.message}", err=True)
        else:
            click.echo(result.message)

    def failed(self, names: tuple[str, ...], exc: FsrError, debug: bool) -> int:
        """The command failed as a whole: its line on stderr, and for `--output json` an object
        per NAME it has not reported (`"name": null` when none was given), the error in it (a
        script reads the shape of a job's own result)."""
        if debug:
            traceback.print_exc()
        click.echo(f"error: {exc}", err=True)
        reported = {job["name"] for job in self.jobs}
        for name in [n for n in names if n not in reported] or [None]:
            self.jobs.append({"name": name, "outcome": "failed", "error": str(exc)})
        return exc.exit_code

    def interrupted(self, names: tuple[str, ...]) -> int:
        """Ctrl-C or SIGTERM: the jobs reported so far (the command reports the ones it did not
        begin), and for `--output json` each NAME with no result `left-in-flight`."""
        click.echo("interrupted", err=True)
        reported = {job["name"] for job in self.jobs}
        for name in [n for n in names if n not in reported]:
            error = f"{name}: interrupted before its result was known: give the command again"
            self.jobs.append({"name": name, "outcome": "left-in-flight", "error": error})
        return EXIT_INTERRUPTED

    def close(self) -> None:
        if self.json:
            click.echo(json.dumps({"jobs": self.jobs}))

    def run(self, names: tuple[str, ...], debug: bool, act: Callable[[], int]) -> int:
        """`act()`, the command's work (its worst exit code so far), then the document closed:
        with --output json its failure or interrupt is reported in the document (without, it
        goes on to the command's boundary)."""
        try:
            worst = act()
        except FsrError as exc:
            if not self.json:
                raise
            worst = self.failed(names, exc, debug)
        except KeyboardInterrupt:
            if not self.json:
                raise
            worst = self.interrupted(names)
        self.close()
        return worst


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
    crash-looping, stalled, stopped, finished, down, unknown; failed: its first start failed,
    with the error and what the next deploy does), what runs, the last batch with its rates and
    lag, restarts by `watch` and the last failure, checkpoint, drift from git (with --path),
    its driver log (`logs NAME` prints it). The JSON form is described in
    docs/reference/status-json.md.

    Exit codes: 0 shown (whatever the jobs' health), 2 invalid input."""
    deployment = Deployment(settings_from(paths, **kw))
    deployment.existing_store()
    jobs = load(deployment) if paths else []
    rows = status_rows(deployment, jobs)
    click.echo(status_json(rows) if output == "json" else status_text(rows))
    return EXIT_OK


#: `status` submits nothing: the runner's path is of no use to it.
drop_options(status, "runner_path")


@click.command(cls=FsrCommand)
@click.argument("names", metavar="[NAME]...", nargs=-1, type=JOB_NAME)
@click.option(
    "--all", "every", is_flag=True, help="Stop every job the store records or the target runs."
)
@input_options
@remote_options
@timeout_options
@parallelism_option("Jobs stopped at once.")
@handle_errors
def stop(names: tuple[str, ...], every: bool, output: str, debug: bool, **kw: Any) -> int:
    """Stop jobs gracefully with their checkpoints (each NAME, or --all); manifests are kept.

    The next deploy restarts a stopped job from its checkpoint unless its manifest says
    `desired-state: stopped`. Either way the stored manifest records it as stopped. Each job
    gets one line (with --output json, an object in one document, `{"jobs": [...]}`). A job
    that is not running is left as it is; one a killed deploy may still be submitting a run
    for is not stopped until that is known (it says so). Exit codes: 0 every job stopped or
    not running, 1 a job could not be stopped (the others are stopped all the same), 2 a NAME
    that is neither stored nor running (then nothing is stopped), 3 the store is locked.
    """
    shown = Shown(output)

    def act() -> int:
        worst = EXIT_OK
        if bool(names) == every:
            raise BadFlags("name the jobs to stop, or give --all (not both)")
        for result in Deployment(settings_from((), **kw)).stop(None if every else list(names)):
            shown.add(result)
            worst = max(worst, result.exit_code)
        if every and not shown.count and output != "json":
            click.echo("No jobs to stop.")
        return worst

    return shown.run(names, debug, act)


#: Options of the shared groups that `stop` has no use for: it reads no manifests, tables or
#: template, and submits nothing.
drop_options(
    stop,
    *NO_FILES_NOR_SUBMITS,
    "start_timeout",
)


@click.command(cls=FsrCommand)
@click.argument("names", metavar="[NAME]...", nargs=-1, type=JOB_NAME)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="Every job the store records or the target runs, and every name the state folder "
    "holds run records or logs of.",
)
@click.option("--yes", is_flag=True, help="Do not ask: forget what the listing shows.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print what would be stopped, archived and deleted; touch nothing.",
)
@input_options
@remote_options
@timeout_options
@handle_errors
def forget(
    names: tuple[str, ...],
    every: bool,
    yes: bool,
    dry_run: bool,
    output: str,
    debug: bool,
    **kw: Any,
) -> int:
    """Remove jobs for good (each NAME, or --all): stop each with its checkpoint, archive its
    manifest, delete its checkpoints (every version), control files, intent, watch and history
    records, run records and logs. Never the sink's data: its files, _spark_metadata and the
    runner's claims stay. A job deployed again under the name starts clean as v1.

    It lists what it will stop, archive and delete, one line each with files and size, then asks
    on a terminal (--yes: does not ask; --dry-run: lists only). A job whose run may be alive
    (the target cannot tell) or that a killed deploy may still be submitting for is not
    forgotten (it says so). One killed or failed halfway is finished by forgetting it again.
    With --output json (which needs --yes or --dry-run) it prints one document,
    `{"jobs": [...]}`, one object per job. Exit codes: 0 every job forgotten (or nothing left
    of it), 1 a job could not be forgotten (the others are all the same) or the answer was no,
    2 a NAME of which nothing is anywhere, or no terminal to ask on and no --yes (then nothing
    is touched), 3 the store is locked.
    """
    ask = not (yes or dry_run)
    due: set[str] = set()

    def show(surveys: list[Survey]) -> None:
        """The listing, before anything is done: what each job's forgetting does, or why it is
        not forgotten (those are not reported again)."""
        due.update(s.name for s in surveys if s.items and not s.refused)
        if output == "json":
            return
        if not surveys:
            click.echo("No jobs to forget.")
        for survey in surveys:
            click.echo("\n".join(survey.listing()), err=bool(survey.refused))

    def confirm(due: list[Survey]) -> bool:
        size = human_size(sum(s.size for s in due))
        jobs = f"{len(due)} job{'s' if len(due) != 1 else ''}"
        return click.confirm(f"Forget {jobs} ({size} deleted)?", default=False, err=True)

    shown = Shown(output)

    def act() -> int:
        worst = EXIT_OK
        if bool(names) == every:
            raise BadFlags("name the jobs to forget, or give --all (not both)")
        if ask and output == "json":
            raise BadFlags("--output json does not ask: pass --yes (or --dry-run to list only)")
        if ask and not sys.stdin.isatty():
            raise BadFlags(
                "forget asks before it deletes, and there is no terminal to ask on: pass --yes "
                "(--dry-run lists what it would delete)"
            )
        deployment = Deployment(settings_from((), **kw))
        for result in deployment.forget(
            None if every else list(names), show, confirm if ask else None, dry_run
        ):
            if output == "json" or (result.name in due and result.outcome != "would-forget"):
                shown.add(result)  # else the listing said it
            worst = max(worst, result.exit_code)
        return worst

    return shown.run(names, debug, act)


#: `forget` reads no manifests, tables or template, and submits nothing.
drop_options(
    forget,
    *NO_FILES_NOR_SUBMITS,
    "start_timeout",
)
