"""Building the job's query: its sources as streaming views, the SQL or code, the metadata
columns, and the sink it starts into."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from .file_sink import shifted_file_sink
from .kafka_start import filled_offsets, kafka_partitions
from .manifest import options_of, trigger_args
from .storage import Storage

METADATA_COLUMNS = (
    "__query_name",
    "__query_description",
    "__query_id",
    "__query_version",
    "__query_create_timestamp",
)


def open_source(spark: Any, name: str, table: dict[str, Any]) -> Any:
    """The streaming frame of source table `name`, as the job reads it (a Kafka source whose
    carried offsets leave partitions out starts those at their earliest: kafka_start.py)."""
    options = options_of(table)
    if table.get("new-partitions") == "earliest":
        options = filled_offsets(options, kafka_partitions(spark))
    reader = spark.readStream.options(**options)
    if "table" in table:
        return reader.table(table["table"])
    reader = reader.format(table["format"])
    if table.get("schema"):
        reader = reader.schema(table["schema"])
    return reader.load()


def register_sources(
    spark: Any,
    doc: dict[str, Any],
    opener: Callable[[Any, str, dict[str, Any]], Any] = open_source,
) -> None:
    """Each source table as a streaming temporary view under its own name, with its watermark;
    `opener` makes each frame (the plan's schema probe swaps it for stand-ins of the same
    schema, runner/schema_probe.py)."""
    for name in doc.get("source-tables", []):
        table = doc["tables"][name]
        frame = opener(spark, name, table)
        watermark = table.get("watermark")
        if watermark:
            frame = frame.withWatermark(watermark["column"], watermark["delay"])
        frame.createOrReplaceTempView(name)


def query_frame(spark: Any, doc: dict[str, Any], streaming: bool = True) -> Any:
    """The job's query on the views registered: its SQL, or the frame its code assigns to
    `execution_output` (a streaming one; a batch one where the views are batch views, as the
    preview probe registers them: `streaming=False`)."""
    if doc.get("sql") is not None:
        return spark.sql(doc["sql"])
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    namespace: dict[str, Any] = {"spark": spark, "F": F}
    exec(compile(doc["code"], f"<code of {doc['name']}>", "exec"), namespace)  # noqa: S102
    frame = namespace.get("execution_output")
    if not isinstance(frame, DataFrame):
        raise ValueError("the code must assign a DataFrame to `execution_output`")
    if streaming and not frame.isStreaming:
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
    frame = frame.select("*", *(column.alias(name) for name, column in columns.items()))
    target = (doc.get("tables") or {}).get(doc.get("target-table")) or {}
    if str(target.get("format", "")).lower() == "kafka":
        frame = _as_headers(frame, list(columns))
    return frame


def _as_headers(frame: Any, names: list[str]) -> Any:
    """The metadata columns also as record headers (UTF-8 text), after any headers the query
    writes: Spark's Kafka sink writes only key, value, topic, partition and headers, and drops
    every other column without a word."""
    from pyspark.sql import functions as F

    ours = F.array(
        *(
            F.struct(
                F.lit(name).alias("key"), F.col(name).cast("string").cast("binary").alias("value")
            )
            for name in names
        )
    )
    headers = F.concat(F.col("headers"), ours) if "headers" in frame.columns else ours
    return frame.withColumn("headers", headers)


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
