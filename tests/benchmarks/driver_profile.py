"""Where a local driver's CPU goes, inside its JVM: async-profiler's samples of one start.

    python -m tests.benchmarks.driver_profile [--seconds 7] [--top 15] [--frame TEXT ...]

Deploys one rate-micro-batch -> parquet job with the suite's template and JVM options
(tests/support/workspace.py, tests/support/jvm.py), with async-profiler 3.0
(`tools.profiler:async-profiler`, Linux x64, fetched from Maven Central by tests/support/maven.py)
loaded into the driver's JVM as an agent through `SPARK_SUBMIT_OPTS`: a sample of every thread's
CPU each millisecond (perf events, or a timer of async-profiler's own where the kernel allows
none). The job runs `--seconds` after `deploy` said it healthy, then is stopped; the agent writes
its samples as the JVM exits. Prints the CPU milliseconds of the JVM in all, by thread, by the
call the driver's Python made into the JVM (through py4j's thread), and of each `--frame` (text
in a frame's name: inclusive, every thread). Linux x64 only. docs/developers/benchmarks.md keeps
a run's figures.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
import zipfile
from collections import Counter
from pathlib import Path

from tests.support import maven
from tests.support.jvm import quicken
from tests.support.scratch import for_a_program
from tests.support.workspace import Workspace, wait_for

#: Frames worth a line by default: what a 4.x driver's start spent most on, outside the runner.
FRAMES = (
    "org/apache/spark/sql/ml/InternalFunctionRegistration",
    "org/apache/spark/SparkContext.<init>",
    "org/apache/hadoop/conf/Configuration",
    "org/apache/logging/log4j",
    "org/codehaus/janino",
    "org/apache/spark/sql/execution/streaming",
)


def agent(folder: Path) -> Path:
    """async-profiler's native library, taken out of its jar into `folder`."""
    (jar,) = maven.classpath(maven.pom("async-profiler"))
    with zipfile.ZipFile(jar) as archive:
        return Path(archive.extract("linux-x64/libasyncProfiler.so", folder))


def profile(seconds: float, folder: Path) -> list[tuple[list[str], int]]:
    """The driver's samples: (stack, thread first, outermost call next; milliseconds)."""
    samples = folder / "driver.collapsed"
    quicken(os.environ)
    options = f"start,event=cpu,interval=1ms,threads,collapsed,file={samples}"
    os.environ["SPARK_SUBMIT_OPTS"] += f" -agentpath:{agent(folder)}={options}"
    ws = Workspace(folder / "ws")
    try:
        ws.write_one_job("t", str(folder / "out"), trigger={"processingTime": "3 seconds"})
        result = ws.deploy()
        if result.returncode != 0:
            raise SystemExit(result.stdout + result.stderr)
        print(next(line for line in result.stdout.splitlines() if "healthy" in line), flush=True)
        time.sleep(seconds)
        stopped = ws.cli("stop", "t", paths=False)
        if stopped.returncode != 0:
            raise SystemExit(stopped.stdout + stopped.stderr)
        wait_for(lambda: samples.exists() and samples.stat().st_size > 0, 60, what="samples")
        time.sleep(1)  # the agent's file written whole at the JVM's exit
    finally:
        ws.kill_all()
    lines = samples.read_text().splitlines()
    return [(stack.split(";"), int(n)) for stack, n in (line.rsplit(" ", 1) for line in lines)]


def thread_of(frame: str) -> str:
    """A thread's name without its ids, its numbers made `N`: pools and py4j's threads summed."""
    name = re.sub(r" \[id = [^\]]*\]| tid=[0-9]+", "", frame.strip("[]"))
    return re.sub(r"[0-9]+", "N", name)


def entry_call(stack: list[str]) -> str | None:
    """The JVM method the driver's Python called, where `stack` is one of py4j's threads."""
    for at, frame in enumerate(stack):
        if "py4j/reflection/MethodInvoker.invoke" in frame:
            for inner in stack[at + 1 :]:
                if not re.search(r"reflect|MethodAccessor|MethodHandle|LambdaForm|invoke0", inner):
                    return inner
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.driver_profile")
    parser.add_argument("--seconds", type=float, default=7.0)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--frame", action="append", help="text in a frame's name (repeatable)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="fsr-driver-profile-") as folder:
        stacks = profile(args.seconds, Path(folder))
    threads, calls, frames = Counter(), Counter(), Counter()
    for stack, ms in stacks:
        threads[thread_of(stack[0])] += ms
        if call := entry_call(stack):
            calls[call] += ms
        for text in args.frame or FRAMES:
            if any(text in frame for frame in stack[1:]):
                frames[text] += ms
    print(f"\nthe driver's JVM: {sum(ms for _, ms in stacks)} CPU-ms sampled")
    for title, counts in (("thread", threads), ("call from the driver's Python", calls)):
        print(f"\n| {title} | CPU-ms |\n|---|---|")
        for name, ms in counts.most_common(args.top):
            print(f"| `{name}` | {ms} |")
    print("\n| frame (inclusive, every thread) | CPU-ms |\n|---|---|")
    for text in args.frame or FRAMES:
        print(f"| `{text}` | {frames[text]} |")
    return 0


if __name__ == "__main__":
    with for_a_program():
        raise SystemExit(main())
