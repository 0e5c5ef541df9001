"""The plan's schema analysis: each job's output schema as the runner would write it, what each
file sink holds, and declared schemas parsed, all in one local SparkSession that reads no data.

Run by the deployer as `job_runner.py --probe schema_probe --input IN.json --output OUT.json`
under spark-submit (runner/probe_session.py). Input:
`{"jobs": [{"key", "manifest": <runtime manifest>, "conf": {spark.sql.* settings}?}],
"state": [the same, for the stateful operators], "sinks": [{"key", "format", "path"}],
"ddl": [{"key", "ddl"}]}`.
Output: `{"spark": version, "jobs": {key: {"fields"} | {"unknown": why} | {"error": Spark's
reason}}, "state": {key: {"operators": [...]} | {"unknown"} | {"error"}} (what each stateful
operator's state means, runner/stateful_plan.py), "sinks": {key: sink_history | {"error"}},
"ddl": {key: {"fields"} | {"error"}}}`.

A job's output is built exactly as a run builds it (runner/query.py: views, watermarks, SQL,
metadata columns), only each source frame is a stand-in, since sources cannot be opened at
plan time (their paths may not exist yet):

- file formats (json, csv, parquet, orc, text): the same format, options and declared schema,
  read from an empty folder: Spark's own file source, so nullability and analysis match;
- `rate` and `rate-micro-batch`: themselves (opening one reads nothing);
- `kafka` (its connector is not bundled with Spark): a frame of the Kafka source's fixed schema,
  as Spark's KafkaRecordToRowConverter.kafkaSchema declares it (apache/spark,
  connector/kafka-0-10-sql): key binary, value binary, topic string, partition int, offset
  bigint, timestamp timestamp, timestampType int, and with `includeHeaders` true headers
  array<struct<key:string,value:binary>>; every field nullable (StructField's default), as the
  stand-in's file source makes them too;
- any other format, and catalog tables, with a declared schema: a stand-in of that schema;
  without one the output is unknown, as is a code job's.

One job's failure never stops the others. Exit codes: 0 analysed (each result says what was
found), 2 the input cannot be read.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
from typing import Any

from .manifest import load_manifest, options_of
from .probe_session import probe_session, read_request, write_answer
from .query import query_frame, register_sources, with_metadata
from .schema_rules import KAFKA_HEADERS, Field, fields_of, kafka_headers
from .sink_schema import declared_fields, sink_history
from .spark_internals import analysed_plan
from .stateful_plan import stateful_operators
from .storage import Storage

STAND_IN_FILE_FORMATS = ("json", "csv", "parquet", "orc", "text")
RATE_FORMATS = ("rate", "rate-micro-batch")
KAFKA_SCHEMA = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, "
    "timestamp TIMESTAMP, timestampType INT"
)
CODE_UNKNOWN = (
    "a code job's output is known only when it runs; its run checks the sink before its first write"
)


class Unknown(Exception):
    """What the probe cannot know before the job runs; the message says why."""


def one_line(exc: BaseException) -> str:
    """Spark's reason, first line."""
    text = str(getattr(exc, "desc", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def stand_in_opener(empty: str) -> Any:
    """A source opener for register_sources that opens no real source: see the module's
    docstring for what stands in for each."""

    def opener(spark: Any, name: str, table: dict[str, Any]) -> Any:
        options = {k: v for k, v in options_of(table).items() if k.lower() != "path"}
        schema = table.get("schema")
        fmt = str(table.get("format", "")).lower() if "table" not in table else ""
        reader = spark.readStream.options(**options)
        if fmt in STAND_IN_FILE_FORMATS:
            if not schema and fmt != "text":
                raise Unknown(
                    f"source {name} (format {fmt}) declares no schema: its columns are known "
                    "only when it runs"
                )
            reader = reader.format(fmt)
            return (reader.schema(schema) if schema else reader).load(empty)
        if fmt in RATE_FORMATS:
            reader = reader.format(table["format"])
            return (reader.schema(schema) if schema else reader).load()
        if fmt == "kafka":
            with_headers = kafka_headers(options_of(table))
            kafka = f"{KAFKA_SCHEMA}, {KAFKA_HEADERS}" if with_headers else KAFKA_SCHEMA
            return spark.readStream.format("json").schema(kafka).load(empty)
        if schema:
            return spark.readStream.format("json").schema(schema).load(empty)
        what = f"table {table['table']}" if "table" in table else f"format {table.get('format')}"
        raise Unknown(
            f"source {name} ({what}) declares no schema: its columns are known only when it runs"
        )

    return opener


def _job_frame(spark: Any, job: dict[str, Any], empty: str) -> tuple[Any, dict[str, Any]]:
    """The job's query frame (before its metadata columns) and its runtime manifest, in a
    session of its own (its views and settings touch no other job's). Unknown for a code job."""
    doc = load_manifest(json.dumps(job.get("manifest")))
    if doc.get("code") is not None:
        raise Unknown(CODE_UNKNOWN)
    session = spark.newSession()
    for key, value in (job.get("conf") or {}).items():
        if str(key).startswith("spark.sql."):
            session.conf.set(str(key), str(value))
    register_sources(session, doc, stand_in_opener(empty))
    return query_frame(session, doc), doc


def job_output(spark: Any, job: dict[str, Any], empty: str) -> dict[str, Any]:
    """`{"fields"}`, `{"unknown"}` or `{"error"}` for one job."""
    try:
        frame, doc = _job_frame(spark, job, empty)
        return {"fields": fields_of(json.loads(with_metadata(frame, doc).schema.json()))}
    except Unknown as exc:
        return {"unknown": str(exc)}
    except Exception as exc:  # noqa: BLE001 - Spark's reason is the job's result
        return {"error": one_line(exc)}


def job_state(spark: Any, job: dict[str, Any], empty: str) -> dict[str, Any]:
    """`{"operators"}` (runner/stateful_plan.py: what each stateful operator's state means),
    `{"unknown"}` or `{"error"}` for one job."""
    try:
        frame, doc = _job_frame(spark, job, empty)
        plan, delays = analysed_plan(frame)
        return {"operators": stateful_operators(plan, delays, source_identities(doc))}
    except Unknown as exc:
        return {"unknown": str(exc)}
    except Exception as exc:  # noqa: BLE001 - Spark's reason is the job's result
        return {"error": one_line(exc)}


#: The options of a source table that say what it reads (not how fast, nor from where it starts).
_WHAT_IS_READ = ("path", "paths", "subscribe", "subscribepattern", "assign", "topic",
                 "kafka.bootstrap.servers", "basepath")  # fmt: skip


def source_identities(doc: dict[str, Any]) -> dict[str, str]:
    """By source view, what it reads, as one text: two versions whose view of one name reads
    another path or topic read other sources."""
    found = {}
    for name in doc.get("source-tables", []):
        table = doc["tables"].get(name) or {}
        options = {str(k).lower(): v for k, v in options_of(table).items()}
        what = {k: str(options[k]) for k in _WHAT_IS_READ if k in options}
        shape = {"format": table.get("format"), "table": table.get("table"), **what}
        found[str(name)] = json.dumps(shape, sort_keys=True, ensure_ascii=True)
    return found


def ddl_fields(spark: Any, ddl: str) -> dict[str, Any]:
    try:
        fields: list[Field] = declared_fields(spark, ddl)
        return {"fields": fields}
    except Exception as exc:  # noqa: BLE001 - Spark's parse error is the result
        return {"error": one_line(exc)}


def probe(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"spark": spark.version, "jobs": {}, "state": {}, "sinks": {},
                              "ddl": {}}  # fmt: skip
    storage = Storage(spark)
    with tempfile.TemporaryDirectory(prefix="fsr-schema-probe-") as empty:
        for job in request.get("jobs", []):
            result["jobs"][job["key"]] = job_output(spark, job, empty)
        for job in request.get("state", []):
            result["state"][job["key"]] = job_state(spark, job, empty)
    for sink in request.get("sinks", []):
        try:
            found = sink_history(spark, storage, sink["format"], sink["path"])
        except Exception as exc:  # noqa: BLE001 - one sink's failure is its result
            found = {"error": one_line(exc)}
        result["sinks"][sink["key"]] = found
    for item in request.get("ddl", []):
        result["ddl"][item["key"]] = ddl_fields(spark, item["ddl"])
    return result


def session() -> Any:
    spark = probe_session("schema-probe", 1, {"spark.sql.shuffle.partitions": "1"})
    quiet_query_context_logs()
    return spark


def quiet_query_context_logs() -> None:
    """PySpark 4 logs every AnalysisException with its stack trace (Python loggers of its
    own); the probe reports each job's error in its output instead. PySpark 3.5 has none."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def read_schema_request(location: str) -> dict[str, Any]:
    request = read_request(location)
    for field in ("jobs", "state", "sinks", "ddl"):
        items = request.get(field, [])
        if not isinstance(items, list) or not all(
            isinstance(item, dict) and "key" in item for item in items
        ):
            raise ValueError(f"{location}: {field} must be a list of objects with a key")
    return request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the request: a JSON file")
    parser.add_argument("--output", required=True, help="where the results are written (JSON)")
    args = parser.parse_args(argv)
    try:
        request = read_schema_request(args.input)
    except ValueError as exc:
        print(f"schema probe: {exc}", file=sys.stderr)
        return 2
    spark = session()
    try:
        result = probe(spark, request)
    finally:
        spark.stop()
    write_answer(args.output, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
