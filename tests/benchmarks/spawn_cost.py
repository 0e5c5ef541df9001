"""What a program a JVM starts costs the machine, by Java's launch mechanism, side by side.

    python -m tests.benchmarks.spawn_cost [--rounds 3] [--spawns 1000]

Hadoop's local file system runs `chmod` for each file a stream writes and `readlink` for each
rename (PySpark's jars have no native Hadoop library): some 25 programs a micro-batch of a local
driver. Each round runs `java/SpawnCost.java` (Java's source-file mode: no build) once with
Java's default mechanism on Linux (`posix_spawn` of its helper, `jspawnhelper`, which then runs
the program) and once with `-Djdk.lang.Process.launchMechanism=VFORK` (vfork and exec of the
program itself), in turn, with the suite's client compiler and a 512 MiB heap; each starts
`readlink` `--spawns` times and reports the CPU seconds of the JVM and of its children. The
suite's JVMs take the faster (tests/support/jvm.py, `launch_options`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from flink_sql_runner.targets.jvm_archive import java_binary
from tests.support.scratch import for_a_program

PROGRAM = Path(__file__).parent / "java" / "SpawnCost.java"
MECHANISMS = {"Java's default": (), "VFORK": ("-Djdk.lang.Process.launchMechanism=VFORK",)}


def one(java: str, options: tuple[str, ...], spawns: int) -> dict[str, float]:
    """The CPU seconds of one run: the JVM's own ("self") and its children's."""
    argv = [java, "-Xmx512m", "-XX:TieredStopAtLevel=1", *options, str(PROGRAM), str(spawns)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)  # noqa: S603
    lines = [line for line in done.stdout.splitlines() if line.startswith("SPAWN-COST ")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return json.loads(lines[-1].split(" ", 1)[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.spawn_cost")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--spawns", type=int, default=1000)
    args = parser.parse_args(argv)
    java = java_binary()
    if java is None or not sys.platform.startswith("linux"):
        raise SystemExit("needs Linux and a java (JAVA_HOME's, else the one on PATH)")
    found: dict[str, list[dict[str, float]]] = {name: [] for name in MECHANISMS}
    for turn in range(args.rounds):
        order = list(MECHANISMS) if turn % 2 == 0 else list(reversed(MECHANISMS))
        for name in order:
            cost = one(java, MECHANISMS[name], args.spawns)
            found[name].append(cost)
            print(f"round {turn + 1}: {name}: JVM {cost['self']:.2f}, "
                  f"children {cost['children']:.2f} CPU-s", flush=True)  # fmt: skip
    print("\n| mechanism | CPU ms a program (median) | JVM | children | rounds |\n"
          "|---|---|---|---|---|")  # fmt: skip
    for name, costs in found.items():
        each = [1000 * (c["self"] + c["children"]) / args.spawns for c in costs]
        own = statistics.median(1000 * c["self"] / args.spawns for c in costs)
        kids = statistics.median(1000 * c["children"] / args.spawns for c in costs)
        rounds = ", ".join(f"{value:.2f}" for value in each)
        print(f"| {name} | {statistics.median(each):.2f} | {own:.2f} | {kids:.2f} | {rounds} |")
    return 0


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
