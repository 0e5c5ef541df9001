"""Cheaper Spark JVMs for the suite, as measured (docs/developers/testing.md, `python -m
tests.benchmarks.jvm_start`): the client compiler only (`-XX:TieredStopAtLevel=1`), programs
started without Java's helper process (`QUICK_OPTIONS`) and Spark's classes mapped from the
class-data-sharing archive `flink-sql-runner jvm-archive` makes
(flink_sql_runner/targets/jvm_archive.py). On 2 cores a driver reached its first committed batch
2.4x sooner with the compiler and the archive, on a third of the CPU.

The archive is made once per machine for a Spark installation and a Java (about a minute), in
the tests' cache (`jvm/` of tests/support/cache.py), named for what it was made from. A JVM
whose class path does not match it (another Spark, a YARN container) runs as it would without
it: Java says nothing.

`quicken(env)` puts the options where every JVM the tests start finds them: `SPARK_SUBMIT_OPTS`
(each spark-submit's JVM: the drivers the CLI starts, the suite's own session, the runner's
probes, the matrix) and `SPARK_DAEMON_JAVA_OPTS` (a standalone cluster's master and worker).
What a cluster launches itself (drivers on a standalone worker, YARN's containers) takes them
from a job's `spark.driver.extraJavaOptions` and `spark.executor.extraJavaOptions`:
`cluster_conf()`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from flink_sql_runner.errors import FsrError
from flink_sql_runner.targets.jvm_archive import archive_path, java_binary, make_archive
from tests.support.cache import cache_root, locked


def launch_options(java: str | None, platform: str = sys.platform) -> tuple[str, ...]:
    """The options of `java` (a binary) that start programs cheaper: by vfork and exec, not
    through Java's `jspawnhelper`. Hadoop's local file system runs `chmod` and `readlink` for
    each file a stream writes (some 25 a micro-batch), and each costs 40% less CPU started so
    (`python -m tests.benchmarks.spawn_cost`, docs/developers/testing.md).
    Only on Linux (macOS refuses it) with a Java of 21 or older, as its `release` file says:
    Java 25 deprecates the mechanism (a warning on every JVM's stderr) and a later one removes
    it, and a Java that does not know it refuses to start a program."""
    if not platform.startswith("linux") or java is None:
        return ()
    try:
        release = (Path(java).resolve().parent.parent / "release").read_text()
    except OSError:
        return ()
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', release, re.MULTILINE)
    return ("-Djdk.lang.Process.launchMechanism=VFORK",) if found and int(found[1]) <= 21 else ()


def quick_options(java: str | None) -> tuple[str, ...]:
    """The options that make a JVM of `java` (a binary) cheaper: the client compiler only (a
    test's driver runs for seconds, never long enough for C2 to pay; a running driver spends
    0.6x the CPU with it, trigger_cost.py), and programs started by vfork where it knows how."""
    return ("-XX:TieredStopAtLevel=1", *launch_options(java))


#: The options of the Java Spark's scripts run ($JAVA_HOME's, else the one on PATH).
QUICK_OPTIONS = quick_options(java_binary())
FOLDER = cache_root() / "jvm"


def spark_submit_of(home: Path | None) -> str:
    """`home`'s spark-submit (pyspark's by default)."""
    if home is None:
        import pyspark

        home = Path(pyspark.__file__).parent
    return str(home / "bin" / "spark-submit")


def archive(home: Path | None = None, python: str | None = None) -> Path | None:
    """The class-data-sharing archive of `home`'s Spark, made if missing (its driver run by
    `python`, which imports that Spark's pyspark; this one by default); None when it cannot be
    made (the options then go without it)."""
    spark_submit = spark_submit_of(home)
    if spark_submit not in _tried:
        # One lock per archive: the matrix's two lines at once make theirs side by side.
        path = archive_path(FOLDER, spark_submit)
        with locked(FOLDER / (f".{path.stem}.lock" if path else ".lock")):
            try:
                made = make_archive(FOLDER, spark_submit, python, keep_others=True)
                _tried[spark_submit] = made.path
            except FsrError as exc:
                print(
                    f"tests/support/jvm.py: no class-data-sharing archive: {exc}", file=sys.stderr
                )
                _tried[spark_submit] = None
    return _tried[spark_submit]


#: What this process found or made, by spark-submit (None: it could not be made).
_tried: dict[str, Path | None] = {}


def java_options(home: Path | None = None, make: bool = True, python: str | None = None) -> str:
    """The options of a test's Spark JVMs: the client compiler, and the archive if one can be
    had (with `make` false: where it is kept, made or not; a JVM ignores a missing one)."""
    found = archive(home, python) if make else archive_path(FOLDER, spark_submit_of(home))
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
