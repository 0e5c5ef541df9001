"""What the tests' own Spark session costs while idle, with Spark's defaults and with the
settings the suite gives it (tests/conftest.py's QUIET_SESSION), side by side.

    python -m tests.benchmarks.idle_session [--rounds 3] [--seconds 90]

Each round starts, in turn, a session as the suite's `spark` fixture makes it (local[2], UI
off, the suite's JVM options) once with Spark's defaults and once with QUIET_SESSION, runs one
small job in it, waits 10 s, then reads the CPU seconds its JVM spends in `--seconds` of doing
nothing, and the threads that spent them. Each session runs in a child Python, as a pytest
worker holds one: a worker's session lives the whole run and mostly waits.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections import Counter

from tests.benchmarks.common import REPO
from tests.support.jvm import quicken
from tests.support.scratch import for_a_program

#: The child: a session made as tests/conftest.py makes it, with the settings of argv[1] (JSON),
#: idle for argv[2] seconds; it prints the CPU of its JVM's threads in that time, as JSON.
CHILD = r"""
import json, os, re, sys, time
from pathlib import Path
from pyspark.sql import SparkSession
settings, seconds = json.loads(sys.argv[1]), float(sys.argv[2])
builder = SparkSession.builder
for key, value in settings.items():
    builder = builder.config(key, value)
spark = (builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "2").config("spark.driver.memory", "1g")
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .getOrCreate())
spark.range(10).count()
from tests.benchmarks.common import process_table
tick = os.sysconf("SC_CLK_TCK")
jvm = next(p.pid for p in process_table() if p.name == "java" and int(p.fields[1]) == os.getpid())
def threads():
    found = {}
    for t in os.listdir(f"/proc/{jvm}/task"):
        try:
            text = Path(f"/proc/{jvm}/task/{t}/stat").read_text()
        except OSError:
            continue
        name = re.sub(r"\d+", "N", text[text.find("(") + 1 : text.rfind(")")])
        fields = text.rsplit(")", 1)[1].split()
        found[t] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return found
time.sleep(10)
before = threads()
time.sleep(seconds)
after = threads()
spent = {}
for t, (name, cpu) in after.items():
    spent[name] = spent.get(name, 0.0) + cpu - before.get(t, (name, 0.0))[1]
print(json.dumps(spent))
spark.stop()
"""


def idle_cost(settings: dict[str, str], seconds: float) -> Counter[str]:
    """CPU seconds of an idle session's JVM in `seconds`, by thread name."""
    result = subprocess.run(  # noqa: S603 - a list, never a shell
        [sys.executable, "-c", CHILD, json.dumps(settings), str(seconds)],
        cwd=REPO, capture_output=True, text=True, check=True, timeout=seconds + 300,
    )  # fmt: skip
    return Counter(json.loads(result.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    from tests.conftest import QUIET_SESSION

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=90.0)
    args = parser.parse_args(argv)
    quicken(os.environ)
    variants = {"Spark's defaults": {}, "QUIET_SESSION": QUIET_SESSION}
    found: dict[str, list[Counter[str]]] = {name: [] for name in variants}
    for turn in range(args.rounds):
        order = list(variants) if turn % 2 == 0 else list(reversed(variants))
        for name in order:
            spent = idle_cost(variants[name], args.seconds)
            found[name].append(spent)
            print(f"round {turn + 1}: {name}: {sum(spent.values()):.2f} CPU-s", flush=True)
    print(f"\n| session | CPU-s in {args.seconds:.0f} s idle (median) | share of a core "
          "| rounds | threads above 0.1 CPU-s (median) |\n|---|---|---|---|---|")  # fmt: skip
    for name, rounds in found.items():
        totals = [sum(spent.values()) for spent in rounds]
        median = statistics.median(totals)
        threads = Counter({t: statistics.median(r[t] for r in rounds) for t in rounds[0]})
        busy = ", ".join(f"{t} {v:.2f}" for t, v in threads.most_common() if v > 0.1)
        print(f"| {name} | {median:.2f} | {100 * median / args.seconds:.1f}% "
              f"| {', '.join(f'{t:.2f}' for t in totals)} | {busy} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
