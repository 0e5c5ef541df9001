"""Recovery latency: a running local job's driver is SIGKILLed; how long until the first
committed micro-batch of the run `watch` starts in its place, split into the watcher's share and
Spark's.

A rate-micro-batch job (1 second trigger, parquet sink) is deployed, and `watch` runs beside it
(`--interval` as given) with the timing log (FLINK_SQL_RUNNER_TIMING_LOG) on. Each round kills the
driver's process group, then reads the watcher's marks: the look that found the job down
(`look`, `wanted`), the spark-submit (`submitting`, `submitted`) and the status poll that saw it
healthy; the first committed batch is the oldest `commits/<n>` file of the checkpoint written
after that spark-submit started (its mtime).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flink_sql_runner.host.timing import ENV as TIMING_ENV
from tests.benchmarks.common import Stats, Timeline, bench_workspace
from tests.benchmarks.redeploy_bench import first_commit_after, setup
from tests.support.workspace import Workspace, kill_driver

JOB = "ticker"
#: (label, from event, to event, whose time). "killed" is the SIGKILL, "commit" the first
#: committed batch of the new run; the rest are the watcher's timing-log events.
SPANS = (
    ("waiting for the next look (the interval)", "killed", "look", "watcher"),
    ("the look: one listing, status files, records", "look", "wanted", "watcher"),
    ("store lock, facts again, decide, intent record", "wanted", "submitting", "watcher"),
    ("runtime manifest, spark-submit started", "submitting", "submitted", "watcher"),
    ("spark-submit to first committed batch", "submitted", "commit", "spark"),
)
AFTER = (("first commit to healthy (status polls)", "commit", "healthy"),)


@dataclass(frozen=True)
class Round(Timeline):
    SPANS = SPANS
    FROM = "killed"
    at: dict[str, float]  # Unix time of each event of SPANS and AFTER


@dataclass(frozen=True)
class RecoveryResult:
    rounds: tuple[Round, ...]
    interval: float
    load: tuple[float, float]

    def stats(self, measure: Callable[[Round], float]) -> Stats:
        return Stats(tuple(measure(r) for r in self.rounds))


def marks(log: Path) -> list[tuple[str, float]]:
    """The timing log's events in order: (event, Unix time)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [(doc["event"], float(doc["at"])) for doc in map(json.loads, lines)]


def recovery_marks(events: list[tuple[str, float]], killed: float) -> dict[str, float] | None:
    """The marks of the first restart after `killed`, once it is healthy; None before."""
    at: dict[str, float] = {"killed": killed}
    look = None
    for event, when in events:
        if when < killed:
            continue
        if event == "look" and "wanted" not in at:
            look = when
        elif event == "wanted" and "wanted" not in at:
            at["look"], at["wanted"] = look if look is not None else when, when
        elif event in ("submitting", "submitted", "healthy") and "wanted" in at:
            at.setdefault(event, when)
    return at if "healthy" in at and "submitted" in at else None


def start_watcher(ws: Workspace, interval: float, log: Path) -> subprocess.Popen[bytes]:
    # Each kill is a first failure (restarted at once): the job is healthy for longer than
    # --stable-after before each round; the rounds' kills are not a crash loop.
    argv = ws.argv(
        "watch", "--interval", str(interval), "--stable-after", "2", "--max-failures", "1000",
        paths=False,
    )  # fmt: skip
    for option in ("--table-definition-path", "--template-file"):  # watch reads the store only
        at = argv.index(option)
        del argv[at : at + 2]
    out = (ws.root / "watch.log").open("wb")
    return subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv,
        cwd=ws.root,
        env={**os.environ, TIMING_ENV: str(log)},
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def one_round(ws: Workspace, log: Path, timeout: float = 300) -> Round:
    record = ws.record(JOB)
    if record is None:
        raise RuntimeError("the job is not running before the round")
    killed = time.time()
    kill_driver(int(record["pid"]))
    deadline = time.monotonic() + timeout
    while (at := recovery_marks(marks(log), killed)) is None:
        if time.monotonic() > deadline:
            said = (ws.root / "watch.log").read_text()[-3000:]
            raise RuntimeError(f"no healthy restart within {timeout:.0f} s; watch said:\n{said}")
        time.sleep(0.2)
    new = ws.record(JOB)
    if new is not None:
        ws.remember(new)
    at["commit"] = first_commit_after(ws.state / "checkpoints" / JOB / "1", at["submitted"])
    return Round(at)


def run(
    scratch: Path,
    rounds: int = 5,
    interval: float = 1.0,
    settle: float = 5.0,
    say: Callable[[str], None] = print,
) -> RecoveryResult:
    ws = bench_workspace(scratch / "recovery")
    setup(ws)
    log = scratch / "recovery-timing.jsonl"
    watcher = None
    try:
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        watcher = start_watcher(ws, interval, log)
        load_before = os.getloadavg()[0]
        done = []
        for index in range(1, rounds + 1):
            time.sleep(settle)  # the job runs steadily, and is healthy for watch, before it dies
            done.append(one_round(ws, log))
            r = done[-1]
            say(
                f"  round {index}/{rounds}: first batch {r.to_first_commit:.2f} s after the kill "
                f"(watcher {r.share('watcher'):.2f} s, Spark {r.share('spark'):.2f} s)"
            )
        return RecoveryResult(tuple(done), interval, (load_before, os.getloadavg()[0]))
    finally:
        if watcher is not None:
            os.killpg(watcher.pid, signal.SIGTERM)
            try:
                watcher.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(watcher.pid, signal.SIGKILL)
                watcher.wait()
        ws.kill_all()
