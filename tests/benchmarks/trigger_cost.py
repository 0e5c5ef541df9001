"""What a local driver costs the machine to start, and running at each trigger interval, side by
side.

    python -m tests.benchmarks.trigger_cost [--rounds 2] [--seconds 30]
        [--triggers "1 second,3 seconds"] [--old REF] [--java-options OPTIONS]

Each round deploys, once per trigger in turn, one rate-micro-batch -> parquet job with the suite's
template (tests/support/workspace.py: UI off, 2 shuffle partitions, a 512 MiB driver, the suite's
JVM options). Its start: when `deploy` said it healthy (its first batch committed) and the CPU
seconds its process group had spent when `deploy` returned. Then it waits for its second committed
batch and 5 s more, and reads the CPU seconds its
process group (the driver's JVM and its Python, and what the JVM started and waited for: Hadoop's
local file system runs `chmod` and `readlink` for each file it writes) spends in `--seconds` of
running, and kills it. The suite's scenarios keep their jobs running while they act and wait: on
two cores that CPU is what they wait for. With `--old REF`, each round runs the job on the code of
an older commit too (its files from `git archive`, as ci_plan.py takes them), in turn, so that what
a change to the runner's loop saves is measured side by side. With `--java-options`, each round
runs the job with those options added to the suite's JVM options too, in turn.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import process_table
from tests.benchmarks.warm_repeat_bench import _code, old_code
from tests.support.jvm import quicken
from tests.support.scratch import for_a_program
from tests.support.workspace import Workspace, wait_for


def group_cpu(group: int) -> dict[str, float]:
    """CPU seconds of the live processes of process group `group`, by kind: "jvm" (java),
    "python", "other", and "reaped" (what the JVM started, waited for and is gone)."""
    found = {"jvm": 0.0, "python": 0.0, "other": 0.0, "reaped": 0.0}
    for process in process_table():
        if int(process.fields[2]) == group:
            name = process.name
            kind = "jvm" if name == "java" else "python" if name.startswith("python") else "other"
            found[kind] += process.cpu_seconds
            if kind == "jvm":
                found["reaped"] += process.reaped_cpu_seconds
    return found


def running_cost(trigger: str, seconds: float) -> tuple[float, dict[str, float], dict[str, float]]:
    """One job at `trigger`: seconds until healthy, the CPU seconds of its start, and the CPU
    seconds it spends in `seconds` of running, by kind of process."""
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
            start = group_cpu(pid)
            said = re.search(r"healthy after ([0-9.]+) s", result.stdout)
            healthy = float(said[1]) if said else float("nan")
            wait_for(lambda: (out / "_spark_metadata" / "1").exists(), 180, what="two batches")
            time.sleep(5)
            before = group_cpu(pid)
            time.sleep(seconds)
            after = group_cpu(pid)
            return healthy, start, {kind: after[kind] - before[kind] for kind in after}
        finally:
            ws.kill_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--triggers", default="1 second,3 seconds")
    parser.add_argument("--old", help="an older commit whose runner runs the job too, in turn")
    parser.add_argument("--java-options", help="JVM options a job runs with too, in turn")
    args = parser.parse_args(argv)
    quicken(os.environ)
    suite_options = os.environ["SPARK_SUBMIT_OPTS"]
    triggers = [t.strip() for t in args.triggers.split(",")]
    with tempfile.TemporaryDirectory(prefix="fsr-trigger-cost-code-") as scratch:
        codes: dict[str, tuple[Path | None, str]] = {"this checkout": (None, "")}
        if args.old:
            codes[f"at {args.old}"] = (old_code(args.old, Path(scratch)), "")
        if args.java_options:
            codes[f"with {args.java_options}"] = (None, args.java_options)
        starts: dict[tuple[str, str], list[tuple[float, dict[str, float]]]] = {
            (t, c): [] for t in triggers for c in codes
        }
        found: dict[tuple[str, str], list[dict[str, float]]] = {
            (t, c): [] for t in triggers for c in codes
        }
        for turn in range(args.rounds):
            order = list(codes) if turn % 2 == 0 else list(reversed(codes))
            for trigger in triggers:
                for code in order:
                    folder, options = codes[code]
                    os.environ["SPARK_SUBMIT_OPTS"] = f"{suite_options} {options}".strip()
                    with _code(folder):
                        healthy, start, cost = running_cost(trigger, args.seconds)
                    starts[(trigger, code)].append((healthy, start))
                    found[(trigger, code)].append(cost)
                    kinds = ", ".join(f"{k} {v:.2f}" for k, v in cost.items())
                    began = ", ".join(f"{k} {v:.2f}" for k, v in start.items())
                    print(f"round {turn + 1}: {trigger}, {code}: healthy after {healthy:.1f} s; "
                          f"start: {began}; running: {kinds}", flush=True)  # fmt: skip
    print("\n| trigger | run | healthy after, s (median) | start, CPU-s (median) | JVM | Python "
          "| rounds (CPU-s) |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for (trigger, code), runs in starts.items():
        healthy = statistics.median(h for h, _ in runs)
        totals = [sum(c.values()) for _, c in runs]
        jvm, python = (statistics.median(c[k] for _, c in runs) for k in ("jvm", "python"))
        rounds = ", ".join(f"{t:.2f}" for t in totals)
        print(f"| {trigger} | {code} | {healthy:.1f} | {statistics.median(totals):.2f} "
              f"| {jvm:.2f} | {python:.2f} | {rounds} |")  # fmt: skip
    print(f"\n| trigger | run | CPU-s in {args.seconds:.0f} s (median) | JVM | Python "
          "| reaped | share of a core | rounds |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    for (trigger, code), costs in found.items():
        totals = [sum(c.values()) for c in costs]
        median = statistics.median(totals)
        jvm, python, reaped = (statistics.median(c[k] for c in costs)
                               for k in ("jvm", "python", "reaped"))  # fmt: skip
        share = 100 * median / args.seconds
        rounds = ", ".join(f"{t:.2f}" for t in totals)
        print(f"| {trigger} | {code} | {median:.2f} | {jvm:.2f} | {python:.2f} | {reaped:.2f} "
              f"| {share:.0f}% | {rounds} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
