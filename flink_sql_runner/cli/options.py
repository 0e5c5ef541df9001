"""The options the commands share, each registered once by its long name (every one with an
environment variable CI can set), and the deployment settings they make."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import (
    DEFAULT_LOCK_TIMEOUT,
    DEFAULT_PARALLELISM,
    DEFAULT_STATE_DIR,
    Settings,
    default_state_dir,
)
from flink_sql_runner.cli.original_flags import (
    original_settings,
)
from flink_sql_runner.decide.state import POLICIES
from flink_sql_runner.decide.warm import DEFAULT_HANDOVER, HANDOVERS
from flink_sql_runner.read.kafka_start import (
    KAFKA_START_FORMS,
    BadKafkaStart,
    KafkaStart,
    parse_kafka_start,
)
from flink_sql_runner.read.names import job_name_problem
from flink_sql_runner.read.properties import PropertyRules
from flink_sql_runner.stores import store_uri_from_legacy

ENV = "FLINK_SQL_RUNNER_"


def env_var(name: str) -> str:
    return ENV + name


class EmptyPath(click.BadParameter):
    """An empty path on the command line (`--path "$JOBS"` with JOBS unset): one line, exit 2."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}; nothing was touched", err=True)


class GivenPath(click.Path):
    """A path the user gives. An empty value is refused, not read as `.` (the folder the
    command runs in), as an empty variable counts as not set."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            name = param.opts[0] if param is not None and param.opts else "a path"
            raise EmptyPath(
                f"{name} is empty, which would be the folder the command runs in: give a path, or "
                f"leave {name} out",
                ctx,
                param,
            )
        return super().convert(value, param, ctx)


EXISTING = GivenPath(exists=False, path_type=Path)


class Seconds(click.FloatRange):
    """A number of seconds: a finite number (`nan` and `inf` would make a wait never end), in
    the range given."""

    name = "seconds"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        return number

    def _describe_range(self) -> str:
        return "" if self.min is None and self.max is None else super()._describe_range()


class NotAJobName(click.BadParameter):
    """A NAME that is not a job's name: one line, exit 2, before anything is read."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: NAME {self.message}; nothing was touched", err=True)


class JobName(click.ParamType):
    """A job name argument (NAME), checked by the job-name rule (read/names.py): it becomes an
    S3 key, a file and a folder name, so what is not one (`../x`) is refused as it is parsed."""

    name = "job name"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        problem = job_name_problem(str(value))
        if problem is not None:
            raise NotAJobName(problem, ctx, param)
        return str(value)


