"""`status` for people (a table, with notes under a job) and for machines (JSON,
docs/reference/status-json.md)."""

from __future__ import annotations

import json
from typing import Any

#: Health under which a job's log is shown below it.
FAILING = ("down", "backing-off", "crash-looping", "stalled")


def status_json(rows: list[dict[str, Any]]) -> str:
    return json.dumps({"jobs": rows}, indent=2)


def _running(r: dict[str, Any]) -> str:
    if len(r["runs"]) > 1 or any(run["liveness"] != "alive" for run in r["runs"]):
        return "; ".join(
            f"{run['liveness']}: v{run['query-version']} ({run['where']})" for run in r["runs"]
        )
    if r["running"]:
        if r["running-version"] not in (None, r["stored-version"]):
            return f"yes, v{r['running-version']} ({r['where']})"
        return f"yes ({r['where']})"
    return "no"


def _batch(r: dict[str, Any]) -> str:
    batch = r["last-batch"] or {}
    if batch.get("id") is None:
        return "-" if r["last-committed-batch"] is None else str(r["last-committed-batch"])
    text = f"{batch['id']}"
    when = str(batch.get("timestamp") or "")[11:19]
    if when:
        text += f" at {when}"
    rates = (batch.get("input-rows-per-second"), batch.get("processed-rows-per-second"))
    if all(isinstance(rate, (int, float)) for rate in rates):
        text += f", {rates[0]:.1f}/{rates[1]:.1f} rows/s"
    if isinstance(batch.get("duration-seconds"), (int, float)):
        text += f", {batch['duration-seconds']:.1f} s"
    if isinstance(batch.get("offsets-behind-latest"), (int, float)):
        text += f", lag {batch['offsets-behind-latest']:.0f}"
    return text


def status_text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "No jobs deployed."
    header = ("JOB", "VERSION", "HEALTH", "RUNNING", "LAST BATCH", "RESTARTS", "GIT",
              "CHECKPOINT")  # fmt: skip
    table = [header]
    notes: dict[int, list[str]] = {}
    for r in rows:
        version = f"v{r['stored-version']}" if r["stored-version"] is not None else "-"
        health = r["health"] or "-"
        if r["health-detail"] and r["health"] in ("backing-off", "stalled", "unknown"):
            health += f" ({r['health-detail']})"
        restarts = f"{r['restarts-last-hour']}/1h, {r['restarts']} in all" if r["restarts"] else "-"
        table.append(
            (r["name"], version, health, _running(r), _batch(r), restarts, r["drift"],
             r["checkpoint"] or "-")
        )  # fmt: skip
        lines = []
        if r["last-failure"]:
            lines.append(f"last failure {r['last-failure']['at']}: {r['last-failure']['reason']}")
        if r["health"] == "crash-looping":
            lines.append(f"not restarted until a deploy changes it or `flink-sql-runner resume "
                         f"{r['name']}`")  # fmt: skip
        if r["failed-start"]:
            lines.append(r["health-detail"])
            lines.append(f"next deploy: {r['failed-start']['next-deploy']}")
        if r["problem"]:
            lines.append(f"problem: {r['problem']}")
        if r["log"] and (r["failed-start"] or r["health"] in FAILING):
            lines.append(f"log: {r['log']}")
        if lines:
            notes[len(table) - 1] = lines
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    out = []
    for index, row in enumerate(table):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        out.extend(f"    {line}" for line in notes.get(index, []))
    return "\n".join(out)
