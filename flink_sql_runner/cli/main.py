"""The `flink-sql-runner` command line: each command builds a Deployment, calls it, renders."""

from __future__ import annotations

import functools
import json
import os
import signal
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from flink_sql_runner import __version__
from flink_sql_runner.act.apply import Abandoned, JobResult, Timeouts
from flink_sql_runner.act.deployment import (
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_PARALLELISM,
    Deployment,
    Settings,
)
from flink_sql_runner.act.interrupts import EXIT_INTERRUPTED, DeployInterrupts
from flink_sql_runner.act.progress import Progress
from flink_sql_runner.cli.original_flags import (
    BadFlags,
    FsrGroup,
    original_options,
    original_settings,
)
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.lineage import build_lineage
from flink_sql_runner.errors import (
    EXIT_CHANGES_PENDING,
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_OK,
    FsrError,
    InvalidInput,
)
from flink_sql_runner.host.timing import mark
from flink_sql_runner.migrate.migration import migrate as migrate_stores
from flink_sql_runner.migrate.migration import migration_lines
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.render.lineage import OUTPUTS as LINEAGE_OUTPUTS
from flink_sql_runner.render.lineage import render_lineage
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.plan import plan_json, plan_text, results_text
from flink_sql_runner.stores import open_store, store_uri_from_legacy
from flink_sql_runner.watch.status import status_json, status_rows, status_text

ENV = "FLINK_SQL_RUNNER_"
EXISTING = click.Path(exists=False, path_type=Path)


def _env(name: str) -> str:
    return ENV + name


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


