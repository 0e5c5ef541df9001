"""The one adapter to Spark's internals.

The only place the runner reaches into Spark's JVM internals (through py4j); everything else
uses public APIs. No Spark line, 3.5 to 4.3, offers a public way to append a micro-batch to a
file sink under a batch id of one's choosing, so the file-sink shift builds Spark's own sink as
`writeStream` does. Each internal is chosen by what the running Spark offers (reflection over
its constructors and methods), not by its version number. Read with javap on the jars of
pyspark 3.5.9, 4.0.5, 4.1.4, 4.2.1 and 4.3.0:

  DataSource(<DATA_SOURCE_PARAMETERS>)                           3.5 to 4.1
  DataSource(<DATA_SOURCE_PARAMETERS>, streamingSourceName)      4.2, 4.3 (default None)
  DataSource.createSink(outputMode)                              3.5 to 4.2
  DataSource.createSink(outputMode, schema)                      4.3 (checks partition columns)

The same on all five: DataSource.lookupDataSource(String, SQLConf), SessionState.catalog() and
conf(), SessionCatalog.tableExists / getTableMetadata(TableIdentifier), TableIdentifier(String,
Option), CatalogTable.provider / location / partitionColumnNames / bucketSpec, PythonUtils.toSeq
/ toScalaMap, OutputMode.Append() and Sink.addBatch(long, Dataset). A Spark without what the
runner needs fails the start with UnsupportedSpark, one line, before the query starts.

The schema contracts (runner/sink_schema.py) need three more, the same on all five: StructType
.fromDDL(String) and StructType.json() (a declared schema, parsed as Spark parses it),
CatalogTable.schema() (a catalog table's declared columns), and DataSourceRegister.shortName()
(which file format a class name is).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

FILE_FORMATS = ("parquet", "json", "csv", "orc", "text", "avro")
DATA_SOURCE = "org.apache.spark.sql.execution.datasources.DataSource"
#: The read option (DataSource.GLOB_PATHS_KEY) a file stream's batch reads its files with: each
#: path that file, not a pattern (a name with `[`, `{`, `*` or `?` in it).
EXACT_PATHS = {"__globPaths__": "false"}


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


def ddl_schema_json(spark: Any, ddl: str) -> str:
    """Spark's schema JSON of a DDL column list (`a BIGINT, b STRING`), parsed by Spark itself;
    Spark's ParseException when it is not one."""
    with spark_internal(spark, "it cannot parse a DDL schema"):
        return str(spark._jvm.org.apache.spark.sql.types.StructType.fromDDL(ddl).json())


def catalog_table_schema_json(spark: Any, table: Any) -> str:
    """Spark's schema JSON of a catalog table's declared columns (its partition columns too)."""
    with spark_internal(spark, "its catalog tables are not the ones the runner knows"):
        return str(table.schema().json())


def file_format_name(spark: Any, fmt: str) -> str:
    """The short name (`parquet`, `json`, ...) of a file format given under any name Spark
    resolves (`org.apache.spark.sql.parquet`, a FileFormat class); the name itself, lowercased,
    when Spark's lookup says nothing more."""
    if fmt.lower() in FILE_FORMATS:
        return fmt.lower()
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().conf()
    try:
        found = jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            fmt, conf
        )
        register = jvm.java.lang.Class.forName("org.apache.spark.sql.sources.DataSourceRegister")
        if register.isAssignableFrom(found):
            return str(found.newInstance().shortName()).lower()
    except Exception as exc:  # noqa: BLE001 - a name Spark cannot resolve
        detail = missing_internal(exc)
        if detail is not None:
            raise UnsupportedSpark(spark, f"no DataSource.lookupDataSource ({detail})") from None
    return fmt.lower()


#: Operators of a logical plan whose result, run as a batch query on a slice of input, is not
#: what the stream computes over the same rows (they keep state across batches when streaming).
STATEFUL_OPERATORS = ("Aggregate", "Join", "Deduplicate", "DeduplicateWithinWatermark",
                      "Window", "FlatMapGroupsWithState", "FlatMapGroupsInPandasWithState",
                      "TransformWithState",
                      # A stream keeps state for these too: DISTINCT (and UNION, which is one),
                      # a LIMIT across batches, OFFSET, INTERSECT and EXCEPT (which a stream
                      # refuses, and a batch runs).
                      "Distinct", "GlobalLimit", "Offset", "Intersect", "Except")  # fmt: skip


def jvm_time_zone(spark: Any) -> str:
    """The time zone of `spark`'s JVM (java.util.TimeZone's default, from TZ or the machine):
    a session's time zone when nothing sets spark.sql.session.timeZone."""
    return str(spark._jvm.java.util.TimeZone.getDefault().getID())


def stateful_operators(frame: Any) -> list[str]:
    """The stateful operators of `frame`'s analysed plan, by Spark's own names (its plan's
    tree, read as text: the same on 3.5 to 4.3), each once, in the order they appear."""
    text = str(frame._jdf.queryExecution().analyzed().treeString())
    found: list[str] = []
    for line in text.splitlines():
        word = line.lstrip(" :+-").split(" ", 1)[0]
        if word in STATEFUL_OPERATORS and word not in found:
            found.append(word)
    return found