JOB_NAME = JobName()


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

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
    envvar=env_var("TABLE_DEFINITION_PATH"),
    help="Table catalog: YAML or SQL (CREATE TABLE) files, or folders of them (repeatable). "
    "Relative paths in tables resolve against the folder the command runs in, and are stored "
    "absolute.",
)
_register(
    "--template-file",
    type=EXISTING,
    envvar=env_var("TEMPLATE_FILE"),
    help="Defaults merged under every job [default: the packaged templates/job-template.yaml].",
)
_register(
    "--state-dir",
    type=GivenPath(path_type=Path),
    envvar=env_var("STATE_DIR"),
    default=DEFAULT_STATE_DIR,
    show_default=True,
    help="Local state: manifests (unless --manifest-store), running jobs, "
    "logs, checkpoints of the default template.",
)
_register(
    "--strict-properties",
    is_flag=True,
    envvar=env_var("STRICT_PROPERTIES"),
    help="sparkProperties that Spark ignores (keys not starting with 'spark.') are "
    "errors (exit 2), not warnings.",
)
_register(
    "--no-cache",
    is_flag=True,
    envvar=env_var("NO_CACHE"),
    help="Read every job and table file again, without reusing what unchanged files read as "
    "last time (load.json in --cache-dir; for status, what it read of runs that are gone, "
    "status.json), and keep nothing.",
)
_register(
    "--cache-dir",
    type=GivenPath(path_type=Path),
    envvar=env_var("CACHE_DIR"),
    help="Where a command keeps what unchanged job and table files read as, and the SQL "
    "fingerprints it computed, to read them faster next time [default: <state-dir>/cache, "
    "kept only once the state folder exists]. Created when given: a CI cache step saves and "
    "restores it between runs (a cache written by another release of flink-sql-runner is not "
    "used).",
)
_register("--debug", is_flag=True, help="Show tracebacks.")
_register(
    "--manifest-store",
    envvar=env_var("MANIFEST_STORE"),
    help="Where deployed manifests live: s3://bucket/prefix/ or a folder "
    "[default: <state-dir>/manifests].",
)
_register(
    "--external-job-config-bucket",
    hidden=True,  # the original tool's: accepted; docs/how-to/migrate.md lists it
    envvar=env_var("EXTERNAL_JOB_CONFIG_BUCKET"),
    help="The original tool's store bucket (same as --manifest-store s3://BUCKET/PREFIX/).",
)
_register(
    "--external-job-config-prefix",
    hidden=True,  # the original tool's: accepted; docs/how-to/migrate.md lists it
    envvar=env_var("EXTERNAL_JOB_CONFIG_PREFIX"),
    help="The original tool's store prefix.",
)
_register(
    "--target",
    type=click.Choice(["local", "standalone", "yarn", "kubernetes"]),
    default="local",
    show_default=True,
    envvar=env_var("TARGET"),
    help="Where jobs run.",
)
_register(
    "--master",
    envvar=env_var("MASTER"),
    help="Spark master URL [default: local[*] for local, yarn for yarn]; standalone: "
    "spark://HOST:7077; kubernetes: k8s://https://HOST:PORT.",
)
_register(
    "--rest-gateway",
    envvar=env_var("REST_GATEWAY"),
    help="standalone: the master's REST gateway [default: http://<master host>:6066].",
)
_register(
    "--cluster-api",
    envvar=env_var("CLUSTER_API"),
    help="standalone: the master's web UI [default: http://<master host>:8080]; yarn: "
    "the ResourceManager, http://HOST:8088 [default: from yarn-site.xml].",
)
_register(
    "--namespace",
    envvar=env_var("NAMESPACE"),
    help="kubernetes: the namespace of the driver pods [default: default].",
)
_register(
    "--runner-path",
    envvar=env_var("RUNNER_PATH"),
    help="Cluster targets: job_runner.py as the driver can reach it (file:, http(s):, "
    "hdfs:, s3a:, or local:// inside a Kubernetes image) [default: the packaged one].",
)
_register(
    "--spark-submit",
    envvar=env_var("SPARK_SUBMIT"),
    help="spark-submit to use [default: $SPARK_HOME/bin/spark-submit, else "
    "the one bundled with pyspark].",
)
_register(
    "--connector-jars",
    type=GivenPath(path_type=Path, file_okay=False),
    envvar=env_var("CONNECTOR_JARS"),
    help="A folder of connector jars (Spark's Kafka connector, its token provider, "
    "kafka-clients, commons-pool2) for clusters without internet [default: Maven coordinates "
    "for the job's Spark in spark.jars.packages].",
)
_register(
    "--output",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    envvar=env_var("OUTPUT"),
    help="Text for people, JSON for machines.",
)
_register(
    "--start-timeout",
    type=Seconds(),
    default=180,
    show_default=True,
    envvar=env_var("START_TIMEOUT"),
    help="Seconds a started job has to complete its first trigger.",
)
_register(
    "--prepare-timeout",
    type=Seconds(min=0, min_open=True),
    default=None,
    envvar=env_var("PREPARE_TIMEOUT"),
    help="Seconds a warm handover's new run has to say it is ready (placed, session, query "
    "prepared) before the change goes the cold way (stop, then start). Shorter than the start "
    "timeout where a cluster without room for a second driver keeps it waiting "
    "[default: the start timeout]",
)
_register(
    "--warm-up",
    type=Seconds(min=0, max=600),
    default=None,
    envvar=env_var("WARM_UP"),
    help="Seconds a warm handover's new run may spend, before it says it is ready, on one "
    "micro-batch of made-up rows (nothing of the job's read or written), so that its first "
    "micro-batch's slowness is paid while the old run still writes, not in the pause; the "
    "deployer waits that much longer than the prepare timeout for it. 0: none "
    "[default: a quarter of the prepare timeout, at most 20]",
)
_register(
    "--stop-timeout",
    type=Seconds(),
    default=60,
    show_default=True,
    envvar=env_var("STOP_TIMEOUT"),
    help="Seconds from the graceful stop request to a kill.",
)
_register(
    "--lock-timeout",
    type=Seconds(),
    default=DEFAULT_LOCK_TIMEOUT,
    show_default=True,
    envvar=env_var("LOCK_TIMEOUT"),
    help="Seconds to wait while another deploy holds the store's lock; then exit 3.",
)

_register(
    "--handover",
    type=click.Choice(HANDOVERS),
    default=DEFAULT_HANDOVER,
    show_default=True,
    envvar=env_var("HANDOVER"),
    help="How a change of a running job is carried out when its job says nothing (`handover:`). "
    "warm: prepare the new run (session, tables, query, sink, checkpoint) while the old one runs, "
    "stop the old one only once the new one is ready; a new run that cannot start leaves the old "
    "one untouched. cold: stop the old run, then start the new one (where a second driver does "
    "not fit).",
)


