"""The status file the deployer and `watch` read."""

from __future__ import annotations

import json
import time
from typing import Any

from .log import log, utc_now
from .storage import Storage

#: How often the status file is rewritten while the query runs, at the least. `watch` accepts
#: no stall timeout below three of these (the deployer's model/control.py holds the same number).
HEARTBEAT_SECONDS = 10.0


class Status:
    """The status file the deployer and `watch` read: run id, state, last batch, error, Spark's
    version; and, every HEARTBEAT_SECONDS while the query runs, a heartbeat (a counter that
    only grows: a reader that sees it stop growing knows the driver hangs, whatever the clocks
    say), how long the current micro-batch has been running, and the last batch's progress."""

    def __init__(
        self, storage: Storage, location: str | None, run_id: str, spark_version: str = ""
    ):
        self.storage, self.location, self.run_id = storage, location, run_id
        self.spark_version = spark_version
        self.state: str | None = None
        self.batch_id: int | None = None
        self.error: str | None = None
        self.heartbeat = 0
        self.last_batch: dict[str, Any] | None = None
        self.trigger_since: float | None = None  # this driver's monotonic clock
        self.written_at = 0.0

    def set(self, state: str, batch_id: int | None = None, error: str | None = None) -> None:
        self.state, self.error = state, error
        if batch_id is not None:
            self.batch_id = batch_id
        self.write()

    def beat(self, query: Any) -> None:
        """Follow the query; write when a batch completed, else every HEARTBEAT_SECONDS."""
        now = time.monotonic()
        try:
            active = bool((query.status or {}).get("isTriggerActive"))
            progress = query.lastProgress
        except Exception:  # noqa: BLE001 - the query is ending; the loop sees it next
            return
        if active and self.trigger_since is None:
            self.trigger_since = now
        elif not active:
            self.trigger_since = None
        summary = progress_summary(progress)
        new_batch = summary is not None and summary != self.last_batch
        if new_batch:
            self.last_batch = summary
            self.batch_id = summary["id"]
        if new_batch or now - self.written_at >= HEARTBEAT_SECONDS:
            self.write()

    def write(self) -> None:
        self.heartbeat += 1
        self.written_at = time.monotonic()
        if not self.location:
            return
        running = None
        if self.trigger_since is not None:
            running = round(self.written_at - self.trigger_since, 1)
        doc = {
            "run-id": self.run_id,
            "state": self.state,
            "batch-id": self.batch_id,
            "error": self.error,
            "updated": utc_now(),
            "spark-version": self.spark_version,
            "heartbeat": self.heartbeat,
            "batch-running-seconds": running,
            "last-batch": self.last_batch,
        }
        try:
            self.storage.write(self.location, json.dumps(doc))
        except Exception as exc:  # noqa: BLE001 - the status is advisory; the job goes on
            log(f"cannot write the status file {self.location}: {exc}")


def progress_summary(progress: dict[str, Any] | None) -> dict[str, Any] | None:
    """What Spark's last progress says about the last completed batch: id, when, rows, rates,
    duration, and for sources that report it (Kafka) how far behind the latest offsets."""
    if not progress:
        return None
    durations = progress.get("durationMs") or {}
    behind = []
    for source in progress.get("sources") or []:
        metrics = source.get("metrics") or {}
        try:
            behind.append(float(metrics["maxOffsetsBehindLatest"]))
        except (KeyError, TypeError, ValueError):
            continue
    return {
        "id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "num-input-rows": progress.get("numInputRows"),
        "input-rows-per-second": progress.get("inputRowsPerSecond"),
        "processed-rows-per-second": progress.get("processedRowsPerSecond"),
        "duration-ms": durations.get("triggerExecution"),
        "offsets-behind-latest": max(behind) if behind else None,
    }
