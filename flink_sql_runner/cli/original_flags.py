"""The original tool's command line, as this one reads it.

The original (`deploy.py` / `deploy_job.py` of flink-sql-runner) takes `--path`,
`--template-file`, `--external-job-config-bucket`, `--external-job-config-prefix`,
`--table-definition-path` (several paths after the one flag), `--deployment-target yarn|remote`,
`--jobmanager-address HOST:PORT`, `--pyexec-path` and `--pyflink-runner-dir`. Here:

- `--table-definition-path a.sql b.sql` is read as the flag given once per path;
- `--deployment-target yarn` is `--target yarn`; `remote` is `--target standalone`, with
  `--jobmanager-address HOST:PORT` as `--master spark://HOST:PORT` (the Spark master, e.g. port
  7077; its REST gateway is found from it);
- `--pyexec-path PATH` is `spark.pyspark.python` for every job (a job's own value wins);
- `--pyflink-runner-dir` has no meaning (the runner ships with this package): one warning line
  says so and what to use instead.

Click stops at the first option it does not know and may suggest a far-off one; `FsrCommand`
reports every unknown option at once, one line each, before anything is read or touched.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import IO, Any

import click

from flink_sql_runner.errors import FsrError

GREEDY_OPTIONS = ("--table-definition-path",)


class UnknownOptions(click.UsageError):
    """Every option of the command line that the command does not know."""

    def __init__(self, lines: list[str], ctx: click.Context):
        self.lines = lines
        super().__init__("\n".join(lines), ctx)

    def show(self, file: IO[Any] | None = None) -> None:
        for line in self.lines:
            click.echo(f"error: {line}", err=True)
        count = len(self.lines)
        name = f"flink-sql-runner {self.ctx.info_name}" if self.ctx else "flink-sql-runner"
        click.echo(
            f"{count} unknown option{'s' if count != 1 else ''}; nothing was touched "
            f"(`{name} --help` lists the options).",
            err=True,
        )


def _options(command: click.Command, ctx: click.Context) -> dict[str, bool]:
    """Every option name of `command`, and whether it takes a value."""
    known = {name: False for name in ctx.help_option_names}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            takes_value = not (param.is_flag or param.count)
            for name in (*param.opts, *param.secondary_opts):
                known[name] = takes_value
    return known


def expand_greedy(args: list[str]) -> list[str]:
    """`--table-definition-path a b c` as `--table-definition-path a --table-definition-path b
    --table-definition-path c`, as the original's `nargs="+"` reads it."""
    out: list[str] = []
    greedy: str | None = None
    for index, arg in enumerate(args):
        if arg == "--":
            out += args[index:]
            return out
        if arg.startswith("-") and arg != "-":
            greedy = arg if arg in GREEDY_OPTIONS else None
            out.append(arg)
            continue
        if greedy and out and out[-1] != greedy and not out[-1].startswith("-"):
            out.append(greedy)
        out.append(arg)
    return out


