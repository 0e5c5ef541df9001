"""One run of a job, from its runtime manifest to its exit code.

Stopping: SIGTERM to the Python driver only sets a flag; a stop marker on the checkpoint's own
storage does the same. Either way the query is stopped between micro-batches, Spark is stopped and
the process exits 0. Exit codes: 0 stopped or finished, 1 the query failed, 2 bad manifest.

Before its first write a run compares its output schema with what its sink holds
(runner/sink_schema.py): a change its `on-schema-change` policy refuses fails the run, exit 1,
with one line, before anything is claimed or written.

A prepared run (a `prepare` section in its manifest, runner/prepare.py) warms up first
(runner/warm_up.py), does all of that and then waits for the deployer's go before it starts its
query: a warm handover, where the run it replaces keeps running until this one is known to
start. Its failures before the go are written to its own status file, never to the version's.
"""

from __future__ import annotations

import argparse
import os
import signal
import time
import traceback
from collections.abc import Callable
from typing import Any

from .failures import FAILURES, BadManifest, error_text
from .kafka_start import apply_starts, starts_from_word
from .log import log
from .manifest import load_manifest
from .prepare import NoGo, Prepared, checkpoint_summary, pinned_conf
from .query import query_frame, register_sources, start_query, with_metadata
from .query_look import QueryLook
from .sink_schema import SchemaRefused, check_before_first_write
from .spark_internals import UnsupportedSpark, stop_session
from .status import Status
from .storage import Storage
from .warm_up import warm_up

EXIT_OK, EXIT_FAILED, EXIT_BAD_MANIFEST = 0, 1, 2
POLL_SECONDS = 0.5
#: The same where the stop marker is on a local folder: a look costs a `stat`, and a warm
#: handover's pause waits for it (on S3 each look is a request, paid for).
LOCAL_POLL_SECONDS = 0.2
#: How long a stop waits for the running micro-batch to finish before it interrupts it.
BATCH_DRAIN_SECONDS = 30.0
#: How often a stop looks whether the running micro-batch has committed.
DRAIN_POLL_SECONDS = 0.05


class StopRequest:
    def __init__(self) -> None:
        self.reason: str | None = None

    def handle(self, signum: int, _frame: Any) -> None:
        self.reason = f"signal {signal.Signals(signum).name}"


def stop_gracefully(
    query: Any,
    reason: str,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    look: QueryLook | None = None,
) -> str:
    """Stop the query between two micro-batches: at once when none is running, else as soon as
    the running one has committed (its batch id in the last progress), then the one that may
    have begun right after it is stopped before it writes much; interrupted mid-batch only after
    BATCH_DRAIN_SECONDS. A query whose batches run back to back (each as long as its trigger or
    longer) is never seen with its trigger idle, so waiting for that alone waited out the whole
    limit and then interrupted a batch anyway. Returns how it stopped, for the log."""
    log(f"stop requested ({reason}); waiting for the current micro-batch")
    look = look or QueryLook(query)
    running_after = look.batch_id()
    deadline = clock() + BATCH_DRAIN_SECONDS
    how = "between micro-batches"
    while look.active() and look.trigger_active():
        if look.batch_id() != running_after:
            how = f"after batch {look.batch_id()} committed"
            break
        if clock() >= deadline:
            how = f"interrupting its micro-batch after {BATCH_DRAIN_SECONDS:.0f} s"
            break
        sleep(DRAIN_POLL_SECONDS)
    query.stop()
    return how


def poll_seconds(storage: Storage, marker: str | None) -> float:
    """How often a running query's loop looks at its stop marker: LOCAL_POLL_SECONDS for a
    marker on this machine's disk (as the storage reads it: a path without a scheme is on the
    default file system), POLL_SECONDS on any other storage."""
    return LOCAL_POLL_SECONDS if marker and storage.is_local(marker) else POLL_SECONDS


def watch(
    query: Any, storage: Storage, doc: dict[str, Any], status: Status, stop: StopRequest
) -> int:
    marker = doc.get("stop-marker")
    poll = poll_seconds(storage, marker)
    look = QueryLook(query)
    while True:
        if stop.reason is None and marker and storage.exists(marker):
            stop.reason = f"stop marker {marker}"
        if stop.reason is not None:
            how = stop_gracefully(query, stop.reason, look=look)
            batch = look.batch_id()
            status.set("stopped", batch)
            graceful = "interrupting" not in how
            log(f"stopped {'gracefully ' if graceful else ''}after batch {batch} ({how})")
            return EXIT_OK
        if not look.active():
            failure = query.exception()
            if failure is not None:
                message = FAILURES[-1] if FAILURES else error_text(failure)
                status.set("failed", error=message)
                log(f"the query failed: {message}")
                return EXIT_FAILED
            status.set("finished", look.batch_id())
            log("the query finished (its trigger ran out of data)")
            return EXIT_OK
        progress = status.beat(look)
        if progress is not None and status.state != "active":
            status.set("active", progress.get("batchId"))
            log(f"active: first trigger done (batch {progress.get('batchId')})")
        wait_a_little(query, poll)