_register(
    "--on-state-change",
    type=click.Choice(list(POLICIES)),
    default=None,
    envvar=env_var("ON_STATE_CHANGE"),
    help="What a query change of a stateful query does, over what each job says "
    "(`on-state-change:`). Where every stateful operator keeps its state's meaning and a source "
    "goes on from where the previous version stopped (a Kafka carry), the new version continues "
    "from that version's state. Otherwise, where a source goes on, windows open at the change "
    "would be written partial: refuse (the jobs' default) refuses the change before anything "
    "stops; partial accepts those windows partial. continue: also continue from the state where "
    "sources read everything again (a file source), instead of a full recompute. The plan gives "
    "a verdict per stateful operator (docs/concepts/state.md).",
)


class KafkaStartType(click.ParamType):
    """A start as `kafka-start` takes it (read/kafka_start.py); a bad one is a usage error."""

    name = "START"

    def convert(self, value: Any, param: Any, ctx: Any) -> KafkaStart:
        if isinstance(value, KafkaStart):
            return value
        try:
            return parse_kafka_start(value)
        except BadKafkaStart as exc:
            self.fail(f"{exc}; write {KAFKA_START_FORMS}", param, ctx)


_register(
    "--kafka-start",
    type=KafkaStartType(),
    default=None,
    envvar=env_var("KAFKA_START"),
    help="Where the Kafka sources of every new version this deploy starts (a query change) "
    "begin, over what each job says (`kafka-start:`): carry (where the previous version "
    "stopped; a carry that is not exact takes what can be carried, the rest from the earliest "
    "offset), earliest, latest, a timestamp with its zone (2026-11-25T02:00:00Z) or now minus an "
    "interval ('now - 2 hours'). Without it and without the job's, a carry that cannot be exact "
    "(two sources on one topic, a topic missing, removed or added, nothing committed) refuses "
    "the job before anything stops.",
)

INPUT_OPTIONS = (
    "--table-definition-path", "--template-file", "--state-dir", "--strict-properties",
    "--no-cache", "--cache-dir", "--debug",
)  # fmt: skip
REMOTE_OPTIONS = (
    "--manifest-store", "--external-job-config-bucket", "--external-job-config-prefix",
    "--target", "--master", "--rest-gateway", "--cluster-api", "--namespace", "--runner-path",
    "--spark-submit", "--connector-jars", "--output",
)  # fmt: skip
TIMEOUT_OPTIONS = ("--start-timeout", "--stop-timeout", "--lock-timeout")
input_options = options(*INPUT_OPTIONS)
remote_options = options(*REMOTE_OPTIONS)
timeout_options = options(*TIMEOUT_OPTIONS)


def parallelism_option(help: str) -> Decorator:
    """`--parallelism`, with what it means for the command using it."""
    return click.option(
        "--parallelism",
        type=click.IntRange(1, 256),
        default=DEFAULT_PARALLELISM,
        show_default=True,
        envvar=env_var("PARALLELISM"),
        help=help,
    )


#: Where each renamed option's spelling before left its value (`ctx.meta`), by the new one's name.
_SPELLED_BEFORE = "fsr-spelled-before"
#: Where a value came from, as the note and the error name it.
_SOURCES = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


class SpelledBefore(click.Option):
    """The old spelling of one of this tool's own options (`renamed`: the new one's name),
    hidden from --help and still read; not one of the original tool's flags."""

    def __init__(self, *args: Any, renamed: str, **attrs: Any) -> None:
        super().__init__(*args, **attrs)
        self.renamed = renamed


def spelled_before(old: str, dest: str, note: str, **attrs: Any) -> Decorator:
    """`old`, the spelling before of the option whose value is `dest`: hidden, it still works,
    with `note` on stderr (one line; given through its variable, the note names the variable
    and the new one's). The new option takes `callback=or_spelled_before`."""

    def remember(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            given = ctx.get_parameter_source(param.name or "")
            ctx.meta.setdefault(_SPELLED_BEFORE, {})[dest] = (value, given, param, note)

    return click.option(old, f"old_{dest}", cls=SpelledBefore, renamed=dest, hidden=True,
                        expose_value=False, is_eager=True, callback=remember,
                        **attrs)  # fmt: skip


class TwoSpellings(click.UsageError):
    """A renamed option given two different values, by both its spellings: one line, exit 2."""

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.message}; nothing was touched", err=True)


