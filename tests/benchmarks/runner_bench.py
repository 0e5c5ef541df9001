"""Runner overhead: the generic runner against a hand-written PySpark program (spark/handwritten.py)
running the same query on the same input, through the same spark-submit with the same conf.

Input: ROWS rows of parquet in FILES files, made once and cached. The query filters and projects,
the metadata columns are appended, the sink is parquet, the trigger availableNow with
maxFilesPerTrigger so that it runs several micro-batches. Each round runs both, alternating which
goes first, each into a fresh output and checkpoint. Measured per run: wall time from spawning
spark-submit to its exit, and from Spark's event log the query's own time (QueryStarted to
QueryTerminated) and the sum of its micro-batches' triggerExecution. After the rounds both
outputs of the last round are read back and must hold the same rows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.benchmarks.common import Measured, Stats, run_measured

SPARK_PROGRAMS = Path(__file__).resolve().parent / "spark"
SCHEMA = "id BIGINT, amount DOUBLE, customer STRING, ts TIMESTAMP"
SQL = "SELECT id, amount, customer, ts, amount * 1.2 AS gross FROM orders WHERE amount > 100"
SPARK_CONF = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
}
STARTED = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"
PROGRESS = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent"


def spark_env() -> dict[str, str]:
    """What the local target gives spark-submit: this Python for the driver."""
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", env["PYSPARK_PYTHON"])
    return env


def spark_submit(*args: str, conf: dict[str, str] | None = None) -> list[str]:
    from flink_sql_runner.targets.local import find_spark_submit

    argv = [find_spark_submit(), "--master", "local[2]"]
    for key, value in (conf or SPARK_CONF).items():
        argv += ["--conf", f"{key}={value}"]
    return argv + list(args)


def input_data(cache: Path, rows: int, files: int, say: Callable[[str], None]) -> Path:
    """The input, generated once per (rows, files) and kept under `cache`."""
    folder = cache / f"orders-{rows}-{files}"
    if (folder / "_SUCCESS").exists():
        return folder
    say(f"  generating {rows:,} rows of input in {folder} (once)")
    argv = spark_submit(str(SPARK_PROGRAMS / "generate_input.py"))
    argv += ["--rows", str(rows), "--files", str(files), "--out", str(folder)]
    subprocess.run(argv, env=spark_env(), check=True, capture_output=True)  # noqa: S603
    return folder


@dataclass(frozen=True)
class Run:
    """One run of one program."""

    measured: Measured
    query_seconds: float  # QueryStarted to the end of the last micro-batch, Spark's clock
    batch_seconds: float  # the sum of the micro-batches' triggerExecution
    batches: int
    output: Path


class Programs:
    """The command lines of both programs for one run folder."""

    def __init__(self, data: Path, max_files_per_trigger: int):
        self.data = data
        self.max_files = max_files_per_trigger
        self.meta = {
            "query-version": 1,
            "query-id": str(uuid.uuid4()),
            "query-create-timestamp": "2026-01-01T00:00:00Z",
        }

    def conf(self, folder: Path) -> dict[str, str]:
        events = folder / "events"
        events.mkdir(parents=True)
        return {
            **SPARK_CONF,
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        }

    def runner(self, folder: Path) -> list[str]:
        """The deployer's own spark-submit command for this job (LocalTarget.command)."""
        from flink_sql_runner.manifest import Job
        from flink_sql_runner.runtime import ControlFiles, app_name, runtime_manifest, spark_conf
        from flink_sql_runner.stored import Meta
        from flink_sql_runner.targets.base import Submission
        from flink_sql_runner.targets.local import LocalTarget

        spec = {
            "name": "bench-runner",
            "description": "runner overhead benchmark",
            "target-table": "out",
            "sql": SQL,
            "outputMode": "append",
            "trigger": {"availableNow": True},
            "checkpoint-root": str(folder / "checkpoints"),
            "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
            "sparkProperties": self.conf(folder),
        }
        tables = {
            "orders": {
                "format": "parquet",
                "schema": SCHEMA,
                "options": {"path": str(self.data), "maxFilesPerTrigger": self.max_files},
            },
            "out": {"format": "parquet", "options": {"path": str(folder / "output")}},
        }
        job = Job(spec, tables, ("orders",), "bench-runner.yaml")
        meta = Meta(1, self.meta["query-id"], self.meta["query-create-timestamp"])
        control = ControlFiles.of(f"{job.checkpoint_root}/{job.name}", 1)
        manifest = folder / "runtime-manifest.json"
        manifest.write_text(json.dumps(runtime_manifest(job, meta, "run-1", control)))
        plain, _ = spark_conf(job, 1)
        submission = Submission(
            job.name, 1, "run-1", app_name(job.name, 1), str(manifest), spark_conf=plain
        )
        return LocalTarget(folder, master="local[2]").command(submission, None)

    def handwritten(self, folder: Path) -> list[str]:
        args = {
            "input": str(self.data),
            "output": str(folder / "output"),
            "checkpoint": str(folder / "checkpoint"),
            "schema": SCHEMA,
            "sql": SQL,
            "max-files-per-trigger": str(self.max_files),
            "name": "bench-runner",
            "description": "runner overhead benchmark",
            "query-id": self.meta["query-id"],
            "query-version": str(self.meta["query-version"]),
            "query-create-timestamp": self.meta["query-create-timestamp"],
        }
        argv = spark_submit(conf=self.conf(folder))
        argv += ["--name", "flink-sql-runner-bench-runner-v1"]
        argv.append(str(SPARK_PROGRAMS / "handwritten.py"))
        for key, value in args.items():
            argv += [f"--{key}", value]
        return argv


