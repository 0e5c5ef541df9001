"""Runner overhead: the generic runner against a hand-written PySpark program (spark/handwritten.py)
running the same query on the same input, through the same spark-submit with the same conf.

Input: ROWS rows of parquet in FILES files, made once and cached. The query filters and projects,
the metadata columns are appended, the sink is parquet, the trigger availableNow with
maxFilesPerTrigger so that it runs several micro-batches. Three ways, each into a fresh
checkpoint, rotating which goes first in each round:

- `runner`: version 1 of the job into a new sink folder (Spark's own file sink writes directly);
- `runner-shifted`: version 2 into a sink folder that version 1 already wrote (a copy of a
  warm-up run's output), so the runner writes through foreachBatch with shifted batch ids;
- `handwritten`: the same query written by hand, Spark's own parquet sink, a new folder.

Measured per run: wall time from spawning spark-submit to its exit, and from Spark's event log the
query's own time (QueryStarted to the end of its last micro-batch) and the sum of its
micro-batches' triggerExecution; CPU time of the process tree. After the rounds the outputs of
the last round are read back: each way wrote the same rows.
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

    def runner(self, folder: Path, version: int = 1) -> list[str]:
        """The deployer's own spark-submit command for this job (LocalTarget.command)."""
        from flink_sql_runner.model.control import ControlFiles, app_name
        from flink_sql_runner.model.runtime import runtime_manifest, spark_conf
        from flink_sql_runner.model.stored import Meta
        from flink_sql_runner.read.manifest import Job
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
        meta = Meta(version, self.meta["query-id"], self.meta["query-create-timestamp"])
        control = ControlFiles.of(f"{job.checkpoint_root}/{job.name}", version)
        manifest = folder / "runtime-manifest.json"
        manifest.write_text(json.dumps(runtime_manifest(job, meta, "run-1", control)))
        plain, _ = spark_conf(job, version)
        name = app_name(job.name, version)
        submission = Submission(job.name, version, "run-1", name, str(manifest), spark_conf=plain)
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


WAYS = ("runner", "runner-shifted", "handwritten")


@dataclass(frozen=True)
class RunnerResult:
    rows: int
    files: int
    max_files_per_trigger: int
    runs: dict[str, tuple[Run, ...]]
    rows_out: int
    load: tuple[float, float]

    def wall(self, way: str) -> Stats:
        return Stats(tuple(r.measured.seconds for r in self.runs[way]))

    def query(self, way: str) -> Stats:
        return Stats(tuple(r.query_seconds for r in self.runs[way]))

    def batches(self, way: str) -> Stats:
        return Stats(tuple(r.batch_seconds for r in self.runs[way]))

    def cpu(self, way: str) -> Stats:
        return Stats(tuple(r.measured.cpu_seconds for r in self.runs[way]))

    def ratio_of(self, measure: str, way: str = "runner") -> float:
        """`way` over the hand-written program for one measure (wall, query, batches, cpu),
        medians of the same run."""
        of = getattr(self, measure)
        return of(way).median / of("handwritten").median


def run(
    scratch: Path,
    cache: Path,
    rows: int = 4_000_000,
    files: int = 8,
    max_files_per_trigger: int = 2,
    rounds: int = 6,
    say: Callable[[str], None] = print,
) -> RunnerResult:
    data = input_data(cache, rows, files, say)
    programs = Programs(data, max_files_per_trigger)
    say("  warm-up: version 1 of the job, whose output the shifted runs write after")
    seed = one_run(programs, scratch / "runner-seed", "runner")
    runs: dict[str, list[Run]] = {way: [] for way in WAYS}
    load_before = os.getloadavg()[0]
    for round_ in range(rounds):
        order = WAYS[round_ % 3 :] + WAYS[: round_ % 3]
        for way in order:
            runs[way].append(one_run(programs, scratch / f"runner-{round_}-{way}", way, seed))
        say(
            f"  round {round_ + 1}/{rounds}: "
            + ", ".join(
                f"{way} {runs[way][-1].measured.seconds:.1f} s "
                f"(query {runs[way][-1].query_seconds:.1f} s)"
                for way in WAYS
            )
        )
    load_after = os.getloadavg()[0]
    rows_out = same_output({way: runs[way][-1].output for way in WAYS})
    return RunnerResult(
        rows,
        files,
        max_files_per_trigger,
        {way: tuple(done) for way, done in runs.items()},
        rows_out,
        (load_before, load_after),
    )


def one_run(programs: Programs, folder: Path, way: str, seed: Run | None = None) -> Run:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    if way == "runner-shifted":
        assert seed is not None
        shutil.copytree(seed.output, folder / "output")
        argv = programs.runner(folder, version=2)
    elif way == "runner":
        argv = programs.runner(folder)
    else:
        argv = programs.handwritten(folder)
    measured = run_measured(argv, env=spark_env(), cwd=folder, timeout=900)
    if measured.returncode != 0:
        raise RuntimeError(f"{way} exited {measured.returncode}: {measured.stderr[-3000:]}")
    query_s, batch_s, batches = query_times(folder / "events")
    return Run(measured, query_s, batch_s, batches, folder / "output")


def same_output(outputs: dict[str, Path]) -> int:
    """Every output read back through Spark: the rows of the version each way wrote (count and
    column sums) are the same."""
    argv = spark_submit(str(SPARK_PROGRAMS / "count_rows.py"), *map(str, outputs.values()))
    result = subprocess.run(  # noqa: S603 - a list, never a shell
        argv, env=spark_env(), check=True, capture_output=True, text=True
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    written = {
        way: found[str(path)]["2" if way == "runner-shifted" else "1"]
        for way, path in outputs.items()
    }
    if len({json.dumps(v) for v in written.values()}) != 1:
        raise RuntimeError(f"the programs wrote different rows: {found}")
    return int(written["handwritten"][0])
