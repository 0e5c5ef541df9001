"""The generic runner that `spark-submit` starts for every job.

    spark-submit ... job_runner.py --manifest <FILE-OR-URI>

It needs only pyspark and the standard library: it runs on cluster nodes. It reads the runtime
manifest (docs/runtime-manifest.md), registers each source table as a streaming temporary view,
runs the SQL or the PySpark code, appends the `__query_*` metadata columns as typed literals, and
writes to the target with the job's checkpoint, trigger and output mode.

Stopping: SIGTERM to this Python driver only sets a flag; a stop marker on the checkpoint's own
storage does the same. Either way the query is stopped between micro-batches, Spark is stopped and
the process exits 0. Exit codes: 0 stopped or finished, 1 the query failed, 2 bad manifest.

File sinks: Spark's file sink skips every batch id its `_spark_metadata` log already holds, so a
new checkpoint (batch ids from 0 again) writing into a folder an earlier version wrote would lose
its first batches. The runner writes file sinks (path tables and catalog tables stored as files)
that already hold batches through `foreachBatch` into Spark's own file sink, with the batch ids
shifted past the log's last batch; the shift is fixed when the checkpoint is created and kept in
it, so restarts stay exactly-once. Each checkpoint claims the sink ids it writes from (in the
sink's `_flink-sql-runner/claims/`): a checkpoint restarted after another one wrote past it (a
failed new version, rolled back) moves its next batches past the log too. With nothing to shift
past (a new sink), Spark's own sink writes directly: foreachBatch turns each micro-batch into an
RDD and copies every row again.

Spark: 3.5 and 4.0 to 4.3. The few Spark internals the file sinks need sit in one adapter section,
chosen by what the running Spark offers; a Spark that lacks one fails the start in one line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_BAD_MANIFEST = 0, 1, 2
SCHEMA_VERSION = 1
FILE_FORMATS = ("parquet", "json", "csv", "orc", "text", "avro")
POLL_SECONDS = 0.5
#: How often the status file is rewritten while the query runs, at the least.
HEARTBEAT_SECONDS = 10.0
#: How long a stop waits for the running micro-batch to finish before it interrupts it.
BATCH_DRAIN_SECONDS = 30.0
SINK_OFFSET_FILE = "flink-sql-runner-sink.json"
#: In a file sink's folder: which checkpoint writes from which sink batch id (Spark's readers
#: skip names starting with "_").
CLAIMS_FOLDER = "_flink-sql-runner/claims"
METADATA_COLUMNS = (
    "__query_name",
    "__query_description",
    "__query_id",
    "__query_version",
    "__query_create_timestamp",
)


#: Failures seen inside foreachBatch, whose real message Spark wraps beyond recognition.
FAILURES: list[str] = []


class BadManifest(Exception):
    """The runtime manifest cannot be used; exit code 2."""


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log(message: str) -> None:
    print(f"{utc_now()} [flink-sql-runner] {message}", file=sys.stderr, flush=True)


# -- storage: local files directly, anything else through Spark's Hadoop file system -------------


def is_local(location: str) -> bool:
    return "://" not in location or location.startswith("file:")


def local_path(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :] or "/"
    return location.removeprefix("file:")


class Storage:
    """Small file operations on local paths and Hadoop URIs (s3a:, hdfs:, ...)."""

    def __init__(self, spark: Any):
        self.spark = spark

    def _fs(self, location: str) -> tuple[Any, Any]:
        jvm = self.spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        return path.getFileSystem(self.spark._jsc.hadoopConfiguration()), path

    def exists(self, location: str) -> bool:
        if is_local(location):
            return os.path.exists(local_path(location))
        fs, path = self._fs(location)
        return bool(fs.exists(path))

    def read(self, location: str) -> str | None:
        if is_local(location):
            try:
                with open(local_path(location), encoding="utf-8") as handle:
                    return handle.read()
            except FileNotFoundError:
                return None
        fs, path = self._fs(location)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            reader = self.spark._jvm.java.io.BufferedReader(
                self.spark._jvm.java.io.InputStreamReader(stream, "UTF-8")
            )
            lines = []
            line = reader.readLine()
            while line is not None:
                lines.append(line)
                line = reader.readLine()
            return "\n".join(lines)
        finally:
            stream.close()

    def write(self, location: str, text: str) -> None:
        """Replace the file: atomically on local disks; one object PUT on S3."""
        if is_local(location):
            target = local_path(location)
            folder = os.path.dirname(target) or "."
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".fsr-", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, target)
            return
        fs, path = self._fs(location)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode("utf-8")))
        finally:
            stream.close()

    def names(self, location: str) -> list[str]:
        """File and folder names directly under `location`; [] if it does not exist."""
        if is_local(location):
            try:
                return os.listdir(local_path(location))
            except (FileNotFoundError, NotADirectoryError):
                return []
        fs, path = self._fs(location)
        if not fs.exists(path):
            return []
        return [status.getPath().getName() for status in fs.listStatus(path)]


# -- the manifest ---------------------------------------------------------------------------------


def load_manifest(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadManifest(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema-version") != SCHEMA_VERSION:
        raise BadManifest(f"schema-version must be {SCHEMA_VERSION}")
    required = ("name", "target-table", "tables", "checkpoint-location", "meta", "run-id")
    missing = [key for key in required if key not in doc]
    if missing:
        raise BadManifest(f"missing fields: {', '.join(missing)}")
    if (doc.get("sql") is None) == (doc.get("code") is None):
        raise BadManifest("exactly one of sql / code must be set")
    for name in [*doc.get("source-tables", []), doc["target-table"]]:
        if name not in doc["tables"]:
            raise BadManifest(f"table {name!r} has no definition")
    return doc


def option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def options_of(table: dict[str, Any]) -> dict[str, str]:
    return {str(k): option_text(v) for k, v in (table.get("options") or {}).items()}


# -- building the query ---------------------------------------------------------------------------


def register_sources(spark: Any, doc: dict[str, Any]) -> None:
    """Each source table as a streaming temporary view under its own name."""
    for name in doc.get("source-tables", []):
        table = doc["tables"][name]
        reader = spark.readStream.options(**options_of(table))
        if "table" in table:
            frame = reader.table(table["table"])
        else:
            reader = reader.format(table["format"])
            if table.get("schema"):
                reader = reader.schema(table["schema"])
            frame = reader.load()
        watermark = table.get("watermark")
        if watermark:
            frame = frame.withWatermark(watermark["column"], watermark["delay"])
        frame.createOrReplaceTempView(name)


def query_frame(spark: Any, doc: dict[str, Any]) -> Any:
    if doc.get("sql") is not None:
        return spark.sql(doc["sql"])
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    namespace: dict[str, Any] = {"spark": spark, "F": F}
    exec(compile(doc["code"], f"<code of {doc['name']}>", "exec"), namespace)  # noqa: S102
    frame = namespace.get("execution_output")
    if not isinstance(frame, DataFrame):
        raise ValueError("the code must assign a DataFrame to `execution_output`")
    if not frame.isStreaming:
        raise ValueError("`execution_output` must be a streaming DataFrame (read the views)")
    return frame


def with_metadata(frame: Any, doc: dict[str, Any]) -> Any:
    """The six metadata columns after the query's own, as typed literals."""
    from pyspark.sql import functions as F

    settings = doc.get("metadata-columns") or {}
    if not settings.get("enabled", True):
        return frame
    meta = doc["meta"]
    created = datetime.fromisoformat(meta["query-create-timestamp"].replace("Z", "+00:00"))
    columns = {
        settings.get("create-timestamp-column", "__create_timestamp"): F.current_timestamp(),
        "__query_name": F.lit(doc["name"]).cast("string"),
        "__query_description": F.lit(doc.get("description") or "").cast("string"),
        "__query_id": F.lit(str(meta["query-id"])).cast("string"),
        "__query_version": F.lit(int(meta["query-version"])).cast("int"),
        "__query_create_timestamp": F.lit(created).cast("timestamp"),
    }
    clash = sorted(set(columns) & set(frame.columns))
    if clash:
        raise ValueError(
            f"the query already has column(s) {', '.join(clash)}; rename them or set "
            "metadata-columns.enabled: false"
        )
    return frame.select("*", *(column.alias(name) for name, column in columns.items()))


