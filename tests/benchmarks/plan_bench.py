"""`plan` over many jobs with their stored manifests in moto's S3 server, against the original
tool's way (sequential_plan.py: one job after another, one S3 call at a time); and how `plan`'s
time and memory grow with the jobs (`run_growth`): cold, and again after 1 % of the job files
were edited since the last `plan`.

The workspace: N job files, a catalog of 20 source tables and N target tables, a template, and
for every job a stored manifest in S3, a valid local checkpoint and a run record naming a live
process (this benchmark's own pid), so `plan` sees N running jobs and decides noop /
stop-and-restart / stop-and-start-clean. `plan` only reads; nothing is started or stopped.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flink_sql_runner.host.timing import ENV as TIMING_ENV
from tests.benchmarks.common import (
    Measured,
    Stats,
    moto_server_process,
    run_measured,
    s3_env,
    timing_events,
)
from tests.support.workspace import Workspace

SOURCES = 20
TABLES_PER_FILE = 1000
BUCKET = "bench-manifests"
PREFIX = "flink-sql-runner/manifests/"
TEMPLATE: dict[str, Any] = {
    "description": "",
    "desired-state": "running",
    "outputMode": "append",
    "trigger": {"processingTime": "5 seconds"},
    "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
    "sparkProperties": {"spark.sql.shuffle.partitions": "4", "spark.sql.session.timeZone": "UTC"},
}
QUERIES = (
    "SELECT id, amount, customer, ts FROM {src} WHERE amount > {n}",
    "WITH big AS (SELECT * FROM {src} WHERE amount > {n})\n"
    "SELECT id, customer, amount * 1.2 AS gross, ts FROM big",
    "SELECT a.id, a.amount, b.customer, a.ts FROM {src} a\n"
    "JOIN {other} b ON a.id = b.id AND b.ts BETWEEN a.ts AND a.ts + INTERVAL 1 MINUTE\n"
    "WHERE a.amount > {n}",
)


@dataclass(frozen=True)
class Mix:
    """Shares of the jobs whose stored manifest differs from git."""

    config_changed: float = 0.2
    query_changed: float = 0.1

    def kind(self, index: int, total: int) -> str:
        share = index / total
        if share < self.query_changed:
            return "query"
        if share < self.query_changed + self.config_changed:
            return "config"
        return "unchanged"


STORE = f"s3://{BUCKET}/{PREFIX}"


def plan_argv(ws: Workspace) -> list[str]:
    return ws.argv("plan", "--manifest-store", STORE, "--output", "json")


def baseline_argv(ws: Workspace) -> list[str]:
    module = "tests.benchmarks.sequential_plan"
    args = ["--path", str(ws.jobs), "--template", str(ws.template), "--store", STORE]
    return [sys.executable, "-m", module, *args]


def job_name(index: int) -> str:
    return f"job-{index:05d}"


def write_inputs(root: Path, jobs: int, one_query_each: bool = False) -> Workspace:
    """Job files, the table catalog and the template (checkpoints under `root`). With
    `one_query_each`, each job's query also names a column of its own (`id AS key_00042`), as
    a fleet's jobs mostly hold a query each; else three queries, their numbers and sources
    changed."""
    ws = Workspace(root)
    template = dict(TEMPLATE, **{"checkpoint-root": str(root / "checkpoints")})
    ws.template.write_text(yaml.safe_dump(template, sort_keys=False))
    schema = "id BIGINT, amount DOUBLE, customer STRING, ts TIMESTAMP"
    tables: list[dict[str, Any]] = [
        {
            "name": f"src_{s:02d}",
            "format": "json",
            "options": {"path": str(root / "data" / f"src_{s:02d}"), "maxFilesPerTrigger": 10},
            "schema": schema,
            "watermark": {"column": "ts", "delay": "1 minute"},
        }
        for s in range(SOURCES)
    ]
    for s in range(SOURCES):  # the sources are there: a deploy refuses a path that is not
        (root / "data" / f"src_{s:02d}").mkdir(parents=True, exist_ok=True)
    for i in range(jobs):
        name = job_name(i)
        target = {"name": f"out_{i:05d}", "format": "parquet"}
        tables.append({**target, "options": {"path": str(root / "out" / name)}})
        sql = QUERIES[i % len(QUERIES)].format(
            src=f"src_{i % SOURCES:02d}", other=f"src_{(i + 1) % SOURCES:02d}", n=i
        )
        if one_query_each:
            sql = sql.replace("SELECT ", f"SELECT id AS key_{i:05d}, ", 1)
        ws.write_job(
            name,
            description=f"Benchmark job {i}",
            sql=sql,
            sparkProperties={"spark.sql.shuffle.partitions": str(2 + i % 3)},
            **{"target-table": f"out_{i:05d}"},
        )
    for part in range(0, len(tables), TABLES_PER_FILE):  # a YAML file holds at most 1 MiB
        ws.write_tables(
            tables[part : part + TABLES_PER_FILE], f"tables-{part // TABLES_PER_FILE:03d}.yaml"
        )
    return ws


def stored_manifests(ws: Workspace, mix: Mix) -> tuple[dict[str, str], dict[str, int]]:
    """{name: stored YAML} as an earlier deploy recorded them (some older), and the counts."""
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.act.settings import Settings
    from flink_sql_runner.model.stored import Meta, StoredManifest

    settings = Settings([ws.jobs], [ws.tables], ws.template, ws.state)
    jobs = Deployment(settings).load()
    out, counts = {}, {"unchanged": 0, "config": 0, "query": 0}
    for index, job in enumerate(jobs):
        kind = mix.kind(index, len(jobs))
        counts[kind] += 1
        spec = dict(job.spec)
        if kind == "config":
            spec["description"] = "an older description"
        elif kind == "query":
            spec["sql"] = spec["sql"].replace(" > ", " >= ")
        out[job.name] = StoredManifest(spec, job.tables, Meta.new(1)).to_yaml()
    return out, counts


def write_state(ws: Workspace, names: list[str]) -> None:
    """A valid checkpoint (one committed batch) and a live run record for every job."""
    from flink_sql_runner.host import processes as procs

    runs = ws.state / "runs"
    runs.mkdir(parents=True)
    me, started = os.getpid(), procs.start_marker(os.getpid())
    for name in names:
        checkpoint = ws.root / "checkpoints" / name / "1"
        for folder in ("offsets", "commits"):
            (checkpoint / folder).mkdir(parents=True)
            (checkpoint / folder / "0").write_text("v1\n{}\n")
        (checkpoint / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}))
        record = {"name": name, "version": 1, "run-id": str(uuid.uuid4()), "pid": me}
        record["started"] = started
        (runs / f"{name}.json").write_text(json.dumps(record))


def s3_client(env: dict[str, str]) -> Any:
    import boto3

    return boto3.session.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    ).client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])


def upload(client: Any, manifests: dict[str, str]) -> bytes:
    """Store the manifests, then let the store build its index (`_index.json`) as a deploy
    does at its end; returns the index's body."""
    from flink_sql_runner.stores.s3 import INDEX_KEY, S3Store

    if BUCKET not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
        client.create_bucket(Bucket=BUCKET)

    def put(item: tuple[str, str]) -> None:
        client.put_object(Bucket=BUCKET, Key=f"{PREFIX}{item[0]}.yaml", Body=item[1].encode())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, manifests.items()))
    store = S3Store(BUCKET, PREFIX, client=client)
    if not store.refresh_index():
        raise RuntimeError("the store did not write its index")
    return client.get_object(Bucket=BUCKET, Key=f"{PREFIX}{INDEX_KEY}")["Body"].read()


