"""The forked read (read/forked_read.py) where the system, a signal or the command fails,
and a secret the load cache must not keep: the findings of issue 57's second review, each
test failing before its fix."""

from __future__ import annotations

import contextlib
import errno
import os
import resource
from pathlib import Path
from typing import Any

import pytest
import yaml

from flink_sql_runner.read import forked_read
from flink_sql_runner.read import manifest as manifest_module
from flink_sql_runner.read.load_cache import storable
from flink_sql_runner.read.secrets import MASK, mask, redact_text
from tests.read.test_forked_read import Forks, one_process
from tests.read.test_forked_read import workspace as workspace  # noqa: F401 (the fixture)
from tests.read.test_load_cache import load, project, shape


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


# -- a fork or a pipe the system refuses: the command must read alone, not fail ---------------


@pytest.mark.parametrize("call", ["fork", "pipe"])
def test_a_fork_or_pipe_the_system_refuses_reads_in_one_process(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """EAGAIN (a cgroup's pids.max or RLIMIT_NPROC reached: CI containers), ENOMEM (overcommit
    off, a big parent) or EMFILE: `os.fork()`/`os.pipe()` raise. "The child is only a help":
    the command reads every file itself and gives what one process gives."""
    paths, tables = workspace
    expected = one_process(tmp_path / "state", paths, tables)
    Forks(monkeypatch)
    code = errno.EAGAIN if call == "fork" else errno.EMFILE

    def refused(*args: Any) -> Any:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(forked_read.os, call, refused)
    jobs, warnings = load(tmp_path / "state", paths, tables, cache=False)
    assert (shape(jobs), warnings) == expected


def test_a_pipe_above_fd_1024_is_waited_on_without_select(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`select.select` refuses a file descriptor of FD_SETSIZE (1024) or more: a command
    holding 1024 descriptors (soft limits are often far higher: 1048576 in Docker) waits for
    the child with `poll`, which has no such limit."""
    paths, tables = workspace
    expected = one_process(tmp_path / "state", paths, tables)
    forks = Forks(monkeypatch)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(2048, hard), hard))
    held: list[int] = []
    while not held or held[-1] < 1030:
        held.append(os.open(os.devnull, os.O_RDONLY))
    try:
        jobs, warnings = load(tmp_path / "state", paths, tables, cache=False)
    finally:
        for fd in held:
            os.close(fd)
        if soft < 1100:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        forks.all_ended()
    assert (shape(jobs), warnings) == expected


# -- process hygiene ---------------------------------------------------------------------------


@pytest.mark.parametrize("raised", [RuntimeError, KeyboardInterrupt])
def test_an_exception_in_the_command_between_fork_and_take_ends_the_child(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, raised: type
) -> None:
    """Anything the command raises while it reads its own share (a Ctrl-C, SIGTERM turned into
    an exception, a bug on one file): the child is killed by its pid and reaped, the pipe's
    descriptor closed."""
    paths, tables = workspace
    forks = Forks(monkeypatch)
    real = manifest_module.JobLoader.load_file
    before = _open_fds()

    def load_file(self: Any, path: Path, problems: list[Any]) -> Any:
        if not forks.in_child() and len(forks.children) == 2:  # the command, the jobs' head
            raise raised("interrupted while reading the head")
        return real(self, path, problems)

    monkeypatch.setattr(manifest_module.JobLoader, "load_file", load_file)
    with pytest.raises(raised):
        load(tmp_path / "state", paths, tables, cache=False)
    assert len(forks.children) == 2
    leaked = _open_fds() - before
    ended = forks.all_ended()
    for pid in forks.children:  # whatever the code left, cleaned up before asserting
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, 9)
            os.waitpid(pid, 0)
    for fd in leaked:
        with contextlib.suppress(OSError):
            os.close(fd)
    assert ended and not leaked, f"child killed and reaped: {ended}; descriptors left: {leaked}"


def test_a_signal_in_the_child_before_its_try_never_runs_the_callers_code(
    workspace: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C reaches the whole process group: a child it reaches between `os.fork()`
    returning and its `try:` (the `with warnings.catch_warnings()` exit runs there, Python
    code: forked_read.py:111-116) raises KeyboardInterrupt out of `_fork` into the command's
    own code: the child then runs the CLI's handler, prints, flushes the command's buffered
    stdout and runs its atexit handlers as a second command. The signals are held across the
    fork, and the child's work begins before the block around the fork ends: simulated here by
    raising in the child where it ends; the child never returns into the caller."""
    paths, tables = workspace
    forks = Forks(monkeypatch)
    escaped = tmp_path / "child-escaped"

    class Interrupted(contextlib.AbstractContextManager[None]):
        def __exit__(self, *exc: Any) -> None:
            if forks.in_child():
                raise KeyboardInterrupt  # the signal's handler runs at this bytecode

    monkeypatch.setattr(forked_read.warnings, "catch_warnings", Interrupted)
    try:
        load(tmp_path / "state", paths, tables, cache=False)
    except BaseException:
        if forks.in_child():
            escaped.write_text("the child ran the caller's code")
            os._exit(0)
        raise
    finally:
        if forks.in_child():
            escaped.write_text("the child ran the caller's code")
            os._exit(0)
    assert forks.all_ended()
    assert not escaped.exists(), "a forked child ran on in the command's code"


# -- secrets kept ------------------------------------------------------------------------------


SECRET_SQL = 'CREATE TEMPORARY VIEW pg USING jdbc OPTIONS (url "jdbc:postgresql://db/x", dbtable "t", password "hunter2")'  # noqa: E501


def test_storable_refuses_what_redact_text_would_mask() -> None:
    """Spark SQL's OPTIONS take double-quoted strings: `password "x"` is a secret given, as
    `password 'x'` is, for `redact_text`, `mask` and what the load cache keeps alike."""
    assert redact_text(SECRET_SQL) != SECRET_SQL
    assert not storable(SECRET_SQL)
    assert not storable({"code": SECRET_SQL})
    assert mask({"code": SECRET_SQL}) == {"code": MASK}


def test_a_code_jobs_jdbc_password_is_not_written_to_the_cache_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PySpark job registering a JDBC view with Spark SQL's double-quoted OPTIONS: the
    deployer masks the password wherever it prints the code (redact_text), and the load cache
    does not keep the code."""
    paths, tables = project(tmp_path)
    monkeypatch.chdir(tmp_path)
    job = {
        "name": "pg-copy",
        "target-table": "buyer_orders",
        "source-tables": ["orders"],
        "code": f"spark.sql('''{SECRET_SQL}''')\nexecution_output = spark.table('orders')\n",
    }
    (paths[0] / "queries" / "pg-copy.yaml").write_text(yaml.safe_dump(job))
    (paths[0] / "queries" / "buyer-orders-code.yaml").unlink()
    state = tmp_path / "state"
    state.mkdir()
    load(state, paths, tables)
    assert "hunter2" not in (state / "cache" / "load.json").read_text()
