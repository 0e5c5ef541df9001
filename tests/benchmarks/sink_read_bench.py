"""What a plan pays to read what a file sink holds, side by side: the runner's schema probe (a
local Spark started by `spark-submit`, as plans did before gather/sink_footer.py) and the
plan's own read (claims, Spark's log, the newest file's footer, in Python). The sink is a real
one: a streaming query writes a few batches of parquet into it first (one Spark session, then
stopped). Both answers must be equal, or the run fails.

Run: `python -m tests.benchmarks.sink_read_bench --rounds 3`. Prints a Markdown table for
docs/developers/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.common import Stats
from tests.support.scratch import for_a_program

PROBE, HERE = "the probe (Spark)", "the plan's own read"


def write_sink(root: Path, batches: int) -> str:
    """A parquet sink a streaming query wrote `batches` batches into; its path."""
    from pyspark.sql import SparkSession

    source, sink = root / "in", root / "out"
    source.mkdir()
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    try:
        for batch in range(batches):
            rows = [{"id": batch * 10 + i, "name": f"n{i}"} for i in range(10)]
            (source / f"{batch}.json").write_text("\n".join(json.dumps(r) for r in rows))
            query = (
                spark.readStream.schema("id BIGINT, name STRING")
                .json(str(source))
                .writeStream.format("parquet")
                .option("path", str(sink))
                .option("checkpointLocation", str(root / "ckpt"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
    finally:
        spark.stop()
    return str(sink)


def measure(rounds: int, root: Path, batches: int = 3) -> dict[str, Stats]:
    from flink_sql_runner.gather.schemas import run_probe
    from flink_sql_runner.gather.sink_footer import sink_history_here
    from flink_sql_runner.stores.storage import FileStorage

    sink = write_sink(root, batches)
    seconds: dict[str, list[float]] = {PROBE: [], HERE: []}
    for _ in range(rounds):
        begun = time.perf_counter()
        answers, why = run_probe({"sinks": [{"key": "s", "format": "parquet", "path": sink}]})
        seconds[PROBE].append(time.perf_counter() - begun)
        begun = time.perf_counter()
        here = sink_history_here(FileStorage(), "parquet", sink)
        seconds[HERE].append(time.perf_counter() - begun)
        probed: Any = (answers.get("sinks") or {}).get("s")
        if why is not None or here is None or probed != here:
            raise SystemExit(f"the two reads differ: probe {probed!r} ({why}), here {here!r}")
    return {way: Stats(tuple(values)) for way, values in seconds.items()}


def table(results: dict[str, Stats]) -> str:
    lines = ["| read | median s | min-max s |", "|---|---|---|"]
    for way, stats in results.items():
        low, high = min(stats.samples), max(stats.samples)
        lines.append(f"| {way} | {stats.median:.3f} | {low:.3f}-{high:.3f} |")
    ratio = results[PROBE].median / max(results[HERE].median, 1e-9)
    return "\n".join(lines) + f"\n\nThe probe takes {ratio:,.0f}x the plan's own read."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sink-read-") as scratch:
        print(table(measure(args.rounds, Path(scratch))))


if __name__ == "__main__":
    with for_a_program():
        main()
