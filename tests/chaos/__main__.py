"""`python -m tests.chaos --seed S --rounds N [--store folder|s3|both]`: exit 1 on a violation."""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.chaos.soak import Summary, machine, run_soak
from tests.support.s3server import moto_s3_server
from tests.support.scratch import for_a_program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("--seed", type=int, action="append", required=True,
                        help="a seed (repeat for several)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--store", choices=("folder", "s3", "both"), default="both")
    parser.add_argument("--quiet", type=float, default=15.0, help="seconds of the quiet phase")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temp folder of a soak that found a violation")  # fmt: skip
    args = parser.parse_args(argv)
    stores = ("folder", "s3") if args.store == "both" else (args.store,)

    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("flink-sql-runner-chaos-checks")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    began = time.monotonic()
    summaries: list[Summary] = []
    try:
        with contextlib.ExitStack() as stack:
            endpoint = stack.enter_context(moto_s3_server()) if "s3" in stores else None
            for seed in args.seed:
                for store in stores:
                    root = Path(tempfile.mkdtemp(prefix=f"chaos-{seed}-{store}-"))
                    summary = run_soak(seed, args.rounds, store, root, spark, endpoint, args.quiet)
                    summaries.append(summary)
                    if summary.violations and args.keep:
                        print(f"kept {root} (logs: watch.log, state/logs/)", flush=True)
                    else:
                        shutil.rmtree(root, ignore_errors=True)
                    print(summary.text(), flush=True)
    finally:
        spark.stop()
    total = sum(len(s.violations) for s in summaries)
    print(f"\n{len(summaries)} soaks, {sum(s.rounds for s in summaries)} rounds, "
          f"{total} violations, {time.monotonic() - began:.0f} s on {machine()}")  # fmt: skip
    for summary in summaries:
        print(summary.text())
    return 1 if total else 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