def trigger_args(trigger: dict[str, Any]) -> dict[str, Any]:
    allowed = ("processingTime", "availableNow", "once", "continuous")
    if len(trigger) != 1 or next(iter(trigger)) not in allowed:
        raise BadManifest(f"trigger must be one of {', '.join(allowed)}")
    return dict(trigger)


# -- file sinks: exactly once across versions -----------------------------------------------------


def last_sink_batch(storage: Storage, path: str) -> int:
    """The largest batch id in the file sink's `_spark_metadata` log, -1 if none."""
    ids = []
    for name in storage.names(f"{path.rstrip('/')}/_spark_metadata"):
        stem = name.removesuffix(".compact")
        if stem.isdigit():
            ids.append(int(stem))
    return max(ids, default=-1)


def sink_batch_segments(storage: Storage, doc: dict[str, Any], path: str) -> list[list[int]]:
    """How this checkpoint's batch ids map to the sink's: `[[from batch, offset], ...]`, a batch
    taking the offset of the last segment it reaches.

    The first segment is fixed when the checkpoint is new (past whatever earlier checkpoints
    wrote) and kept in the checkpoint, so a re-run batch keeps its sink batch id and is skipped
    if already written. Each segment is also claimed in the sink (`_flink-sql-runner/claims/`,
    in order): when this checkpoint restarts after another one claimed and wrote sink ids past
    it (a new version that failed and was rolled back), its next batches get a new segment past
    the sink's log instead of ids the other one wrote, which the sink would skip.
    """
    checkpoint = doc["checkpoint-location"].rstrip("/")
    record_location = f"{checkpoint}/{SINK_OFFSET_FILE}"
    text = storage.read(record_location)
    offsets = numbers(storage.names(f"{checkpoint}/offsets"))
    if not text:
        first = 0 if offsets else last_sink_batch(storage, path) + 1
        segments = [[0, first]]
        storage.write(record_location, json.dumps({"segments": segments, "sink-path": path}))
        if not offsets:  # a checkpoint that started before segments were kept claims nothing
            claim(storage, doc, path, first)
        if first:
            log(
                f"the sink {path} already holds batches up to {first - 1}; this checkpoint's "
                f"batches are written as {first}, {first + 1}, ..."
            )
        return segments
    record = json.loads(text)
    segments = record.get("segments") or [[0, int(record["sink-batch-offset"])]]
    boundary = foreign_claim(storage, checkpoint, path, sum(segments[-1]))
    if boundary is None:
        return segments
    begin, offset = segments[-1]
    move_from = boundary - offset
    commits = numbers(storage.names(f"{checkpoint}/commits"))
    if commits and move_from <= max(commits):
        raise BadManifest(
            f"the sink {path} has batches from {boundary} on claimed by another checkpoint, "
            f"but this one committed batch {max(commits)} as sink batch {max(commits) + offset}: "
            "two writers; start a new version"
        )
    start = last_sink_batch(storage, path) + 1
    if start - move_from != offset:  # the other wrote: move past it (else the ids are free)
        segments.append([move_from, start - move_from])
        storage.write(record_location, json.dumps({"segments": segments, "sink-path": path}))
    claim(storage, doc, path, start)
    log(
        f"another checkpoint wrote the sink {path} from batch {boundary} on; this checkpoint's "
        f"batches from {move_from} are written as {start}, {start + 1}, ..."
    )
    return segments


