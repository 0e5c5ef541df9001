"""`status`: per job, what the store records, what runs, how it is doing, and drift.

Health comes from `health.py`: the target's listing, the runner's status file of the stored
version (heartbeat, last batch, rates, lag) and what `watch` recorded (failures, restarts,
backoff, crash-looping). The JSON document is described in docs/reference/status-json.md.

What it reads costs listings per look where nothing changed (`status_reads.py`): the store
through its index, the watch records and the beacons of each checkpoint root by one listing,
and of each job only what may have changed since the last `status` on this machine: the status
file and the checkpoint's last commit of a job whose run is (or may be) alive, or whose beacon
moved.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from flink_sql_runner.decide.changes import ChangeKind, diff, severity
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.logs import log_query
from flink_sql_runner.host import runtime
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.json_values import json_batch, json_time_of_text
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.manifest import Job
from flink_sql_runner.read.secrets import redact_all
from flink_sql_runner.watch.beacons import Beacons
from flink_sql_runner.watch.beacons import checkpoint_root as beacon_root
from flink_sql_runner.watch.health import Health, State, assess
from flink_sql_runner.watch.records import WatchRecord, manifest_digest, parse_utc
from flink_sql_runner.watch.status_reads import JobReads, StatusReads

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment

#: A running job whose status file is older than this, by the clocks, is shown as stalled.
QUIET_SECONDS = 120.0


def _drift(facts: JobFacts, compared: bool) -> str:
    if not compared:
        return "-"
    if facts.desired is None:
        return "not in git" if facts.stored else "unknown to git and store"
    if facts.stored is None:
        return "not deployed"
    job, tables = facts.desired.resolved(facts.stored.job, facts.stored.tables)
    kind = severity(diff(job, tables, facts.desired.spec, facts.desired.tables))
    return "in sync" if kind is ChangeKind.NONE else f"git differs ({kind.label})"


def _quiet(health: Health, now: datetime) -> str | None:
    """A running job whose runner has not written for long: shown stalled (by the clocks;
    `watch` judges by its own clock and the heartbeat counter instead)."""
    updated = parse_utc((health.status or {}).get("updated"))
    if health.state is not State.HEALTHY or updated is None:
        return None
    quiet = (now - updated).total_seconds()
    return f"no heartbeat for {quiet:.0f} s" if quiet > QUIET_SECONDS else None


#: A status file stamped further than this ahead of this machine's clock is said to be: a
#: heartbeat that stopped would not be seen by time while the clocks differ so.
AHEAD_SECONDS = 60.0


def _ahead(health: Health, now: datetime) -> str | None:
    updated = parse_utc((health.status or {}).get("updated"))
    if updated is None or health.state is not State.HEALTHY:
        return None
    ahead = (updated - now).total_seconds()
    if ahead <= AHEAD_SECONDS:
        return None
    return (
        f"its status file is stamped {ahead:.0f} s ahead of this machine's clock: the clocks "
        "differ, and a heartbeat that stopped is not seen by time"
    )


def health_of(
    f: JobFacts, status: dict[str, Any] | None, records: dict[str, WatchRecord], now: datetime
) -> tuple[Health, WatchRecord | None]:
    stored = f.stored
    assert stored is not None
    record = records.get(f.name)
    if record is not None and record.manifest != manifest_digest(stored):
        record = None  # about a job a deploy has changed since
    health = assess(stored, f.writers, status, record, now)
    quiet = _quiet(health, now)
    if quiet:
        health = assess(stored, f.writers, status, record, now, stalled=quiet)
    return health, record


def _log(deployment: Deployment, facts: JobFacts) -> str | None:
    """Where the job's driver log is (`logs NAME` prints it): a path, or where the target keeps
    it; None when there is none, or the target cannot say now."""
    try:
        found = deployment.target.driver_log(log_query(facts))
    except FsrError:
        return None
    return found.where if found is not None else None


def status_rows(
    deployment: Deployment,
    jobs: list[Job],
    now: datetime | None = None,
    reads: StatusReads | None = None,
    seen: list[JobFacts] | None = None,
) -> list[dict[str, Any]]:
    """`reads`: what the last `status` read (kept in the state folder; saved back here).
    `seen`: given, the facts the rows were made from are added to it (the page draws the
    lineage from the same look's manifests)."""
    facts = gather(
        jobs, deployment.store, deployment.target, deployment.storage,
        workers=deployment.settings.parallelism, checkpoints=False,
    )  # fmt: skip
    if seen is not None:
        seen.extend(facts)
    if reads is None:
        reads = StatusReads.load(deployment.status_cache, deployment.store.location)
    unwatched = None  # why watch's records could not be read: said on every row
    try:
        records = reads.watch_records(deployment.store)
    except FsrError as exc:
        records = {}
        unwatched = (
            f"watch's records could not be read ({str(exc).splitlines()[0]}): its restarts "
            "and failures are not known now"
        )
    beacons = Beacons(deployment.storage, runtime.monotonic)
    manifests = [
        f.stored for f in facts if f.stored is not None and not f.problem and beacon_root(f.stored)
    ]
    beacons.look(manifests)
    now = now or datetime.now(timezone.utc)

    def one(f: JobFacts) -> tuple[str, JobReads]:
        assert f.stored is not None
        liveness = [r.liveness for r in f.runs]
        return f.name, reads.job(deployment.storage, beacons, f.stored, liveness)

    todo = [f for f in facts if f.stored is not None and not f.problem]
    workers = deployment.settings.parallelism
    if workers <= 1 or len(todo) <= 1:
        found = dict(one(f) for f in todo)
    else:  # each a GET and a listing on remote storage, many at once
        with runtime.pool(workers, "status") as pool:
            found = dict(pool.map(one, todo))
    rows = []
    for f in sorted(facts, key=lambda f: f.name):
        stored = f.stored
        read = found.get(f.name)
        runs = [
            {
                "query-version": r.version,
                "where": r.detail,
                "run-id": r.run_id,
                "liveness": r.liveness.value,
            }
            for r in f.runs
        ]
        row: dict[str, Any] = {
            "name": f.name,
            "stored-version": stored.meta.query_version if stored else None,
            "desired-state": stored.job.get("desired-state", "running") if stored else None,
            "spark-version": stored.meta.spark_version if stored else None,
            "health": None,
            "health-detail": "",
            "running": bool(f.alive),
            "runs": runs,
            "running-version": f.alive[0].version if len(f.alive) == 1 else None,
            "where": ", ".join(r.detail for r in f.runs),
            "problem": f.problem or (read.problem if read else None) or unwatched,
            "last-committed-batch": read.committed if read else None,
            "last-batch": None,
            "restarts": 0,
            "restarts-last-hour": 0,
            "last-failure": None,
            "checkpoint": _checkpoint(stored) if stored else None,
            "drift": _drift(f, bool(jobs)),
        }
        row["log"] = _log(deployment, f)
        row["failed-start"] = None
        failed = f.intent.intent.failed_start if f.intent is not None else None
        if stored is None and failed is not None and not f.alive:
            row["health"], row["health-detail"] = State.FAILED.value, failed.describe()
            highest = f.intent.checkpoint.highest_version if f.intent.checkpoint else 0  # type: ignore[union-attr]
            row["failed-start"] = {
                **failed.to_dict(),
                "next-deploy": f"start-clean v{max(highest, failed.version) + 1}",
            }
        if stored is not None:
            health, record = health_of(f, read.status if read else None, records, now)
            row["health"], row["health-detail"] = health.state.value, health.detail
            ahead = _ahead(health, now)
            if ahead and not row["health-detail"]:
                row["health-detail"] = ahead
            row["last-batch"] = json_batch(health.last_batch)
            if record is not None:
                last = record.last_failure
                row["restarts"] = record.restarts
                row["restarts-last-hour"] = record.restarts_since(now - timedelta(hours=1))
                row["last-failure"] = (
                    {"at": json_time_of_text(last.at), "reason": last.reason} if last else None
                )
        rows.append(_masked(row))
    reads.forget_others({ControlFiles.of(f"{beacon_root(m)}/{m.name}", m.meta.query_version).beacon
                         for m in manifests})  # fmt: skip
    reads.save()
    return rows


def _masked(row: dict[str, Any]) -> dict[str, Any]:
    """The row with every secret its texts may quote masked (read/secrets.py): a runner's or a
    storage's error quoting a URL with its password, a checkpoint root with credentials in it.
    `status` and the pages show rows only so."""
    return {k: v if k in ("name", "last-batch") else redact_all(v) for k, v in row.items()}


def _checkpoint(stored: StoredManifest) -> str | None:
    """The checkpoint folder of the stored version (None: its manifest names no root)."""
    root = beacon_root(stored)
    return f"{root}/{stored.name}/{stored.meta.query_version}" if root else None
