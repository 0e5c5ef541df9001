"""What a running local driver costs the machine at each trigger interval, side by side.

    python -m tests.benchmarks.trigger_cost [--rounds 2] [--seconds 30]
        [--triggers "1 second,3 seconds"]

Each round deploys, once per trigger in turn, one rate-micro-batch -> parquet job with the
suite's template (tests/support/workspace.py: UI off, 2 shuffle partitions, a 512 MiB driver, the
suite's JVM options), waits for its second committed batch and 5 s more, then reads the CPU
seconds its process group (the driver's Python and JVM) spends in `--seconds` of running, and
kills it. The suite's scenarios keep their jobs running while they act and wait: on two cores
that CPU is what they wait for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.jvm import quicken
from tests.support.workspace import Workspace, wait_for

TICK = os.sysconf("SC_CLK_TCK")


def group_cpu(group: int) -> float:
    """CPU seconds of the live processes of process group `group`."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:
            total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def running_cost(trigger: str, seconds: float) -> float:
    """CPU seconds one running job spends in `seconds` at `trigger`."""
    with tempfile.TemporaryDirectory(prefix="fsr-trigger-cost-") as folder:
        ws = Workspace(Path(folder))
        out = ws.root / "out"
        ws.write_tables(
            [
                {"name": "ticks", "format": "rate-micro-batch",
                 "options": {"rowsPerBatch": 14, "numPartitions": 2}},
                {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}},
            ]
        )  # fmt: skip
        sql = "SELECT value FROM ticks"
        ws.write_job("t", **{"target-table": "tick_out", "sql": sql,
                             "trigger": {"processingTime": trigger}})  # fmt: skip
        try:
            result = ws.deploy()
            if result.returncode != 0:
                raise SystemExit(result.stdout + result.stderr)
            pid = int(ws.record("t")["pid"])
            wait_for(lambda: (out / "_spark_metadata" / "1").exists(), 180, what="two batches")
            time.sleep(5)
            before = group_cpu(pid)
            time.sleep(seconds)
            return group_cpu(pid) - before
        finally:
            ws.kill_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--triggers", default="1 second,3 seconds")
    args = parser.parse_args(argv)
    quicken(os.environ)
    triggers = [t.strip() for t in args.triggers.split(",")]
    found: dict[str, list[float]] = {t: [] for t in triggers}
    for _ in range(args.rounds):
        for trigger in triggers:
            found[trigger].append(running_cost(trigger, args.seconds))
    for trigger, costs in found.items():
        median = statistics.median(costs)
        print(f"trigger {trigger:>12}: {median:5.1f} CPU-s in {args.seconds:.0f} s of running "
              f"({100 * median / args.seconds:.0f}% of a core); rounds {costs}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
