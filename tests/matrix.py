"""The Spark version matrix: the runner's tests on each supported Spark line, and one end-to-end
lifecycle on the living lines no scenario of the suite runs on (`suite_lines`), every line in its
own virtualenv with the pyspark its constraints file pins.

    python -m tests.matrix                        # the lines CI adds: 3.5, 4.0, 4.1, 4.2
    python -m tests.matrix --line 3.5 --line 4.3  # any of them, the default (4.3) too
    python -m tests.matrix --install-only         # only make the virtualenvs (.ci/run does
                                                  # it while the suite runs), KAFKA_LINE's first
    python -m tests.matrix --install-only --for-suite  # only KAFKA_LINE's, and what the
                                                  # suite needs of it (FOR_SUITE)
    python -m tests.matrix --every-test           # every test file on every line (ONLY_ON)

A line's virtualenv is made with `pip install -e '.[test]' -c constraints/spark-<line>.txt` in
the tests' cache outside the clone (`venvs/spark-<line>-<key>/` of tests/support/cache.py), its
folder named for what it was made from (that file, `constraints/common.txt` and the dependencies
in `pyproject.toml`), so another clone or a later CI run on the machine reuses it; it is pointed
at the clone that uses it (`pip install --no-deps -e`, a few seconds) and locked while that
clone's tests run in it. Two lines run at once (`--jobs`), each line's tests in one process:
two Spark JVMs on two cores, as the suite's two workers start, but a line's one long test (the
lifecycle) no longer leaves the other core idle while it runs. A line's output is printed whole
when it ends. At the end, one table row per line and the closing line `matrix: N passed, N
failed`; exit code 1 if any test of any line failed or a line could not be installed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import venv
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.cache import cache_root, locked

ROOT = Path(__file__).resolve().parent.parent
CACHE = cache_root() / "venvs"
CONSTRAINTS = ROOT / "constraints"
LINES = ("3.5", "4.0", "4.1", "4.2", "4.3")
DEFAULT_LINE = "4.3"  # the whole suite runs on it (.ci/run); the matrix adds the others
#: The line the suite itself needs: its Kafka tests run on it while Maven Central serves no
#: Kafka connector for the default line's release (tests/support/kafka_spark.py). Made first:
#: on a fresh machine, the Kafka tests wait for it.
KAFKA_LINE = "4.2"
#: Lines whose life ended (4.0: November 2026): the runner's tests still run on them.
ENDED = ("4.0",)
#: What runs on every line: everything that touches Spark's internals or spark-submit's
#: options (the analysed plan the state verdicts read among them), the footers its parquet
#: writer leaves, which the plan reads without Spark, what each line does when a
#: changed query starts on the old checkpoint, and one lifecycle (deploy,
#: config change, query change into a used file sink,
#: SIGKILL and restart, stop) that checks every row lands exactly once.
MATRIX_TESTS = (
    "tests/runner/test_runner.py",
    "tests/runner/test_stateful_plan.py",
    "tests/runner/test_stateful_params.py",
    "tests/runner/test_state_restart.py",
    "tests/runner/test_lifecycle.py",
    "tests/runner/test_parquet_footer.py",
    "tests/runner/test_sink_read_attacks.py",
    "tests/runner/test_warm_up.py",
    "tests/targets/test_sparksubmit.py",
    "tests/read/test_intervals.py",
    "tests/e2e/test_local_lifecycle.py",
)
#: Tests of MATRIX_TESTS that CI runs on some lines only (`--every-test`: on every line): what
#: Spark does with a changed query on an old checkpoint is measured on 3.5 beside the suite's
#: 4.3, as the issue asks; 4.0 to 4.2's answers (docs/concepts/state.md) were measured once that
#: way.
ONLY_ON = {
    "tests/runner/test_state_restart.py": ("3.5",),
    "tests/runner/test_sink_read_attacks.py": ("3.5",),
    "tests/runner/test_warm_up.py": ("3.5",),
}
#: Runs on the living lines no scenario of the suite runs on (`suite_lines`).
LIFECYCLE = "tests/e2e/test_local_lifecycle.py"


def tests_of(line: str, every: bool = False, suite: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The test files a line runs, where the suite's scenarios run on the lines `suite`."""

    def runs(test: str) -> bool:
        if every:
            return True
        if test == LIFECYCLE:
            return line not in (*suite, *ENDED)
        return line in ONLY_ON.get(test, (line,))

    return tuple(test for test in MATRIX_TESTS if runs(test))


