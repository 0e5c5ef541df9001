"""A prepared run: everything a start needs except starting the query, then a wait for a go.

With a `prepare` section in its runtime manifest (docs/reference/runtime-manifest.md) a run builds
its SparkSession, warms it up (`prepare.warm-up-seconds`, runner/warm_up.py), registers its
tables, analyses its query into a streaming DataFrame, checks its sink's schema and reads its
checkpoint (without writing a byte of it), and then stops short of `writeStream.start()`. It
says `ready` in a status file of its own (`prepare.status-file`: the version's status file may
still be written by the run this one replaces, for a config change keeps the version) and waits
for the deployer's word in `prepare.go-file`:

- `{"run-id": "<this run>", "go": true}`: start the query now (the old run is confirmed gone);
  `"starting": {table: start}` with it: those Kafka sources start there (runner/kafka_start.py;
  where the previous version stopped is known only once it has), and are registered again
  before the query starts;
- `{"run-id": "<this run>", "abort": "<why>"}`, or its own stop marker (`prepare.stop-marker`,
  which a target's stop writes): exit 0 without having written anything;
- no word naming this run within `prepare.timeout-seconds`, or SIGTERM: exit 1, nothing written.

An abort, its stop marker or SIGTERM win over a go: a run told to end never starts its query.

A word for another run id is not this run's and is ignored: a deployer killed mid-handover never
starts a run the next deployer does not know.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .log import log, utc_now
from .storage import Storage

#: How often a prepared run looks for its word: the go is in the handover's pause. Where its
#: files are on a local folder a look costs a read of a small file; elsewhere (S3, HDFS) a look
#: is a request or two, paid for, in a wait that may last minutes.
LOCAL_POLL_SECONDS = 0.1
POLL_SECONDS = 0.25
EXIT_ABORTED, EXIT_EXPIRED = 0, 1


class NoGo(Exception):
    """The prepared run ends without starting: `code` is its exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def checkpoint_summary(storage: Storage, location: str) -> dict[str, Any]:
    """What the run found in its checkpoint, read only: the last committed batch and the last
    planned one (None when the checkpoint is new)."""

    def largest(folder: str) -> int | None:
        found = [int(n) for n in storage.names(f"{location}/{folder}") if n.isdigit()]
        return max(found, default=None)

    return {"last-committed": largest("commits"), "last-offsets": largest("offsets")}


def pinned_conf(spark: Any, keys: list[str]) -> dict[str, str]:
    """The values this session sets itself for settings a checkpoint pins (the deployer compares
    them with what the checkpoint holds)."""
    conf = spark.sparkContext.getConf()
    return {key: conf.get(key) for key in keys if conf.contains(key)}


class Prepared:
    """The prepared side of one run: its own status file, and the wait for a go."""

    def __init__(self, storage: Storage, doc: dict[str, Any], spark_version: str):
        section = doc["prepare"]
        self.storage = storage
        self.run_id = doc["run-id"]
        self.status_file = section["status-file"]
        self.go_file = section["go-file"]
        self.stop_marker = section.get("stop-marker")
        self.timeout = float(section.get("timeout-seconds", 300))
        self.warm_up_seconds = float(section.get("warm-up-seconds", 0))
        self.poll = LOCAL_POLL_SECONDS if storage.is_local(self.go_file) else POLL_SECONDS
        self.spark_version = spark_version

    def report(self, state: str, **fields: Any) -> None:
        doc = {
            "run-id": self.run_id,
            "state": state,
            "updated": utc_now(),
            "spark-version": self.spark_version,
            **fields,
        }
        try:
            self.storage.write(self.status_file, json.dumps(doc))
        except Exception as exc:  # noqa: BLE001 - the deployer times out instead
            log(f"cannot write the prepared status file {self.status_file}: {exc}")

    def word(self) -> dict[str, Any] | None:
        """The deployer's word for this run, if it has given one."""
        try:
            text = self.storage.read(self.go_file)
        except Exception as exc:  # noqa: BLE001 - not readable now: asked again
            log(f"cannot read {self.go_file}: {exc}")
            return None
        if not text:
            return None
        try:
            word = json.loads(text)
        except ValueError:
            return None
        if not isinstance(word, dict) or word.get("run-id") != self.run_id:
            return None
        return word

    def aborted_by_marker(self) -> bool:
        try:
            return bool(self.stop_marker) and self.storage.exists(self.stop_marker)
        except Exception as exc:  # noqa: BLE001 - not readable now: asked again
            log(f"cannot read {self.stop_marker}: {exc}")
            return False

    def ending(self, word: dict[str, Any] | None = None) -> str | None:
        """Why the deployer wants this run to end before its go (its abort word, or its own
        stop marker), None while it does not. `word`: the word just read, else read here."""
        word = self.word() if word is None else word
        if word is not None and "abort" in word:
            return str(word.get("abort") or "aborted")
        return f"stop marker {self.stop_marker}" if self.aborted_by_marker() else None

    def end_if_told(self, stopping: Any, word: dict[str, Any] | None = None) -> None:
        """NoGo when the deployer aborted this run or the run was asked to stop (`stopping()`
        returns the reason, or None): looked at before it prepares the job, before it says
        ready, and before it takes a go (a run told to end never starts its query)."""
        why = self.ending(word)
        if why is not None:
            self.report("aborted", error=why)
            raise NoGo(f"aborted by the deployer: {why}", EXIT_ABORTED)
        reason = stopping()
        if reason is not None:
            self.report("aborted", error=reason)
            raise NoGo(f"stopped before its go ({reason})", EXIT_EXPIRED)

    def await_go(self, stopping: Any, **ready: Any) -> dict[str, Any]:
        """Say `ready`, then wait: the go word once given; NoGo on an abort, the timeout or a
        stop request (`stopping()` returns its reason, or None), which win over a go."""
        self.end_if_told(stopping)
        self.report("ready", **ready)
        log(f"ready: waiting up to {self.timeout:.0f} s for the go in {self.go_file}")
        deadline = time.monotonic() + self.timeout
        while True:
            word = self.word()
            self.end_if_told(stopping, word)
            if word is not None and word.get("go") is True:
                log("go: starting the query")
                return word
            if time.monotonic() >= deadline:
                why = f"no go within {self.timeout:.0f} s"
                self.report("expired", error=why)
                raise NoGo(why, EXIT_EXPIRED)
            time.sleep(self.poll)
