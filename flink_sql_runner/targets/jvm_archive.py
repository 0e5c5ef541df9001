"""A class-data-sharing archive of Spark's classes for local drivers (`flink-sql-runner
jvm-archive`): a driver started with `-XX:SharedArchiveFile` maps the classes a driver loads
instead of reading and verifying them from Spark's jars, and reaches its first batch sooner
(docs/developers/benchmarks.md, "Driver start with a class-data-sharing archive").

The archive is made once, by a run of the runner's `jvm_training.py` under
`-XX:ArchiveClassesAtExit` (a rate stream into parquet and a windowed count into json, each to its
first batch), and kept as `<folder>/spark-<key>.jsa`: the key is made from the Java that runs
Spark (its binary and class image), the Spark installation's jars and the training program, so
another Java or Spark finds no archive and starts as it always did. A JVM whose class path does
not match an archive runs without it, and says nothing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host.processes import child_env
from flink_sql_runner.targets.sparksubmit import spark_home

#: Seconds a training run may take (about one minute on 2 cores).
MAKE_TIMEOUT = 900.0
#: The training run's own settings: small, local, no UI.
TRAINING_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "512m",
}


@dataclass(frozen=True)
class Made:
    path: Path
    seconds: float
    made: bool  # False: an archive of this Java and Spark was there already


def training_program() -> Path:
    return Path(str(resources.files("flink_sql_runner._runner").joinpath("jvm_training.py")))


def java_binary() -> str | None:
    """The `java` Spark's scripts run: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    return str(Path(home, "bin", "java")) if home else shutil.which("java")


def archive_key(home: Path, java: str) -> str:
    """What an archive is made from: the Java (its binary and class image), the jars of the
    Spark installation (names, sizes, times) and the training program."""
    digest = hashlib.sha256()
    real = Path(java).resolve()
    for path in (real, real.parent.parent / "lib" / "modules"):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    try:
        jars = sorted(os.scandir(home / "jars"), key=lambda entry: entry.name)
    except OSError:
        jars = []
    for entry in jars:
        try:
            info = entry.stat()
        except OSError:  # a link to nothing: no class of it loads, the name still counts
            digest.update(f"{entry.path}\0-\n".encode())
            continue
        digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    digest.update(training_program().read_bytes())
    return digest.hexdigest()[:20]


def archive_folder(state_dir: Path) -> Path:
    """Where `jvm-archive` keeps its archives: `<state-dir>/jvm/`."""
    return state_dir / "jvm"


def archive_path(folder: Path, spark_submit: str) -> Path | None:
    """Where the archive of this spark-submit's Spark and Java is kept in `folder`, made or not;
    None without a Java."""
    java = java_binary()
    if java is None:
        return None
    # Absolute: Java reads it from the JVM's working folder, which is not the deployer's.
    return folder.absolute() / f"spark-{archive_key(spark_home(spark_submit), java)}.jsa"


def java_option(folder: Path, spark_submit: str) -> str | None:
    """`-XX:SharedArchiveFile=...` when an archive of this Spark and Java is in `folder` (and
    its path can be one JVM option: no whitespace); else None."""
    try:
        path = archive_path(folder, spark_submit)
        if path is None or not path.is_file() or any(c.isspace() for c in str(path)):
            return None
    except OSError:  # a folder this user may not read: started without it, as before one
        return None
    return f"-XX:SharedArchiveFile={path}"


def with_archive(env: dict[str, str], folder: Path, spark_submit: str) -> dict[str, str]:
    """`env` for a spark-submit whose driver runs in its own JVM (local mode): the archive's
    option first in SPARK_SUBMIT_OPTS, so that options already there still win."""
    option = java_option(folder, spark_submit)
    if option is None:
        return env
    return {**env, "SPARK_SUBMIT_OPTS": f"{option} {env.get('SPARK_SUBMIT_OPTS', '')}".strip()}


def make_archive(
    folder: Path,
    spark_submit: str,
    python: str | None = None,
    timeout: float = MAKE_TIMEOUT,
    keep_others: bool = False,
) -> Made:
    """Make the archive of this spark-submit's Spark and Java in `folder` unless there is one
    (other archives there, of another Spark or Java, are removed unless `keep_others`). Written
    under a temporary name and renamed: a reader sees a whole archive or none; two makers end
    with one."""
    java = java_binary()
    if java is None:
        raise FsrError("no Java found: set JAVA_HOME or put java on PATH")
    folder = folder.absolute()  # the training run works in a folder of its own
    made = archive_path(folder, spark_submit)
    assert made is not None
    if any(c.isspace() for c in str(made)):
        raise FsrError(f"{made}: a path with spaces cannot be given to Java as an option")
    began = time.monotonic()
    if made.is_file():
        return Made(made, time.monotonic() - began, made=False)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".making-", dir=folder) as work:
        partial = Path(work, made.name)
        _train(spark_submit, partial, Path(work), python or sys.executable, timeout)
        partial.replace(made)
    for other in [] if keep_others else folder.glob("spark-*.jsa"):
        if other != made:
            other.unlink(missing_ok=True)
    return Made(made, time.monotonic() - began, made=True)


def _train(spark_submit: str, partial: Path, work: Path, python: str, timeout: float) -> None:
    env = {k: v for k, v in child_env().items() if k not in ("SPARK_SUBMIT_OPTS", "PYTHONPATH")}
    env["SPARK_SUBMIT_OPTS"] = f"-XX:ArchiveClassesAtExit={partial}"
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = python
    argv = [spark_submit, "--master", "local[2]"]
    for key, value in TRAINING_CONF.items():
        argv += ["--conf", f"{key}={value}"]
    argv += [str(training_program()), str(work / "out")]
    try:
        child = subprocess.Popen(  # noqa: S603 - a list, never a shell
            argv,
            env=env,
            cwd=work,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its driver's Python goes with it on a timeout
        )
    except OSError as exc:
        raise FsrError(f"cannot run {spark_submit}: {exc.strerror}") from None
    try:
        _, stderr = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise FsrError(f"the training run did not end in {timeout:.0f} s") from None
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    if child.returncode != 0 or not partial.is_file():
        tail = stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise FsrError(
            f"the training run exited {child.returncode} without an archive: " + " / ".join(tail)
        )
