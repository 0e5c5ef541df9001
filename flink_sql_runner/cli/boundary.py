"""Where errors meet people: every command's errors caught once, one clear line each, the
documented exit code (`--debug` for the traceback)."""

from __future__ import annotations

import functools
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click

from flink_sql_runner.errors import (
    EXIT_INVALID,
    FsrError,
    InvalidInput,
)
from flink_sql_runner.host import collector
from flink_sql_runner.host.timing import mark


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
        finally:
            collector.restore()
        mark("exit", code=code)
        sys.exit(code)

    return wrapper
