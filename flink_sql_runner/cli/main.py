"""The `flink-sql-runner` command line: the group and its commands (each built in the module of its
group), the entry point."""

from __future__ import annotations

from importlib import import_module

import click

from flink_sql_runner import __version__
from flink_sql_runner.cli.original_flags import (
    FsrGroup,
)

#: Each command: the module of this folder that builds it, and its name there. A command's
#: module is imported when that command runs (or when `--help` lists them all): `plan` does
#: not pay for importing `watch`, `inspect` and `migrate` (a tenth of a second of start-up).
COMMANDS = {
    "validate": ("inputs", "validate"),
    "lineage": ("inputs", "lineage"),
    "plan": ("deploy", "plan"),
    "deploy": ("deploy", "deploy"),
    "deploy-job": ("deploy", "deploy_job"),
    "status": ("jobs", "status"),
    "stop": ("jobs", "stop"),
    "forget": ("jobs", "forget"),
    "logs": ("logs", "logs"),
    "inspect": ("inspect", "inspect"),
    "preview": ("preview", "preview"),
    "migrate": ("migrate", "migrate"),
    "watch": ("watch", "watch"),
    "resume": ("watch", "resume"),
    "jvm-archive": ("jvm", "jvm_archive"),
    "ui": ("ui", "ui"),
}


class _Commands(FsrGroup):
    """The group, its commands imported by name when asked for (`COMMANDS`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, name = COMMANDS[cmd_name]
        command: click.Command = getattr(import_module(f"flink_sql_runner.cli.{module}"), name)
        for param in command.params:  # each option's variable in its --help line
            said = f"[env var: {param.envvar}]"
            if isinstance(param, click.Option) and param.envvar and said not in (param.help or ""):
                # In the help text, not click's `show_envvar`, which also names the variable in
                # the error about a value given on the command line.
                param.help = f"{param.help or ''} {said}".strip()
        return command


def all_commands() -> dict[str, click.Command]:
    """Every command by name (each module imported)."""
    ctx = click.Context(main)
    return {name: command for name in COMMANDS if (command := main.get_command(ctx, name))}


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="flink-sql-runner")
def main() -> None:
    """Deploy streaming SQL jobs on Apache Spark from YAML manifests kept in git.

    For each job: merge with the template, diff against the manifest deployed last, then leave
    it alone, restart it from its checkpoint, or start it clean as a new query version.

    \b
    Exit codes: 0 ok / nothing to do, 1 a job failed or is in error,
    2 invalid input (nothing touched), 3 the store is locked by another deploy (or its lock
    was lost mid-deploy),
    4 changes pending (plan --detailed-exitcode), 130 interrupted (Ctrl-C).
    """
