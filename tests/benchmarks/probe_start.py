"""What a `plan` that asks Spark costs, with the probe's JVM as Spark starts it and as the
deployer starts it, side by side.

    python -m tests.benchmarks.probe_start [--rounds 3] [--old REF]

A plan whose job could change what its sink holds asks the runner's schema probe (a local Spark
in a child process, gather/spark_child.py) what the query writes. One workspace: a rate source
into a parquet folder that already holds rows and that a second, stopped job reads with a
declared schema, so the plan must know the schema the first would write. Each round runs `plan
--output json --no-cache` once per way, in turn (the order turned every round), the schema
answers the last plan kept removed first (so that each asks Spark to analyse the query and to
read the sink), and reads its wall time and the CPU seconds of the command and its children
(GNU time):

- `as Spark starts`: `SPARK_SUBMIT_OPTS=-XX:TieredStopAtLevel=4`, which comes after the
  deployer's own option and so wins: Java's default compilers;
- `client compiler`: the deployer's probe as it is (`PROBE_JAVA_OPTIONS`), no archive;
- `the plan's archive`: and the archive `jvm-archive --for-plan` made (once, before the rounds,
  in a cache folder of the benchmark's own, `FLINK_SQL_RUNNER_USER_CACHE`; the other ways are
  given an empty one, so that no archive of the user's is mapped).

With `--old REF`, each way runs on the code of an older commit too (its files from `git
archive`), in turn, so that what a change to the deployer or the runner's probe saves is measured
side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.common import run_measured
from tests.benchmarks.warm_repeat_bench import _code, old_code
from tests.support.scratch import VARIABLE, for_a_program, tmpdir_option
from tests.support.workspace import Workspace

#: The parquet folder's first rows, written once by a local Spark.
WRITE_ROWS = (
    "import sys\nfrom pyspark.sql import SparkSession\n"
    "spark = SparkSession.builder.master('local[1]').getOrCreate()\n"
    "spark.range(3).selectExpr('id AS value', 'CAST(1 AS INT) AS __query_version')"
    ".write.parquet(sys.argv[1])\nspark.stop()\n"
)


def workspace(root: Path) -> Workspace:
    """The jobs and tables: `ticks` into `out` (holding rows), `copy` reading `out`, stopped."""
    ws = Workspace(root)
    out = str(ws.root / "out")
    ws.write_tables([
        {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 5}},
        {"name": "tick_out", "format": "parquet", "options": {"path": out}},
        {"name": "tick_stream", "format": "parquet", "options": {"path": out},
         "schema": "value BIGINT, __query_version INT"},
        {"name": "tick_copy", "format": "parquet", "options": {"path": str(ws.root / "copy")}},
    ])  # fmt: skip
    subprocess.run([sys.executable, "-c", WRITE_ROWS, out], check=True, capture_output=True)  # noqa: S603
    ws.write_job("ticks", **{"target-table": "tick_out", "sql": "SELECT value FROM ticks"})
    ws.write_job("copy", **{"target-table": "tick_copy", "sql": "SELECT value FROM tick_stream",
                            "desired-state": "stopped"})  # fmt: skip
    return ws


def plan_once(ws: Workspace, java_options: str, out: Path, user_cache: Path) -> tuple[float, float]:
    """One `plan` (wall seconds, CPU seconds), `user_cache` its user's cache folder; it must
    have asked the probe."""
    env = {k: v for k, v in os.environ.items() if k != "SPARK_SUBMIT_OPTS"}
    env["FLINK_SQL_RUNNER_USER_CACHE"] = str(user_cache)
    scratch = tmpdir_option(env[VARIABLE]) if VARIABLE in env else ""
    if options := f"{scratch} {java_options}".strip():
        env["SPARK_SUBMIT_OPTS"] = options  # the probe's JVM keeps to the scratch folder
    measured = run_measured([*ws.argv("plan"), "--output", "json", "--no-cache"], env=env,
                            cwd=ws.root, stdout=out)  # fmt: skip
    if measured.returncode not in (0, 1):
        raise SystemExit(f"plan exited {measured.returncode}: {measured.stderr[-2000:]}")
    (job,) = [j for j in json.loads(out.read_text())["jobs"] if j["name"] == "ticks"]
    if "schema" not in job:
        raise SystemExit(f"the plan did not ask the probe: {job}")
    return measured.seconds, measured.cpu_seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.probe_start")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", help="an older commit whose code runs each way too, in turn")
    args = parser.parse_args(argv)
    options = {"as Spark starts": "-XX:TieredStopAtLevel=4", "client compiler": "",
               "the plan's archive": ""}  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="fsr-probe-start-") as folder,
        tempfile.TemporaryDirectory(prefix="fsr-probe-start-caches-") as caches,
    ):
        codes: dict[str, Path | None] = {"": None}
        if args.old:
            codes[f", at {args.old}"] = old_code(args.old, Path(folder))
        ways = {f"{way}{at}": (way, code) for way in options for at, code in codes.items()}
        ws = workspace(Path(folder))
        out = Path(folder) / "plan.json"
        # Outside the folder the plans run in: a probe maps no archive in the command's folder,
        # which may be a checkout (host/owned.py).
        empty, made = Path(caches) / "no-cache", Path(caches) / "user-cache"
        env = {**os.environ, "FLINK_SQL_RUNNER_USER_CACHE": str(made)}
        argv = [sys.executable, "-m", "flink_sql_runner", "jvm-archive", "--for-plan"]
        done = subprocess.run(argv, env=env, cwd=ws.root, capture_output=True, text=True,
                              check=False)  # fmt: skip  # noqa: S603
        if done.returncode != 0 or "start from it" not in done.stdout:
            raise SystemExit(f"jvm-archive --for-plan, where the plans run: {done.stdout}"
                             f"{done.stderr}")  # fmt: skip
        print(done.stdout.strip(), flush=True)
        found: dict[str, list[tuple[float, float]]] = {way: [] for way in ways}
        for turn in range(args.rounds):
            order = list(ways) if turn % 2 == 0 else list(reversed(ways))
            for way in order:
                shutil.rmtree(ws.state / "cache", ignore_errors=True)  # the schema answers too
                option, code = ways[way]
                cache = made if option == "the plan's archive" else empty
                with _code(code):
                    seconds, cpu = plan_once(ws, options[option], out, cache)
                found[way].append((seconds, cpu))
                print(f"round {turn + 1}: {way}: {seconds:.2f} s, {cpu:.2f} CPU-s", flush=True)
    print("\n| probe's JVM | plan, s (median) | CPU-s (median) | rounds (s) |\n|---|---|---|---|")
    for way, runs in found.items():
        wall = statistics.median(s for s, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        rounds = ", ".join(f"{s:.2f}" for s, _ in runs)
        print(f"| {way} | {wall:.2f} | {cpu:.2f} | {rounds} |")
    return 0


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
