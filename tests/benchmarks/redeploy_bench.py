"""Redeploy latency: a config change (the description) of a running local job, from `deploy`'s
start to the first committed micro-batch of the new run, split into the deployer's own time and
Spark's.

A rate-micro-batch job (1 second trigger, parquet sink) is deployed and left running; each round
changes its description and runs `deploy` (restart from the checkpoint). The deployer's timing log
(FLINK_SQL_RUNNER_TIMING_LOG) gives its steps; a thread polls the old driver's pid every 5 ms for
the moment its JVM is gone; the first committed batch of the new run is the oldest
`commits/<n>` file of the checkpoint written after the new spark-submit was started (its mtime).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flink_sql_runner.host import processes as procs
from flink_sql_runner.host.timing import ENV as TIMING_ENV
from tests.benchmarks.common import (
    Measured,
    Stats,
    Timeline,
    bench_workspace,
    run_measured,
    timing_events,
)
from tests.support.workspace import Workspace

JOB = "ticker"
#: (label, from event, to event, whose time). "gone" is the old JVM's exit, "commit" the first
#: committed batch of the new run; the rest are the deployer's timing-log events.
SPANS = (
    ("CLI start-up (interpreter, imports)", "started", "command", "deployer"),
    ("load + validate", "command", "loaded", "deployer"),
    ("lock, gather, decide, intent record", "loaded", "stopping", "deployer"),
    ("old run stops (marker seen, batch drained, JVM exit)", "stopping", "gone", "spark"),
    ("deployer notices the exit", "gone", "stopped", "deployer"),
    ("runtime manifest, spark-submit started", "stopped", "submitted", "deployer"),
    ("spark-submit to first committed batch", "submitted", "commit", "spark"),
)
AFTER = (
    ("first commit to healthy (status polls)", "commit", "healthy"),
    ("manifest recorded, exit", "healthy", "ended"),
)


class ExitWatcher:
    """Notes when a process is gone, polling every 5 ms in a thread."""

    def __init__(self, pid: int, started: str):
        self.gone_at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(pid, started), daemon=True)
        self._thread.start()

    def _watch(self, pid: int, started: str) -> None:
        while not self._done.is_set():
            if not procs.is_same_process(pid, started):
                self.gone_at = time.time()
                return
            time.sleep(0.005)

    def stop(self) -> float | None:
        self._done.set()
        self._thread.join()
        return self.gone_at


def first_commit_after(checkpoint: Path, after: float) -> float:
    """The mtime of the oldest numeric `commits/` file written after `after`."""
    times = [
        path.stat().st_mtime
        for path in (checkpoint / "commits").iterdir()
        if path.name.isdigit() and path.stat().st_mtime >= after
    ]
    if not times:
        raise RuntimeError(f"no batch committed in {checkpoint} after the new run started")
    return min(times)


@dataclass(frozen=True)
class Round(Timeline):
    measured: Measured
    SPANS = SPANS
    FROM = "started"
    at: dict[str, float]  # Unix time of each event of SPANS and AFTER


@dataclass(frozen=True)
class RedeployResult:
    rounds: tuple[Round, ...]
    load: tuple[float, float]

    def stats(self, measure: Callable[[Round], float]) -> Stats:
        return Stats(tuple(measure(r) for r in self.rounds))


def setup(ws: Workspace) -> None:
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 50, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        ]
    )
    write_job(ws, "round 0")


def write_job(ws: Workspace, description: str) -> None:
    sql = "SELECT value, timestamp AS tick_time FROM ticks"
    ws.write_job(JOB, description=description, **{"target-table": "tick_out", "sql": sql})


def one_round(ws: Workspace, index: int, log: Path) -> Round:
    write_job(ws, f"round {index}")
    record = ws.record(JOB)
    if record is None:
        raise RuntimeError("the job is not running before the redeploy")
    watcher = ExitWatcher(int(record["pid"]), str(record["started"]))
    log.unlink(missing_ok=True)
    env = {**os.environ, TIMING_ENV: str(log)}
    try:
        measured = run_measured(ws.argv("deploy"), env=env, cwd=ws.root, timeout=300)
    finally:
        gone = watcher.stop()
        new = ws.record(JOB)
        if new is not None:
            ws.remember(new)
    if measured.returncode != 0 or gone is None:
        raise RuntimeError(f"deploy exited {measured.returncode}: {measured.stderr[-3000:]}")
    at = timing_events(log)
    at["started"] = measured.started_at
    at["ended"] = measured.started_at + measured.seconds
    at["gone"] = gone
    at["commit"] = first_commit_after(ws.state / "checkpoints" / JOB / "1", at["submitted"])
    return Round(measured, at)


def run(
    scratch: Path, rounds: int = 5, settle: float = 3.0, say: Callable[[str], None] = print
) -> RedeployResult:
    ws = bench_workspace(scratch / "redeploy")
    setup(ws)
    log = scratch / "redeploy-timing.jsonl"
    try:
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        load_before = os.getloadavg()[0]
        done = []
        for index in range(1, rounds + 1):
            time.sleep(settle)  # the job runs steadily before it is redeployed
            done.append(one_round(ws, index, log))
            say(
                f"  round {index}/{rounds}: first batch after {done[-1].to_first_commit:.2f} s "
                f"(deployer {done[-1].share('deployer'):.2f} s, "
                f"Spark {done[-1].share('spark'):.2f} s)"
            )
        return RedeployResult(tuple(done), (load_before, os.getloadavg()[0]))
    finally:
        ws.kill_all()