def numbers(names: list[str]) -> list[int]:
    return [int(name) for name in names if name.isdigit()]


def claims_folder(path: str) -> str:
    return f"{path.rstrip('/')}/{CLAIMS_FOLDER}"


def read_claims(storage: Storage, path: str) -> list[tuple[int, int, str]]:
    """(order, first sink batch id, checkpoint) of every claim in the sink, in order."""
    found = []
    for name in storage.names(claims_folder(path)):
        order, _, rest = name.partition("-")
        if not (order.isdigit() and rest.removesuffix(".json").isdigit()):
            continue
        text = storage.read(f"{claims_folder(path)}/{name}") or "{}"
        checkpoint = str(json.loads(text).get("checkpoint", ""))
        found.append((int(order), int(rest.removesuffix(".json")), checkpoint.rstrip("/")))
    return sorted(found)


def claim(storage: Storage, doc: dict[str, Any], path: str, first: int) -> None:
    """Record in the sink that this checkpoint writes its batches from sink id `first` on."""
    order = max((c[0] for c in read_claims(storage, path)), default=0) + 1
    body = {
        "checkpoint": doc["checkpoint-location"].rstrip("/"),
        "job": doc["name"],
        "query-version": doc["meta"]["query-version"],
        "run-id": doc["run-id"],
        "claimed": utc_now(),
    }
    storage.write(f"{claims_folder(path)}/{order:012d}-{first}.json", json.dumps(body))


