"""Cheaper Spark JVMs for the suite, as measured (docs/testing.md, `python -m
tests.benchmarks.jvm_start`): the client compiler only (`-XX:TieredStopAtLevel=1`) and Spark's
classes mapped from a class-data-sharing archive (`-XX:SharedArchiveFile`). On 2 cores a driver
reached its first committed batch 2.4x sooner with both, on a third of the CPU.

The archive is made once per machine for a Spark installation and a Java (a run of
`jvm_training.py` with `-XX:ArchiveClassesAtExit`, about a minute), in the tests' cache
(`jvm/` of tests/support/cache.py), named for what it was made from. A JVM whose class path does
not match it (another Spark, a YARN container) runs as it would without it: Java says nothing.

`quicken(env)` puts the options where every JVM the tests start finds them: `SPARK_SUBMIT_OPTS`
(each spark-submit's JVM: the drivers the CLI starts, the suite's own session, the runner's
probes, the matrix) and `SPARK_DAEMON_JAVA_OPTS` (a standalone cluster's master and worker).
What a cluster launches itself (drivers on a standalone worker, YARN's containers) takes them
from a job's `spark.driver.extraJavaOptions` and `spark.executor.extraJavaOptions`:
`cluster_conf()`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.cache import cache_root, locked

#: The client compiler only: a test's driver runs for seconds, never long enough for C2 to pay.
QUICK_OPTIONS = ("-XX:TieredStopAtLevel=1",)
TRAINING = Path(__file__).resolve().parent / "jvm_training.py"
MAKE_TIMEOUT = 600


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def java() -> str | None:
    """The `java` spark-class runs: $JAVA_HOME's, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        return str(Path(home, "bin", "java"))
    return shutil.which("java")


def archive_key(home: Path, java_binary: str) -> str:
    """What an archive is made from: the Java (its binary and its class image), the jars of the
    Spark (names, sizes, times) and the training program."""
    digest = hashlib.sha256()
    real = Path(java_binary).resolve()
    modules = real.parent.parent / "lib" / "modules"
    for path in (real, modules):
        try:
            info = path.stat()
        except OSError:
            continue
        digest.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    jars = home / "jars"
    for entry in sorted(os.scandir(jars), key=lambda e: e.name) if jars.is_dir() else []:
        info = entry.stat()
        digest.update(f"{entry.path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    digest.update(TRAINING.read_bytes())
    return digest.hexdigest()[:20]


def archive_path(home: Path | None = None) -> Path | None:
    """Where the class-data-sharing archive of `home`'s Spark (pyspark's by default) is kept,
    made or not; None without a Java or a spark-submit."""
    home = home or spark_home()
    java_binary = java()
    if java_binary is None or not (home / "bin" / "spark-submit").exists():
        return None
    return cache_root() / "jvm" / f"spark-{archive_key(home, java_binary)}.jsa"


def archive(home: Path | None = None, python: str | None = None) -> Path | None:
    """The class-data-sharing archive of `home`'s Spark, made if missing (its driver run by
    `python`, which imports that Spark's pyspark; this one by default); None when it cannot be
    made (the options then go without it)."""
    home = home or spark_home()
    made = archive_path(home)
    if made is None:
        return None
    if made not in _tried:
        with locked(made.parent / ".lock"):
            _tried[made] = made if made.is_file() else _make(home, made, python)
    return _tried[made]


#: What this process found or made, by where it is kept (None: it could not be made).
_tried: dict[Path, Path | None] = {}


def _make(home: Path, made: Path, python: str | None) -> Path | None:
    partial = made.with_suffix(f".{os.getpid()}.tmp")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_SUBMIT_OPTS", "PYTHONPATH")}
    env["SPARK_SUBMIT_OPTS"] = f"-XX:ArchiveClassesAtExit={partial}"
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = python or sys.executable
    with tempfile.TemporaryDirectory(prefix="jvm-training-") as work:
        argv = [str(home / "bin" / "spark-submit"), "--master", "local[2]"]
        for key, value in {
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "512m",
        }.items():
            argv += ["--conf", f"{key}={value}"]
        try:
            done = subprocess.run(  # noqa: S603 - a list, never a shell
                [*argv, str(TRAINING), work],
                env=env,
                cwd=work,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=MAKE_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"tests/support/jvm.py: no class-data-sharing archive: {exc}", file=sys.stderr)
            partial.unlink(missing_ok=True)
            return None
    if done.returncode != 0 or not partial.is_file():
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-3:]
        print(
            f"tests/support/jvm.py: no class-data-sharing archive (exit {done.returncode}): "
            + " / ".join(tail),
            file=sys.stderr,
        )
        partial.unlink(missing_ok=True)
        return None
    partial.replace(made)
    return made


def java_options(home: Path | None = None, make: bool = True, python: str | None = None) -> str:
    """The options of a test's Spark JVMs: the client compiler, and the archive if one can be
    had (with `make` false: where it is kept, made or not; a JVM ignores a missing one)."""
    found = archive(home, python) if make else archive_path(home)
    shared = (f"-XX:SharedArchiveFile={found}",) if found else ()
    return " ".join((*QUICK_OPTIONS, *shared))


def quicken(env: dict[str, str] | os._Environ[str], home: Path | None = None) -> str:
    """Make the archive if missing and put the options into `env` for every spark-submit and
    standalone daemon started with it (before what it already holds: a caller's own options
    win); the options."""
    options = java_options(home)
    for name in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        env[name] = f"{options} {env.get(name, '')}".strip()
    return options


def cluster_conf() -> dict[str, str]:
    """A job's Spark properties that give the JVMs a cluster launches for it (a standalone
    worker's drivers and executors, YARN's containers) the same options; cheap enough for a
    module's constants (the archive is made by `quicken`, before the first test)."""
    options = java_options(make=False)
    return {"spark.driver.extraJavaOptions": options, "spark.executor.extraJavaOptions": options}