def set_index(client: Any, body: bytes | None) -> None:
    """Put the store's index in place (`body`) or take it away (None) before a run."""
    from flink_sql_runner.stores.s3 import INDEX_KEY

    key = f"{PREFIX}{INDEX_KEY}"
    if body is None:
        client.delete_object(Bucket=BUCKET, Key=key)
    else:
        client.put_object(Bucket=BUCKET, Key=key, Body=body)


PHASES = (
    ("start-up (interpreter, imports)", "started", "command"),
    ("load + validate", "command", "loaded"),
    ("gather (S3, checkpoints, runs)", "loaded", "gathered"),
    ("decide", "gathered", "decided"),
    ("render + exit", "decided", "ended"),
)


PHASE_NAMES = tuple(name for name, _, _ in PHASES)


def phase_seconds(measured: Measured, log: Path) -> dict[str, float]:
    """The CLI's own phases, from its timing log and the process's start and end."""
    at = timing_events(log)
    at["started"] = measured.started_at
    at["ended"] = measured.started_at + measured.seconds
    return {name: at[end] - at[begin] for name, begin, end in PHASES}


@dataclass(frozen=True)
class Timed:
    """One run of one way: the child process, and the CPU moto's server spent meanwhile."""

    measured: Measured
    server_cpu: float


