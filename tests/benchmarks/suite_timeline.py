"""When each pytest worker ran what, and whether one was left alone at the end.

    python -m tests.benchmarks.suite_timeline [--out DIR] [--above 10] [-- PYTEST ARGS...]

Runs pytest in the checkout (by default the README's test command's `pytest -n 3`) with this
module as a plugin: each process that runs tests writes a line per test (its node id, when it
began and ended) into `DIR/timeline-<worker>.jsonl`. Then it prints each worker's span (its
first test's start, its last test's end, the seconds it spent in tests), the files that took it
more than `--above` seconds (when they began and ended, their summed time), the run's span, and
the machine's busy share over it (/proc/stat). A worker whose last test ends long before the
others' is a worker left idle while a long file runs elsewhere (tests/support/scheduling.py
orders the files to avoid it); workers that end together on a busy machine say the run waits on
the CPU, not on its order.
docs/developers/testing.md keeps a measured run's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.benchmarks.common import REPO
from tests.benchmarks.suite_cpu import busy_share
from tests.support.scratch import for_a_program

#: Where a run's processes write their lines (set by `main` for the pytest it runs).
FOLDER = "FSR_TIMELINE_DIR"
#: The start of the name of each worker's file in that folder (the only files `main` removes).
PREFIX = "timeline-"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Called where a test runs (a worker, or pytest itself without workers), never in xdist's
    controller: the test's setup, call and teardown, timed."""
    began = time.monotonic()  # one clock for every process of the machine (Linux)
    yield
    folder = os.environ.get(FOLDER)
    if folder:
        # xdist's own name for this worker (an environment variable could be a parent run's)
        worker = getattr(item.config, "workerinput", {}).get("workerid", "main")
        line = json.dumps({"id": item.nodeid, "began": began, "ended": time.monotonic()})
        with open(Path(folder) / f"{PREFIX}{worker}.jsonl", "a") as out:
            out.write(line + "\n")


def read(folder: Path) -> dict[str, list[dict]]:
    """Each worker's tests, in the order they began."""
    found = {}
    for path in sorted(folder.glob(f"{PREFIX}*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
        found[path.stem.removeprefix(PREFIX)] = sorted(rows, key=lambda row: row["began"])
    return found


def report(workers: dict[str, list[dict]], above: float) -> list[str]:
    """The lines `main` prints: the run's span, then each worker's, with its long files."""
    rows = [row for tests in workers.values() for row in tests]
    if not rows:
        return ["no test ran"]
    start = min(row["began"] for row in rows)
    end = max(row["ended"] for row in rows)
    lines = [f"the run: {end - start:.0f} s from the first test's start to the last one's end"]
    for worker, tests in sorted(workers.items()):
        busy = sum(row["ended"] - row["began"] for row in tests)
        last = max(row["ended"] for row in tests)
        lines.append(
            f"{worker}: {len(tests)} tests, from {tests[0]['began'] - start:.0f} s to "
            f"{last - start:.0f} s ({end - last:.0f} s before the run's end), "
            f"{busy:.0f} s in tests"
        )
        files: dict[str, list[float]] = {}
        for row in tests:
            span = files.setdefault(row["id"].split("::", 1)[0], [row["began"], row["ended"], 0.0])
            span[1] = max(span[1], row["ended"])
            span[2] += row["ended"] - row["began"]
        for path, (began, ended, summed) in files.items():
            if summed > above:
                lines.append(f"  {began - start:6.0f} {ended - start:6.0f} {summed:7.1f} s  {path}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.suite_timeline")
    parser.add_argument(
        "--out", type=Path, help="the folder of the lines (default: a temporary one)"
    )
    parser.add_argument("--above", type=float, default=10.0, help="list files over this, s")
    parser.add_argument("pytest_args", nargs="*", help="pytest's arguments (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="suite-timeline-") as scratch:
        folder = args.out or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob(f"{PREFIX}*.jsonl"):
            old.unlink()
        command = [sys.executable, "-m", "pytest", "-p", "tests.benchmarks.suite_timeline",
                   *(args.pytest_args or ["-n", "3"])]  # fmt: skip
        busy, total = busy_share()
        ran = subprocess.run(
            command, env={**os.environ, FOLDER: str(folder)}, cwd=REPO, check=False
        )
        busy_after, total_after = busy_share()
        print("\n".join(report(read(folder), args.above)))
        share = (busy_after - busy) / max(1, total_after - total)
        print(f"the machine was busy {share:.0%} of the run (all cores, /proc/stat)")
    return ran.returncode


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