def foreign_claim(storage: Storage, checkpoint: str, path: str, own_start: int) -> int | None:
    """The first sink batch id another checkpoint claimed after this one's latest claim (or,
    for a checkpoint without claims, past the start of its last segment); None if none."""
    claims = read_claims(storage, path)
    own = [order for order, _, owner in claims if owner == checkpoint]
    if own:
        later = [first for order, first, owner in claims if owner != checkpoint and order > own[-1]]
    else:
        later = [first for _, first, owner in claims if owner != checkpoint and first > own_start]
    return min(later, default=None)


def sink_batch_id(segments: list[list[int]]) -> Callable[[int], int]:
    """The sink batch id of each batch of this checkpoint."""

    def mapped(batch_id: int) -> int:
        offset = next(o for begin, o in reversed(segments) if begin <= batch_id)
        return batch_id + offset

    return mapped


def file_sink_writer(
    spark: Any,
    fmt: str,
    options: dict[str, str],
    sink_batch_id: Callable[[int], int],
    schema: Any,
    table: Any = None,
) -> Callable[[Any, int], None]:
    """A foreachBatch function that appends each micro-batch through Spark's own file sink under
    the sink batch id `sink_batch_id(batch_id)`; the sink is built as `writeStream` builds it
    (for a catalog table: its partitioning and metadata), for rows of `schema` (Java)."""
    sink = new_file_sink(spark, fmt, options, schema, table)

    def write(batch: Any, batch_id: int) -> None:
        try:
            sink.addBatch(sink_batch_id(batch_id), batch._jdf)
        except Exception as exc:
            # Spark reports a foreachBatch failure as "raised by the Python Proxy"; keep the
            # real cause for the status file.
            FAILURES.append(error_text(exc))
            raise

    return write


def start_query(spark: Any, storage: Storage, doc: dict[str, Any], frame: Any) -> Any:
    target = doc["tables"][doc["target-table"]]
    writer = (
        frame.writeStream.queryName(doc["name"].replace("-", "_"))
        .outputMode(doc.get("outputMode", "append"))
        .option("checkpointLocation", doc["checkpoint-location"])
        .trigger(**trigger_args(doc.get("trigger") or {"processingTime": "5 seconds"}))
    )
    options = options_of(target)
    shifted = shifted_file_sink(spark, storage, doc, target, options, frame._jdf.schema())
    if shifted is not None:
        return writer.foreachBatch(shifted).start()
    if "table" in target:
        return writer.options(**options).toTable(target["table"])
    return writer.format(target["format"]).options(**options).start()


def shifted_file_sink(
    spark: Any,
    storage: Storage,
    doc: dict[str, Any],
    target: dict[str, Any],
    options: Any,
    schema: Any,
) -> Any | None:
    """For a file sink that earlier versions wrote to: a foreachBatch function writing through
    Spark's own file sink with this checkpoint's batch ids shifted past theirs. None when there
    is nothing to shift past (not a file sink, or a checkpoint that started on an empty log):
    Spark's own sink then writes directly, without foreachBatch's copy of every row."""
    table = None
    if "table" in target:
        table = catalog_file_table(spark, target["table"])
        if table is None:
            return None
        fmt, path = table.provider().get(), table.location().toString()
        options = {**options, "path": path}
    elif "format" in target and is_file_format(spark, target["format"]):
        if not options.get("path"):
            raise BadManifest(f"the {target['format']} target needs options.path")
        fmt, path = target["format"], options["path"]
    else:
        return None
    segments = sink_batch_segments(storage, doc, path)
    if segments == [[0, 0]]:
        return None
    return file_sink_writer(spark, fmt, options, sink_batch_id(segments), schema, table)


