"""`preview NAME`: what a query change would write, from the input its running (or last)
version read in its last batches, shown before anything runs; and the previews `plan
--preview` puts beside a plan."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.cli.boundary import handle_errors
from flink_sql_runner.cli.inputs import load
from flink_sql_runner.cli.options import (
    JOB_NAME,
    drop_options,
    input_options,
    path_option,
    remote_options,
    settings_from,
)
from flink_sql_runner.cli.original_flags import FsrCommand
from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.preview import judge_preview
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.errors import EXIT_FAILED, EXIT_OK, FsrError, InvalidInput, Problem
from flink_sql_runner.gather.preview import PreviewAsk, ask_preview_probe, gather_preview
from flink_sql_runner.model.preview import Preview
from flink_sql_runner.model.runtime import source_tables
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.names import parse_name
from flink_sql_runner.render.preview import preview_json, preview_markdown, preview_text
from flink_sql_runner.targets.connectors import needed

ROWS_DEFAULT = 5


def preview_options(command: Any, prefix: str = "") -> Any:
    """--batches, --rows, --max-rows, --preview-rows (shared by `preview` and `plan
    --preview`, whose help says `prefix` first)."""

    def said(text: str) -> str:
        return f"{prefix}{text}" if prefix else text[0].upper() + text[1:]

    for option in reversed([
        click.option("--batches", type=click.IntRange(1), default=10, show_default=True,
                     help=said("how many of the running version's last committed batches to "
                               "read.")),
        click.option("--rows", type=click.IntRange(0), default=ROWS_DEFAULT, show_default=True,
                     help=said("a sample of this many rows of each kind of difference.")),
        click.option("--max-rows", type=click.IntRange(1), default=100_000, show_default=True,
                     help=said("stop reading, and say so, when the input or an output holds "
                               "more rows.")),
        click.option("--preview-rows", is_flag=True,
                     help=said("show rows in --output markdown (meant for a pull request): "
                               "samples and each column's min and max, secrets masked (a "
                               "column or field at any depth a secret's name names); "
                               "without it that Markdown shows counts only, and a query's "
                               "error only by its class and SQLSTATE.")),
    ]):  # fmt: skip
        command = option(command)
    return command


def plan_preview_options(command: Any) -> Any:
    """The preview's options as `plan --preview` takes them."""
    return preview_options(command, "With --preview, ")


@click.command(cls=FsrCommand)
@click.argument("name", type=JOB_NAME)
@path_option
@preview_options
@click.option(
    "--sample-from",
    "samples",
    multiple=True,
    metavar="[TABLE=]PATH",
    help="Rows to run both queries on instead of the slice (JSON lines, or .csv with a header, "
    ".parquet, .orc), read with the table's schema; TABLE= names the source table when the "
    "job reads several (only a source table's name before the first = is read as TABLE: "
    "dt=2024-01-01/rows.json is a path); a new job needs rows of each. Repeatable.",
)
@click.option(
    "--key",
    "key",
    multiple=True,
    metavar="COLUMN",
    help="Compare rows by this column (repeatable): a row whose key both queries write with "
    "other values is changed [default: a Kafka sink's key].",
)
@input_options
@remote_options
@handle_errors
def preview(
    name: str,
    paths: tuple[Path, ...],
    batches: int,
    rows: int,
    max_rows: int,
    preview_rows: bool,
    samples: tuple[str, ...],
    key: tuple[str, ...],
    output: str,
    debug: bool,
    **kw: Any,
) -> int:
    """Show what job NAME's query under --path would write, before it runs: its old (stored)
    and new query run as batch queries, in a local Spark started as a child process, on the
    input the running (or last) version read in its last --batches committed batches (a file
    source: exactly the files those batches read; Kafka: their offset ranges), with the job's
    own tables and settings and the __query_* columns as the new version would write them.

    It shows the schema of each and the contract's verdict, rows in and out of each, the rows
    only the new query writes, those only the old one wrote and, where the sink has a key
    (Kafka's, or --key), those changed by key (a sample of --rows each), and per column the
    nulls, distinct values, min and max where they differ. A stateful query (a window, an
    aggregation, a join) runs on the slice as a batch query: the output says what that means.

    Nothing is written: no sink, no checkpoint, no store; no lock is taken. Where no slice can
    be had (a new job, a version that committed nothing, a source whose history is gone, Kafka
    offsets its retention dropped) it says which: give rows with --sample-from.

    Exit codes: 0 previewed, 1 not previewed (the line says why), 2 NAME is not under --path,
    or --sample-from names a missing file, gives a PATH without TABLE= for a job that reads
    several tables, or gives a new job rows of only some of its tables (the line names them).
    """
    deployment = Deployment(settings_from(paths, **kw))
    jobs = {job.name: job for job in load(deployment)}
    if name not in jobs:
        where = ", ".join(str(p) for p in paths) or "--path"
        raise InvalidInput([Problem(where, "name", f"no job named {name!r} there")])
    stored = deployment.store.read(name).manifest
    job = jobs[name]
    version = (stored.meta.query_version if stored is not None else 0) + 1
    desired = StoredManifest(job.spec, job.tables, Meta.new(version))
    sources = [*source_tables(desired), *(source_tables(stored) if stored is not None else ())]
    views = {t: parse_name(t).view for t in sources}
    given = sample_files(samples, views, new_job=stored is None, name=name)
    ask = PreviewAsk(batches, max_rows, key, given)
    found = preview_of(deployment, stored, desired, ask, rows)
    if output == "json":
        click.echo(preview_json([found]))
    elif output == "markdown":
        click.echo("\n".join(preview_markdown(found, preview_rows)).strip("\n"))
    else:
        click.echo(preview_text(found))
    failed = found.unavailable or any(s is not None and s.error for s in (found.old, found.new))
    return EXIT_FAILED if failed else EXIT_OK