def _spelling(param: click.Parameter, source: ParameterSource | None) -> str:
    """How a value of `param` was given: its option, or its variable."""
    if source is ParameterSource.ENVIRONMENT and isinstance(param, click.Option) and param.envvar:
        return str(param.envvar)
    return param.opts[0]


def or_spelled_before(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A renamed option's value, given by it or by its spelling before (`spelled_before`). The
    command line wins over the environment; two different values from the same place (both
    options, or both variables) are a usage error, the same value twice is fine."""
    before = ctx.meta.get(_SPELLED_BEFORE, {}).get(param.name)
    if before is None:
        return value
    old_value, old_source, old_param, note = before
    source = ctx.get_parameter_source(param.name or "")
    if source == old_source and source in _SOURCES and old_value != value:
        old, new = _spelling(old_param, old_source), _spelling(param, source)
        raise TwoSpellings(
            f"{old} {old_value} and {new} {value} disagree ({old} is the spelling before of "
            f"{new}): give one",
            ctx,
        )
    if old_source is ParameterSource.ENVIRONMENT:
        note = f"{_spelling(old_param, old_source)} is now {param.envvar}"
    click.echo(f"note: {note}", err=True)
    if source in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) or (
        source is ParameterSource.ENVIRONMENT and old_source is ParameterSource.COMMANDLINE
    ):
        return old_value
    return value


def version_option(help: str) -> Decorator:
    """`--query-version N`: the query version of the job a command looks at. `--version N`, its
    spelling before (the tool's `--version` is its release), still works, with a note."""

    note = "--version N is now --query-version N (the tool's --version is its release)"

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        func = spelled_before("--version", "version", note, type=click.IntRange(1))(func)
        return click.option("--query-version", "version", type=click.IntRange(1), help=help,
                            callback=or_spelled_before)(func)  # fmt: skip

    return decorate


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
        state_dir=kw.get("state_dir") or default_state_dir(),
        manifest_store=store,
        target=kw.get("target") or "local",
        master=kw.get("master"),
        spark_submit=kw.get("spark_submit"),
        cluster_api=kw.get("cluster_api"),
        namespace=kw.get("namespace"),
        runner_path=kw.get("runner_path"),
        rest_gateway=kw.get("rest_gateway"),
        connector_jars=kw.get("connector_jars"),
        timeouts=Timeouts(
            start=kw.get("start_timeout", 180),
            stop=kw.get("stop_timeout", 60),
            prepare=kw.get("prepare_timeout"),
            warm=kw.get("warm_up"),
        ),
        parallelism=kw.get("parallelism") or DEFAULT_PARALLELISM,
        lock_timeout=kw.get("lock_timeout", DEFAULT_LOCK_TIMEOUT),
        handover=kw.get("handover") or DEFAULT_HANDOVER,
        kafka_start=kw.get("kafka_start"),
        on_state_change=kw.get("on_state_change"),
        properties=PropertyRules(
            strict=bool(kw.get("strict_properties")), defaults=original["defaults"]
        ),
        cache=not kw.get("no_cache"),
        cache_dir=kw.get("cache_dir"),
    )


#: The shared options of reading job and table files, and of submitting the runner: what a
#: command that reads no job file and submits nothing drops (`drop_options`).
NO_FILES_NOR_SUBMITS = (
    "table_paths", "template_file", "strict_properties", "no_cache", "cache_dir", "runner_path",
)  # fmt: skip


def drop_options(command: click.Command, *names: str) -> None:
    """Take options of the shared groups that `command` does not use off it (and its --help)."""
    unknown = set(names) - {p.name for p in command.params}
    assert not unknown, unknown
    command.params = [p for p in command.params if p.name not in names]


def _given(ctx: click.Context, param: click.Parameter, value: tuple[Path, ...]) -> Any:
    """--path is required, but not shown `[required]`: FLINK_SQL_RUNNER_PATH satisfies it too."""
    if not value:
        raise click.MissingParameter(
            f"Give the job manifests with --path or {env_var('PATH')}.", ctx, param
        )
    return value


path_option = click.option(
    "--path",
    "paths",
    multiple=True,
    type=EXISTING,
    envvar=env_var("PATH"),
    callback=_given,
    help="Job manifests: a folder (searched recursively) or a file; repeatable. Required (or "
    f"{env_var('PATH')}).",
)
#: `deploy`'s: with --plan FILE, the plan's own paths.
paths_or_plan_option = click.option(
    "--path",
    "paths",
    multiple=True,
    type=EXISTING,
    envvar=env_var("PATH"),
    help="Job manifests: a folder (searched recursively) or a file; repeatable. Required "
    "unless --plan FILE (the plan's paths).",
)
