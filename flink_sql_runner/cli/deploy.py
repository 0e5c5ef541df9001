"""Commands that plan and deploy: `plan`, `deploy` and `deploy-job`; their text, JSON and Markdown
output and exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.interrupts import EXIT_INTERRUPTED, DeployInterrupts
from flink_sql_runner.act.progress import Progress
from flink_sql_runner.act.results import Abandoned, JobResult
from flink_sql_runner.act.saved_plan import SavedPlan, StalePlan, plan_key
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.inputs import load
from flink_sql_runner.cli.options import (
    EXISTING,
    JOB_NAME,
    env_var,
    input_options,
    options,
    parallelism_option,
    path_option,
    paths_or_plan_option,
    remote_options,
    settings_from,
    timeout_options,
)
from flink_sql_runner.cli.original_flags import (
    BadFlags,
    FsrCommand,
    original_options,
)
from flink_sql_runner.cli.preview import plan_preview_options, plan_previews
from flink_sql_runner.cli.saved_plans import (
    check_inputs,
    from_plan,
    out_option,
    plan_file_options,
    read,
    refused,
    saved_shown,
    write,
)
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.errors import (
    EXIT_CHANGES_PENDING,
    EXIT_FAILED,
    EXIT_OK,
)
from flink_sql_runner.gather.preview import PreviewAsk
from flink_sql_runner.host import collector
from flink_sql_runner.model.lineage import Lineage
from flink_sql_runner.model.preview import Preview
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.plan import plan_json, plan_text, results_text, shown_keys
from flink_sql_runner.render.preview import preview_text, previews_markdown


@click.command(cls=FsrCommand)
@path_option
@input_options
@remote_options
@original_options()
@options("--handover", "--kafka-start", "--on-state-change")
@click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 4 when changes are pending, 0 when there is nothing to do.",
)
@out_option
@click.option(
    "--prune",
    is_flag=True,
    envvar=env_var("PRUNE"),
    help="Plan as `deploy --prune` does: stop jobs whose manifest left --path and archive their "
    "manifest (with --out, the saved plan carries it out).",
)
@click.option(
    "--preview",
    "with_preview",
    is_flag=True,
    help="Also preview every job whose query changed (as `preview NAME` does, on its running "
    "version's last batches; a local Spark per job, nothing written) and show it with the plan.",
)
@plan_preview_options
@handle_errors
def plan(
    paths: tuple[Path, ...],
    output: str,
    detailed_exitcode: bool,
    out: Path | None,
    prune: bool,
    with_preview: bool,
    batches: int,
    rows: int,
    max_rows: int,
    preview_rows: bool,
    debug: bool,
    **kw: Any,
) -> int:
    """Show what deploy would do and why. Reads the store, the target and checkpoints, and
    checks what a changed query would write against what its sink holds (Spark's analyser in
    one local session; docs/concepts/schema-contracts.md); changes nothing but the --out file. With
    --preview, each changed query is also run beside the running one on the input it read last
    (`preview`).

    Exit codes: 0 planned, 1 a job's decision is an error, 2 invalid input, 4 changes pending
    (with --detailed-exitcode)."""
    if out is not None:
        plan_key()  # a key too short to be one is refused before anything is read
    deployment = Deployment(settings_from(paths, **kw))
    deployment.read_store_ahead()  # beside loading the files; changes nothing
    jobs = load(deployment, sources=deployment.sources_checked())
    kept: list[dict[str, Any]] = []

    lineages: list[Lineage] = []

    def show(p: Plan, previews: list[Preview] | None = None) -> str:
        if not lineages:  # the jobs' alone: the same for every plan shown
            lineages.append(deployment.jobs_lineage(jobs))
        saved = None
        if out is not None:
            keys = shown_keys(lineages[0], previews, preview_rows)
            saved = saved_shown(deployment, p, jobs, out, kept, prune, keys)
        extra = {"saved-plan": {"file": str(out), "digest": saved[1]}} if saved else {}
        return _shown_plan(
            p, output, deployment, jobs, saved, previews, preview_rows, lineages[0], **extra
        )

    if with_preview:
        result = deployment.plan(jobs, prune=prune, read_only=True)
        previews = plan_previews(deployment, result, PreviewAsk(batches, max_rows), rows)
        shown = show(result, previews)
    else:
        result, shown = deployment.plan_shown(jobs, show, prune=prune)
    if out is not None:
        write(out, kept[0])
    click.echo(shown)
    return _plan_exit(result, detailed_exitcode)


def _shown_plan(
    plan: Plan,
    output: str,
    deployment: Deployment,
    jobs: list[Job],
    saved: tuple[str, str] | None = None,
    previews: list[Preview] | None = None,
    preview_rows: bool = False,
    lineage: Lineage | None = None,
    **extra: Any,
) -> str:
    """The plan in `output`; its Markdown and its JSON with the `lineage` of `jobs` (made
    here when not given) and the `previews`, so that its JSON shows as its Markdown
    (render/plan_doc.py)."""
    if output in ("markdown", "json") and lineage is None:
        lineage = deployment.jobs_lineage(jobs)
    if output == "markdown":
        shown = previews_markdown(previews or [], preview_rows)
        return plan_markdown(plan, lineage, saved=saved, previews=shown)
    if output == "json":
        return plan_json(plan, **extra, **shown_keys(lineage, previews, preview_rows))
    shown = plan_text(plan, colour())
    if previews:
        shown += "\n\n" + "\n\n".join(preview_text(p) for p in previews)
    return shown


def colour() -> bool:
    """Colour for a terminal only, and not when NO_COLOR is set (no-color.org): plain text in
    CI, in a pipe, in a file."""
    return click.get_text_stream("stdout").isatty() and not os.environ.get("NO_COLOR")


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
    saved: SavedPlan | None = None,
    acting: list[str] | None = None,
) -> int:
    """Deploy `jobs`; with a `saved` plan, exactly its steps (of the jobs `acting`, when
    said) or nothing (StalePlan: a plan made now is shown instead, exit 2)."""
    try:
        if saved is not None:
            if dry_run:
                raise BadFlags("--plan carries a saved plan out as it is: no --dry-run")
            deployment.follow(saved)
            check_inputs(deployment, saved, jobs, acting)
        return _deploy_now(deployment, jobs, output, dry_run, include_orphans, prune, saved, acting)
    except StalePlan as exc:
        return refused(exc, deployment, jobs, output, include_orphans)


def _deploy_now(
    deployment: Deployment,
    jobs: list[Job],
    output: str,
    dry_run: bool,
    include_orphans: bool,
    prune: bool,
    saved: SavedPlan | None,
    acting: list[str] | None,
) -> int:
    def show(plan: Plan) -> None:
        if output == "text":
            click.echo(plan_text(plan, colour()))

    if output == "markdown" and not dry_run:
        raise BadFlags("--output markdown shows a plan: use it with --dry-run (or plan)")
    if dry_run:
        plan, shown = deployment.plan_shown(
            jobs,
            lambda p: _shown_plan(p, output, deployment, jobs, **{"dry-run": True}),
            include_orphans=include_orphans,
            prune=prune,
        )
        click.echo(shown)
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
                on_plan=lambda plan: (shown.append(plan), show(plan), collector.resume()),
                progress=progress,
                saved=saved,
                acting=acting,
            )
    except Abandoned as exc:
        # A second Ctrl-C: the calls in flight have returned and the lock is released; what
        # finished, then leave.
        _deploy_report(shown[0], exc.results, output)
        click.echo(f"interrupted again: {exc}", err=True)
        return EXIT_INTERRUPTED
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


@click.command(cls=FsrCommand)
@paths_or_plan_option
@input_options
@remote_options
@original_options()
@timeout_options
@options("--handover", "--prepare-timeout", "--warm-up", "--kafka-start", "--on-state-change")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option(
    "--prune",
    is_flag=True,
    envvar=env_var("PRUNE"),
    help="Stop jobs whose manifest left --path (checkpoint kept) and archive their manifest.",
)
@parallelism_option("Jobs stopped/started at once; producers start first, consumers stop first.")
@plan_file_options
@handle_errors
def deploy(
    paths: tuple[Path, ...],
    output: str,
    dry_run: bool,
    prune: bool,
    plan_file: Path | None,
    max_plan_age: float,
    expect_digest: str | None,
    debug: bool,
    **kw: Any,
) -> int:
    """Deploy every job under --path: stop, restart or start each as its plan says. With
    --plan FILE: exactly the steps of that saved plan (`plan --out FILE`), or nothing; its job
    paths and catalog are the plan's.

    One deploy at a time per manifest store: a second one waits for the lock (--lock-timeout),
    saying who holds it. Ctrl-C finishes the jobs in flight, begins no other and prints what
    completed (exit 130); a second Ctrl-C begins nothing more and leaves once the calls in flight
    have returned; a third leaves at once, the lock left to expire.

    Exit codes: 0 every job is as planned, 1 a job failed or is in error, 2 invalid input or a
    saved plan refused (nothing touched), 3 the store stayed locked past --lock-timeout, or its
    lock was lost mid-deploy (it stopped acting; the next deploy settles what it left), 130
    interrupted (what completed is printed).
    """
    saved = read(plan_file, max_plan_age, expect_digest) if plan_file is not None else None
    if saved is not None:
        paths = from_plan(saved, paths, kw, prune)
        prune = bool(saved.doc["prune"])
    elif not paths:
        raise BadFlags("deploy needs --path (or --plan FILE, whose paths it takes)")
    deployment = Deployment(settings_from(paths, **kw))
    deployment.debug = debug
    if dry_run:
        deployment.read_store_ahead()  # beside loading the files; changes nothing
    jobs = load(deployment, sources=deployment.sources_checked())
    return _deploy(deployment, jobs, output, dry_run, True, prune, saved)


@click.command("deploy-job", cls=FsrCommand)
@click.argument("name", required=False, type=JOB_NAME)
@click.option(
    "--job-config-path",
    type=EXISTING,
    envvar=env_var("JOB_CONFIG_PATH"),
    help="One job: a final manifest (as stored) or a plain job file to merge (required unless "
    "--plan FILE NAME).",
)
@input_options
@remote_options
@original_options()
@timeout_options
@options("--handover", "--prepare-timeout", "--warm-up", "--kafka-start", "--on-state-change")
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@plan_file_options
@handle_errors
def deploy_job(
    name: str | None,
    job_config_path: Path | None,
    output: str,
    dry_run: bool,
    plan_file: Path | None,
    max_plan_age: float,
    expect_digest: str | None,
    debug: bool,
    **kw: Any,
) -> int:
    """Deploy a single job: the one --job-config-path holds, or with --plan FILE NAME, the job
    NAME of a saved plan, exactly as the plan says: checked as `deploy --plan` checks it (its
    inputs, and the store of the jobs it was decided against), every other job left alone.

    Exit codes: as deploy's: 0 ok, 1 failed or in error, 2 invalid input or a saved plan
    refused, 3 locked or the lock lost mid-deploy, 130 interrupted."""
    if plan_file is None:
        if job_config_path is None or name is not None:
            raise BadFlags("deploy-job needs --job-config-path FILE (or --plan FILE NAME)")
        deployment = Deployment(settings_from((), **kw))
        deployment.debug = debug
        (job,) = load(deployment, job_config_path, deployment.sources_checked())
        return _deploy(deployment, [job], output, dry_run, False, False)
    if name is None or job_config_path is not None:
        raise BadFlags("--plan FILE takes the NAME of one of its jobs, not --job-config-path")
    saved = read(plan_file, max_plan_age, expect_digest)
    if not saved.one_job(name):
        click.echo(f"{name}: the saved plan leaves it alone: nothing to do")
        return EXIT_OK
    paths = from_plan(saved, (), kw)
    deployment = Deployment(settings_from(paths, **kw))
    deployment.debug = debug
    jobs = load(deployment, sources=deployment.sources_checked())
    prune = bool(saved.doc["prune"])
    return _deploy(deployment, jobs, output, dry_run, True, prune, saved, [name])


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