def query_times(events: Path) -> tuple[float, float, int]:
    """From Spark's event log: (the query's time from its start to the end of its last
    micro-batch, the sum of the micro-batches' triggerExecution, the number of batches)."""
    started, end = None, 0.0
    batch_ms, batches = 0, 0
    for log in (p for p in events.rglob("*") if p.is_file() and not p.name.startswith(".")):
        for line in log.read_text().splitlines():
            doc = json.loads(line)
            if doc.get("Event") == STARTED:
                started = _instant(doc["timestamp"])
            elif doc.get("Event") == PROGRESS:
                progress = doc["progress"]
                took = int(progress["durationMs"].get("triggerExecution", 0))
                end = max(end, _instant(progress["timestamp"]) + took / 1000)
                batch_ms += took
                batches += 1
    if started is None or not batches:
        raise RuntimeError(f"no streaming query in the event log {events}")
    return end - started, batch_ms / 1000, batches


def _instant(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class RunnerResult:
    rows: int
    files: int
    max_files_per_trigger: int
    runner: tuple[Run, ...]
    handwritten: tuple[Run, ...]
    rows_out: int
    load: tuple[float, float]

    def wall(self, way: str) -> Stats:
        return Stats(tuple(r.measured.seconds for r in getattr(self, way)))

    def query(self, way: str) -> Stats:
        return Stats(tuple(r.query_seconds for r in getattr(self, way)))

    def batches(self, way: str) -> Stats:
        return Stats(tuple(r.batch_seconds for r in getattr(self, way)))

    def cpu(self, way: str) -> Stats:
        return Stats(tuple(r.measured.cpu_seconds for r in getattr(self, way)))

    def ratio_of(self, measure: str) -> float:
        """Runner over hand-written for one measure (wall, query, batches, cpu), medians."""
        of = getattr(self, measure)
        return of("runner").median / of("handwritten").median


def run(
    scratch: Path,
    cache: Path,
    rows: int = 4_000_000,
    files: int = 8,
    max_files_per_trigger: int = 2,
    rounds: int = 4,
    say: Callable[[str], None] = print,
) -> RunnerResult:
    data = input_data(cache, rows, files, say)
    programs = Programs(data, max_files_per_trigger)
    runs: dict[str, list[Run]] = {"runner": [], "handwritten": []}
    load_before = os.getloadavg()[0]
    for round_ in range(rounds):
        order = ("runner", "handwritten") if round_ % 2 == 0 else ("handwritten", "runner")
        for way in order:
            folder = scratch / f"runner-{round_}-{way}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            argv = programs.runner(folder) if way == "runner" else programs.handwritten(folder)
            measured = run_measured(argv, env=spark_env(), cwd=folder, timeout=900)
            if measured.returncode != 0:
                raise RuntimeError(f"{way} exited {measured.returncode}: {measured.stderr[-3000:]}")
            query_s, batch_s, batches = query_times(folder / "events")
            runs[way].append(Run(measured, query_s, batch_s, batches, folder / "output"))
        say(
            f"  round {round_ + 1}/{rounds}: runner {runs['runner'][-1].measured.seconds:.1f} s,"
            f" hand-written {runs['handwritten'][-1].measured.seconds:.1f} s"
        )
    load_after = os.getloadavg()[0]
    rows_out = same_output(runs["runner"][-1].output, runs["handwritten"][-1].output)
    return RunnerResult(
        rows,
        files,
        max_files_per_trigger,
        tuple(runs["runner"]),
        tuple(runs["handwritten"]),
        rows_out,
        (load_before, load_after),
    )


def same_output(runner: Path, handwritten: Path) -> int:
    """Both outputs read back through Spark: the same rows (count and column sums)."""
    argv = spark_submit(str(SPARK_PROGRAMS / "count_rows.py"), str(runner), str(handwritten))
    result = subprocess.run(  # noqa: S603 - a list, never a shell
        argv, env=spark_env(), check=True, capture_output=True, text=True
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    if found[str(runner)] != found[str(handwritten)]:
        raise RuntimeError(f"the two programs wrote different rows: {found}")
    return int(found[str(runner)][0])