def unknown_options(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """One line for every option in `args` that `command` does not take."""
    known = _options(command, ctx)
    longs = [name for name in known if name.startswith("--")]
    lines: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            break
        if not arg.startswith("-") or arg == "-" or arg.lstrip("-").replace(".", "").isdigit():
            continue
        name, equals, _ = arg.partition("=")
        if name in known:
            if known[name] and not equals:
                index += 1  # its value, whatever it looks like
            continue
        close = difflib.get_close_matches(name, longs, n=1, cutoff=0.8)
        hint = f"; did you mean {close[0]}?" if close else ""
        lines.append(f"{name}: no such option of `flink-sql-runner {ctx.info_name}`{hint}")
        if not equals and index < len(args) and not args[index].startswith("-"):
            index += 1  # most likely its value
    return lines


class FsrCommand(click.Command):
    """A command that reads the original's several paths after one flag, and reports every
    unknown option at once (exit 2)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not any(isinstance(p, click.Argument) for p in self.params):
            args = expand_greedy(args)
        lines = unknown_options(self, ctx, args)
        if lines:
            raise UnknownOptions(lines, ctx)
        return super().parse_args(ctx, args)


class FsrGroup(click.Group):
    command_class = FsrCommand


def original_options(offline: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The original tool's own flags, accepted and hidden from --help (docs/how-to/migrate.md lists
    them). `offline` commands (validate) also take its store flags, and use none of them but
    --pyexec-path."""
    unused = " (validate is offline: not used)" if offline else ""
    options = [
        click.option(
            "--deployment-target",
            hidden=True,  # accepted; docs/how-to/migrate.md lists it
            type=click.Choice(["yarn", "remote"]),
            envvar="FLINK_SQL_RUNNER_DEPLOYMENT_TARGET",
            help="The original tool's flag: yarn is --target yarn, remote is --target standalone "
            f"(with --jobmanager-address){unused}.",
        ),
        click.option(
            "--jobmanager-address",
            hidden=True,  # accepted; docs/how-to/migrate.md lists it
            metavar="HOST:PORT",
            envvar="FLINK_SQL_RUNNER_JOBMANAGER_ADDRESS",
            help="The original tool's flag, with --deployment-target remote: --master "
            f"spark://HOST:PORT, your Spark master (port 7077 as a rule){unused}.",
        ),
        click.option(
            "--pyexec-path",
            hidden=True,  # accepted; docs/how-to/migrate.md lists it
            metavar="PATH",
            envvar="FLINK_SQL_RUNNER_PYEXEC_PATH",
            help="The original tool's flag: the Python on the cluster's nodes, set as "
            "spark.pyspark.python for every job (a job's own value wins).",
        ),
        click.option(
            "--pyflink-runner-dir",
            hidden=True,  # accepted; docs/how-to/migrate.md lists it
            metavar="DIR",
            envvar="FLINK_SQL_RUNNER_PYFLINK_RUNNER_DIR",
            help="The original tool's flag; ignored with a warning: the runner ships with this "
            "package (on a cluster, `deploy --runner-path` says where drivers find it).",
        ),
    ]
    if offline:
        options += [
            click.option(
                "--external-job-config-bucket",
                hidden=True,  # accepted; docs/how-to/migrate.md lists it
                envvar="FLINK_SQL_RUNNER_EXTERNAL_JOB_CONFIG_BUCKET",
                help="The original tool's store bucket (validate is offline: not used).",
            ),
            click.option(
                "--external-job-config-prefix",
                hidden=True,  # accepted; docs/how-to/migrate.md lists it
                envvar="FLINK_SQL_RUNNER_EXTERNAL_JOB_CONFIG_PREFIX",
                help="The original tool's store prefix (validate is offline: not used).",
            ),
        ]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def original_settings(kw: dict[str, Any], target_given: bool, offline: bool) -> dict[str, Any]:
    """What the original's flags in `kw` (the command's keyword arguments) mean here: the
    target, master and Spark property defaults they set, and warnings to print. BadFlags
    (exit 2) when they contradict the command's own flags. `offline` commands use only the
    property defaults."""
    out: dict[str, Any] = {"warnings": [], "defaults": {}}
    deployment_target, address = kw.get("deployment_target"), kw.get("jobmanager_address")
    if offline:
        deployment_target = address = None
    if deployment_target:
        target = "yarn" if deployment_target == "yarn" else "standalone"
        if target_given and kw.get("target") != target:
            raise BadFlags(
                f"--deployment-target {deployment_target} means --target {target}, but "
                f"--target {kw.get('target')} is given"
            )
        out["target"] = target
    if address:
        if deployment_target != "remote":
            raise BadFlags(
                "--jobmanager-address applies only with --deployment-target remote (as in the "
                "original tool)"
            )
        master = address if "://" in address else f"spark://{address}"
        if kw.get("master") and kw["master"] != master:
            raise BadFlags(
                f"--jobmanager-address means --master {master}, but --master {kw['master']} "
                "is given"
            )
        out["master"] = master
    elif deployment_target == "remote" and not kw.get("master"):
        raise BadFlags(
            "--deployment-target remote needs --jobmanager-address HOST:PORT (your Spark "
            "master, port 7077 as a rule) or --master spark://HOST:PORT"
        )
    if kw.get("pyexec_path"):
        out["defaults"]["spark.pyspark.python"] = kw["pyexec_path"]
    if kw.get("pyflink_runner_dir"):
        out["warnings"].append(
            "--pyflink-runner-dir: ignored: the runner ships with flink-sql-runner; on a "
            "cluster, --runner-path says where the driver finds it"
        )
    return out


class BadFlags(FsrError):
    """Flags that contradict each other."""

    exit_code = 2