# -- Spark internals: the one adapter -------------------------------------------------------------
#
# The only place the runner reaches into Spark's JVM internals (through py4j); everything else
# uses public APIs. No Spark line, 3.5 to 4.3, offers a public way to append a micro-batch to a
# file sink under a batch id of one's choosing, so the file-sink shift builds Spark's own sink as
# `writeStream` does. Each internal is chosen by what the running Spark offers (reflection over
# its constructors and methods), not by its version number. Read with javap on the jars of
# pyspark 3.5.9, 4.0.5, 4.1.4, 4.2.1 and 4.3.0:
#
#   DataSource(<DATA_SOURCE_PARAMETERS>)                           3.5 to 4.1
#   DataSource(<DATA_SOURCE_PARAMETERS>, streamingSourceName)      4.2, 4.3 (default None)
#   DataSource.createSink(outputMode)                              3.5 to 4.2
#   DataSource.createSink(outputMode, schema)                      4.3 (checks partition columns)
#
# The same on all five: DataSource.lookupDataSource(String, SQLConf), SessionState.catalog() and
# conf(), SessionCatalog.tableExists / getTableMetadata(TableIdentifier), TableIdentifier(String,
# Option), CatalogTable.provider / location / partitionColumnNames / bucketSpec, PythonUtils.toSeq
# / toScalaMap, OutputMode.Append() and Sink.addBatch(long, Dataset). A Spark without what the
# runner needs fails the start with UnsupportedSpark, one line, before the query starts.

DATA_SOURCE = "org.apache.spark.sql.execution.datasources.DataSource"
#: The parameters of DataSource's constructor that the runner passes (simple class names); any
#: further ones, as 4.2's, get Spark's own defaults, as `writeStream` leaves them.
DATA_SOURCE_PARAMETERS = (
    "SparkSession",  # sparkSession
    "String",  # className
    "Seq",  # paths
    "Option",  # userSpecifiedSchema
    "Seq",  # partitionColumns
    "Option",  # bucketSpec
    "Map",  # options
    "Option",  # catalogTable
)


class UnsupportedSpark(Exception):
    """The running Spark lacks an internal the runner needs; the message is one line."""

    def __init__(self, spark: Any, what: str):
        super().__init__(
            f"Spark {spark.version} is not supported: {what}. The runner knows Spark 3.5 to 4.3."
        )


def missing_internal(exc: BaseException) -> str | None:
    """What py4j says this Spark lacks (a method, a constructor), in one line; None for any
    other failure, such as Spark's own exceptions however py4j or pyspark wrap them."""
    from py4j.protocol import Py4JError, Py4JJavaError

    if not isinstance(exc, Py4JError) or isinstance(exc, Py4JJavaError):
        return None
    lines = [line for line in str(exc).splitlines() if "Py4JException:" in line]
    text = lines[0].split("Py4JException:", 1)[1] if lines else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


@contextmanager
def spark_internal(spark: Any, what: str) -> Iterator[None]:
    """Turn a method or constructor this Spark lacks into UnsupportedSpark; Spark's own
    exceptions pass through."""
    try:
        yield
    except Exception as exc:
        detail = missing_internal(exc)
        if detail is None:
            raise
        raise UnsupportedSpark(spark, f"{what} ({detail})") from None


def parameter_types(spark: Any, class_name: str, method: str | None = None) -> list[list[str]]:
    """The simple names of the parameter types of each public constructor of `class_name`
    (`method` None) or of each of its public methods called `method`."""
    try:
        found = spark._jvm.java.lang.Class.forName(class_name)
    except Exception:  # noqa: BLE001 - py4j wraps the ClassNotFoundException
        raise UnsupportedSpark(spark, f"it has no class {class_name}") from None
    members = (
        found.getConstructors()
        if method is None
        else [m for m in found.getMethods() if m.getName() == method]
    )
    return [[kind.getSimpleName() for kind in member.getParameterTypes()] for member in members]


def is_file_format(spark: Any, fmt: str) -> bool:
    """Whether Spark writes `fmt` through its file sink (and its `_spark_metadata` log), under
    any name Spark resolves: `parquet`, `Parquet`, `org.apache.spark.sql.parquet`, a FileFormat
    or file DataSourceV2 class (a streaming write falls back to the FileFormat). Asks Spark's
    own lookup; a name it cannot resolve is no file format (starting the query says why)."""
    if fmt.lower() in FILE_FORMATS:
        return True
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().conf()
    try:
        found = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            fmt, conf
        )
    except Exception as exc:  # noqa: BLE001 - Spark's ClassNotFoundException and friends
        detail = missing_internal(exc)
        if detail is not None:
            raise UnsupportedSpark(spark, f"no DataSource.lookupDataSource ({detail})") from None
        return False  # a name Spark cannot resolve
    package = "org.apache.spark.sql.execution.datasources"
    bases = (f"{package}.FileFormat", f"{package}.v2.FileDataSourceV2")
    return any(jvm.java.lang.Class.forName(base).isAssignableFrom(found) for base in bases)


