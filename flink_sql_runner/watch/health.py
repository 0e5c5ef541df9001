"""How a deployed job is doing, from what the target lists, what its runner reports in its
status file and what `watch` remembers: one state for people, `status` and metrics.

    healthy        runs, and has completed a trigger
    starting       runs, no trigger completed yet
    restarting     `watch` restarted it and waits for it
    backing-off    down after failing; `watch` restarts it after a delay (until when)
    crash-looping  failed too often; `watch` leaves it down until a deploy changes it or
                   `flink-sql-runner resume NAME`
    stalled        runs, but its heartbeat stopped, or its batch runs far too long
    stopped        desired-state is stopped
    finished       its `availableNow` / `once` trigger ran out of data: done, not failed
    down           should run and does not
    unknown        the target cannot tell whether it runs, or two runs are up
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

from flink_sql_runner.model.runs import Liveness, Run
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.watch.records import WatchRecord, parse_utc


class State(str, Enum):
    HEALTHY = "healthy"
    STARTING = "starting"
    RESTARTING = "restarting"
    BACKING_OFF = "backing-off"
    CRASH_LOOPING = "crash-looping"
    STALLED = "stalled"
    STOPPED = "stopped"
    FINISHED = "finished"
    DOWN = "down"
    UNKNOWN = "unknown"
    #: Its first start failed: nothing of it is stored, only that (status shows it).
    FAILED = "failed"


@dataclass(frozen=True)
class Health:
    state: State
    detail: str = ""
    run: Run | None = None  # the one alive run, if any
    status: dict[str, Any] | None = None  # the runner's status of the stored version

    @property
    def last_batch(self) -> dict[str, Any] | None:
        batch = (self.status or {}).get("last-batch")
        return batch if isinstance(batch, dict) else None


def assess(
    stored: StoredManifest,
    runs: tuple[Run, ...],
    status: dict[str, Any] | None,
    record: WatchRecord | None,
    now: datetime,
    stalled: str | None = None,
) -> Health:
    """The job's state now. `stalled`: why the caller found its run stalled, if it did."""
    alive = [r for r in runs if r.liveness is Liveness.ALIVE]
    if any(r.liveness is Liveness.UNKNOWN for r in runs):
        return Health(State.UNKNOWN, "the target cannot tell whether it runs", None, status)
    if len(alive) > 1:
        return Health(State.UNKNOWN, f"{len(alive)} runs are up", None, status)
    if stored.job.get("desired-state") == "stopped" and not alive:
        return Health(State.STOPPED, "", None, status)
    if alive:
        run = alive[0]
        own = status if status and status.get("run-id") == run.run_id else None
        if run.run_id is None:
            own = status  # a listing without run ids (standalone): the version's status
        if stalled:
            return Health(State.STALLED, stalled, run, own)
        if own and own.get("state") in ("active", "finished"):
            return Health(State.HEALTHY, "", run, own)
        if record is not None and record.state == State.RESTARTING.value:
            return Health(State.RESTARTING, "", run, own)
        return Health(State.STARTING, "", run, own)
    if status and status.get("state") == "finished":
        return Health(State.FINISHED, "its trigger ran out of data", None, status)
    if record is not None and record.crash_looping:
        failure = record.last_failure
        why = f"{failure.reason} (at {failure.at})" if failure else ""
        return Health(State.CRASH_LOOPING, why, None, status)
    if record is not None and record.backoff_until:
        until = parse_utc(record.backoff_until)
        if until is not None and until > now:
            return Health(State.BACKING_OFF, f"until {record.backoff_until}", None, status)
    return Health(State.DOWN, "not running", None, status)


def failure_reason(status: dict[str, Any] | None, detail: str = "") -> str:
    """Why a run that should run ended: the runner's own error, else what the target says."""
    if status and status.get("state") == "failed" and status.get("error"):
        return str(status["error"]).splitlines()[0]
    if status and status.get("state") == "stopped":
        return "it was stopped (stop marker or SIGTERM)"
    return detail.splitlines()[0] if detail else "its driver ended without a word (killed?)"
