"""Commands that keep jobs running: `watch`, and `resume` of a job `watch` left crash-looping."""

from __future__ import annotations

import shlex
import signal
import sys
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.options import (
    JOB_NAME,
    REMOTE_OPTIONS,
    Seconds,
    env_var,
    options,
    or_spelled_before,
    settings_from,
    spelled_before,
)
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.errors import EXIT_FAILED, EXIT_OK, UnknownJob
from flink_sql_runner.host.collector import Frozen
from flink_sql_runner.model.control import HEARTBEAT_SECONDS, MIN_STALL_TIMEOUT
from flink_sql_runner.stores.lock import locked
from flink_sql_runner.ui.pages import Pages, Response
from flink_sql_runner.ui.server import PageServer, is_loopback
from flink_sql_runner.watch.events import Event, Notifier
from flink_sql_runner.watch.metrics import Metrics
from flink_sql_runner.watch.records import WatchLog
from flink_sql_runner.watch.watcher import Watcher, WatchSettings

#: (option, default, lowest value, help).
WATCH_OPTIONS = [
    ("--interval", 15.0, 0.5, "Seconds between two looks at what runs."),
    ("--stable-after", 600.0, 0.0, "Seconds healthy after which a job's backoff starts over."),
    ("--backoff-first", 10.0, 0.0,
     "Seconds before the restart after a second failure in a row (the first restarts at "
     "once); doubles with each further one."),
    ("--backoff-max", 600.0, 0.0, "The longest wait before a restart, in seconds."),
    ("--failure-window", 3600.0, 1.0, "Seconds over which failures count towards crash-looping."),
    ("--stall-timeout", 180.0, MIN_STALL_TIMEOUT,
     f"Seconds without a heartbeat from a driver: it is stalled. Drivers write one every "
     f"{HEARTBEAT_SECONDS:.0f} s, idle or not: at least {MIN_STALL_TIMEOUT:.0f}."),
    ("--batch-timeout", 3600.0, 1.0, "Seconds one micro-batch may run: longer, it is stalled."),
    ("--leader-ttl", 60.0, 3.0,
     "Seconds after which a standby watcher takes over a leader that stopped renewing its "
     "lease (at once when the leader's process on the same machine is gone)."),
    ("--metrics-refresh", 60.0, 1.0,
     "With --metrics-port: seconds between two reads of a job's full status file for the "
     "last batch its metrics show (one request per job on S3 each time); health and stalls "
     "come from the status beacons every look regardless."),
]  # fmt: skip


