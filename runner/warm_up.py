"""A prepared run's warm-up: one micro-batch of made-up rows, before the run says `ready`.

A JVM's first micro-batch is slow: its tasks, code generation, the sink's writer and the
checkpoint's logs are all used for the first time (2.5 to 3 s on 2 cores where the next batches
take 0.4 s, measured on local Spark). In a warm handover that first batch is in the pause:
the old run has stopped and the new one has not yet committed. So a prepared run, before it says
`ready` (while the old run still writes), runs one micro-batch of its own through the same kind
of sink:

- its rows are `rate-micro-batch`'s, made up in the run's own tasks: no source of the job is
  read, nothing of the job's is written (its checkpoint, its sink, its status files);
- on local Spark it writes them through Spark's own file sink in the sink's file format (parquet
  for any other sink), through foreachBatch where the run's start will (a file sink earlier
  versions wrote: file_sink.py), into a temporary folder of the driver, removed after; on a
  cluster the executors are on other machines, so it writes to Spark's `noop` sink (nothing is
  written anywhere but the warm-up's checkpoint, which only the driver writes: into its
  temporary folder);
- it waits at most `prepare.warm-up-seconds` (a cluster may have no room yet for the new run's
  executors: then it stops the warm-up and says `ready` without it; the deployer waits that much
  longer for `ready`) and ends at once on a stop request or the deployer's abort;
- it runs before the job's own code, so a listener that code adds is never told of it; a
  listener named in the job's Spark settings sees one query named `warm-up <run id>`;
- any failure is logged and the run goes on as it would have without it: the warm-up only ever
  saves time.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .failures import error_text
from .file_sink import file_sink_of, writes_shifted
from .log import log
from .manifest import options_of
from .spark_internals import file_format_name, new_file_sink
from .storage import Storage

#: The warm-up's trigger: its first micro-batch begins at once, the next not before a day, so
#: that the stop never cuts a second one in its write (on Spark 3.5 that write's aborted task
#: could put the temporary folder back after its removal).
ONE_BATCH = "24 hours"
#: How often the warm-up looks whether its micro-batch has committed, and for a stop request
#: or the deployer's abort (`stopping`: a prepared run's own poll, prepare.py).
POLL_SECONDS = 0.1
ROWS = 20
#: One task per core the run has (each executor's used once), at most this many.
MAX_TASKS = 64


def warm_up(
    spark: Any,
    doc: dict[str, Any],
    seconds: float,
    stopping: Callable[[], Any],
    poll: float = POLL_SECONDS,
) -> str:
    """Run the warm-up micro-batch of `doc`'s run, for at most `seconds`; say how it went (for
    the log). `stopping()` says why the run is to end (a signal, the deployer's abort), None
    while it is not; it is asked every `poll` seconds."""
    if seconds <= 0:
        return "no warm-up (prepare.warm-up-seconds is 0)"
    folder = Path(tempfile.mkdtemp(prefix="flink-sql-runner-warm-up-"))
    query = None
    began = time.monotonic()
    try:
        fmt, shifted = _sink(spark, doc)
        rows = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS)
            .option("numPartitions", min(MAX_TASKS, max(1, spark.sparkContext.defaultParallelism)))
            .load()
        )
        if fmt is not None and file_format_name(spark, fmt) == "text":  # one text column only
            rows = rows.selectExpr("CAST(value AS STRING) AS text")
        else:
            rows = rows.selectExpr("value", "timestamp", "CAST(value AS STRING) AS text")
        writer = (
            rows.writeStream.queryName(f"warm-up {doc['run-id']}")
            .option("checkpointLocation", (folder / "checkpoint").as_uri())
            .trigger(processingTime=ONE_BATCH)
        )
        rows_uri = (folder / "rows").as_uri()
        if fmt is None:
            query = writer.format("noop").start()
        elif shifted:  # as the run's start will: Spark's file sink, through foreachBatch
            sink = new_file_sink(spark, fmt, {"path": rows_uri}, rows._jdf.schema())
            query = writer.foreachBatch(lambda batch, n: sink.addBatch(n, batch._jdf)).start()
        else:
            query = writer.format(fmt).option("path", rows_uri).start()
        deadline = began + seconds
        while query.isActive and query.lastProgress is None:
            if stopping() is not None:
                return "warm-up cut short: the run is to end"
            if time.monotonic() >= deadline:
                return f"warm-up not done within {seconds:g} s (no room for executors yet?)"
            query.awaitTermination(poll)
        failure = query.exception()
        if failure is not None:
            return f"warm-up failed, going on without it: {_first_line(failure)}"
        into = "noop" if fmt is None else fmt + (" through foreachBatch" if shifted else "")
        return f"warmed up in {time.monotonic() - began:.1f} s (one micro-batch into {into})"
    except Exception as exc:  # noqa: BLE001 - the warm-up only saves time: never the run's failure
        return f"warm-up failed, going on without it: {_first_line(exc)}"
    finally:
        if query is not None:
            try:
                query.stop()
            except Exception as exc:  # noqa: BLE001 - stopped with the session anyway
                log(f"cannot stop the warm-up query: {exc}")
        shutil.rmtree(folder, ignore_errors=True)


def _sink(spark: Any, doc: dict[str, Any]) -> tuple[str | None, bool]:
    """The file format the warm-up writes, and whether through foreachBatch: on local Spark the
    sink's, the way the run's start will write it (file_sink.py: a file sink that earlier
    versions wrote is written through foreachBatch), parquet for a sink that is no file sink;
    on a cluster None (the noop sink)."""
    if not str(spark.sparkContext.master).startswith("local"):
        return None, False
    target = doc["tables"][doc["target-table"]]
    try:
        found = file_sink_of(spark, target, options_of(target))
    except Exception:  # noqa: BLE001 - the run's own start says what is wrong with its sink
        found = None
    if found is None:
        return "parquet", False
    try:
        shifted = writes_shifted(Storage(spark), doc, found[1])
    except Exception:  # noqa: BLE001 - read again by the start, which says what is wrong
        shifted = False
    return str(found[0]), shifted


def _first_line(exc: Any) -> str:
    """Spark's own message's first line (failures.py's `error_text`)."""
    text = error_text(exc)
    return text.splitlines()[0] if text else type(exc).__name__
