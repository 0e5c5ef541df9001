"""What `preview NAME` costs on 10 and on 100 batches of the examples' input.

    python -m tests.benchmarks.preview_bench [--rounds 3] [--batches 10,100]

A copy of examples/ is deployed as the docs' tests deploy it (v1 of every job stored; no
driver runs), and `expensive-orders`' v1 is given a checkpoint in Spark's own format whose
batches each read one drop of the examples' orders (a copy of `orders-0001.json`, 40 orders, per
batch: 100 drops in all). Its threshold is then lowered from 9000 to 5000, and each round runs
`preview expensive-orders --batches N --output json` once per N, in a rotated order: the
seconds from the command's start to its exit, and of them the probe's own (its `probe-seconds`:
its Spark session's start, reading and counting the input, each query), and what it compared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from tests.benchmarks.common import (
    REPO,
    compile_deployer,
    load_average,
    run_measured,
    wait_for_quiet,
)
from tests.support.scratch import for_a_program

STATE = ".flink-sql-runner"
DROPS = 100


def project(root: Path) -> Path:
    """The examples deployed in `root`, expensive-orders' v1 having read DROPS drops, one a
    batch; its SQL then changed to `price > 5000`."""
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from flink_sql_runner.read.catalog import load_catalog
    from flink_sql_runner.read.manifest import load_jobs
    from flink_sql_runner.stores.local import LocalStore

    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("ci"))
    orders = root / "examples" / "data" / "orders"
    first = (orders / "orders-0001.json").read_text()
    for drop in range(2, DROPS + 1):
        (orders / f"orders-{drop:04d}.json").write_text(first)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        catalog = load_catalog([Path("examples/tables")])
        jobs = load_jobs([Path("examples/queries")], None, catalog, Path(STATE))
    finally:
        os.chdir(cwd)
    for job in jobs:
        manifest = StoredManifest(job.spec, job.tables, Meta.new(1))
        LocalStore(root / STATE / "manifests").write(manifest, None)
    checkpoint = root / STATE / "checkpoints" / "expensive-orders" / "1"
    for folder in ("offsets", "commits", "sources/0"):
        (checkpoint / folder).mkdir(parents=True)
    (checkpoint / "metadata").write_text('{"id": "bench"}')
    for batch in range(DROPS):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_795_000_000_000 + batch, "conf": {}}
        offsets = f'v1\n{json.dumps(meta)}\n{{"logOffset":{batch}}}'
        (checkpoint / "offsets" / str(batch)).write_text(offsets)
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        path = (orders / f"orders-{batch + 1:04d}.json").resolve()
        entry = {"path": f"file://{path}", "timestamp": 1, "batchId": batch}
        (checkpoint / "sources" / "0" / str(batch)).write_text(f"v1\n{json.dumps(entry)}")
    job_file = root / "examples" / "queries" / "expensive-orders.yaml"
    job_file.write_text(job_file.read_text().replace("price > 9000", "price > 5000"))
    return root


def preview(root: Path, batches: int) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLINK_SQL_RUNNER_")}
    env["FLINK_SQL_RUNNER_STATE_DIR"] = STATE
    argv = [sys.executable, "-m", "flink_sql_runner", "preview", "expensive-orders",
            "--path", "examples/queries", "--table-definition-path", "examples/tables",
            "--batches", str(batches), "--output", "json"]  # fmt: skip
    out = root / f"preview-{batches}.json"
    measured = run_measured(argv, env=env, cwd=root, stdout=out)
    if measured.returncode != 0:
        raise RuntimeError(f"preview --batches {batches} failed: {measured.stderr[-1000:]}")
    (found,) = json.loads(out.read_text())["previews"]
    return {
        "seconds": measured.seconds,
        **{f"probe {k}": v for k, v in found["probe-seconds"].items()},
        "rows-in": sum(found["rows-in"].values()),
        "only-new": found["only-new"]["rows"],
        "only-old": found["only-old"]["rows"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.preview_bench")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", default="10,100")
    parser.add_argument("--max-load", type=float, default=2.5, help="wait for it first")
    parser.add_argument("--wait", type=float, default=600, help="seconds, at most")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.batches.split(",")]
    compile_deployer()
    results: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    with tempfile.TemporaryDirectory(prefix="bench-preview-") as scratch:
        root = project(Path(scratch))
        before = wait_for_quiet(args.max_load, args.wait)
        for round_ in range(args.rounds):
            order = sizes[round_ % len(sizes) :] + sizes[: round_ % len(sizes)]
            for n in order:
                results[n].append(preview(root, n))
                print(f"round {round_ + 1} --batches {n}: {results[n][-1]}", flush=True)
        after = load_average()
    print(f"\nload average {before:.2f} before, {after:.2f} after; median (best) of "
          f"{args.rounds} rounds")  # fmt: skip
    phases = ("session", "input", "old", "new")
    print(f"{'batches':>7}  {'rows in':>7}  {'only new':>8}  {'preview':>16}  "
          + "  ".join(f"{p:>8}" for p in phases))  # fmt: skip
    for n, rounds in results.items():
        wall = [r["seconds"] for r in rounds]
        last = rounds[-1]
        shown = f"{statistics.median(wall):.2f} s ({min(wall):.2f})"
        parts = "  ".join(f"{statistics.median(r[f'probe {p}'] for r in rounds):>6.2f} s"
                          for p in phases)  # fmt: skip
        print(f"{n:>7}  {int(last['rows-in']):>7}  {int(last['only-new']):>8}  {shown:>16}  "
              f"{parts}")  # fmt: skip
    return 0


if __name__ == "__main__":
    with for_a_program():
        sys.exit(main())
