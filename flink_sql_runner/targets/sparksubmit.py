"""spark-submit as every target uses it: where it is, where the runner is, the argument list of a
submission, running it to completion, and the line of its output that says why it failed."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host.processes import child_env
from flink_sql_runner.model.sparkversion import version_tuple
from flink_sql_runner.targets.base import Submission
from flink_sql_runner.targets.javaprops import properties_text

#: How spark-submit reports a failure: the exception of its main thread, or a usage error.
_MAIN_EXCEPTION = re.compile(r'^Exception in thread "main" (?P<message>.+)$')
_USAGE_ERROR = re.compile(r"^Error: (?P<message>.+)$")
_CAUSED_BY = re.compile(r"^Caused by: (?P<message>.+)$")
_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN) ")
#: A Spark distribution's RELEASE file ("Spark 3.5.1 built for Hadoop 3.3.4"), and the jar that
#: says the version where there is none (pip's pyspark).
_RELEASE = re.compile(r"^Spark (\d+\.\d+\.\d+\S*)")
_CORE_JAR = re.compile(r"^spark-core_\d+\.\d+-(\d+\.\d+\.\d+[^/]*?)\.jar$")


def find_spark_submit(explicit: str | None = None) -> str:
    """--spark-submit, else $SPARK_HOME/bin/spark-submit, else the one bundled with pyspark."""
    if explicit:
        return explicit
    home = os.environ.get("SPARK_HOME")
    if home:
        return str(Path(home, "bin", "spark-submit"))
    spec = importlib.util.find_spec("pyspark")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations)), "bin", "spark-submit")
        if bundled.exists():
            return str(bundled)
    found = shutil.which("spark-submit")
    if found:
        return found
    raise FsrError("no spark-submit found: install pyspark, set SPARK_HOME or --spark-submit")


def spark_home(spark_submit: str) -> Path:
    """The Spark installation a spark-submit runs: $SPARK_HOME if set (its script uses that),
    else the folder above its `bin/`."""
    home = os.environ.get("SPARK_HOME")
    return Path(home) if home else Path(spark_submit).resolve().parent.parent


@functools.lru_cache(maxsize=8)
def _release_at(home: Path) -> str | None:
    try:
        lines = (home / "RELEASE").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    found = _RELEASE.match(lines[0]) if lines else None
    if not found:
        try:
            jars = [entry.name for entry in os.scandir(home / "jars")]
        except OSError:
            jars = []
        found = next(filter(None, map(_CORE_JAR.match, sorted(jars))), None)
    return found[1] if found else None


def spark_release(spark_submit: str) -> str | None:
    """The version of the Spark a spark-submit runs ("4.3.0"), read from its installation
    without starting a JVM (its RELEASE file, else its spark-core jar); None if neither says."""
    return _release_at(spark_home(spark_submit))


def spark_version(spark_submit: str) -> tuple[int, int] | None:
    """(major, minor) of the Spark a spark-submit runs; None if its installation does not say."""
    parsed = version_tuple(spark_release(spark_submit))
    return parsed[:2] if parsed else None


def properties_file_replaces_defaults(spark_submit: str) -> bool:
    """Spark before 4.0: `--properties-file` replaces conf/spark-defaults.conf, and there is no
    `--load-spark-defaults` (spark-submit refuses it). An unknown version counts as 4.0+: a
    refused option fails the submission visibly, a dropped defaults file would not."""
    version = spark_version(spark_submit)
    return version is not None and version < (4, 0)


def properties_file_text(spark_submit: str, properties: dict[str, str]) -> str:
    """The body of the private properties file for `spark_submit`, escaped as
    `java.util.Properties` reads it. Before Spark 4.0 spark-submit reads that file instead of
    spark-defaults.conf, so the defaults file comes first there (the later key wins): the
    cluster's defaults still count, as with --load-spark-defaults on 4.0+."""
    body = properties_text(properties)
    if not properties_file_replaces_defaults(spark_submit):
        return body
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    defaults = Path(conf_dir) if conf_dir else spark_home(spark_submit) / "conf"
    try:
        text = (defaults / "spark-defaults.conf").read_text(encoding="utf-8")
    except OSError:
        return body
    # An empty line after it ends a trailing continuation line ("key=value\").
    return f"{text.rstrip(chr(10))}\n\n{body}"


def submit_command(
    spark_submit: str,
    master: str,
    submission: Submission,
    *,
    runner: str,
    properties_file: Path | None = None,
    deploy_mode: str | None = None,
    target_conf: dict[str, str] | None = None,
    extra_args: tuple[str, ...] = (),
) -> list[str]:
    """The argument list that submits one run: the job's Spark properties, then the target's own
    (which win), secrets only through `properties_file`, then the runner, its manifest and
    (cluster targets) its package."""
    args = [spark_submit, "--master", master]
    if deploy_mode:
        args += ["--deploy-mode", deploy_mode]
    args += ["--name", submission.app_name]
    for key, value in {**submission.spark_conf, **(target_conf or {})}.items():
        args += ["--conf", f"{key}={value}"]
    if properties_file:
        args += ["--properties-file", str(properties_file)]
        if not properties_file_replaces_defaults(spark_submit):
            # Since 4.0 a properties file replaces conf/spark-defaults.conf unless asked not to;
            # before, properties_file_text() puts the defaults into the file.
            args.append("--load-spark-defaults")
    args += list(extra_args)
    args += [runner, "--manifest", submission.runtime_manifest]
    if submission.runner_package:
        args += ["--package", submission.runner_package]
    return args


@contextmanager
def private_properties(secret_conf: dict[str, str], spark_submit: str) -> Iterator[Path | None]:
    """The secret properties in a 0600 file in a private folder, removed afterwards; None if
    there are none. For spark-submit calls that return once the cluster accepted the run."""
    if not secret_conf:
        yield None
        return
    folder = Path(tempfile.mkdtemp(prefix="flink-sql-runner-"))  # mode 0700
    path = folder / "secret.properties"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(properties_file_text(spark_submit, secret_conf))
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class SparkSubmitTimeout(FsrError):
    """spark-submit ran out of time: what it was asked to do may or may not have happened."""


@dataclass(frozen=True)
class Completed:
    returncode: int
    output: str  # stdout and stderr, interleaved as spark-submit wrote them


def run(args: list[str], timeout: float) -> Completed:
    """Run spark-submit to its end (cluster submissions, --status, --kill); never a shell."""
    try:
        done = subprocess.run(  # noqa: S603 - a list, never a shell
            args,
            env=child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except OSError as exc:
        raise FsrError(f"cannot run {args[0]}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise SparkSubmitTimeout(
            f"{Path(args[0]).name} did not finish within {timeout:.0f} s"
        ) from None
    return Completed(done.returncode, done.stdout.decode("utf-8", errors="replace"))


def failure_message(output: str) -> str:
    """What spark-submit said went wrong, in one line: the main thread's exception with its
    first cause, or its usage error; else the last line that is not routine logging."""
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        match = _MAIN_EXCEPTION.match(line) or _USAGE_ERROR.match(line)
        if not match:
            continue
        message = match["message"]
        cause = next((c["message"] for c in map(_CAUSED_BY.match, lines[index + 1 :]) if c), None)
        return f"{message} (caused by {cause})" if cause else message
    useful = [line for line in lines if not _LOG_LINE.match(line) and not line[0].isspace()]
    return useful[-1] if useful else "no output"