#: What is compared: `plan` with the store's index (the state after any deploy), `plan` without
#: it (a GET per manifest, as before the index existed), the original tool's sequential loop.
WAYS = ("indexed", "cold", "baseline")


@dataclass(frozen=True)
class PlanResult:
    jobs: int
    latency_ms: float
    counts: dict[str, int]
    timed: dict[str, tuple[Timed, ...]]
    phases: dict[str, dict[str, Stats]]  # way -> phase -> seconds
    load: tuple[float, float]  # 1-minute load average before and after

    def seconds(self, way: str) -> Stats:
        return Stats(tuple(t.measured.seconds for t in self.timed[way]))

    def cpu(self, way: str) -> Stats:
        return Stats(tuple(t.measured.cpu_seconds for t in self.timed[way]))

    def server_cpu(self, way: str) -> Stats:
        return Stats(tuple(t.server_cpu for t in self.timed[way]))

    def peak_rss(self, way: str) -> float:
        return max(t.measured.peak_rss_mib for t in self.timed[way])

    def speedup(self, way: str) -> float:
        """Sequential time over `way`'s, medians of the same run."""
        return self.seconds("baseline").median / self.seconds(way).median


def run(
    scratch: Path,
    jobs: int = 1000,
    rounds: int = 6,
    latency_ms: float = 0,
    mix: Mix = Mix(),
    say: Callable[[str], None] = print,
) -> PlanResult:
    """Build the workspace, start moto's server, then time the three ways side by side,
    rotating which goes first; `plan`'s phases come from its own timing log."""
    ws = write_inputs(scratch / f"plan-{latency_ms:g}ms", jobs)
    manifests, counts = stored_manifests(ws, mix)
    write_state(ws, sorted(manifests))
    with moto_server_process(latency_ms) as server:
        env = s3_env(server.url, scratch)
        client = s3_client(env)
        index = upload(client, manifests)
        say(f"  {jobs} jobs, {len(manifests)} stored manifests, moto at {server.url}")
        load_before = os.getloadavg()[0]
        timed: dict[str, list[Timed]] = {way: [] for way in WAYS}
        phases: dict[str, dict[str, list[float]]] = {"indexed": {}, "cold": {}}
        out, log = scratch / "plan.json", scratch / "timing.jsonl"
        for round_ in range(rounds):
            for way in WAYS[round_ % 3 :] + WAYS[: round_ % 3]:
                if way != "baseline":
                    set_index(client, index if way == "indexed" else None)
                argv = baseline_argv(ws) if way == "baseline" else plan_argv(ws)
                log.unlink(missing_ok=True)
                cpu = server.cpu_seconds()
                measured = run_measured(argv, env={**env, TIMING_ENV: str(log)}, stdout=out)
                if measured.returncode != 0:
                    raise RuntimeError(f"{way} exited {measured.returncode}: {measured.stderr}")
                timed[way].append(Timed(measured, server.cpu_seconds() - cpu))
                if way == "baseline":
                    _check_baseline(out, counts)
                    continue
                _check_plan(out, counts)
                for phase, seconds in phase_seconds(measured, log).items():
                    phases[way].setdefault(phase, []).append(seconds)
            say(
                f"  round {round_ + 1}/{rounds}: "
                + ", ".join(f"{way} {timed[way][-1].measured.seconds:.2f} s" for way in WAYS)
            )
        load_after = os.getloadavg()[0]
    return PlanResult(
        jobs=jobs,
        latency_ms=latency_ms,
        counts=counts,
        timed={way: tuple(done) for way, done in timed.items()},
        phases={way: {k: Stats(tuple(v)) for k, v in p.items()} for way, p in phases.items()},
        load=(load_before, load_after),
    )