def analysed_plan(frame: Any) -> tuple[list[Any], list[str]]:
    """`frame`'s analysed plan as Spark writes it (`TreeNode.toJSON`, 3.5 to 4.3) and the delays
    of its watermarks in the plan's pre-order, which that JSON leaves out (`EventTimeWatermark
    .delay`, a CalendarInterval: "10 seconds"). An expression's parameter that JSON writes as
    null though it has a value (a Map: `from_json`'s options; an Enumeration: a cast's eval
    mode; a Char: `LIKE`'s escape) is filled in with the value's text (`_filled`)."""
    import json

    plan = frame._jdf.queryExecution().analyzed()
    delays: list[str] = []
    nodes = []
    pending = [plan]
    while pending:
        node = pending.pop()
        nodes.append(node)
        if str(node.nodeName()) == "EventTimeWatermark":
            delays.append(str(node.delay().toString()))
        children = node.children()
        pending.extend(children.apply(i) for i in reversed(range(children.size())))
    found = json.loads(str(plan.toJSON()))
    if isinstance(found, list) and len(found) == len(nodes):
        for doc, node in zip(found, nodes, strict=True):
            _filled(doc, node)
    return found, delays


def _filled(doc: Any, node: Any) -> None:
    """The null parameters of the expressions in plan node `doc` (JSON) read from `node` (its
    JVM node): each expression-valued field (an expression, or sequences of them, nested), its
    expressions in the pre-order JSON lists them, matched class for class; any mismatch or a
    parameter that cannot be read is left null."""
    if not isinstance(doc, dict):
        return
    for field, value in doc.items():
        if isinstance(value, list) and _has_null(value):
            try:
                _fill(value, getattr(node, field)())
            except Exception:  # noqa: BLE001 - no accessor, or not expressions: left null
                continue


def _fill(value: list[Any], held: Any) -> None:
    if str(held.getClass().getName()) == "scala.Some":  # an optional expression: a join's
        held = held.get()
    if _is_tree(value):
        _fill_tree(value, held)
        return
    for i, part in enumerate(value):
        if isinstance(part, list) and _has_null(part):
            _fill(part, held.apply(i))


def _is_tree(value: Any) -> bool:
    return bool(value) and all(isinstance(v, dict) and "class" in v for v in value)


def _has_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(v is None and k != "value" for k, v in value.items()) or any(
            _has_null(v) for v in value.values() if isinstance(v, list)
        )
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


def _fill_tree(tree: list[dict[str, Any]], expr: Any) -> None:
    flat, pending = [], [expr]
    while pending:
        one = pending.pop()
        flat.append(one)
        kids = one.children()
        pending.extend(kids.apply(i) for i in reversed(range(kids.size())))
    if len(flat) != len(tree):
        return
    for doc, one in zip(tree, flat, strict=True):
        if str(one.getClass().getName()) != doc.get("class"):
            return
        for key, value in list(doc.items()):
            if value is None and key != "value":
                try:
                    doc[key] = f"<{getattr(one, key)()}>"
                except Exception:  # noqa: BLE001 - left null: canon marks it unknown
                    continue


def java_query(query: Any) -> Any | None:
    """The JVM's StreamingQuery behind PySpark's (classic PySpark's `_jsq`), whose public
    methods (`isActive`, `lastProgress` and its `batchId`, `timestamp` and `json`, `status` and
    its `isTriggerActive`) runner/query_look.py asks; None for a query without one (Spark
    Connect's), read through PySpark's own properties then."""
    found = getattr(query, "_jsq", None)
    try:
        from py4j.java_gateway import JavaObject
    except ImportError:  # no py4j: no JVM query either
        return None
    return found if isinstance(found, JavaObject) else None


def stop_session(spark: Any) -> None:
    """`spark.stop()`, less PySpark's wait for its accumulator server's loop to see it asked to
    stop (`socketserver` looks every 0.5 s): the process ends right after, and that server's
    thread is a daemon. A stopped run's processes are gone that much sooner, which a warm
    handover's go waits for. The server is told to stop after Spark's context, as PySpark does
    it (an update sent meanwhile is still taken). Its Unix-socket form (PySpark 4, when asked
    for) is stopped as PySpark does it, which removes its socket file; a session without that
    server (`_accumulatorServer`), as is."""
    try:
        context = spark.sparkContext
        server = getattr(context, "_accumulatorServer", None)
    except Exception:  # noqa: BLE001 - no context of its own (Spark Connect): stopped as is
        server = None
    quick = server is not None and isinstance(getattr(server, "server_address", None), tuple)
    if quick:
        context._accumulatorServer = None  # so that SparkContext.stop() does not wait for it
    spark.stop()
    if quick:
        server.server_shutdown = True  # what its own shutdown() sets once the context stopped
