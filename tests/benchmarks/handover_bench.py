"""Warm and cold handovers side by side, in one run, on local Spark: the pause in commits of a
running job while a change is deployed, and the memory the overlap of two drivers costs.

A rate-micro-batch job (1 s trigger, parquet sink) runs; each round deploys each change three
ways: `--handover cold`, `--handover warm` as `deploy` does it, and warm with `--warm-up 0` (the
new run's first micro-batch not warmed up before its go), each way first in turn so that none
always runs on a warmer machine:

- a config change (its description): a restart from the checkpoint, the same version;
- a query change (another projection): a clean start of a new version;
- warm only, a change whose new run cannot start (`spark.driver.memory: banana`): the pre-flight
  fails; the old driver must be the same process before and after, committing on.

The handover's pause is the gap from the old run's last committed micro-batch to the new run's
first (the mtimes of its checkpoints' `commits/<n>` files, old and new version alike: the two
commits around the moment the deployer saw the old run gone). The largest gap is the largest
between two consecutive commits around the deploy: on 2 cores, the new driver's JVM start beside
the old run can slow the old run's batches more than the handover pauses them. Memory: the
resident set of every process of the job's runs (JVMs and their Python), sampled every 100 ms
during the deploy: its peak against the same sum just before. Every job runs a micro-batch every
second (`BENCH_TRIGGER`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flink_sql_runner.host.timing import ENV as TIMING_ENV
from tests.benchmarks.common import bench_workspace, run_measured
from tests.support.workspace import Workspace

JOB = "ticker"
#: The ways a change is deployed, side by side: cold, warm, and warm without the new run's
#: warm-up (runner/warm_up.py), each way's `deploy` options.
WAYS = ("cold", "warm", "warm, no warm-up")
WAY_OPTIONS = {
    "cold": ("--handover", "cold"),
    "warm": ("--handover", "warm"),
    "warm, no warm-up": ("--handover", "warm", "--warm-up", "0"),
}
FIRST_QUERY = "SELECT value, timestamp AS tick_time FROM ticks"


def query_of(number: int) -> str:
    """The job's query after `number` query changes: each another projection, the columns the
    same from the first change on (the sink's schema contract allows the one added column; a
    column dropped again would be refused)."""
    if number == 0:
        return FIRST_QUERY
    return f"SELECT value, timestamp AS tick_time, value % {number + 1} = 0 AS even FROM ticks"


@dataclass
class Round:
    kind: str  # config, query, cannot-start
    way: str  # cold, warm
    pause: float  # the largest gap between two commits around the deploy, seconds
    deploy: float  # the deploy's wall time, seconds
    rss_before: float  # MiB, every process of the job's runs, before the deploy
    rss_peak: float  # MiB, the same, at its highest during the deploy
    same_driver: bool | None = None  # cannot-start: the old driver survived
    #: Where the pause went, step by step (`pause_steps`): seconds from the old run's last
    #: commit to each step, in order, up to the new run's first commit.
    steps: dict[str, float] = field(default_factory=dict)
    #: The handover's own pause: from the old run's last commit to the new run's first (the
    #: gap between two commits that spans the deployer's `stopped`); nan without a handover.
    handover: float = float("nan")


@dataclass
class HandoverResult:
    rounds: list[Round] = field(default_factory=list)
    trigger: float = 1.0  # seconds, BENCH_TRIGGER's
    target: str = "local"

    def of(self, kind: str, way: str) -> list[Round]:
        return [r for r in self.rounds if r.kind == kind and r.way == way]


class MemorySampler:
    """The resident memory of the job's runs (`resident_mib`), every 100 ms in a thread;
    `peak` is the largest sum seen."""

    def __init__(self, needle: str):
        self.needle, self.peak = needle, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._done.set()
        self._thread.join(5)

    def _sample(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, resident_mib(self.needle))
            time.sleep(0.1)


def resident_mib(needle: str) -> float:
    """The resident memory of every process of a run whose runtime manifest lies under
    `needle`, summed (spark-submit's JVMs and the Python driver: their command lines name it
    after `--manifest`; the deployer's own process does not count)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
            at = args.index("--manifest") if "--manifest" in args else -1
            if at < 0 or at + 1 >= len(args) or needle not in args[at + 1]:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def commit_times(ws: Workspace) -> list[float]:
    root = ws.state / "checkpoints" / JOB
    found = []
    for version in root.iterdir() if root.exists() else ():
        commits = version / "commits"
        if version.name.isdigit() and commits.is_dir():
            found += [f.stat().st_mtime for f in commits.iterdir() if f.name.isdigit()]
    return sorted(found)


def commits_and_plans(ws: Workspace) -> tuple[list[tuple[float, str]], dict[str, float]]:
    """Every committed batch's time with its (version, batch), and when each batch was planned
    (its `offsets/<n>` file's mtime), by the same key."""
    root = ws.state / "checkpoints" / JOB
    commits, planned = [], {}
    for version in root.iterdir() if root.exists() else ():
        if not version.name.isdigit():
            continue
        for kind in ("commits", "offsets"):
            folder = version / kind
            for f in folder.iterdir() if folder.is_dir() else ():
                if f.name.isdigit():
                    key = f"v{version.name}/{f.name}"
                    if kind == "commits":
                        commits.append((f.stat().st_mtime, key))
                    else:
                        planned[key] = f.stat().st_mtime
    return sorted(commits), planned


#: The deployer's steps of a handover, as its timing log marks them (host/timing.py).
DEPLOYER_MARKS = ("stopping", "stopped", "go", "healthy")


def deployer_marks(log: Path) -> dict[str, float]:
    """When the deployer marked each step of the job's handover (its timing log's times)."""
    events = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        doc = json.loads(line)
        if doc.get("event") in DEPLOYER_MARKS and doc.get("job") == JOB:
            events[doc["event"]] = float(doc["at"])
    return events


def handover_gap(
    commits: list[tuple[float, str]], marks: dict[str, float]
) -> tuple[tuple[float, str], tuple[float, str]] | None:
    """The old run's last commit and the new run's first: the two commits around the moment
    the deployer saw the old run gone (`stopped`); None without a handover."""
    stopped = marks.get("stopped")
    if stopped is None:
        return None
    before = [c for c in commits if c[0] <= stopped]
    after = [c for c in commits if c[0] > stopped]
    return (before[-1], after[0]) if before and after else None


def pause_steps(ws: Workspace, log: Path, begun: float, ended: float) -> tuple[dict, float]:
    """The handover's pause (or, without one, the largest pause around the deploy) step by
    step: from the old run's last commit, when the deployer wrote the stop marker
    (`stopping`), saw the old run's processes gone (`stopped`), gave the go (`go`, warm) or
    submitted (cold), when the new run planned its first batch and committed it, and when the
    deployer saw it healthy; with the handover's pause (nan without a handover)."""
    commits, planned = commits_and_plans(ws)
    marks = deployer_marks(log)
    pair = handover_gap(commits, marks)
    if pair is None:
        pairs = [(a, b) for a, b in zip(commits, commits[1:], strict=False)
                 if b[0] >= begun and a[0] <= ended]  # fmt: skip
        if not pairs:
            return {}, float("nan")
        pair = max(pairs, key=lambda p: p[1][0] - p[0][0])
        handover = float("nan")
    else:
        handover = pair[1][0] - pair[0][0]
    (last, _), (first, key) = pair
    steps = {name: at - last for name, at in marks.items()}
    if key in planned:
        steps["new run planned its first batch"] = planned[key] - last
    steps["new run committed it"] = first - last
    return dict(sorted(steps.items(), key=lambda item: item[1])), handover


def largest_gap(times: list[float], begun: float, ended: float) -> float:
    """The largest gap between consecutive commits that spans any part of [begun, ended]."""
    gaps = [b - a for a, b in zip(times, times[1:], strict=False) if b >= begun and a <= ended]
    return max(gaps, default=float("nan"))


def write_job(ws: Workspace, description: str, query: int, **properties: str) -> None:
    fields = {"target-table": "tick_out", "sql": query_of(query)}
    if properties:
        fields["sparkProperties"] = properties
    ws.write_job(JOB, description=description, **fields)


def driver_of(ws: Workspace, state: dict) -> str | None:
    """What names the job's running driver: its pid on local, its submission id on a cluster
    (the version's submission record)."""
    if state.get("target") == "local":
        record = ws.record(JOB)
        return str(record["pid"]) if record else None
    version = state["version"]
    path = ws.state / "checkpoints" / JOB / "_control" / f"v{version}.submission.json"
    return json.loads(path.read_text())["submission_id"] if path.exists() else None


def one_round(ws: Workspace, kind: str, way: str, index: int, state: dict) -> Round:
    if kind == "query":
        state["query"] += 1
        state["version"] += 1
    extra = {**state.get("properties", {})}
    if kind == "cannot-start":
        extra["spark.driver.memory"] = "banana"
    write_job(ws, f"{kind} {way} {index}", state["query"], **extra)
    before = driver_of(ws, state)
    needle = str(ws.state)
    rss_before = resident_mib(needle)
    with MemorySampler(needle) as memory:
        begun = time.time()
        printed = ws.root / f"deploy-{kind}-{way}-{index}.txt"
        log = ws.root / f"timing-{kind}-{way}-{index}.jsonl"
        measured = run_measured(
            ws.argv("deploy", *WAY_OPTIONS[way], "--start-timeout", "300"),
            env={**os.environ, TIMING_ENV: str(log)},
            cwd=ws.root,
            stdout=printed,
            timeout=600,
        )
        ended = time.time()
    if state.get("target") == "local" and (record := ws.record(JOB)) is not None:
        ws.remember(record)
    new = driver_of(ws, state)
    wanted = 1 if kind == "cannot-start" else 0
    if measured.returncode != wanted:
        said = printed.read_text() + measured.stderr
        raise RuntimeError(f"{kind} {way}: deploy exited {measured.returncode}: {said}")
    time.sleep(3)  # commits after the deploy close the last gap
    same = None
    if kind == "cannot-start":
        same = before is not None and before == new
        # What git holds again: the running job.
        write_job(ws, f"back {index}", state["query"], **state.get("properties", {}))
    steps, handover = pause_steps(ws, log, begun, ended)
    return Round(
        kind,
        way,
        largest_gap(commit_times(ws), begun, ended),
        measured.seconds,
        rss_before,
        memory.peak,
        same,
        steps,
        handover,
    )


def run(
    scratch: Path,
    rounds: int = 3,
    settle: float = 4.0,
    say: Callable[[str], None] = print,
    target: str = "local",
) -> HandoverResult:
    """The rounds on `target`: local, or a standalone cluster started here (a master and a
    4-core worker on 127.0.0.1, drivers in cluster mode through the REST gateway)."""
    if target == "local":
        return _run(bench_workspace(scratch / "handover"), "local", rounds, settle, say)
    from tests.support.standalone_cluster import standalone_cluster

    with standalone_cluster(scratch / "standalone") as cluster:
        options = (
            "--rest-gateway",
            cluster.rest.replace("spark://", "http://"),
            "--cluster-api",
            cluster.web_ui,
        )
        ws = bench_workspace(scratch / "handover-standalone", cluster.master, "standalone", options)
        try:
            return _run(ws, "standalone", rounds, settle, say)
        finally:
            ws.cli("stop", "--all")


#: A driver and one executor core per run, so that two runs fit on the 4-core worker.
CLUSTER_PROPERTIES = {
    "spark.cores.max": "1",
    "spark.executor.memory": "512m",
    "spark.driver.memory": "512m",
}


def _run(
    ws: Workspace, target: str, rounds: int, settle: float, say: Callable[[str], None]
) -> HandoverResult:
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
    state: dict = {"query": 0, "version": 1, "target": target}
    if target != "local":
        state["properties"] = CLUSTER_PROPERTIES
    write_job(ws, "round 0", 0, **state.get("properties", {}))
    result = HandoverResult(target=target)
    try:
        first = ws.deploy()
        if first.returncode != 0:
            raise RuntimeError(f"the first deploy failed: {first.stdout}{first.stderr}")
        for index in range(rounds):
            order = WAYS[index % len(WAYS) :] + WAYS[: index % len(WAYS)]  # each first in turn
            plan = [(kind, way) for kind in ("config", "query") for way in order]
            plan.append(("cannot-start", "warm"))
            for kind, way in plan:
                time.sleep(settle)  # the job commits steadily before each change
                done = one_round(ws, kind, way, index, state)
                result.rounds.append(done)
                say(
                    f"  round {index + 1}/{rounds} {kind:<12} {way}: handover "
                    f"{done.handover:5.1f} s, largest gap {done.pause:5.1f} s, "
                    f"deploy {done.deploy:5.1f} s, memory {done.rss_before:.0f} -> "
                    f"{done.rss_peak:.0f} MiB"
                    + (f", same driver: {done.same_driver}" if done.same_driver is not None else "")
                )
                if done.steps:
                    say("    " + ", ".join(f"{k} +{v:.2f}" for k, v in done.steps.items()))
        return result
    finally:
        ws.kill_all()
