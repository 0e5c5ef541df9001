"""What makes a Spark driver start faster on a small machine, side by side.

    python -m tests.benchmarks.jvm_start [--rounds 5] [--variants base,c1,...]

Each round spark-submits `spark/first_batch.py` (a session, a rate stream into parquet, its first
committed batch, a clean stop) once per variant, in a rotated order, and reads from its output
the seconds from spawning spark-submit to the session, to the first committed batch and to the
process's exit, and the CPU seconds of the whole process tree. Variants (the JVM options go to
the driver through `spark.driver.extraJavaOptions`, to spark-submit's own launcher JVM through
`SPARK_LAUNCHER_OPTS`):

- `base`: the suite's template (UI off, 2 shuffle partitions, a 512 MiB driver);
- `c1`: and `-XX:TieredStopAtLevel=1` (the client compiler only: less JIT work at start);
- `serial`: and `-XX:+UseSerialGC` (no parallel GC threads on two cores);
- `cds`: and a class-data-sharing archive of the classes a first run loaded
  (`-XX:SharedArchiveFile`, made once with `-XX:ArchiveClassesAtExit`);
- `c1-cds`: both;
- `all`: `c1-cds`, the serial collector, and the launcher JVM with the client compiler only;
- `quiet`: `c1-cds` with Spark's own log at WARN (`spark.log.level`, as the packaged template
  sets it), not INFO;
- `interp`: `c1-cds` with Spark's generated code off (`spark.sql.codegen.wholeStage=false`,
  `spark.sql.codegen.factoryMode=NO_CODEGEN`): expressions interpreted, no Janino compiles;
- `onecore`: `c1-cds` on `local[1]`, not `local[2]`;
- `vfork`: `c1-cds` with the JVM starting programs by vfork and exec
  (`-Djdk.lang.Process.launchMechanism=VFORK`), not through Java's `jspawnhelper`: Hadoop's
  local file system runs `chmod` and `readlink` for the files a stream writes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.benchmarks.common import run_measured
from tests.benchmarks.runner_bench import SPARK_PROGRAMS, spark_env
from tests.support.scratch import for_a_program

PROGRAM = SPARK_PROGRAMS / "first_batch.py"
BASE_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "512m",
    "spark.sql.session.timeZone": "UTC",
}
VARIANTS = ("base", "c1", "serial", "cds", "c1-cds", "all", "quiet", "interp", "onecore", "vfork")
C1_CDS = ("c1-cds", "all", "quiet", "interp", "onecore", "vfork")
EXTRA_CONF = {
    "quiet": {"spark.log.level": "WARN"},
    "interp": {
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    },
}


def java_options(variant: str, archive: Path) -> tuple[list[str], str]:
    """(the driver's JVM options, the launcher's) of a variant."""
    driver: list[str] = []
    if variant == "c1" or variant in C1_CDS:
        driver.append("-XX:TieredStopAtLevel=1")
    if variant in ("serial", "all"):
        driver.append("-XX:+UseSerialGC")
    if variant == "vfork":
        driver.append("-Djdk.lang.Process.launchMechanism=VFORK")
    if variant == "cds" or variant in C1_CDS:
        driver.append(f"-XX:SharedArchiveFile={archive}")
    launcher = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC" if variant == "all" else ""
    return driver, launcher


def submit(
    scratch: Path,
    driver_options: list[str],
    launcher: str,
    extra: dict[str, str] | None = None,
    master: str = "local[2]",
) -> dict[str, float]:
    from flink_sql_runner.targets.local import find_spark_submit

    out = Path(tempfile.mkdtemp(dir=scratch))
    conf = {**BASE_CONF, **(extra or {})}
    if driver_options:
        conf["spark.driver.extraJavaOptions"] = " ".join(driver_options)
    argv = [find_spark_submit(), "--master", master]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    env = spark_env()
    if launcher:
        env["SPARK_LAUNCHER_OPTS"] = launcher
    stdout = out / "stdout"
    began = time.time()
    measured = run_measured([*argv, str(PROGRAM), str(out), repr(began)], env=env, stdout=stdout)
    lines = [line for line in stdout.read_text().splitlines() if line.startswith("FIRST-BATCH ")]
    if measured.returncode != 0 or not lines:
        raise RuntimeError(f"exit {measured.returncode}: {measured.stderr[-2000:]}")
    marks = json.loads(lines[-1].split(" ", 1)[1])
    shutil.rmtree(out)
    return {**marks, "exit": measured.seconds, "cpu": measured.cpu_seconds}


def make_archive(scratch: Path, archive: Path) -> float:
    """One run that writes the class-data-sharing archive at its exit; its seconds."""
    begun = time.perf_counter()
    submit(scratch, [f"-XX:ArchiveClassesAtExit={archive}"], "")
    if not archive.is_file():
        raise RuntimeError(f"no archive was written at {archive}")
    return time.perf_counter() - begun


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.jvm_start")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    results: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="jvm-start-") as folder:
        scratch = Path(folder)
        archive = scratch / "spark.jsa"
        if any(v == "cds" or v in C1_CDS for v in variants):
            seconds = make_archive(scratch, archive)
            size = archive.stat().st_size / 2**20
            print(f"archive: {size:.0f} MiB, made in {seconds:.1f} s", flush=True)
        for round_ in range(args.rounds):
            order = variants[round_ % len(variants) :] + variants[: round_ % len(variants)]
            for variant in order:
                driver, launcher = java_options(variant, archive)
                master = "local[1]" if variant == "onecore" else "local[2]"
                marks = submit(scratch, driver, launcher, EXTRA_CONF.get(variant), master)
                results[variant].append(marks)
                shown = " ".join(f"{k} {v:.2f}" for k, v in marks.items())
                print(f"round {round_ + 1} {variant}: {shown}", flush=True)
    keys = ("python", "session", "first-batch", "exit", "cpu")
    base = statistics.median(r["first-batch"] for r in results[variants[0]])
    print(f"\nmedians over {args.rounds} rounds (seconds from spawning spark-submit):")
    print("variant  " + "  ".join(f"{k:>11}" for k in keys) + "  first batch vs first")
    for variant in variants:
        medians = {k: statistics.median(r[k] for r in results[variant]) for k in keys}
        cells = "  ".join(f"{medians[k]:>11.2f}" for k in keys)
        print(f"{variant:<8} {cells}  {base / medians['first-batch']:.2f}x")
    return 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
