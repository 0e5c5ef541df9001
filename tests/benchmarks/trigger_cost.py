"""What a running local driver costs the machine at each trigger interval, side by side.

    python -m tests.benchmarks.trigger_cost [--rounds 2] [--seconds 30]
        [--triggers "1 second,3 seconds"] [--old REF]

Each round deploys, once per trigger in turn, one rate-micro-batch -> parquet job with the
suite's template (tests/support/workspace.py: UI off, 2 shuffle partitions, a 512 MiB driver, the
suite's JVM options), waits for its second committed batch and 5 s more, then reads the CPU
seconds its process group (the driver's JVM and its Python) spends in `--seconds` of running,
and kills it. The suite's scenarios keep their jobs running while they act and wait: on two
cores that CPU is what they wait for. With `--old REF`, each round runs the job on the code of
an older commit too (its files from `git archive`, as ci_plan.py takes them), in turn, so that
what a change to the runner's loop saves is measured side by side.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import process_table
from tests.benchmarks.warm_repeat_bench import _code, old_code
from tests.support.jvm import quicken
from tests.support.workspace import Workspace, wait_for


def group_cpu(group: int) -> dict[str, float]:
    """CPU seconds of the live processes of process group `group`, by kind: "jvm" (java),
    "python" and "other"."""
    found = {"jvm": 0.0, "python": 0.0, "other": 0.0}
    for process in process_table():
        if int(process.fields[2]) == group:
            name = process.name
            kind = "jvm" if name == "java" else "python" if name.startswith("python") else "other"
            found[kind] += process.cpu_seconds
    return found


def running_cost(trigger: str, seconds: float) -> dict[str, float]:
    """CPU seconds one running job spends in `seconds` at `trigger`, by kind of process."""
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
            after = group_cpu(pid)
            return {kind: after[kind] - before[kind] for kind in after}
        finally:
            ws.kill_all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--triggers", default="1 second,3 seconds")
    parser.add_argument("--old", help="an older commit whose runner runs the job too, in turn")
    args = parser.parse_args(argv)
    quicken(os.environ)
    triggers = [t.strip() for t in args.triggers.split(",")]
    with tempfile.TemporaryDirectory(prefix="fsr-trigger-cost-code-") as scratch:
        codes: dict[str, Path | None] = {"this checkout": None}
        if args.old:
            codes[f"at {args.old}"] = old_code(args.old, Path(scratch))
        found: dict[tuple[str, str], list[dict[str, float]]] = {
            (t, c): [] for t in triggers for c in codes
        }
        for turn in range(args.rounds):
            order = list(codes) if turn % 2 == 0 else list(reversed(codes))
            for trigger in triggers:
                for code in order:
                    with _code(codes[code]):
                        cost = running_cost(trigger, args.seconds)
                    found[(trigger, code)].append(cost)
                    kinds = ", ".join(f"{k} {v:.2f}" for k, v in cost.items())
                    print(f"round {turn + 1}: {trigger}, {code}: {kinds}", flush=True)
    print(f"\n| trigger | code | CPU-s in {args.seconds:.0f} s (median) | JVM | Python "
          "| share of a core | rounds |\n|---|---|---|---|---|---|---|")  # fmt: skip
    for (trigger, code), costs in found.items():
        totals = [sum(c.values()) for c in costs]
        median = statistics.median(totals)
        jvm = statistics.median(c["jvm"] for c in costs)
        python = statistics.median(c["python"] for c in costs)
        share = 100 * median / args.seconds
        rounds = ", ".join(f"{t:.2f}" for t in totals)
        print(f"| {trigger} | {code} | {median:.2f} | {jvm:.2f} | {python:.2f} | {share:.0f}% "
              f"| {rounds} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
