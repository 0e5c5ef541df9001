"""Run the benchmarks (docs/developers/benchmarks.md says what each measures):

    python -m tests.benchmarks                      # every one, print the results
    python -m tests.benchmarks --only handover      # one (plan, runner, redeploy, recovery, kafka,
                                                    # handover, watch, ui)
    python -m tests.benchmarks --write-docs         # and put them in docs/developers/benchmarks.md

Not part of the pytest suite: they take minutes and want a quiet machine. `--max-load` waits
(up to `--wait`) for the 1-minute load average to drop before each benchmark.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import tempfile
from pathlib import Path

from tests.benchmarks import (
    handover_bench,
    kafka_bench,
    plan_bench,
    recovery_bench,
    redeploy_bench,
    report,
    runner_bench,
    ui_bench,
    watch_bench,
)
from tests.benchmarks.common import REPO, compile_deployer, wait_for_quiet
from tests.support.scratch import for_a_program

BENCHMARKS = ("plan", "runner", "redeploy", "recovery", "kafka", "handover", "watch", "ui")
DOCS = REPO / "docs" / "developers" / "benchmarks.md"


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.benchmarks", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--only", default=",".join(BENCHMARKS), help=",".join(BENCHMARKS))
    parser.add_argument("--jobs", type=int, default=1000, help="plan: jobs and stored manifests")
    parser.add_argument("--plan-rounds", type=int, default=6)
    parser.add_argument(
        "--plan-sizes",
        default="1000,10000",
        help="plan: job counts for the growth runs (cold, then 1 %% edited, then in step), "
        "smallest first; empty: none",
    )
    parser.add_argument("--growth-rounds", type=int, default=3, help="plan: rounds of each size")
    parser.add_argument(
        "--growth-latency-ms", type=float, default=20, help="plan: S3 latency of the growth runs"
    )
    parser.add_argument(
        "--latency-ms",
        default="0,20",
        help="plan: milliseconds added to every S3 response, one run per value (0: moto as is)",
    )
    parser.add_argument("--rows", type=int, default=4_000_000, help="runner: input rows")
    parser.add_argument("--files", type=int, default=8, help="runner: input files")
    parser.add_argument("--max-files-per-trigger", type=int, default=2)
    parser.add_argument(
        "--runner-rounds",
        type=int,
        default=6,
        help="runner: a multiple of 3 puts each way first equally often",
    )
    parser.add_argument("--redeploy-rounds", type=int, default=5)
    parser.add_argument("--recovery-rounds", type=int, default=5)
    parser.add_argument(
        "--watch-interval", type=float, default=1.0, help="recovery: watch's --interval"
    )
    parser.add_argument("--kafka-rounds", type=int, default=3)
    parser.add_argument(
        "--handover-rounds", type=int, default=3, help="handover: cold and warm, each kind"
    )
    parser.add_argument(
        "--handover-targets",
        default="local,standalone",
        help="handover: where, local and/or standalone (a cluster the benchmark starts)",
    )
    parser.add_argument(
        "--watch-jobs",
        default="100,1000,10000",
        help="watch: jobs per measured look, one per value",
    )
    parser.add_argument(
        "--ui-jobs", default="100,1000", help="ui: jobs of the fleet page, one world per value"
    )
    parser.add_argument(
        "--ui-rounds", type=int, default=3, help="ui: rounds of looks after and within fresh_for"
    )
    parser.add_argument("--ui-runs", default="gone,alive", help="ui: every run gone, alive")
    parser.add_argument(
        "--ui-profile",
        type=int,
        default=None,
        help="ui: the jobs whose worlds get a cProfile of one look within fresh_for, printed "
        "(default: the largest of --ui-jobs; 0: none)",
    )
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "fsr-bench")
    parser.add_argument("--max-load", type=float, default=1.5)
    parser.add_argument("--wait", type=float, default=600, help="seconds to wait for quiet")
    parser.add_argument("--write-docs", action="store_true", help=f"write {DOCS.name}")
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(args.only) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    return args


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    # SIGTERM unwinds like Ctrl-C, so that each benchmark stops the jobs and watchers it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python -m tests.benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
    compile_deployer()  # measured as installed: its bytecode there
    with tempfile.TemporaryDirectory(prefix="fsr-bench-") as scratch:
        for name in args.only:
            # The handover benchmark is one results block per target, written as each ends.
            blocks = (
                [(f"handover-{t}", t) for t in args.handover_targets.split(",")]
                if name == "handover"
                else [(name, None)]
            )
            for block, target in blocks:
                load = wait_for_quiet(args.max_load, args.wait, say)
                say(f"{block} (load average {load:.2f})")
                sections = run_one(name, args, Path(scratch), target)
                body = "\n\n".join([report.measured_with(command), *sections])
                print(body + "\n", flush=True)
                if args.write_docs:
                    report.write_docs(DOCS, block, body)
                    say(f"written to {DOCS}")
    return 0


def run_one(
    name: str, args: argparse.Namespace, scratch: Path, target: str | None = None
) -> list[str]:
    """The Markdown sections of one benchmark's results (`target`: the handover's)."""
    if name == "plan":
        latencies = [float(v) for v in args.latency_ms.split(",") if v.strip()]
        sections = [
            report.plan_section(plan_bench.run(scratch, args.jobs, args.plan_rounds, ms, say=say))
            for ms in latencies
        ]
        sizes = [int(v) for v in args.plan_sizes.split(",") if v.strip()]
        if sizes:
            growth = plan_bench.run_growth(
                scratch, sizes, args.growth_rounds, args.growth_latency_ms, say=say
            )
            sections.append(report.growth_section(growth))
        return sections
    if name == "runner":
        result = runner_bench.run(
            scratch,
            args.cache,
            args.rows,
            args.files,
            args.max_files_per_trigger,
            args.runner_rounds,
            say,
        )
        return [report.runner_section(result)]
    if name == "kafka":
        return [report.kafka_section(kafka_bench.run(scratch, args.kafka_rounds, say=say))]
    if name == "handover":
        result = handover_bench.run(
            scratch, args.handover_rounds, say=say, target=target or "local"
        )
        return [report.handover_section(result)]
    if name == "watch":
        sizes = [int(v) for v in args.watch_jobs.split(",")]
        return [
            watch_bench.section(watch_bench.run(sizes, say=say)),
            watch_bench.status_section(watch_bench.run_status(sizes, say=say)),
        ]
    if name == "ui":
        sizes = [int(v) for v in args.ui_jobs.split(",") if v.strip()]
        runs = tuple(v.strip() for v in args.ui_runs.split(",") if v.strip())
        profile = max(sizes) if args.ui_profile is None else args.ui_profile
        results = ui_bench.run(sizes, args.ui_rounds, say=say, profile_at=profile, runs=runs)
        return [ui_bench.section(results)]
    if name == "recovery":
        result = recovery_bench.run(scratch, args.recovery_rounds, args.watch_interval, say=say)
        return [report.recovery_section(result)]
    return [report.redeploy_section(redeploy_bench.run(scratch, args.redeploy_rounds, say=say))]


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