def catalog_file_table(spark: Any, name: str) -> Any | None:
    """The session catalog's metadata of table `name` when Spark's file sink writes it (a
    parquet, json, ... table); None for other tables (v2 tables such as Delta or Iceberg keep
    their own exactly-once bookkeeping) and for missing ones (`toTable` creates them)."""
    parts = name.split(".")
    if len(parts) > 2:
        return None  # a three-part name lives in a v2 catalog
    jvm = spark._jvm
    with spark_internal(spark, "its session catalog is not the one the runner knows"):
        database = jvm.scala.Option.apply(parts[0] if len(parts) == 2 else None)
        identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier(parts[-1], database)
        catalog = spark._jsparkSession.sessionState().catalog()
        if not catalog.tableExists(identifier):
            return None
        table = catalog.getTableMetadata(identifier)
        provider = table.provider()
    if provider.isEmpty() or not is_file_format(spark, provider.get()):
        return None
    return table


def new_file_sink(
    spark: Any, fmt: str, options: dict[str, str], schema: Any, table: Any = None
) -> Any:
    """Spark's own sink for file format `fmt`, as `writeStream` builds it: a DataSource (with
    Spark's defaults for parameters past DATA_SOURCE_PARAMETERS), then createSink in append
    mode (with the query's schema where it takes one)."""
    constructors = parameter_types(spark, DATA_SOURCE)
    known = len(DATA_SOURCE_PARAMETERS)
    fitting = [len(p) for p in constructors if tuple(p[:known]) == DATA_SOURCE_PARAMETERS]
    if not fitting:
        shapes = "; ".join(f"({', '.join(p)})" for p in constructors) or "none"
        raise UnsupportedSpark(spark, f"its DataSource constructors are {shapes}")
    sink_shapes = parameter_types(spark, DATA_SOURCE, "createSink")
    if ["OutputMode", "StructType"] not in sink_shapes and ["OutputMode"] not in sink_shapes:
        shapes = "; ".join(f"({', '.join(p)})" for p in sink_shapes) or "none"
        raise UnsupportedSpark(spark, f"its DataSource.createSink takes {shapes}")
    add_batch = parameter_types(spark, "org.apache.spark.sql.execution.streaming.Sink", "addBatch")
    if ["long", "Dataset"] not in add_batch:
        raise UnsupportedSpark(spark, "its streaming Sink has no addBatch(long, Dataset)")

    jvm = spark._jvm
    data_source = jvm.org.apache.spark.sql.execution.datasources.DataSource
    with spark_internal(spark, "its DataSource is not the one the runner knows"):
        defaults = [
            getattr(data_source, f"$lessinit$greater$default${number}")()
            for number in range(known + 1, min(fitting) + 1)
        ]
        utils = jvm.org.apache.spark.api.python.PythonUtils
        java_options = jvm.java.util.HashMap()
        for key, value in options.items():
            java_options.put(key, value)
        none = jvm.scala.Option.empty()
        empty = utils.toSeq(jvm.java.util.ArrayList())
        source = data_source(
            spark._jsparkSession,
            fmt,
            empty,
            none,
            table.partitionColumnNames() if table is not None else empty,
            table.bucketSpec() if table is not None else none,
            utils.toScalaMap(java_options),
            jvm.scala.Option.apply(table),
            *defaults,
        )
        append = jvm.org.apache.spark.sql.streaming.OutputMode.Append()
        if ["OutputMode", "StructType"] in sink_shapes:
            return source.createSink(append, schema)
        return source.createSink(append)


# -- running --------------------------------------------------------------------------------------


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


class StopRequest:
    def __init__(self) -> None:
        self.reason: str | None = None

    def handle(self, signum: int, _frame: Any) -> None:
        self.reason = f"signal {signal.Signals(signum).name}"


