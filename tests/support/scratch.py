"""One scratch folder per test run for what Spark's JVMs write to scratch space: Spark's local
folders (`SPARK_LOCAL_DIRS`: block managers, shuffle files, the driver's own `spark-*` folder)
and each JVM's `java.io.tmpdir` (native libraries Snappy and LZ4 unpack, artifacts). Without it
they go to /tmp, and a driver a test kills never removes its own: thousands of folders after a
few runs.

The run's first process (pytest itself, or xdist's controller) makes the folder and removes it
at its end; its workers inherit it through the environment. Every Spark JVM the tests start
gets it: spark-submit's (`SPARK_SUBMIT_OPTS`, which the CLI's drivers, the suite's session and
the probes inherit) and a standalone cluster's daemons (`SPARK_DAEMON_JAVA_OPTS`).
"""

from __future__ import annotations

import os
import shutil
import tempfile

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
    os.environ["SPARK_LOCAL_DIRS"] = folder
    option = f"-Djava.io.tmpdir={folder}"
    for name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        if option not in os.environ.get(name, ""):
            os.environ[name] = f"{option} {os.environ.get(name, '')}".strip()
    return folder


def end(config: pytest.Config) -> None:
    """The folder removed by the process that made it."""
    folder = config.stash.get(_OWNED, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(VARIABLE, None)
