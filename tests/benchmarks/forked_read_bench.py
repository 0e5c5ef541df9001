"""A cold read on one core and on two (read/forked_read.py), in this process: the table files
and the job files of plan_bench.py's workspace read with the load cache kept (as a plan with a
state folder does), alternately in one process and with the child, and for the latter the
seconds of each share (the command's head, its wait for the child, its tail from the cache).

Run: `python -m tests.benchmarks.forked_read_bench --jobs 10000 --rounds 3`. Prints a Markdown
table for docs/developers/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.common import Stats
from tests.benchmarks.plan_bench import write_inputs

ONE, TWO = "one process", "with the child"


def read_once(root: Path, forked: bool) -> dict[str, float]:
    """The catalog and the jobs read once, in seconds, with the child's shares when forked."""
    from flink_sql_runner.read import catalog as catalog_module
    from flink_sql_runner.read import forked_read, manifest
    from flink_sql_runner.read.load_cache import LoadCache

    kept = forked_read.MIN_BYTES
    forked_read.MIN_BYTES = kept if forked else 10**15
    marks: dict[str, float] = {}
    real_take = forked_read.take

    def take(beside: Any, cache: Any, deadline: float) -> int:
        marks["head"] = time.perf_counter()
        taken = real_take(beside, cache, deadline)
        marks["taken"] = time.perf_counter()
        return taken

    forked_read.take = take  # the jobs' take is the last
    try:
        cache = LoadCache()
        began = time.perf_counter()
        catalog, _ = catalog_module.read_catalog([root / "tables"], cache)
        read = time.perf_counter()
        manifest.load_jobs(
            [root / "jobs"], root / "template.yaml", catalog, root / "state", cache=cache
        )
        done = time.perf_counter()
    finally:
        forked_read.take = real_take
        forked_read.MIN_BYTES = kept
    found = {"catalog": read - began, "jobs": done - read}
    if "head" in marks:
        found["head"] = marks["head"] - read
        found["wait"] = marks["taken"] - marks["head"]
        found["tail"] = done - marks["taken"]
    return found


def measure(jobs: int, rounds: int, scratch: Path) -> dict[str, dict[str, Stats]]:
    ws = write_inputs(scratch / "ws", jobs)
    found: dict[str, dict[str, list[float]]] = {ONE: {}, TWO: {}}
    for round_ in range(rounds):
        ways = [(ONE, False), (TWO, True)]
        for way, forked in ways if round_ % 2 == 0 else ways[::-1]:
            for part, seconds in read_once(ws.root, forked).items():
                found[way].setdefault(part, []).append(seconds)
    return {way: {p: Stats(tuple(v)) for p, v in parts.items()} for way, parts in found.items()}


def table(results: dict[str, dict[str, Stats]]) -> str:
    lines = [
        "| read | table files | job files | the command's head, wait, tail |",
        "|---|---|---|---|",
    ]
    for way, parts in results.items():
        shares = (
            " / ".join(f"{parts[p].median:.2f} s" for p in ("head", "wait", "tail"))
            if "head" in parts
            else "-"
        )
        lines.append(
            f"| {way} | {parts['catalog'].median:.2f} s ({parts['catalog'].best:.2f}) | "
            f"{parts['jobs'].median:.2f} s ({parts['jobs'].best:.2f}) | {shares} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fsr-forked-read-"))
    try:
        load = os.getloadavg()[0]
        results = measure(options.jobs, options.rounds, scratch)
        print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
              f"{options.rounds} rounds, median (best)\n")  # fmt: skip
        print(table(results))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