def handle_errors(func: Callable[..., int]) -> Callable[..., None]:
    """Catch user-facing errors once: one clear line each, the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        debug = kwargs.get("debug", False)
        # CI runners stop a job with SIGTERM: unwind like Ctrl-C, so the lock is released.
        signal.signal(signal.SIGTERM, _interrupt)
        mark("command", name=func.__name__)
        try:
            code = func(*args, **kwargs)
        except InvalidInput as exc:
            for problem in exc.problems:
                click.echo(f"error: {problem}", err=True)
            for hint in exc.hints:
                click.echo(f"hint: {hint}", err=True)
            count = len(exc.problems)
            click.echo(
                f"{count} problem{'s' if count != 1 else ''}; nothing was touched.", err=True
            )
            code = EXIT_INVALID
        except FsrError as exc:
            if debug:
                traceback.print_exc()
            click.echo(f"error: {exc}", err=True)
            code = exc.exit_code
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            code = 130
        mark("exit", code=code)
        sys.exit(code)

    return wrapper


#: Every option of the command line, by its long name; each command takes the ones it uses.
OPTIONS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {}


def _register(*decls: str, **attrs: Any) -> None:
    OPTIONS[next(d for d in decls if d.startswith("--"))] = click.option(*decls, **attrs)


def options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding the options `names`, in that order in --help."""

    def apply(func: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            func = OPTIONS[name](func)
        return func

    return apply


_register(
    "--table-definition-path",
    "table_paths",
    multiple=True,
    type=EXISTING,
    envvar=_env("TABLE_DEFINITION_PATH"),
    help="Table catalog: YAML or SQL (CREATE TABLE) files, or folders of them (repeatable).",
)
_register(
    "--template-file",
    type=EXISTING,
    envvar=_env("TEMPLATE_FILE"),
    help="Defaults merged under every job [default: the packaged templates/job-template.yaml].",
)
_register(
    "--state-dir",
    type=click.Path(path_type=Path),
    envvar=_env("STATE_DIR"),
    default=Path(".flink-sql-runner"),
    show_default=True,
    help="Local state: manifests (unless --manifest-store), running jobs, "
    "logs, checkpoints of the default template.",
)
_register(
    "--strict-properties",
    is_flag=True,
    envvar=_env("STRICT_PROPERTIES"),
    help="sparkProperties that Spark ignores (keys not starting with 'spark.') are "
    "errors (exit 2), not warnings.",
)
_register("--debug", is_flag=True, help="Show tracebacks.")
_register(
    "--manifest-store",
    envvar=_env("MANIFEST_STORE"),
    help="Where deployed manifests live: s3://bucket/prefix/ or a folder "
    "[default: <state-dir>/manifests].",
)
_register(
    "--external-job-config-bucket",
    envvar=_env("EXTERNAL_JOB_CONFIG_BUCKET"),
    help="The original tool's store bucket (same as --manifest-store s3://BUCKET/PREFIX/).",
)
_register(
    "--external-job-config-prefix",
    envvar=_env("EXTERNAL_JOB_CONFIG_PREFIX"),
    help="The original tool's store prefix.",
)
_register(
    "--target",
    type=click.Choice(["local", "standalone", "yarn", "kubernetes"]),
    default="local",
    show_default=True,
    envvar=_env("TARGET"),
    help="Where jobs run.",
)
_register(
    "--master",
    envvar=_env("MASTER"),
    help="Spark master URL [default: local[*] for local, yarn for yarn]; standalone: "
    "spark://HOST:7077; kubernetes: k8s://https://HOST:PORT.",
)
_register(
    "--rest-gateway",
    envvar=_env("REST_GATEWAY"),
    help="standalone: the master's REST gateway [default: http://<master host>:6066].",
)
_register(
    "--cluster-api",
    envvar=_env("CLUSTER_API"),
    help="standalone: the master's web UI [default: http://<master host>:8080]; yarn: "
    "the ResourceManager, http://HOST:8088 [default: from yarn-site.xml].",
)
_register(
    "--namespace",
    envvar=_env("NAMESPACE"),
    help="kubernetes: the namespace of the driver pods [default: default].",
)
_register(
    "--runner-path",
    envvar=_env("RUNNER_PATH"),
    help="Cluster targets: job_runner.py as the driver can reach it (file:, http(s):, "
    "hdfs:, s3a:, or local:// inside a Kubernetes image) [default: the packaged one].",
)
_register(
    "--spark-submit",
    envvar=_env("SPARK_SUBMIT"),
    help="spark-submit to use [default: $SPARK_HOME/bin/spark-submit, else "
    "the one bundled with pyspark].",
)
_register(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    envvar=_env("OUTPUT"),
    help="Text for people, JSON for machines.",
)
_register(
    "--start-timeout",
    type=float,
    default=180,
    show_default=True,
    envvar=_env("START_TIMEOUT"),
    help="Seconds a started job has to complete its first trigger.",
)
_register(
    "--stop-timeout",
    type=float,
    default=60,
    show_default=True,
    envvar=_env("STOP_TIMEOUT"),
    help="Seconds from the graceful stop request to a kill.",
)
_register(
    "--lock-timeout",
    type=float,
    default=DEFAULT_LOCK_TIMEOUT,
    show_default=True,
    envvar=_env("LOCK_TIMEOUT"),
    help="Seconds to wait while another deploy holds the store's lock; then exit 3.",
)

INPUT_OPTIONS = (
    "--table-definition-path", "--template-file", "--state-dir", "--strict-properties", "--debug"
)  # fmt: skip
REMOTE_OPTIONS = (
    "--manifest-store", "--external-job-config-bucket", "--external-job-config-prefix",
    "--target", "--master", "--rest-gateway", "--cluster-api", "--namespace", "--runner-path",
    "--spark-submit", "--output",
)  # fmt: skip
TIMEOUT_OPTIONS = ("--start-timeout", "--stop-timeout", "--lock-timeout")
input_options = options(*INPUT_OPTIONS)
remote_options = options(*REMOTE_OPTIONS)
timeout_options = options(*TIMEOUT_OPTIONS)


def settings_from(paths: tuple[Path, ...] = (), **kw: Any) -> Settings:
    ctx = click.get_current_context(silent=True)
    target_source = ctx.get_parameter_source("target") if ctx else None
    original = original_settings(
        kw,
        target_given=target_source not in (None, ParameterSource.DEFAULT),
        offline="target" not in kw,
    )
    for warning in original["warnings"]:
        click.echo(f"warning: {warning}", err=True)
    kw = {**kw, **{k: original[k] for k in ("target", "master") if k in original}}
    store = kw.get("manifest_store") or store_uri_from_legacy(
        kw.get("external_job_config_bucket"), kw.get("external_job_config_prefix")
    )
    return Settings(
        paths=list(paths),
        table_paths=list(kw.get("table_paths") or ()),
        template=kw.get("template_file"),
        state_dir=kw.get("state_dir") or Path(".flink-sql-runner"),
        manifest_store=store,
        target=kw.get("target") or "local",
        master=kw.get("master"),
        spark_submit=kw.get("spark_submit"),
        cluster_api=kw.get("cluster_api"),
        namespace=kw.get("namespace"),
        runner_path=kw.get("runner_path"),
        rest_gateway=kw.get("rest_gateway"),
        timeouts=Timeouts(start=kw.get("start_timeout", 180), stop=kw.get("stop_timeout", 60)),
        parallelism=kw.get("parallelism") or DEFAULT_PARALLELISM,
        lock_timeout=kw.get("lock_timeout", DEFAULT_LOCK_TIMEOUT),
        properties=PropertyRules(
            strict=bool(kw.get("strict_properties")), defaults=original["defaults"]
        ),
    )


def _drop_options(command: click.Command, *names: str) -> None:
    """Take options of the shared groups that `command` does not use off it (and its --help)."""
    unknown = set(names) - {p.name for p in command.params}
    assert not unknown, unknown
    command.params = [p for p in command.params if p.name not in names]


def load(deployment: Deployment, path: Path | None = None) -> list[Job]:
    """The jobs under --path (or the one file `path`); the warnings of loading them go to
    stderr, one line each, also when the input is invalid."""
    try:
        return [deployment.load_one(path)] if path is not None else deployment.load()
    finally:
        for warning in deployment.settings.properties.warnings:
            click.echo(f"warning: {warning}", err=True)


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


path_option = click.option(
    "--path",
    "paths",
    multiple=True,
    required=True,
    type=EXISTING,
    envvar=_env("PATH"),
    help="Job manifests: a folder (searched recursively) or a file; repeatable.",
)


@main.command()
@path_option
@input_options
@original_options(offline=True)
@handle_errors
def validate(paths: tuple[Path, ...], debug: bool, **kw: Any) -> int:
    """Check every job manifest and table definition, offline. Touches nothing."""
    jobs = load(Deployment(settings_from(paths, **kw)))
    click.echo(
        f"{len(jobs)} job{'s' if len(jobs) != 1 else ''} valid: " + ", ".join(j.name for j in jobs)
    )
    return EXIT_OK


@main.command()
@path_option
@input_options
@click.option(
    "--output",
    type=click.Choice(LINEAGE_OUTPUTS),
    default="text",
    show_default=True,
    envvar=_env("LINEAGE_OUTPUT"),
    help="text for people, json for machines, mermaid or dot (Graphviz) for a diagram.",
)
@handle_errors
def lineage(paths: tuple[Path, ...], output: str, debug: bool, **kw: Any) -> int:
    """Show which job writes what another reads, offline: the jobs (producers first), the
    tables and where their data is, the links between jobs, the tables no job uses, cycles.

    \b
    Exit codes: 0 ok, 1 jobs feed each other in a cycle (everything is printed all the
    same; each cycle is named on stderr), 2 invalid input.
    """
    deployment = Deployment(settings_from(paths, **kw))
    graph = build_lineage(load(deployment), catalog=deployment.catalog())
    click.echo(render_lineage(graph, output, base=str(Path.cwd())))
    for cycle in graph.cycles:
        click.echo(f"error: jobs feed each other: {' -> '.join((*cycle, cycle[0]))}", err=True)
    return EXIT_FAILED if graph.cycles else EXIT_OK


@main.command()
@path_option
@input_options
@remote_options
@original_options()
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 4 when changes are pending, 0 when there is nothing to do.",
)
@handle_errors
def plan(
    paths: tuple[Path, ...], output: str, detailed_exitcode: bool, debug: bool, **kw: Any
) -> int:
    """Show what deploy would do and why. Reads the store, the target and checkpoints;
    changes nothing."""
    deployment = Deployment(settings_from(paths, **kw))
    jobs = load(deployment)
    result = deployment.plan(jobs)
    click.echo(_shown_plan(result, output, deployment, jobs))
    return _plan_exit(result, detailed_exitcode)