def suite_lines() -> tuple[str, ...]:
    """The lines the suite, run from this Python, takes end to end: its own pyspark's, and
    KAFKA_LINE while its Kafka scenarios (deploys, handovers, restarts) run on that line's
    spark-submit and drivers: while Maven Central serves no Kafka connector for this pyspark
    (tests/support/kafka_spark.py asks it the same way)."""
    import pyspark

    from tests.support import maven
    from tests.support.kafka_spark import connector_jars

    own = ".".join(pyspark.__version__.split(".")[:2])
    try:
        connector_jars(pyspark.__version__)
    except maven.MavenUnavailable:
        return (own, KAFKA_LINE)
    return (own,)


#: Set in a line's tests: the line they run on.
MATRIX_LINE = "FSR_TEST_MATRIX_LINE"
#: Settings of the calling shell that would make a line's tests use another Spark or Python.
ISOLATE = ("SPARK_HOME", "SPARK_CONF_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")
#: pyproject.toml's tables a line's virtualenv is made from, and those its editable install of a
#: clone follows.
DEPENDENCY_TABLES = ("[build-system]", "[project]", "[project.optional-dependencies]")
LAYOUT_TABLES = (
    "[project.scripts]",
    "[tool.setuptools]",
    "[tool.setuptools.package-dir]",
    "[tool.setuptools.package-data]",
)
INSTALL_TIMEOUT = 1800
TEST_TIMEOUT = 1800
#: The cores the matrix keeps busy: lines at once times pytest's workers per line.
CORES = 2


@dataclass
class Result:
    line: str
    pyspark: str = "-"
    tests: int = 0
    passed: int = 0
    failed: int = 0  # failures, errors and skips: a skipped test is a defect here
    install_seconds: float = 0.0
    test_seconds: float = 0.0
    problem: str = ""
    output: str = ""  # what the line's install and tests printed


def constraints_file(line: str) -> Path:
    return CONSTRAINTS / f"spark-{line}.txt"


