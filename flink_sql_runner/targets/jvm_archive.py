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

The plan's probes (gather/spark_child.py) map an archive too, but only one in this user's own
cache folder (`user_archive_folder`, made by `jvm-archive --for-plan`), never the state
folder's: a CI job may keep the state folder in its checkout, where a pull request could commit
an archive, and Java does not check the classes an archive holds. One there is used only where
it, its folder and every folder above it are this user's (or root's) alone and it is in no
checkout (`trusted_option`, host/owned.py).
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
from flink_sql_runner.host import owned
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


#: The folder of this user's own cache, over `$XDG_CACHE_HOME/flink-sql-runner` (else
#: `~/.cache/flink-sql-runner`, in the home folder the system knows for this user): an absolute
#: path in no checkout.
USER_CACHE_ENV = "FLINK_SQL_RUNNER_USER_CACHE"


def user_archive_folder() -> Path | None:
    """Where `jvm-archive --for-plan` keeps the archive the plan's probes map: `jvm/` in this
    user's cache folder; None where the folder named is not an absolute path (a relative one
    would follow the folder a command runs in: a checkout) or this user has no home folder."""
    named = os.environ.get(USER_CACHE_ENV)
    if named:
        base: Path | None = Path(os.path.normpath(named))
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) / "flink-sql-runner" if xdg else None
        if base is None or not base.is_absolute():  # XDG says: a relative one is ignored
            found = owned.home()
            base = found / ".cache" / "flink-sql-runner" if found is not None else None
    return base / "jvm" if base is not None and base.is_absolute() else None


def trusted_option(folder: Path | None, spark_submit: str) -> str | None:
    """`-XX:SharedArchiveFile=...` of `folder`'s archive where it can be trusted (`untrusted`),
    named by its real path, the one checked: no link is followed after the check; else None
    (the JVM starts as without one)."""
    if folder is None:
        return None
    try:
        path = archive_path(folder, spark_submit)
        real = Path(os.path.realpath(path, strict=True)) if path is not None else None
    except (OSError, RuntimeError, ValueError):  # none there, or a path that cannot be followed
        return None
    if real is None or untrusted(real):
        return None
    return _option(real)


def untrusted(path: Path) -> str | None:
    """Why the plan's probes would not map the archive at `path`, or None: its folder must be
    this user's alone and in no checkout, the archive a file (not a link) this user's and
    writable by no one else (host/owned.py), and its path one word of a JVM option."""
    problem = owned.folder_problem(path.parent)
    if problem:
        return f"its folder: {problem}"
    problem = owned.file_problem(path)
    if problem:
        return f"it {problem}"
    if _option(path) is None:
        return "its path holds a space, a quote or a backslash"
    return None


def _option(path: Path) -> str | None:
    """The option naming `path`, where it can be one word of SPARK_SUBMIT_OPTS: no whitespace,
    no quote and no backslash (Spark's launcher reads those as its own syntax)."""
    if any(c.isspace() or c in "'\"\\" for c in str(path)):
        return None
    return f"-XX:SharedArchiveFile={path}"


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
    its path can be one JVM option: no whitespace, no quote); else None."""
    try:
        path = archive_path(folder, spark_submit)
        if path is None or not path.is_file():
            return None
    except (OSError, RuntimeError, ValueError):  # a folder this user may not read, a link
        return None  # loop on the way to Java: started without it, as before one
    return _option(path)


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
    private: bool = False,
) -> Made:
    """Make the archive of this spark-submit's Spark and Java in `folder` unless there is one
    (other archives there, of another Spark or Java, are removed unless `keep_others`). Written
    under a temporary name and renamed: a reader sees a whole archive or none; two makers end
    with one. `private`: the folder made 0700 and the archive 0600, whatever the umask (what
    `trusted_option` asks of an archive the plan's probes map)."""
    java = java_binary()
    if java is None:
        raise FsrError("no Java found: set JAVA_HOME or put java on PATH")
    folder = folder.absolute()  # the training run works in a folder of its own
    try:
        made = archive_path(folder, spark_submit)
    except (OSError, RuntimeError, ValueError) as exc:
        raise FsrError(f"cannot tell which Java and Spark to make it for: {exc}") from None
    assert made is not None
    if any(c.isspace() for c in str(made)):
        raise FsrError(f"{made}: a path with spaces cannot be given to Java as an option")
    if _option(made) is None:
        raise FsrError(
            f"{made}: a path with a quote or a backslash cannot be given to Java as an option"
        )
    began = time.monotonic()
    if private:
        _private_folder(folder)
    try:
        if made.is_file():
            if private and (problem := owned.file_problem(made)):
                raise FsrError(f"{made}: it {problem}: remove it and run this again")
            if private:
                made.chmod(0o600)
            return Made(made, time.monotonic() - began, made=False)
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FsrError(f"{folder}: {exc.strerror}") from None
    try:
        with tempfile.TemporaryDirectory(prefix=".making-", dir=folder) as work:
            partial = Path(work, made.name)
            _train(spark_submit, partial, Path(work), python or sys.executable, timeout)
            if private:
                partial.chmod(0o600)
            partial.replace(made)
    except OSError as exc:
        raise FsrError(f"{folder}: {exc.strerror}") from None
    for other in [] if keep_others else folder.glob("spark-*.jsa"):
        if other != made:
            try:
                other.unlink(missing_ok=True)
            except OSError:  # not ours to remove, or not a file: left
                continue
    return Made(made, time.monotonic() - began, made=True)


def _private_folder(folder: Path) -> None:
    """`folder` and each folder made for it 0700 whatever the umask, then checked as the
    plan's probes check it (host/owned.py); FsrError when it cannot be this user's alone."""
    missing = []
    for part in (folder, *folder.parents):
        if os.path.lexists(part):
            break
        missing.append(part)
    try:
        for part in reversed(missing):
            part.mkdir(mode=0o700)
            part.chmod(0o700)
        if folder.is_symlink():
            raise FsrError(f"{folder}: a link: the plan's probes map no archive through one")
        if os.lstat(folder).st_uid == os.getuid():
            folder.chmod(0o700)
    except OSError as exc:
        raise FsrError(f"{folder}: {exc.strerror}") from None
    problem = owned.folder_problem(folder)
    if problem:
        raise FsrError(f"{folder}: {problem}: the plan's probes would map no archive there")


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