def _shown_plan(
    plan: Plan, output: str, deployment: Deployment, jobs: list[Job], **extra: Any
) -> str:
    if output == "markdown":
        return plan_markdown(plan, build_lineage(jobs, catalog=deployment.catalog()))
    return plan_json(plan, **extra) if output == "json" else plan_text(plan, colour())


def colour() -> bool:
    """Colour for a terminal only, and not when NO_COLOR is set (no-color.org): plain text in
    CI, in a pipe, in a file."""
    return click.get_text_stream("stdout").isatty() and not os.environ.get("NO_COLOR")


#: `plan` reads and submits nothing on a cluster: the runner's path is of no use to it.
_drop_options(plan, "runner_path")


def _plan_exit(result: Plan, detailed: bool) -> int:
    if result.errors:
        return EXIT_FAILED
    if detailed and result.pending:
        return EXIT_CHANGES_PENDING
    return EXIT_OK


def _deploy(
    deployment: Deployment,
    jobs: list[Job],
    output: str,
    dry_run: bool,
    include_orphans: bool,
    prune: bool = False,
) -> int:
    def show(plan: Plan) -> None:
        if output == "text":
            click.echo(plan_text(plan, colour()))

    if output == "markdown" and not dry_run:
        raise BadFlags("--output markdown shows a plan: use it with --dry-run (or plan)")
    if dry_run:
        plan = deployment.plan(jobs, include_orphans=include_orphans, prune=prune)
        click.echo(_shown_plan(plan, output, deployment, jobs, **{"dry-run": True}))
        if output == "text":
            click.echo("Dry run: nothing was changed.")
        return EXIT_FAILED if plan.errors else EXIT_OK
    progress = Progress(0, sys.stderr, live=sys.stderr.isatty())
    deployment.say = progress.note
    shown: list[Plan] = []
    try:
        with DeployInterrupts(deployment, progress.note) as interrupts:
            plan, results = deployment.deploy(
                jobs,
                include_orphans=include_orphans,
                prune=prune,
                on_plan=lambda plan: (shown.append(plan), show(plan)),
                progress=progress,
            )
    except Abandoned as exc:
        # A second Ctrl-C: what finished, then leave at once; the worker threads still in flight
        # would otherwise be waited for at exit.
        _deploy_report(shown[0], exc.results, output)
        click.echo(f"interrupted again: {exc}", err=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    failed = [d.name for d in plan.decisions if d.name in results and not results[d.name].ok]
    _deploy_report(plan, results, output)
    if interrupts.count:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed or plan.errors else EXIT_OK


def _deploy_report(plan: Plan, results: dict[str, JobResult], output: str) -> None:
    if output == "json":
        click.echo(plan_json(plan, {n: r.to_dict() for n, r in results.items()}))
    elif results:
        click.echo("")
        click.echo(results_text(plan, results))


@main.command()
@path_option
@input_options
@remote_options
@original_options()
@timeout_options
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option(
    "--prune",
    is_flag=True,
    envvar=_env("PRUNE"),
    help="Stop jobs whose manifest left --path (checkpoint kept) and archive their manifest.",
)
@click.option(
    "--parallelism",
    type=click.IntRange(1, 256),
    default=DEFAULT_PARALLELISM,
    show_default=True,
    envvar=_env("PARALLELISM"),
    help="Jobs stopped/started at once; producers start first, consumers stop first.",
)
@handle_errors
def deploy(
    paths: tuple[Path, ...], output: str, dry_run: bool, prune: bool, debug: bool, **kw: Any
) -> int:
    """Deploy every job under --path: stop, restart or start each as its plan says.

    One deploy at a time per manifest store: a second one waits for the lock (--lock-timeout),
    saying who holds it. Ctrl-C finishes the jobs in flight, begins no other and prints what
    completed (exit 130); a second Ctrl-C leaves at once.
    """
    deployment = Deployment(settings_from(paths, **kw))
    deployment.debug = debug
    jobs = load(deployment)
    return _deploy(deployment, jobs, output, dry_run, include_orphans=True, prune=prune)


@main.command("deploy-job")
@click.option(
    "--job-config-path",
    type=EXISTING,
    required=True,
    envvar=_env("JOB_CONFIG_PATH"),
    help="One job: a final manifest (as stored) or a plain job file to merge.",
)
@input_options
@remote_options
@original_options()
@timeout_options
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@handle_errors
def deploy_job(job_config_path: Path, output: str, dry_run: bool, debug: bool, **kw: Any) -> int:
    """Deploy a single job."""
    deployment = Deployment(settings_from((), **kw))
    deployment.debug = debug
    (job,) = load(deployment, job_config_path)
    return _deploy(deployment, [job], output, dry_run, include_orphans=False)


@main.command()
@click.option(
    "--path",
    "paths",
    multiple=True,
    type=EXISTING,
    envvar=_env("PATH"),
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
_drop_options(status, "runner_path")


@main.command()
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


def _markdown_output(*commands: click.Command) -> None:
    """`--output markdown` (a plan as a pull-request comment) for the commands that show a
    plan; the other commands keep the shared option's text and json."""
    for command in commands:
        (option,) = [p for p in command.params if p.name == "output"]
        option.type = click.Choice(["text", "json", "markdown"])
        option.help = "Text for people, JSON for machines, markdown for a pull-request comment" + (
            " (with --dry-run)." if command.name != "plan" else "."
        )


_markdown_output(plan, deploy, deploy_job)

#: Options of the shared groups that `stop` has no use for: it reads no manifests, tables or
#: template, and submits nothing.
_drop_options(
    stop,
    "table_paths",
    "template_file",
    "strict_properties",
    "runner_path",
    "start_timeout",
)


@main.command()
@click.option(
    "--from",
    "source",
    envvar=_env("MIGRATE_FROM"),
    help="The original tool's store: s3://bucket/prefix/ or a folder [or the original's "
    "--external-job-config-bucket and --external-job-config-prefix].",
)
@click.option(
    "--external-job-config-bucket",
    envvar=_env("EXTERNAL_JOB_CONFIG_BUCKET"),
    help="The original tool's store bucket (with --external-job-config-prefix: --from).",
)
@click.option(
    "--external-job-config-prefix",
    envvar=_env("EXTERNAL_JOB_CONFIG_PREFIX"),
    help="The original tool's store prefix.",
)
@click.option(
    "--to",
    "destination",
    envvar=_env("MIGRATE_TO"),
    help="Where the converted manifests go: s3://bucket/prefix/ or a folder [default: --from, "
    "in place].",
)
@click.option("--dry-run", is_flag=True, help="Print what would be converted; write nothing.")
@click.option(
    "--lock-timeout",
    type=float,
    default=DEFAULT_LOCK_TIMEOUT,
    show_default=True,
    envvar=_env("LOCK_TIMEOUT"),
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


# Registers `watch` and `resume` on `main` (their module imports this one).
from flink_sql_runner.cli import watch as cli_watch  # noqa: E402, F401