def _honoured(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    if value < MIN_STALL_TIMEOUT:
        raise click.BadParameter(
            f"{value:g} s is shorter than drivers can honour: they write a heartbeat every "
            f"{HEARTBEAT_SECONDS:g} s, idle or not, so healthy idle jobs would be restarted; "
            f"the minimum is {MIN_STALL_TIMEOUT:g} s"
        )
    return value


def watch_options(func: Any) -> Any:
    for name, default, lowest, text in reversed(WATCH_OPTIONS):
        envvar = env_var(name[2:].upper().replace("-", "_"))
        stall = name == "--stall-timeout"  # its own message: why the minimum
        func = click.option(
            name, type=Seconds() if stall else Seconds(min=lowest), default=default,
            show_default=True, envvar=envvar, help=text, callback=_honoured if stall else None,
        )(func)  # fmt: skip
    return func


@click.command(cls=FsrCommand)
@options("--state-dir", *[o for o in REMOTE_OPTIONS if o != "--output"])
@options("--start-timeout", "--stop-timeout")
@watch_options
@click.option(
    "--max-failures",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    envvar=env_var("MAX_FAILURES"),
    help="Failures within --failure-window after which a job is crash-looping: left down.",
)
@click.option("--notify-url", envvar=env_var("NOTIFY_URL"), help="POST each event there, as JSON.")
@click.option(
    "--notify-command",
    envvar=env_var("NOTIFY_COMMAND"),
    help="Run this command for each event, the event as JSON on its stdin (split like a shell "
    "would, but never run by one).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(min=0, max=65535),
    envvar=env_var("METRICS_PORT"),
    help="Serve Prometheus metrics (/metrics) on this port (0: any free one), and beside them "
    "the pages `ui` serves (on a loopback address, or with --pages).",
)
@click.option(
    "--metrics-address",
    default="127.0.0.1",
    show_default=True,
    envvar=env_var("METRICS_ADDRESS"),
    help="The address the metrics listen on (0.0.0.0 for every interface, e.g. in a pod).",
)
@click.option(
    "--pages/--no-pages",
    "pages",
    default=None,
    help="Serve the pages `ui` serves beside /metrics [default: only when --metrics-address "
    "is a loopback address: elsewhere whoever reaches the port would read every job's SQL, "
    "log and history].",
)
@click.option(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    envvar=env_var("OUTPUT"),
    callback=or_spelled_before,
    help="One line per event, as they come: text for people; json: JSON Lines for log "
    "collectors, one object per event, a stream (not one document).",
)
@spelled_before("--log-format", "output", "--log-format is now --output",
                type=click.Choice(["text", "json"]), envvar=env_var("LOG_FORMAT"))  # fmt: skip
@click.option("--once", is_flag=True, help="Look and act once, then exit.")
@options("--debug")
@handle_errors
def watch(
    debug: bool,
    notify_url: str | None,
    notify_command: str | None,
    metrics_port: int | None,
    metrics_address: str,
    pages: bool | None,
    output: str,
    once: bool,
    max_failures: int,
    **kw: Any,
) -> int:
    """Keep every job the store records as running running: restart it from its checkpoint
    when it dies (with a growing backoff), replace it when it stalls, mark it crash-looping
    when it keeps failing, and tell people.

    The store is what `deploy` recorded; `watch` never applies git. It takes the store's lock
    only to act, and waits while a deploy holds it. Several watchers on one store: one acts,
    the others stand by and take over when it stops. SIGTERM ends it after the step in
    progress.

    Exit codes: 0 when it ends (--once, SIGTERM) with every restart it attempted healthy; 1
    when a job's last restart by it failed and the job has not been healthy since (one line
    per job on stderr, with the cause); 2 invalid options (nothing started).
    """
    settings = WatchSettings(
        max_failures=max_failures,
        **{name[2:].replace("-", "_"): kw.pop(name[2:].replace("-", "_"))
           for name, _, _, _ in WATCH_OPTIONS},
    )  # fmt: skip
    deployment = Deployment(settings_from((), **kw))
    deployment.debug = debug
    deployment.existing_store()
    metrics = Metrics() if metrics_port is not None else None
    # First: a port in use is an error (exit 2) before anything starts.
    served = pages_beside_metrics(metrics_address, pages)
    server = (
        _serve(deployment, metrics, metrics_address, metrics_port or 0, served) if metrics else None
    )
    port = server.port if server is not None else None
    command = shlex.split(notify_command) if notify_command else None
    notifier = Notifier(sys.stdout, output, notify_url, command)
    watcher = Watcher(deployment, settings, notifier, metrics, collector=Frozen())

    def stop(signum: int, _frame: Any) -> None:
        if not watcher.stopping.is_set():
            name = signal.Signals(signum).name
            notifier.emit(Event("stopping", message=f"{name}: after the step in progress"))
        watcher.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if metrics is not None:
            notifier.emit(Event("metrics", message=f"http://{metrics_address}:{port}/metrics",
                                fields={"port": port, "pages": served}))  # fmt: skip
            if served and not is_loopback(metrics_address):
                said = "every machine that reaches it can read them (read only, secrets masked)"
                click.echo(f"warning: the pages are served on {metrics_address}: {said}", err=True)
        watcher.run(once=once)
    finally:
        notifier.close()
        if server is not None:
            server.close()
    for name, cause in sorted(watcher.failed_restarts.items()):
        click.echo(f"error: {name}: its restart failed: {cause}", err=True)
    return EXIT_FAILED if watcher.failed_restarts else EXIT_OK


def pages_beside_metrics(address: str, asked: bool | None) -> bool:
    """Whether the pages are served beside `/metrics`: as asked (--pages, --no-pages), else
    only on a loopback address (a pod's 0.0.0.0 serves Prometheus, not every job's SQL, log
    and history to whoever reaches the port)."""
    return asked if asked is not None else is_loopback(address)


def _serve(
    deployment: Deployment, metrics: Metrics, address: str, port: int, pages: bool = True
) -> PageServer:
    """`/metrics`, and beside it (`pages`) the pages `ui` serves (read only, of the store)."""

    def exposition() -> Response:
        return Response(200, metrics.content_type, metrics.exposition())

    served = Pages(deployment, extra={"/metrics": exposition}, pages=pages)
    return PageServer(served, address, port, option="--metrics-port", what="metrics")


@click.command(cls=FsrCommand)
@click.argument("name", type=JOB_NAME)
@options("--state-dir", "--manifest-store", "--external-job-config-bucket")
@options("--external-job-config-prefix", "--lock-timeout", "--debug")
@handle_errors
def resume(name: str, debug: bool, **kw: Any) -> int:
    """Lift job NAME's crash-looping mark: `watch` restarts it at its next look.

    It writes under the store's lock, like `stop`: while a deploy holds it, `resume` waits (up
    to --lock-timeout).

    Exit codes: 0 lifted (or nothing to lift), 2 no such job in the store, 3 the store stayed
    locked past --lock-timeout."""
    deployment = Deployment(settings_from((), **kw))
    deployment.existing_store()
    with locked(deployment.lock("resume"), deployment.settings.lock_timeout):
        if deployment.store.read(name).manifest is None:
            raise UnknownJob(f"unknown job {name!r}: the store has no manifest of that name")
        lifted = WatchLog(deployment.store).resume(name)
    if not lifted:
        click.echo(f"{name}: not crash-looping nor backing off; nothing to lift")
        return EXIT_OK
    click.echo(f"{name}: crash-loop mark lifted; watch restarts it at its next look")
    return EXIT_OK
