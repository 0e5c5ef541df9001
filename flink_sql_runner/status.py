"""`status`: per job, what the store records, what runs, what state exists, and drift."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from flink_sql_runner.changes import ChangeKind, diff, severity
from flink_sql_runner.facts import JobFacts, gather
from flink_sql_runner.manifest import Job

if TYPE_CHECKING:
    from flink_sql_runner.deployment import Deployment


def _drift(facts: JobFacts, compared: bool) -> str:
    if not compared:
        return "-"
    if facts.desired is None:
        return "not in git" if facts.stored else "unknown to git and store"
    if facts.stored is None:
        return "not deployed"
    kind = severity(
        diff(facts.stored.job, facts.stored.tables, facts.desired.spec, facts.desired.tables)
    )
    return "in sync" if kind is ChangeKind.NONE else f"git differs ({kind.label})"


def status_rows(deployment: Deployment, jobs: list[Job]) -> list[dict[str, Any]]:
    facts = gather(
        jobs, deployment.store, deployment.target, deployment.storage,
        workers=deployment.settings.parallelism,
    )  # fmt: skip
    rows = []
    for f in sorted(facts, key=lambda f: f.name):
        stored = f.stored
        runs = [
            {
                "query-version": r.version,
                "where": r.detail,
                "run-id": r.run_id,
                "liveness": r.liveness.value,
            }
            for r in f.runs
        ]
        rows.append(
            {
                "name": f.name,
                "stored-version": stored.meta.query_version if stored else None,
                "desired-state": stored.job.get("desired-state", "running") if stored else None,
                "running": bool(f.alive),
                "runs": runs,
                "running-version": f.alive[0].version if len(f.alive) == 1 else None,
                "where": ", ".join(r.detail for r in f.runs),
                "problem": f.problem,
                "last-committed-batch": f.checkpoint.last_committed if f.checkpoint else None,
                "checkpoint": f.checkpoint.location if f.checkpoint and stored else None,
                "drift": _drift(f, bool(jobs)),
            }
        )
    return rows


def status_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps({"jobs": rows}, indent=2)


def status_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No jobs deployed."
    header = ("JOB", "VERSION", "RUNNING", "LAST BATCH", "GIT", "CHECKPOINT")
    table = [header]
    for r in rows:
        version = f"v{r['stored-version']}" if r["stored-version"] is not None else "-"
        if len(r["runs"]) > 1 or any(run["liveness"] != "alive" for run in r["runs"]):
            running = "; ".join(
                f"{run['liveness']}: v{run['query-version']} ({run['where']})" for run in r["runs"]
            )
        elif r["running"]:
            running = f"yes ({r['where']})"
            if r["running-version"] not in (None, r["stored-version"]):
                running = f"yes, v{r['running-version']} ({r['where']})"
        else:
            running = "no" if r["desired-state"] != "stopped" else "no (stopped)"
        batch = "-" if r["last-committed-batch"] is None else str(r["last-committed-batch"])
        table.append((r["name"], version, running, batch, r["drift"], r["checkpoint"] or "-"))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in table
    )