def _check_plan(out: Path, counts: dict[str, int]) -> None:
    """`plan` must decide what the workspace was built for."""
    expected = {
        "noop": counts["unchanged"],
        "stop-and-restart-from-checkpoint": counts["config"],
        "stop-and-start-clean": counts["query"],
    }
    found = _actions(out)
    if found != {k: v for k, v in expected.items() if v}:
        raise RuntimeError(f"plan decided {found}, expected {expected}")


def _actions(out: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for job in json.loads(out.read_text())["jobs"]:
        counts[job["action"]] = counts.get(job["action"], 0) + 1
    return counts


def _check_baseline(out: Path, counts: dict[str, int]) -> None:
    """The sequential loop must find the same changed jobs, or it did not do the same work."""
    found = json.loads(out.read_text())
    if found["changed"] != counts["config"] + counts["query"]:
        raise RuntimeError(f"the sequential loop found {found}, expected {counts}")


# -- growth: 1,000 and 10,000 jobs, cold and with 1 % edited --------------------------------------

#: The two runs of one round: `plan` on a state folder as the workspace was built (nothing a
#: earlier `plan` left there), then, after 1 % of the job files were edited, `plan` again.
GROWTH_WAYS = ("cold", "edited")
EDITED_SHARE = 0.01
#: After those rounds, the store as a deploy leaves it (every job stored as git has it), then
#: each round: `plan` (not measured: what a `plan` keeps in the state folder is there), 1 % of
#: the job files edited, `plan` measured. What CI sees on the push after a deploy.
IN_STEP = "in-step"


@dataclass(frozen=True)
class SizeResult:
    jobs: int
    edited: int  # job files edited before each "edited" run
    timed: dict[str, tuple[Measured, ...]]  # way -> rounds
    phases: dict[str, dict[str, Stats]]  # way -> phase -> seconds

    def seconds(self, way: str) -> Stats:
        return Stats(tuple(m.seconds for m in self.timed[way]))

    def cpu(self, way: str) -> Stats:
        return Stats(tuple(m.cpu_seconds for m in self.timed[way]))

    def peak_rss(self, way: str) -> float:
        return max(m.peak_rss_mib for m in self.timed[way])


@dataclass(frozen=True)
class GrowthResult:
    latency_ms: float
    sizes: tuple[SizeResult, ...]  # smallest first
    load: tuple[float, float]

    def growth(self, way: str) -> float:
        """The largest size's median time over the smallest's (same run)."""
        return self.sizes[-1].seconds(way).median / self.sizes[0].seconds(way).median


def edited_jobs(jobs: int, mix: Mix = Mix()) -> list[str]:
    """1 % of the jobs (at least one), among those whose config changed: editing their
    description keeps them config changed, so every run decides the same."""
    first = int(jobs * mix.query_changed)
    count = max(1, round(jobs * EDITED_SHARE))
    picked = [i for i in range(first, jobs) if mix.kind(i, jobs) == "config"][:count]
    return [job_name(i) for i in picked]


def edit_jobs(ws: Workspace, names: list[str], mark: str) -> None:
    """A new description in each named job file (a change since the last `plan`)."""
    for name in names:
        path = ws.jobs / f"{name}.yaml"
        lines = path.read_text().splitlines(keepends=True)
        at = next(i for i, line in enumerate(lines) if line.startswith("description:"))
        lines[at] = f"description: Benchmark job {name}, edited ({mark})\n"
        path.write_text("".join(lines))


def state_files(ws: Workspace) -> set[Path]:
    return set(ws.state.rglob("*"))


def reset_state(ws: Workspace, pristine: set[Path]) -> None:
    """Take away whatever a `plan` left in the state folder (e.g. a cache of what it read),
    so that the next one starts cold; the run records and checkpoints stay."""
    for path in sorted(state_files(ws) - pristine, reverse=True):  # files before their folders
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()


def _timed_plan(
    ws: Workspace,
    env: dict[str, str],
    out: Path,
    log: Path,
    counts: dict[str, int],
    phases: dict[str, list[float]],
    way: str,
) -> Measured:
    """One measured `plan`, checked to decide what `counts` say; its phases added to `phases`."""
    log.unlink(missing_ok=True)
    measured = run_measured(plan_argv(ws), env={**env, TIMING_ENV: str(log)}, stdout=out)
    if measured.returncode != 0:
        raise RuntimeError(f"{way} exited {measured.returncode}: {measured.stderr}")
    _check_plan(out, counts)
    for phase, seconds in phase_seconds(measured, log).items():
        phases.setdefault(phase, []).append(seconds)
    return measured


def run_growth(
    scratch: Path,
    sizes: list[int],
    rounds: int = 3,
    latency_ms: float = 20,
    say: Callable[[str], None] = print,
) -> GrowthResult:
    """For each size, the workspace of `run` (stored manifests, store index, checkpoints, live
    run records) and `rounds` rounds of: `plan` cold, then 1 % of the job files edited, then
    `plan` again (which may reuse what the cold one left in the state folder). Sizes run one
    after another, each on its own moto server; the ratio of their times is `growth`."""
    load_before = os.getloadavg()[0]
    results = []
    for jobs in sorted(sizes):
        ws = write_inputs(scratch / f"growth-{jobs}", jobs)
        manifests, counts = stored_manifests(ws, Mix())
        write_state(ws, sorted(manifests))
        pristine = state_files(ws)
        edited = edited_jobs(jobs)
        timed: dict[str, list[Measured]] = {way: [] for way in GROWTH_WAYS}
        phases: dict[str, dict[str, list[float]]] = {way: {} for way in GROWTH_WAYS}
        with moto_server_process(latency_ms) as server:
            env = s3_env(server.url, scratch)
            upload(s3_client(env), manifests)
            say(f"  {jobs} jobs, {len(edited)} edited between runs, moto at {server.url}")
            out, log = scratch / "plan.json", scratch / "timing.jsonl"
            for round_ in range(rounds):
                reset_state(ws, pristine)
                for way in GROWTH_WAYS:
                    if way == "edited":
                        edit_jobs(ws, edited, f"round {round_ + 1}")
                    timed[way].append(_timed_plan(ws, env, out, log, counts, phases[way], way))
                say(
                    f"  round {round_ + 1}/{rounds}: "
                    + ", ".join(f"{way} {timed[way][-1].seconds:.2f} s" for way in GROWTH_WAYS)
                )
            steady, _ = stored_manifests(ws, Mix(0.0, 0.0))
            upload(s3_client(env), steady)
            in_step = {"unchanged": jobs - len(edited), "config": len(edited), "query": 0}
            timed[IN_STEP], phases[IN_STEP] = [], {}
            for round_ in range(rounds):
                reset_state(ws, pristine)
                warm = run_measured(plan_argv(ws), env=env, stdout=out)
                if warm.returncode != 0:
                    raise RuntimeError(f"{IN_STEP} exited {warm.returncode}: {warm.stderr}")
                steady_counts = {"unchanged": jobs, "config": 0, "query": 0}
                _check_plan(out, in_step if round_ else steady_counts)  # a round's edits stay
                edit_jobs(ws, edited, f"in step, round {round_ + 1}")
                measured = _timed_plan(ws, env, out, log, in_step, phases[IN_STEP], IN_STEP)
                timed[IN_STEP].append(measured)
                say(f"  {IN_STEP} round {round_ + 1}/{rounds}: {measured.seconds:.2f} s")
        results.append(
            SizeResult(
                jobs,
                len(edited),
                {way: tuple(done) for way, done in timed.items()},
                {way: {k: Stats(tuple(v)) for k, v in p.items()} for way, p in phases.items()},
            )
        )
    return GrowthResult(latency_ms, tuple(results), (load_before, os.getloadavg()[0]))