def _digest(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _pyproject() -> dict[str, str]:
    """pyproject.toml's tables, each header to its text (Python 3.10 has no tomllib)."""
    tables: dict[str, str] = {}
    header = ""
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if line.startswith("[") and line.rstrip().endswith("]"):
            header = line.strip()
        tables[header] = tables.get(header, "") + line + "\n"
    return tables


def install_key(line: str) -> str:
    """What a line's virtualenv is made from: its constraints and the dependencies
    pyproject.toml names (not the rest of that file: a change to pytest's or ruff's settings
    does not make four virtualenvs again)."""
    tables = _pyproject()
    return _digest(
        constraints_file(line).read_text(),
        (CONSTRAINTS / "common.txt").read_text(),
        [tables.get(name) for name in DEPENDENCY_TABLES],
    )


def code_key() -> str:
    """What this clone's editable install in a virtualenv depends on: where the clone is and
    how its packages are laid out (pyproject.toml's setuptools sections, its scripts)."""
    tables = _pyproject()
    layout = [text for name, text in sorted(tables.items()) if name in LAYOUT_TABLES]
    return _digest(str(ROOT), layout)


def child_env(venv_dir: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ISOLATE}
    env["VIRTUAL_ENV"] = str(venv_dir)
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def ensure_venv(line: str) -> Path:
    """The line's virtualenv, made once per machine for what it is made from (its key). What
    this clone's code needs of it besides its pyspark: `use_venv`."""
    key = install_key(line)
    venv_dir = CACHE / f"spark-{line}-{key[:16]}"
    key_file = venv_dir / ".flink-sql-runner-key"
    with locked(CACHE / f".spark-{line}.lock"):
        if key_file.is_file() and key_file.read_text() == key:
            return venv_dir
        if venv_dir.exists():
            shutil.rmtree(venv_dir)  # only our own cache folder: a make cut short
        venv.EnvBuilder(with_pip=True).create(venv_dir)
        _pip(venv_dir, "-e", f"{ROOT}[test]", "-c", str(constraints_file(line)))
        (venv_dir / ".flink-sql-runner-root").write_text(code_key())
        key_file.write_text(key)
        _drop_others(line, venv_dir)
    return venv_dir


def _drop_others(line: str, kept: Path) -> None:
    """The line's virtualenvs made from something else before (about 900 MB each), removed
    unless a clone's tests run in one now (its in-use lock is held)."""
    for other in CACHE.glob(f"spark-{line}-*"):
        if other == kept or not other.is_dir():
            continue
        with (other / ".in-use.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # in use: the next make drops it
            shutil.rmtree(other)


@contextmanager
def use_venv(line: str) -> Iterator[Path]:
    """The line's virtualenv with this clone's code installed in it (editable), locked for
    this process while the block runs: a clone that shares it waits."""
    venv_dir = ensure_venv(line)
    with locked(venv_dir / ".in-use.lock"):
        root_file = venv_dir / ".flink-sql-runner-root"
        if not root_file.is_file() or root_file.read_text() != code_key():
            _pip(venv_dir, "--no-deps", "-e", str(ROOT))
            root_file.write_text(code_key())
        yield venv_dir


def _run(
    argv: list[str], venv_dir: Path, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`argv` in the clone with the virtualenv's environment (and `env`), its output (stderr
    too) kept."""
    return subprocess.run(  # noqa: S603 - a list, never a shell
        argv,
        cwd=ROOT,
        env={**child_env(venv_dir), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=timeout,
    )


def _pip(venv_dir: Path, *args: str) -> None:
    argv = [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", *args]
    done = _run(argv, venv_dir, INSTALL_TIMEOUT)
    if done.returncode != 0:
        print("\n".join(done.stdout.splitlines()[-30:]), flush=True)
        raise subprocess.CalledProcessError(done.returncode, argv[:5])


def pyspark_version(venv_dir: Path) -> str:
    done = subprocess.run(  # noqa: S603 - a list, never a shell
        [str(venv_dir / "bin" / "python"), "-c", "import pyspark; print(pyspark.__version__)"],
        capture_output=True,
        text=True,
        env=child_env(venv_dir),
        check=True,
        timeout=60,
    )
    return done.stdout.strip()


def count(report: Path, result: Result) -> None:
    """Tests run and passed, from pytest's JUnit XML report."""
    root = ET.parse(report).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        tests = int(suite.get("tests", 0))
        bad = sum(int(suite.get(kind, 0)) for kind in ("failures", "errors", "skipped"))
        result.tests += tests
        result.failed += bad
        result.passed += tests - bad


def run_line(line: str, workers: int, every: bool = False, suite: tuple[str, ...] = ()) -> Result:
    """The line's virtualenv made or found, then its tests in `workers` pytest workers (0: in
    pytest's own process); what both print is kept in the result, to be printed whole."""
    result = Result(line)
    out = [f"=== Spark {line}: installing (constraints/spark-{line}.txt)"]
    begun = time.monotonic()
    try:
        with use_venv(line) as venv_dir:
            result.pyspark = pyspark_version(venv_dir)
            result.install_seconds = time.monotonic() - begun
            run_tests(line, venv_dir, result, workers, out, every, suite)
    except (subprocess.SubprocessError, OSError) as exc:
        result.problem = f"install failed: {exc}"
        result.failed = 1
        result.install_seconds = time.monotonic() - begun
    result.output = "\n".join(out)
    return result


def run_tests(
    line: str,
    venv_dir: Path,
    result: Result,
    workers: int,
    out: list[str],
    every: bool = False,
    suite: tuple[str, ...] = (),
) -> None:
    files = tests_of(line, every, suite)
    out.append(f"=== Spark {line}: pyspark {result.pyspark}, {len(files)} test files")
    report = venv_dir / "junit.xml"
    report.unlink(missing_ok=True)
    argv = [str(venv_dir / "bin" / "python"), "-m", "pytest", "-q", "-n", str(workers)]
    argv += [*files, f"--junitxml={report}"]
    begun = time.monotonic()
    try:
        done = _run(argv, venv_dir, TEST_TIMEOUT, {MATRIX_LINE: line})
    except subprocess.TimeoutExpired as exc:
        done = None
        printed = exc.stdout or b""
        out.append(printed.decode(errors="replace") if isinstance(printed, bytes) else printed)
    else:
        out.append(done.stdout)
    result.test_seconds = time.monotonic() - begun
    if report.is_file():
        count(report, result)
    if done is None:
        result.problem = f"pytest did not finish within {TEST_TIMEOUT} s"
    elif done.returncode != 0 and result.failed == 0:
        result.problem = f"pytest exited {done.returncode}"
    if result.problem and result.failed == 0:
        result.failed = 1


def run_lines(lines: list[str], jobs: int, every: bool = False) -> list[Result]:
    """Every line's result, in the order given; `jobs` lines at once, each printed whole when
    it ends."""
    jobs = max(1, min(jobs, len(lines)))
    workers = 0 if jobs > 1 else CORES
    suite = () if every else suite_lines()
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_line, line, workers, every, suite): line for line in lines}
        try:
            for future in concurrent.futures.as_completed(futures):
                print(f"\n{future.result().output}", flush=True)
        except BaseException:  # SIGTERM (stop_on_sigterm) or Ctrl-C: no further line begins
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        return [future.result() for future in futures]


