"""The floor under a cached `plan`: the reads no cache may skip, measured alone.

A plan with its cache restored (ci_plan.py's "cache restored") may reuse what the job files read
as, but it must still look at what is: every input file (to know it is unchanged), the store's
listing (what was deployed), the target's runs (what is alive: unknown is never "not running"),
and the checkpoint of each job whose decision uses it. Those reads, and the interpreter with the
plan's imports, are measured here one by one on ci_plan.py's workspace (the store on moto's S3
server, 20 ms added per request; every job running, 20 % of them with another config), beside
the whole command with its cache restored. The store's listing is read on a thread beside the
local reads (gather/store_ahead.py), so the floor is the imports, then the longer of the listing
and the local reads together: the least such a plan could take if it read nothing twice and
decided in no time. The listing's CPU in this process is shown too: the rest of its time is
the S3 server's making its pages.

Run: `python -m tests.benchmarks.plan_floor [--jobs 10000] [--rounds 3]`. Prints a Markdown
table for docs/developers/benchmarks.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.benchmarks.ci_plan import argv
from tests.benchmarks.common import (
    REPO,
    compile_deployer,
    load_average,
    markdown_table,
    moto_server_process,
    s3_env,
)
from tests.benchmarks.plan_bench import (
    STORE,
    Mix,
    _check_plan,
    reset_state,
    s3_client,
    state_files,
    stored_manifests,
    upload,
    write_inputs,
    write_state,
)
from tests.support.scratch import for_a_program
from tests.support.workspace import Workspace

IMPORTS = "import flink_sql_runner.cli.deploy, boto3, yaml"


def interpreter_and_imports() -> float:
    """A fresh interpreter that imports what the plan command imports, and exits."""
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], check=True, cwd=REPO)  # noqa: S603
    return time.perf_counter() - began


def read_inputs(ws: Workspace) -> Callable[[], int]:
    """Every job file, table file and the template read and hashed: the least a cache check does."""

    def read() -> int:
        files = [ws.template, *sorted(ws.tables.rglob("*.yaml")), *sorted(ws.jobs.rglob("*.yaml"))]
        for path in files:
            hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
        return len(files)

    return read


def store_listing() -> Callable[[], int]:
    """The store's listing as the plan reads it (its snapshot: names and their tokens), its
    client made before (the plan makes it on its main thread, before the listing)."""
    from flink_sql_runner.stores import open_store

    store = open_store(STORE, Path("."))

    def read() -> int:
        return len(store.snapshot().names)

    return read


def run_listing(ws: Workspace) -> Callable[[], int]:
    """The local target's runs: every run record read, and the processes they name looked at
    (plan_bench.py's records all name this process: one look at /proc)."""
    from flink_sql_runner.targets.local import LocalTarget

    def read() -> int:
        return len(LocalTarget(ws.state).list_runs().runs)

    return read


def checkpoints(ws: Workspace, names: list[str]) -> Callable[[], int]:
    """The latest offsets file of each job whose config changed (what the plan reads of them)."""
    from flink_sql_runner.gather import checkpoint_reader
    from flink_sql_runner.stores.storage import FileStorage

    storage = FileStorage()

    def read() -> int:
        found = 0
        for name in names:
            location = f"{ws.root}/checkpoints/{name}/1"
            found += checkpoint_reader.latest_offsets(storage, location) is not None
        return found

    return read


IMPORTED = "the interpreter and the plan's imports"
LISTING = "the store's listing (S3, 20 ms a request)"
LISTING_CPU = "  of it, this process's CPU"
WHOLE = "the whole `plan`, its cache restored"


def timed(step: Callable[[], int], expected: int) -> tuple[float, float]:
    """(seconds, CPU seconds of this process) the step took; it must have read `expected`
    things (files, names, runs, checkpoints), or it measured something else."""
    began, cpu = time.perf_counter(), time.process_time()
    count = step()
    seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
    if count != expected:
        raise AssertionError(f"{step.__doc__ or step}: read {count}, expected {expected}")
    return seconds, cpu


def measure(scratch: Path, jobs: int, rounds: int) -> list[tuple[str, list[float]]]:
    ws = write_inputs(scratch / f"floor-{jobs}", jobs)
    mix = Mix(config_changed=0.2, query_changed=0.0)
    manifests, counts = stored_manifests(ws, mix)
    write_state(ws, sorted(manifests))
    pristine = state_files(ws)
    changed = [n for i, n in enumerate(sorted(manifests)) if mix.kind(i, jobs) == "config"]
    results: dict[str, list[float]] = {}
    with moto_server_process(20) as server:
        env = s3_env(server.url, scratch)
        upload(s3_client(env), manifests)
        saved = dict(os.environ)
        os.environ.clear()  # env is a whole environment, blind to ~/.aws and AWS_* settings
        os.environ.update(env)
        try:
            cache, out = scratch / "cache", scratch / "plan.json"
            plan_env = {**env, "PYTHONPATH": str(REPO)}
            with out.open("w") as sink:  # the cache a CI cache step would restore
                subprocess.run(argv(ws, cache), env=plan_env, stdout=sink, check=True, cwd=REPO)  # noqa: S603
            files = jobs + 1 + len(list(ws.tables.glob("*.yaml")))
            steps = {  # label: (the step, how many things it must read)
                f"{files:,} input files read and hashed": (read_inputs(ws), files),
                LISTING: (store_listing(), jobs),
                f"{jobs:,} run records read (one process named)": (run_listing(ws), jobs),
                f"{len(changed):,} checkpoints' latest offsets (the changed jobs)": (
                    checkpoints(ws, changed),
                    len(changed),
                ),
            }
            for _ in range(rounds):
                results.setdefault(IMPORTED, []).append(interpreter_and_imports())
                for label, (step, expected) in steps.items():
                    seconds, cpu = timed(step, expected)
                    results.setdefault(label, []).append(seconds)
                    if label == LISTING:
                        results.setdefault(LISTING_CPU, []).append(cpu)
                reset_state(ws, pristine)
                began = time.perf_counter()
                with out.open("w") as sink:
                    subprocess.run(argv(ws, cache), env=plan_env, stdout=sink, check=True, cwd=REPO)  # noqa: S603
                results.setdefault(WHOLE, []).append(time.perf_counter() - began)
                _check_plan(out, counts)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return list(results.items())


def table(results: list[tuple[str, list[float]]]) -> str:
    medians = {label: statistics.median(seconds) for label, seconds in results}
    rows = [
        [label, f"{medians[label]:.2f} s ({min(seconds):.2f})"]
        for label, seconds in results
        if label != WHOLE
    ]
    imports = medians[IMPORTED]
    local = sum(m for label, m in medians.items() if label not in (WHOLE, IMPORTED, LISTING,
                                                                   LISTING_CPU))  # fmt: skip
    floor = imports + max(medians[LISTING], local)
    rows.append(["**the floor: the imports, then the longer of the listing and the local "
                 f"reads ({local:.2f} s)**", f"**{floor:.2f} s**"])  # fmt: skip
    rows.append([WHOLE, f"{medians[WHOLE]:.2f} s ({min(dict(results)[WHOLE]):.2f})"])
    return markdown_table(["read", "median (best)"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    compile_deployer()
    scratch = Path(tempfile.mkdtemp(prefix="fsr-plan-floor-"))
    try:
        before = load_average()
        results = measure(scratch, args.jobs, args.rounds)
        print(f"{args.jobs:,} jobs, {args.rounds} rounds, load {before:.2f} before and "
              f"{load_average():.2f} after\n")  # fmt: skip
        print(table(results))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    with for_a_program():
        main()
