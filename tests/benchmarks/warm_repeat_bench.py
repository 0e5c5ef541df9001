"""Repeated warm config changes on local Spark: the handover's pause, many times over.

What issue 57 asks of a warm handover: the median pause over repeated warm config changes
under 1.5 s at a 1 s trigger. handover_bench.py measures every way and kind a few rounds each
(cold, warm, warm without the warm-up; config and query changes; a start that fails), about 25
minutes for 3 rounds; this one measures only the warm config change, as `deploy` carries it
out and with `--warm-up 0` beside it, rounds alternating which goes first, so that a median
rests on many rounds. The job is handover_bench.py's (a rate-micro-batch source, a parquet
sink, a 1 s trigger); the pause is the same measure (the old run's last commit to the new
run's first, around the deployer's `stopped`), with its steps.

Run: `python -m tests.benchmarks.warm_repeat_bench --rounds 10` (about 11 minutes); with
`--old REF`, the warm way of this checkout against the warm way of an older commit (its files
from `git archive`, as ci_plan.py takes them, the deploys run on them) instead of against
`--warm-up 0`. Prints each round, then a Markdown table for docs/developers/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.benchmarks import handover_bench as hb
from tests.benchmarks.ci_plan import old_checkout
from tests.benchmarks.common import bench_workspace
from tests.support.scratch import for_a_program

#: Each way: its `deploy` options, and the code it runs (None: this checkout).
WAYS: dict[str, tuple[tuple[str, ...], Path | None]] = {
    "warm": (hb.WAY_OPTIONS["warm"], None),
    "warm, no warm-up": (hb.WAY_OPTIONS["warm, no warm-up"], None),
}
#: The steps shown, in their order.
STEPS = ("stopping", "stopped", "go", "new run planned its first batch", "new run committed it")


def run(
    scratch: Path,
    rounds: int,
    ways: dict[str, tuple[tuple[str, ...], Path | None]] = WAYS,
    settle: float = 4.0,
    say: Callable[[str], None] = print,
) -> dict[str, list[hb.Round]]:
    """`rounds` warm config changes each way, alternating which goes first."""
    ws = bench_workspace(scratch / "warm-repeat")
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 50, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        ]
    )
    state: dict = {"query": 0, "version": 1, "target": "local"}
    hb.write_job(ws, "round 0", 0)
    found: dict[str, list[hb.Round]] = {way: [] for way in ways}
    names = list(ways)
    try:
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        for index in range(rounds):
            for way in names if index % 2 == 0 else names[::-1]:
                options, code = ways[way]
                hb.WAY_OPTIONS.setdefault(way, options)
                time.sleep(settle)  # the job commits steadily before each change
                with _code(code):
                    done = hb.one_round(ws, "config", way, index, state)
                found[way].append(done)
                steps = ", ".join(f"{k} {v:+.2f}" for k, v in done.steps.items())
                say(f"  {index + 1}/{rounds} {way}: handover {done.handover:.2f} s | {steps}")
        return found
    finally:
        ws.kill_all()


@contextmanager
def _code(code: Path | None) -> Iterator[None]:
    """The deploys in the block run the code at `code` (None: this checkout)."""
    before = os.environ.get("PYTHONPATH")
    if code is not None:
        os.environ["PYTHONPATH"] = str(code)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before


def old_code(ref: str, scratch: Path) -> Path:
    """The deployer and runner at `ref`, laid out as an installed package finds them."""
    folder = old_checkout(ref, scratch)
    (folder / "flink_sql_runner" / "_runner").symlink_to(folder / "runner")
    (folder / "flink_sql_runner" / "_templates").symlink_to(folder / "templates")
    return folder


def table(found: dict[str, list[hb.Round]]) -> str:
    lines = [
        "| way | rounds | handover's pause, median (min-max) | " + " | ".join(STEPS) + " |",
        "|---|---|---|" + "---|" * len(STEPS),
    ]
    for way, rounds in found.items():
        pauses = [r.handover for r in rounds]
        steps = [
            f"{statistics.median(r.steps[name] for r in rounds if name in r.steps):+.2f}"
            if any(name in r.steps for r in rounds)
            else "-"
            for name in STEPS
        ]
        lines.append(
            f"| {way} | {len(rounds)} | {statistics.median(pauses):.2f} s "
            f"({min(pauses):.2f}-{max(pauses):.2f}) | " + " | ".join(steps) + " |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--old", help="the warm way at this commit, beside this checkout's")
    options = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="fsr-warm-repeat-"))
    try:
        ways = WAYS
        if options.old:
            old = old_code(options.old, scratch)
            ways = {"warm": WAYS["warm"], f"warm at {options.old}": (hb.WAY_OPTIONS["warm"], old)}
        load = os.getloadavg()[0]
        found = run(scratch, options.rounds, ways)
        print(f"\nload average {load:.2f} before, {os.getloadavg()[0]:.2f} after; "
              f"steps are medians, from the old run's last commit\n")  # fmt: skip
        print(table(found))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    with for_a_program():
        main()
