"""One scratch folder per test run for what Spark's JVMs write to scratch space: Spark's local
folders (`SPARK_LOCAL_DIRS`: block managers, shuffle files, the driver's own `spark-*` folder)
and each JVM's `java.io.tmpdir` (native libraries Snappy and LZ4 unpack, artifacts). Without it
they go to /tmp, and a driver a test kills never removes its own: thousands of folders after a
few runs.

The run's first process (pytest itself, or xdist's controller) makes the folder and removes it
at its end; its workers inherit it through the environment. Every Spark JVM the tests start
gets it: spark-submit's (`SPARK_SUBMIT_OPTS`, which the CLI's drivers, the suite's session and
the probes inherit) and a standalone cluster's daemons (`SPARK_DAEMON_JAVA_OPTS`).

A benchmark run on its own (`python -m tests.benchmarks...`) makes one the same way for the
time it runs (`for_a_program`), or takes the one the environment names when the suite runs it.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

#: The run's scratch folder, as its processes find it.
VARIABLE = "FSR_TEST_SCRATCH"
_OWNED = pytest.StashKey[str]()


def begin(config: pytest.Config) -> str:
    """The run's scratch folder (made by the run's first process), put where Spark finds it."""
    folder = os.environ.get(VARIABLE)
    if not folder or not os.path.isdir(folder):
        folder = tempfile.mkdtemp(prefix="fsr-tests-scratch-")
        os.environ[VARIABLE] = folder
        config.stash[_OWNED] = folder
    point_spark_at(folder)
    return folder


def point_spark_at(folder: str) -> None:
    """Spark's local folders and every JVM's `java.io.tmpdir` in `folder`, for this process and
    the processes it starts."""
    os.environ["SPARK_LOCAL_DIRS"] = folder
    option = tmpdir_option(folder)
    for name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        if option not in os.environ.get(name, ""):
            os.environ[name] = f"{option} {os.environ.get(name, '')}".strip()


def tmpdir_option(folder: str) -> str:
    """The JVM option that puts a JVM's temporary files in `folder`."""
    return f"-Djava.io.tmpdir={folder}"


#: What `point_spark_at` sets, put back when a program's scratch folder goes.
_POINTED = (VARIABLE, "SPARK_LOCAL_DIRS", "SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS")


@contextmanager
def for_a_program() -> Iterator[str]:
    """The scratch folder of a program that is not pytest (a benchmark run on its own): the one
    the environment names (the suite running it), or one made here and removed on the way out,
    also on SIGTERM; what the environment said before is put back either way."""
    before = {name: os.environ.get(name) for name in _POINTED}
    named = os.environ.get(VARIABLE)
    folder = named if named and os.path.isdir(named) else None
    made = folder is None
    if folder is None:
        folder = tempfile.mkdtemp(prefix="fsr-bench-scratch-")
    terminate = signal.getsignal(signal.SIGTERM)
    if made and terminate == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        os.environ[VARIABLE] = folder
        point_spark_at(folder)
        yield folder
    finally:
        if made:
            signal.signal(signal.SIGTERM, terminate)
            shutil.rmtree(folder, ignore_errors=True)
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def end(config: pytest.Config) -> None:
    """The folder removed by the process that made it."""
    folder = config.stash.get(_OWNED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(VARIABLE, None)