(_output,) = [p for p in preview.params if p.name == "output"]
_output.type = click.Choice(["text", "json", "markdown"])
_output.help = "Text for people, JSON for machines, markdown for a pull-request comment."
#: `preview` submits nothing on a cluster.
drop_options(preview, "runner_path")


def sample_files(
    samples: tuple[str, ...], views: Mapping[str, str], new_job: bool = False, name: str = ""
) -> dict[str, str]:
    """`[TABLE=]PATH` each, by the table's view ("" when not named): TABLE= only where what
    comes before the first `=` is one of the job's source tables (`views`: each one's view by
    its declared name; either is taken), else all of it is the path (a Hive-style
    `dt=2024-01-01/` among them). InvalidInput naming a missing file, a PATH without TABLE=
    where the job (its stored or its new query) reads more than one table, and, for a new job
    (`new_job`, `name`), a source table no rows are given for: it has no slice to read them
    from."""
    every = sorted(set(views.values()))
    found, problems = {}, []
    for item in samples:
        table, _, path = item.partition("=")
        if table not in views and table not in every:
            table, path = "", item
        if not Path(path).is_file():
            problems.append(Problem(path, "--sample-from", "no such file"))
            continue
        if not table and len(every) > 1:
            why = f"the job reads {', '.join(every)}: name one as TABLE=PATH"
            problems.append(Problem(path, "--sample-from", why))
            continue
        found[views.get(table, table)] = str(Path(path).resolve())
    covered = set(found) | (set(every[:1]) if "" in found else set())
    lacking = [v for v in every if v not in covered]
    if new_job and found and lacking and not problems:
        why = (f"a new job: no rows of {', '.join(lacking)} given; give them with "
               f"--sample-from {lacking[0]}=PATH")  # fmt: skip
        problems.append(Problem(name, "--sample-from", why))
    if problems:
        raise InvalidInput(problems)
    return found


def preview_of(
    deployment: Deployment,
    stored: StoredManifest | None,
    desired: StoredManifest,
    ask: PreviewAsk,
    rows: int,
) -> Preview:
    """One job's preview, gathered (its probe started on the jobs' spark-submit, with the
    connectors its tables need for that Spark) and compared."""
    session: dict[str, str] = {}
    if needed(desired.tables):
        try:
            own = {str(k): str(v) for k, v in (desired.job.get("sparkProperties") or {}).items()}
            session = deployment.probe_connectors().conf(desired.tables, own)
        except FsrError:
            session = {}
    run = functools.partial(ask_preview_probe, spark_submit=deployment.settings.spark_submit)
    facts = gather_preview(deployment.storage, stored, desired, ask, run, session=session)
    return judge_preview(facts, rows)


def plan_previews(deployment: Deployment, plan: Plan, ask: PreviewAsk, rows: int) -> list[Preview]:
    """The previews of every job of `plan` whose query changed: each start of a new version
    after a stored one."""
    found = []
    for decision in plan.decisions:
        starts = [s for s in decision.steps if isinstance(s, StartRun) and s.clean]
        if not starts:
            continue
        stored = deployment.store.read(decision.name).manifest
        if stored is None or starts[0].manifest.meta.query_version == stored.meta.query_version:
            continue
        found.append(preview_of(deployment, stored, starts[0].manifest, ask, rows))
    return found