def table(results: list[Result]) -> str:
    header = ("spark", "pyspark", "tests", "passed", "failed", "install s", "tests s")
    rows = [header] + [
        (
            r.line,
            r.pyspark,
            str(r.tests),
            str(r.passed),
            str(r.failed),
            f"{r.install_seconds:.0f}",
            f"{r.test_seconds:.0f}",
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
    lines += [f"  {r.line}: {r.problem}" for r in results if r.problem]
    return "\n".join(lines)


#: What the suite needs of KAFKA_LINE besides its virtualenv, made in the line's Python with
#: this clone's code (`--for-suite`): the JVM archive of its Spark, as the Kafka tests' drivers
#: find it (tests/support/kafka_spark.py's own function), and the Maven jars of the Kafka
#: tests' broker and connector and of the minicluster (tests/support/maven.py), each made only
#: if missing. A jar that cannot be had is said here and again, with what to do, by the tests
#: that need it. Stopped by SIGTERM, it ends the training run of the archive it was making.
FOR_SUITE = """
import sys

import pyspark

from tests.matrix import stop_on_sigterm
from tests.support import maven
from tests.support.jvm import spark_submit_of
from tests.support.kafka_spark import connector_jars, driver_java_options

stop_on_sigterm()
print("driver options", driver_java_options(spark_submit_of(None), sys.executable) or "none")
for name, fetch in (
    ("the Kafka connector", lambda: connector_jars(pyspark.__version__)),
    ("the Kafka broker", lambda: maven.classpath(maven.pom("kafka-broker"))),
    ("the Hadoop minicluster", lambda: maven.classpath(maven.pom("hadoop-minicluster"))),
):
    try:
        print(name, len(fetch()), "jars")
    except maven.MavenUnavailable as exc:
        print(name, "not fetched:", exc)
"""
#: Seconds FOR_SUITE may take: an archive's training run and three Maven resolutions at most.
FOR_SUITE_TIMEOUT = 900 + 3 * 1200
#: Seconds a stopped FOR_SUITE has to stop what it started before its session is killed.
STOP_GRACE = 15


def stop_on_sigterm() -> None:
    """SIGTERM ends this process as an exception would: what it started in sessions of their
    own (an archive's training run) is stopped by the `finally` that started them."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


def run_group(argv: list[str], venv_dir: Path, timeout: float) -> tuple[int, str]:
    """`argv` in the clone with the virtualenv's environment, in a session of its own: on a
    timeout (or an exception here) the whole session is killed, children included (a `mvn`
    left writing Maven's repository after its lock was let go would be a second writer). Its
    exit code and output (stderr too)."""
    child = subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv,
        cwd=ROOT,
        env=child_env(venv_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = child.communicate(timeout=timeout)
    except BaseException as exc:  # a timeout, or SIGTERM here (stop_on_sigterm)
        # SIGTERM first: FOR_SUITE's `finally`s stop what it started in sessions of their own
        # (an archive's training run); then SIGKILL to whatever of the session is left.
        os.killpg(child.pid, signal.SIGTERM)  # not reaped yet: its session's id is its own
        try:
            child.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # the whole session had ended
        child.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            return -1, f"did not end in {timeout:.0f} s"
        raise
    return child.returncode, output


def ready_for_suite(venv_dir: Path) -> str:
    """FOR_SUITE run in the line's virtualenv (this clone's code installed in it: `use_venv`):
    what it made or found, in a line."""
    code, output = run_group(
        [str(venv_dir / "bin" / "python"), "-c", FOR_SUITE], venv_dir, FOR_SUITE_TIMEOUT
    )
    if code != 0:
        print("\n".join(output.splitlines()[-30:]), flush=True)
        raise subprocess.CalledProcessError(code, [str(venv_dir / "bin" / "python"), "-c"])
    return "; ".join(output.strip().splitlines())


def install_order(lines: list[str]) -> list[str]:
    """The lines in the order they are made: KAFKA_LINE first (the suite waits for it)."""
    return sorted(lines, key=lambda line: line != KAFKA_LINE)


def install_only(lines: list[str], begun: float, for_suite: bool = False) -> int:
    """Each line's virtualenv made or found (with `for_suite`, what FOR_SUITE makes too), one
    line each; exit code 1 if one could not be."""
    failed = 0
    for line in install_order(lines):
        started = time.monotonic()
        try:
            made = ensure_venv(line)
            archived = ""
            if for_suite:
                with use_venv(line) as venv_dir:
                    archived = f"; {ready_for_suite(venv_dir)}"
        except (subprocess.SubprocessError, OSError) as exc:
            failed += 1
            print(f"Spark {line}: install failed: {exc}", flush=True)
            continue
        print(f"Spark {line}: {made}{archived} ({time.monotonic() - started:.0f} s)", flush=True)
    print(
        f"matrix virtualenvs: {len(lines) - failed} ready, {failed} failed "
        f"({time.monotonic() - begun:.0f} s)",
        flush=True,
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.matrix",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--line",
        action="append",
        choices=LINES,
        help=f"a Spark line to test (repeatable); default: every line but {DEFAULT_LINE}",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=CORES,
        help=f"lines run at once, each in one pytest process (default {CORES}; 1: one line at "
        f"a time in {CORES} workers)",
    )
    parser.add_argument(
        "--every-test",
        action="store_true",
        help="run every test file on every line (CI runs some on some lines only: ONLY_ON)",
    )
    parser.add_argument(
        "--install-only",
        action="store_true",
        help=f"make the lines' virtualenvs (or find them made), {KAFKA_LINE}'s first, and run "
        "no test",
    )
    parser.add_argument(
        "--for-suite",
        action="store_true",
        help=f"with --install-only: only the line the suite's Kafka tests run on ({KAFKA_LINE}), "
        "its JVM archive and the suite's Maven jars",
    )
    args = parser.parse_args(argv)
    if args.for_suite and not args.install_only:
        parser.error("--for-suite goes with --install-only")
    stop_on_sigterm()
    lines = args.line or [line for line in LINES if line != DEFAULT_LINE]
    begun = time.monotonic()
    if args.install_only:
        return install_only([KAFKA_LINE] if args.for_suite else lines, begun, args.for_suite)
    results = run_lines(lines, args.jobs, args.every_test)
    print(f"\nSpark matrix ({time.monotonic() - begun:.0f} s wall):")
    print(table(results))
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    print(f"matrix: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
