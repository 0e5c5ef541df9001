"""The status file the deployer and `watch` read, and the status beacon `watch` lists."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .log import log, utc_now
from .storage import Storage

if TYPE_CHECKING:
    from .query_look import QueryLook

#: How often the status file is rewritten while the query runs, at the least. `watch` accepts
#: no stall timeout below three of these (the deployer's model/control.py holds the same number).
HEARTBEAT_SECONDS = 10.0
#: The runs a version's run history (`runs-file`) keeps, newest last.
KEEP_RUNS = 30
#: States that end a run, as its entry in the run history says.
ENDED = ("stopped", "finished", "failed")
#: The beacon's `long-batch-minutes` counts whole minutes from a micro-batch's first minute on
#: (the deployer's model/control.py holds the same number).
LONG_BATCH_SECONDS = 60


class Status:
    """The status file the deployer and `watch` read: run id, state, last batch, error, Spark's
    version; and, every HEARTBEAT_SECONDS while the query runs, a heartbeat (a counter that
    only grows: a reader that sees it stop growing knows the driver hangs, whatever the clocks
    say), how long the current micro-batch has been running, and the last batch's progress.

    Beside it, at `beacon` (the runtime manifest's `beacon-file`, in one folder per checkpoint
    root that `watch` lists once per look), a beacon of what a watcher judges only: run id,
    state, error, Spark's version and, once a micro-batch has run for a minute, for how many
    whole minutes. Its content changes only when one of those does (at most once a minute
    while a batch runs long). The heartbeat a listing shows is a modification time that moves
    every HEARTBEAT_SECONDS while the query runs: with `beat` (the manifest's `beat-file`, on a
    local folder or HDFS, whose listings tell content by size and modification time), that of
    an empty file rewritten so, the beacon itself written only when it changes; without it (on
    S3, whose ETag stays for the same bytes, and a manifest of an earlier release), the
    beacon's own, rewritten unchanged.

    At `runs` (the runtime manifest's `runs-file`, beside the status file), the version's run
    history: one entry per run, rewritten when the run starts, when its first trigger is done
    (the batch it reported: a restart's is where it resumed) and when it ends. It is on the
    checkpoint's storage, so `inspect` reads it on every target."""

    def __init__(
        self,
        storage: Storage,
        location: str | None,
        run_id: str,
        spark_version: str = "",
        beacon: str | None = None,
        beat: str | None = None,
        runs: str | None = None,
        clock: Callable[[], float] | None = None,
    ):
        self.storage, self.location, self.run_id = storage, location, run_id
        #: This driver's monotonic clock (a test's own, given).
        self.clock = clock or (lambda: time.monotonic())
        self.beacon, self.beat_file, self.runs = beacon, beat, runs
        self.started = utc_now()
        self.first_batch: int | None = None
        self.beacon_text: str | None = None  # what the beacon holds, as last written
        self.beacon_at = 0.0  # when it was last written, on this driver's monotonic clock
        self.beat_at: float | None = None  # when the heartbeat file was, on the same clock
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
        self.record_run(state)

    def record_run(self, state: str) -> None:
        """Keep this run's entry in the version's run history: at its start, its first trigger
        (once) and its end."""
        if not self.runs:
            return
        if state == "active":
            if self.first_batch is not None:
                return
            self.first_batch = self.batch_id
        elif state != "starting" and state not in ENDED:
            return
        entry = {
            "run-id": self.run_id,
            "started": self.started,
            "first-batch": self.first_batch,
            "ended": state if state in ENDED else None,
            "spark-version": self.spark_version,
        }
        try:
            record_run(self.storage, self.runs, entry)
        except Exception as exc:  # noqa: BLE001 - the history is advisory; the job goes on
            log(f"cannot write the run history {self.runs}: {exc}")

    def beat(self, look: QueryLook) -> dict[str, Any] | None:
        """Follow the query (runner/query_look.py); write when a batch completed, else every
        HEARTBEAT_SECONDS. Returns the last progress read (None: none yet, or the query is
        ending)."""
        now = self.clock()
        try:
            active = look.trigger_active()
            progress = look.progress()
        except Exception:  # noqa: BLE001 - the query is ending; the loop sees it next
            return None
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
        return progress

    def write(self) -> None:
        self.heartbeat += 1
        self.written_at = self.clock()
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
        self.write_beacon(running)

    def beacon_doc(self, running: float | None) -> dict[str, Any]:
        """What the beacon says: nothing that changes but what a watcher judges."""
        minutes = None
        if running is not None and running >= LONG_BATCH_SECONDS:
            minutes = int(running // 60)
        return {
            "run-id": self.run_id,
            "state": self.state,
            "error": self.error,
            "spark-version": self.spark_version,
            "long-batch-minutes": minutes,
        }

    def write_beacon(self, running: float | None) -> None:
        """Rewrite the beacon when what it says changed; and once HEARTBEAT_SECONDS have passed
        since the heartbeat was last written, the heartbeat file (empty), or without one the
        beacon unchanged (its modification time is the heartbeat then)."""
        if not self.beacon:
            return
        text = json.dumps(self.beacon_doc(running), sort_keys=True)
        now = self.written_at  # the status file's write: the beacon keeps its pace
        due = now - self.beacon_at >= HEARTBEAT_SECONDS
        if text != self.beacon_text or (due and not self.beat_file):
            try:
                self.storage.write(self.beacon, text)
            except Exception as exc:  # noqa: BLE001 - the beacon is advisory; the job goes on
                log(f"cannot write the status beacon {self.beacon}: {exc}")
                return
            self.beacon_text, self.beacon_at = text, now
        if self.beat_file and (self.beat_at is None or now - self.beat_at >= HEARTBEAT_SECONDS):
            try:
                self.storage.write(self.beat_file, "")
            except Exception as exc:  # noqa: BLE001 - the heartbeat too; tried again next time
                log(f"cannot write the status beacon's heartbeat {self.beat_file}: {exc}")
                return
            self.beat_at = now


def record_run(storage: Storage, location: str, entry: dict[str, Any]) -> None:
    """Put `entry` in the run history at `location` (`{"runs": [..]}`, oldest first), in place
    of the entry of the same run, keeping the newest KEEP_RUNS. A history that cannot be read
    as one is started afresh (it is advisory). One run of a version writes at a time: a
    prepared run writes none before its go."""
    runs: list[Any] = []
    try:
        doc = json.loads(storage.read(location) or "{}")
        runs = list(doc.get("runs") or []) if isinstance(doc, dict) else []
    except ValueError:
        log(f"the run history {location} is not JSON: started afresh")
    runs = [r for r in runs if isinstance(r, dict) and r.get("run-id") != entry["run-id"]]
    runs.append(entry)
    storage.write(location, json.dumps({"runs": runs[-KEEP_RUNS:]}))


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
