"""`ui`: the fleet, a job's history and the lineage as web pages, read only."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    EXISTING,
    NO_FILES_NOR_SUBMITS,
    drop_options,
    env_var,
    input_options,
    remote_options,
    settings_from,
)
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_OK
from flink_sql_runner.host import runtime
from flink_sql_runner.ui.fleet import DEFAULT_LAG
from flink_sql_runner.ui.pages import Pages
from flink_sql_runner.ui.server import PageServer, is_loopback


@click.command(cls=FsrCommand)
@click.option(
    "--port",
    type=click.IntRange(min=0, max=65535),
    default=8080,
    show_default=True,
    envvar=env_var("UI_PORT"),
    help="The port the pages are served on (0: any free one).",
)
@click.option(
    "--address",
    default="127.0.0.1",
    show_default=True,
    envvar=env_var("UI_ADDRESS"),
    help="The address the pages listen on. Another than 127.0.0.1 lets every machine that "
    "reaches it read them (said when it starts).",
)
@click.option(
    "--plan",
    "plans",
    multiple=True,
    type=EXISTING,
    metavar="FILE",
    help="A saved plan (plan --out) or a plan's JSON (plan --output json) to show as the pull "
    "request's Markdown shows it (repeatable).",
)
@click.option(
    "--lag-threshold",
    type=click.IntRange(min=0),
    default=DEFAULT_LAG,
    show_default=True,
    metavar="OFFSETS",
    help="The Lagging filter shows running jobs more Kafka offsets behind than this.",
)
@input_options
@remote_options
@handle_errors
def ui(
    port: int, address: str, plans: tuple[Path, ...], lag_threshold: int, debug: bool, **kw: Any
) -> int:
    """Serve read-only web pages of the store and the target: the fleet (every job with its
    health, what runs, its last batch, input rate and Kafka lag, restarts; filters for down,
    lagging and failing jobs, and a search), a job (its versions with each deploy's decision
    and reasons, the query's diff between versions, what runs, its checkpoint as `inspect`
    reads it, the end of its driver log, its sink's schema history), the lineage (the
    job-table graph, each box a link) and the plans given with --plan.

    It reads what `status` reads, at most once every 2 seconds however many pages are open,
    and a running job's status file at most once per heartbeat (10 s), after the first look
    behind the looks: a look shows what was read last (at most a minute before). Nothing can
    be changed from the pages; secrets are masked as plans mask them. Ctrl-C stops it.

    Exit codes: 0 stopped, 2 invalid options, the port in use or the store missing (nothing
    served).
    """
    deployment = Deployment(settings_from((), **kw))
    deployment.existing_store()
    server = PageServer(Pages(deployment, plans, lag_threshold), address, port)
    stopping = runtime.event()

    def stop(_signum: int, _frame: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        click.echo(f"Serving the pages of {deployment.store.location} on {server.url}")
        if not is_loopback(address):
            click.echo(
                f"warning: listening on {address}: every machine that reaches it can read the "
                "pages (read only, secrets masked)",
                err=True,
            )
        while not stopping.wait(1.0):
            pass
    finally:
        server.close()
    click.echo("Stopped.")
    return EXIT_OK


#: `ui` reads no job files, tables or template, and submits nothing; it prints no document.
drop_options(
    ui,
    *NO_FILES_NOR_SUBMITS,
    "output",
)
