"""The Spark version matrix: the runner's tests and one end-to-end lifecycle on each supported
Spark line, every line in its own virtualenv with the pyspark its constraints file pins.

    python -m tests.matrix                        # the lines CI adds: 3.5, 4.0, 4.1, 4.2
    python -m tests.matrix --line 3.5 --line 4.3  # any of them, the default (4.3) too

A line's virtualenv is made with `pip install -e '.[test]' -c constraints/spark-<line>.txt` in
the tests' cache outside the clone (`venvs/spark-<line>-<key>/` of tests/support/cache.py), its
folder named for what it was made from (that file, `constraints/common.txt` and `pyproject.toml`),
so another clone or a later CI run on the machine reuses it; it is pointed at the clone that uses
it (`pip install --no-deps -e`, a few seconds) and locked while that clone's tests run in it. The
lines run one after the other
(the tests start Spark JVMs; two cores are not enough for two at once). At the end, one table
row per line and the closing line `matrix: N passed, N failed`; exit code 1 if any test of any
line failed or a line could not be installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
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
#: What runs on every line: everything that touches Spark's internals or spark-submit's
#: options, and one lifecycle (deploy, config change, query change into a used file sink,
#: SIGKILL and restart, stop) that checks every row lands exactly once.
MATRIX_TESTS = (
    "tests/runner/test_runner.py",
    "tests/runner/test_lifecycle.py",
    "tests/targets/test_sparksubmit.py",
    "tests/read/test_intervals.py",
    "tests/e2e/test_local_lifecycle.py",
)
#: Settings of the calling shell that would make a line's tests use another Spark or Python.
ISOLATE = ("SPARK_HOME", "SPARK_CONF_DIR", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")
INSTALL_TIMEOUT = 1800
TEST_TIMEOUT = 1800


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


def constraints_file(line: str) -> Path:
    return CONSTRAINTS / f"spark-{line}.txt"


def install_key(line: str) -> str:
    digest = hashlib.sha256()
    for path in (constraints_file(line), CONSTRAINTS / "common.txt", ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


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
        (venv_dir / ".flink-sql-runner-root").write_text(str(ROOT))
        key_file.write_text(key)
    return venv_dir


@contextmanager
def use_venv(line: str) -> Iterator[Path]:
    """The line's virtualenv with this clone's code installed in it (editable), locked for
    this process while the block runs: a clone that shares it waits."""
    venv_dir = ensure_venv(line)
    with locked(venv_dir / ".in-use.lock"):
        root_file = venv_dir / ".flink-sql-runner-root"
        if not root_file.is_file() or root_file.read_text() != str(ROOT):
            _pip(venv_dir, "--no-deps", "-e", str(ROOT))
            root_file.write_text(str(ROOT))
        yield venv_dir


def _pip(venv_dir: Path, *args: str) -> None:
    argv = [str(venv_dir / "bin" / "python"), "-m", "pip", "install", "--quiet", *args]
    done = subprocess.run(  # noqa: S603 - a list, never a shell
        argv,
        cwd=ROOT,
        env=child_env(venv_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
        timeout=INSTALL_TIMEOUT,
    )
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


def run_line(line: str) -> Result:
    result = Result(line)
    print(f"\n=== Spark {line}: installing (constraints/spark-{line}.txt)", flush=True)
    begun = time.monotonic()
    try:
        with use_venv(line) as venv_dir:
            result.pyspark = pyspark_version(venv_dir)
            result.install_seconds = time.monotonic() - begun
            run_tests(line, venv_dir, result)
    except (subprocess.SubprocessError, OSError) as exc:
        result.problem = f"install failed: {exc}"
        result.failed = 1
        result.install_seconds = time.monotonic() - begun
    return result


def run_tests(line: str, venv_dir: Path, result: Result) -> None:
    print(f"=== Spark {line}: pyspark {result.pyspark}, {len(MATRIX_TESTS)} test files", flush=True)
    report = venv_dir / "junit.xml"
    report.unlink(missing_ok=True)
    argv = [str(venv_dir / "bin" / "python"), "-m", "pytest", "-q", *MATRIX_TESTS]
    argv += [f"--junitxml={report}"]
    begun = time.monotonic()
    try:
        done = subprocess.run(  # noqa: S603 - a list, never a shell
            argv, cwd=ROOT, env=child_env(venv_dir), check=False, timeout=TEST_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        done = None
    result.test_seconds = time.monotonic() - begun
    if report.is_file():
        count(report, result)
    if done is None:
        result.problem = f"pytest did not finish within {TEST_TIMEOUT} s"
    elif done.returncode != 0 and result.failed == 0:
        result.problem = f"pytest exited {done.returncode}"
    if result.problem and result.failed == 0:
        result.failed = 1


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
    args = parser.parse_args(argv)
    lines = args.line or [line for line in LINES if line != DEFAULT_LINE]
    begun = time.monotonic()
    results = [run_line(line) for line in lines]
    print(f"\nSpark matrix ({time.monotonic() - begun:.0f} s wall):")
    print(table(results))
    passed = sum(r.passed for r in results)
    failed = sum(r.failed for r in results)
    print(f"matrix: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