def error_text(exc: BaseException) -> str:
    """Spark's own message: the innermost JVM cause, without stack traces or query plans."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    text = ""
    if java is not None:
        try:
            cause = java
            while cause.getCause() is not None and not cause.getCause().equals(cause):
                cause = cause.getCause()
            text = cause.getMessage() or cause.toString()
        except Exception:  # noqa: BLE001 - fall back to the Python text
            text = ""
    text = text or str(getattr(exc, "desc", None) or exc) or type(exc).__name__
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("\tat ")]
    return "\n".join(lines[:12]).strip()


def stop_gracefully(query: Any, reason: str) -> None:
    """Let the running micro-batch finish (up to a limit), then stop the query."""
    log(f"stop requested ({reason}); waiting for the current micro-batch")
    deadline = time.monotonic() + BATCH_DRAIN_SECONDS
    while time.monotonic() < deadline and query.isActive and query.status.get("isTriggerActive"):
        time.sleep(0.1)
    query.stop()


def watch(
    query: Any, storage: Storage, doc: dict[str, Any], status: Status, stop: StopRequest
) -> int:
    marker = doc.get("stop-marker")
    while True:
        if stop.reason is None and marker and storage.exists(marker):
            stop.reason = f"stop marker {marker}"
        if stop.reason is not None:
            stop_gracefully(query, stop.reason)
            batch = (query.lastProgress or {}).get("batchId")
            status.set("stopped", batch)
            log(f"stopped gracefully after batch {batch}")
            return EXIT_OK
        if not query.isActive:
            failure = query.exception()
            if failure is not None:
                message = FAILURES[-1] if FAILURES else error_text(failure)
                status.set("failed", error=message)
                log(f"the query failed: {message}")
                return EXIT_FAILED
            status.set("finished", (query.lastProgress or {}).get("batchId"))
            log("the query finished (its trigger ran out of data)")
            return EXIT_OK
        progress = query.lastProgress
        if progress is not None and status.state != "active":
            status.set("active", progress.get("batchId"))
            log(f"active: first trigger done (batch {progress.get('batchId')})")
        status.beat(query)
        wait_a_little(query)


def wait_a_little(query: Any) -> None:
    """Up to POLL_SECONDS, less when the query ends (an availableNow or once trigger runs out of
    data): the runner exits as soon as the query does."""
    try:
        query.awaitTermination(POLL_SECONDS)
    except Exception:  # noqa: BLE001 - the query failed; watch() reports query.exception()
        if query.isActive:  # something else failed: do not spin
            time.sleep(POLL_SECONDS)


def run(manifest_location: str) -> int:
    stop = StopRequest()
    signal.signal(signal.SIGTERM, stop.handle)
    signal.signal(signal.SIGINT, stop.handle)

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    storage = Storage(spark)
    status = Status(storage, None, "", spark.version)
    try:
        text = storage.read(manifest_location)
        if text is None:
            raise BadManifest(f"{manifest_location} does not exist")
        doc = load_manifest(text)
        status = Status(storage, doc.get("status-file"), doc["run-id"], spark.version)
        log(
            f"job {doc['name']} v{doc['meta']['query-version']} run {doc['run-id']} on Spark "
            f"{spark.version}, checkpoint {doc['checkpoint-location']}"
        )
        status.set("starting")
        register_sources(spark, doc)
        frame = with_metadata(query_frame(spark, doc), doc)
        query = start_query(spark, storage, doc, frame)
        return watch(query, storage, doc, status, stop)
    except BadManifest as exc:
        log(f"invalid runtime manifest {manifest_location}: {exc}")
        status.set("failed", error=f"invalid runtime manifest: {exc}")
        return EXIT_BAD_MANIFEST
    except UnsupportedSpark as exc:
        log(f"the job cannot start: {exc}")
        status.set("failed", error=str(exc))
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - any failure is the job's failure: report, exit 1
        message = error_text(exc)
        traceback.print_exc()
        log(f"the job failed: {message}")
        status.set("failed", error=message)
        return EXIT_FAILED
    finally:
        try:
            spark.stop()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", required=True, help="runtime manifest: a file or URI")
    args = parser.parse_args(argv)
    return run(args.manifest)


if __name__ == "__main__":
    sys.exit(main())