def wait_a_little(query: Any, seconds: float = POLL_SECONDS) -> None:
    """Up to `seconds`, less when the query ends (an availableNow or once trigger runs out of
    data): the runner exits as soon as the query does."""
    try:
        query.awaitTermination(seconds)
    except Exception:  # noqa: BLE001 - the query failed; watch() reports query.exception()
        if query.isActive:  # something else failed: do not spin
            time.sleep(seconds)


def run(manifest_location: str) -> int:
    stop = StopRequest()
    signal.signal(signal.SIGTERM, stop.handle)
    signal.signal(signal.SIGINT, stop.handle)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    try:
        return run_on(spark, manifest_location, stop)
    finally:
        try:
            stop_session(spark)
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def pyspark_folder() -> str:
    """Where this driver's pyspark was imported from: the install, or spark-submit's zip."""
    import pyspark

    return os.path.dirname(pyspark.__file__)


def run_on(spark: Any, manifest_location: str, stop: StopRequest) -> int:
    """One run on a SparkSession the caller owns (and stops)."""
    storage = Storage(spark)
    status = Status(storage, None, "", spark.version)
    try:
        text = storage.read(manifest_location)
        if text is None:
            raise BadManifest(f"{manifest_location} does not exist")
        doc = load_manifest(text)
        apply_starts(doc)
        prepared = Prepared(storage, doc, spark.version) if doc.get("prepare") else None
        # A prepared run reports on its own file until its go: the version's may still be
        # written by the run it replaces.
        own = prepared.status_file if prepared else doc.get("status-file")
        # The version's beacon, its heartbeat and its run history: not before a prepared run's go.
        beacon = None if prepared else doc.get("beacon-file")
        beat = None if prepared else doc.get("beat-file")
        runs = None if prepared else doc.get("runs-file")
        status = Status(storage, own, doc["run-id"], spark.version, beacon, beat, runs)
        log(
            f"job {doc['name']} v{doc['meta']['query-version']} run {doc['run-id']} on Spark "
            f"{spark.version} (pyspark from {pyspark_folder()}), checkpoint "
            f"{doc['checkpoint-location']}" + (" (prepared: it waits for a go)" if prepared else "")
        )
        status.set("preparing" if prepared else "starting")
        if prepared is not None:  # before the job's code: a listener it adds never hears of it
            seconds, poll = prepared.warm_up_seconds, prepared.poll
            log(warm_up(spark, doc, seconds, lambda: stop.reason or prepared.ending(), poll))
            prepared.end_if_told(lambda: stop.reason)  # an abort meanwhile: nothing prepared
        register_sources(spark, doc)
        frame = with_metadata(query_frame(spark, doc), doc)
        check_before_first_write(spark, storage, doc, frame)
        if prepared is not None:
            word = prepared.await_go(
                lambda: stop.reason,
                checkpoint=checkpoint_summary(storage, doc["checkpoint-location"]),
                conf=pinned_conf(spark, list(doc["prepare"].get("pinned-settings") or [])),
            )
            if starts_from_word(doc, word):
                register_sources(spark, doc)
                frame = with_metadata(query_frame(spark, doc), doc)
            status = Status(storage, doc.get("status-file"), doc["run-id"], spark.version,
                            doc.get("beacon-file"), doc.get("beat-file"),
                            doc.get("runs-file"))  # fmt: skip
            status.set("starting")
        query = start_query(spark, storage, doc, frame)
        return watch(query, storage, doc, status, stop)
    except NoGo as exc:
        log(f"the prepared run ends without starting: {exc}")
        return exc.code
    except BadManifest as exc:
        log(f"invalid runtime manifest {manifest_location}: {exc}")
        status.set("failed", error=f"invalid runtime manifest: {exc}")
        return EXIT_BAD_MANIFEST
    except (UnsupportedSpark, SchemaRefused) as exc:
        log(f"the job cannot start: {exc}")
        status.set("failed", error=str(exc))
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - any failure is the job's failure: report, exit 1
        message = error_text(exc)
        traceback.print_exc()
        log(f"the job failed: {message}")
        status.set("failed", error=message)
        return EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", required=True, help="runtime manifest: a file or URI")
    args = parser.parse_args(argv)
    return run(args.manifest)
