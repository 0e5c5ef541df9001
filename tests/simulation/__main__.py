"""`python -m tests.simulation --seed S` replays one seed with its history;
`python -m tests.simulation --seeds N [--from S]` runs many and prints each failing seed."""

from __future__ import annotations

import argparse
import sys
import time

from tests.simulation.simulate import run_many, run_seed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulation")
    parser.add_argument("--seed", type=int, help="replay one seed, with its history")
    parser.add_argument("--seeds", type=int, help="run this many seeds")
    parser.add_argument("--from", dest="first", type=int, default=0, help="the first seed")
    parser.add_argument("--workers", type=int, default=1, help="--seeds: processes at once")
    parser.add_argument("--quiet", action="store_true", help="--seed: no history, the checks only")
    parser.add_argument(
        "--one-machine",
        action="store_true",
        help="every process on one host: a dead holder's lock is taken over at once",
    )
    args = parser.parse_args(argv)
    if args.seed is not None:
        outcome = run_seed(args.seed, verbose=True, one_machine=args.one_machine)
        for line in outcome.scenario.describe():
            print(line)
        if not args.quiet:
            for line in outcome.history:
                print(line)
        print(
            f"seed {args.seed}: {outcome.steps} steps, {outcome.virtual_seconds:.0f} virtual s"
            + (f", {outcome.note}" if outcome.note else "")
        )
        for line in outcome.violations:
            print("VIOLATION " + line.line())
        return 1 if outcome.violations else 0
    count = args.seeds or 100
    failed, begun = 0, time.monotonic()
    for _, line in run_many(args.first, count, args.workers, args.one_machine):
        if line is not None:
            failed += 1
            print(line, flush=True)
    took = time.monotonic() - begun
    print(f"{count} seeds, {failed} failing, {took:.1f} s ({count / took:.1f} seeds/s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
