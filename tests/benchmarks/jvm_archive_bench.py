"""The restart pause with and without `flink-sql-runner jvm-archive`'s class-data-sharing
archive, side by side in one run (docs/developers/benchmarks.md, "Driver start with a
class-data-sharing
archive"):

    python -m tests.benchmarks.jvm_archive_bench [--rounds 6] [--scratch DIR]

The archive is made first in the workspace's state folder (its time and size are printed).
Then the recovery benchmark's set-up: a rate-micro-batch job (1 s trigger, parquet sink) on
local[2] with `watch --interval 1` beside it; each round SIGKILLs the driver and waits for the
first committed batch of the run `watch` starts in its place, so the whole JVM start is in the
pause (a `deploy` that restarts a job hands over warm where it can: the new JVM starts while
the old run still runs). Rounds alternate with the archive in place and moved aside, the first
of each pair alternating; the table gives the medians (best) of spark-submit to the first
committed batch and of the SIGKILL to it.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flink_sql_runner.targets.jvm_archive import make_archive
from flink_sql_runner.targets.sparksubmit import find_spark_submit
from tests.benchmarks.common import bench_workspace, compile_deployer
from tests.benchmarks.recovery_bench import one_round, start_watcher
from tests.benchmarks.redeploy_bench import setup
from tests.support.scratch import for_a_program

VARIANTS = ("without archive", "with archive")


def run(scratch: Path, rounds: int) -> dict[str, list[tuple[float, float]]]:
    ws = bench_workspace(scratch / "jvm")
    setup(ws)
    on, off = ws.state / "jvm", ws.state / "jvm-aside"
    made = make_archive(on, find_spark_submit())
    size = made.path.stat().st_size / 2**20
    how = f"made in {made.seconds:.0f} s" if made.made else "there already"
    print(f"archive {how}: {size:.0f} MiB")
    log = scratch / "jvm-timing.jsonl"
    found: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    watcher: subprocess.Popen[bytes] | None = None
    try:
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        watcher = start_watcher(ws, 1.0, log)
        for index in range(1, rounds + 1):
            pair = (index - 1) // 2
            variant = VARIANTS[(index + pair) % 2]  # each pair: the other one first
            if variant == VARIANTS[1] and off.is_dir():
                os.replace(off, on)
            elif variant == VARIANTS[0] and on.is_dir():
                os.replace(on, off)
            time.sleep(5.0)  # the job runs steadily, and is healthy for watch, before it dies
            done = one_round(ws, log)
            submit_to_batch = done.span("submitted", "commit")
            found[variant].append((submit_to_batch, done.to_first_commit))
            print(
                f"  round {index}/{rounds}, {variant}: spark-submit to first batch "
                f"{submit_to_batch:.2f} s, SIGKILL to first batch {done.to_first_commit:.2f} s",
                flush=True,
            )
        return found
    finally:
        if watcher is not None:
            os.killpg(watcher.pid, signal.SIGTERM)
            try:
                watcher.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(watcher.pid, signal.SIGKILL)
                watcher.wait()
        ws.kill_all()


def table(found: dict[str, list[tuple[float, float]]]) -> str:
    def cell(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} s ({min(values):.2f})"

    rows = ["| | spark-submit to first batch | SIGKILL to first batch |", "|---|---|---|"]
    medians = {}
    for variant, samples in found.items():
        submit, whole = [s for s, _ in samples], [w for _, w in samples]
        medians[variant] = (statistics.median(submit), statistics.median(whole))
        rows.append(f"| {variant} | {cell(submit)} | {cell(whole)} |")
    plain, archived = medians[VARIANTS[0]], medians[VARIANTS[1]]
    rows.append(f"| ratio | {plain[0] / archived[0]:.2f}x | {plain[1] / archived[1]:.2f}x |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.jvm_archive_bench")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--scratch", type=Path)
    args = parser.parse_args(argv)
    compile_deployer()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="jvm-bench-") as tmp:
        found = run(args.scratch or Path(tmp), args.rounds)
    print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after\n")
    print(table(found))
    return 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
