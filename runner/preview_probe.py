"""`preview NAME`: the old and the new query of a job run as batch queries on one slice of input
the old one already read, in one local SparkSession that writes nothing.

Run by the deployer as `job_runner.py --probe preview_probe --input IN.json --output OUT.json`
under the spark-submit the job runs on, the job's jars and storage settings in spark-submit's
properties file (runner/probe_session.py). Input: `{"old": <runtime manifest> or null (a new
job: the new query alone), "new": <runtime manifest>, "slice": {view: part}, "max-rows": N}`,
each manifest with the job's spark.sql.* settings (`conf`), each part one of

- `{"files": [path, ...]}`: exactly those files (a name, never a pattern), read with the
  table's format, options and schema (`spark.read`), the table's path as their base
  (`basePath`: partition columns such as `dt=...` read as the stream reads them);
- `{"kafka": {"start": {topic: {partition: offset}}, "end": {...}}}`: those offset ranges,
  read with Spark's batch Kafka source (`assign`, `startingOffsets`, `endingOffsets`);
- `{"sample": path}`: rows the user gives, read with the table's schema, in the format the
  file's name says (json unless .csv, .parquet or .orc).

Output: `{"spark", "inputs": {view: rows}, "old": side, "new": side, "seconds": {"session",
"input", "old", "new"}}` with each side
`{"fields", "rows": [[value, ...]], "stateful": [operator names]}` or `{"error": Spark's
reason}`; `{"spark", "too-many": {"where", "rows", "limit"}}` when the input or an output holds
more than `max-rows` rows (reading stops there: `rows` is what was read, `limit` + 1);
`{"spark", "error"}` when the slice cannot be read. Values are JSON: times as ISO text, decimals
and other numbers Spark keeps exactly as text, bytes as base64.

Each side runs in a session of its own with the job's spark.sql.* settings (ANSI, time zone,
legacy flags: as its run's session has them), its views touching no other's: its sources as
batch views (a watermark is kept, and a batch query ignores it), its SQL or its code (whose
`execution_output` is then a batch frame), and the metadata columns as its run would add them
(runner/query.py). Nothing is written: no sink, no checkpoint, no event log. Exit codes: 0
answered, 2 the input cannot be read.

Needs pyspark and the standard library only.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import decimal
import json
import re
import sys
import time
from typing import Any

from .manifest import load_manifest, options_of
from .probe_session import probe_session, read_request, write_answer
from .query import query_frame, with_metadata
from .schema_rules import fields_of
from .spark_internals import EXACT_PATHS, jvm_time_zone, stateful_operators

#: Options of a streaming read that say how a stream advances, not what a row is: a batch read
#: of the slice leaves them out (the slice says where to start and stop).
STREAM_ONLY = ("maxfilespertrigger", "maxbytespertrigger", "latestfirst", "maxfileage",
               "cleansource", "sourcearchivedir", "startingoffsets", "endingoffsets",
               "startingoffsetsbytimestamp", "startingtimestamp", "maxoffsetspertrigger",
               "minoffsetspertrigger", "maxtriggerdelay", "subscribe", "subscribepattern",
               "assign", "failondataloss", "path")  # fmt: skip


#: Hadoop's glob characters: a path holding one is a pattern.
GLOB = re.compile(r"[*?\[\]{}]")


class TooMany(Exception):
    def __init__(self, where: str, rows: int, limit: int):
        super().__init__(where)
        self.doc = {"where": where, "rows": rows, "limit": limit}


def plain(value: Any) -> Any:
    """One value of a row as JSON."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        finite = value == value and value not in (float("inf"), float("-inf"))
        return value if finite else str(value)
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def batch_source(spark: Any, table: dict[str, Any], part: dict[str, Any]) -> Any:
    """The batch frame of one source's slice (see the module's docstring)."""
    options = {k: v for k, v in options_of(table).items() if k.lower() not in STREAM_ONLY}
    schema = table.get("schema")
    if "sample" in part:
        path = str(part["sample"])
        fmt = next((f for f in ("csv", "parquet", "orc") if path.endswith(f".{f}")), "json")
        reader = spark.read.format(fmt).options(**EXACT_PATHS)  # the file named, no pattern
        if fmt == "csv":
            reader = reader.option("header", "true")
        return (reader.schema(schema) if schema else reader).load(path)
    if "kafka" in part:
        ranges = part["kafka"]
        assign = {t: sorted(int(p) for p in parts) for t, parts in ranges["end"].items()}
        return (
            spark.read.format("kafka")
            .options(**options)
            .option("assign", json.dumps(assign))
            .option("startingOffsets", json.dumps(ranges["start"]))
            .option("endingOffsets", json.dumps(ranges["end"]))
            .load()
        )
    base = options_of(table).get("path")
    if base and not GLOB.search(str(base)) and not any(k.lower() == "basepath" for k in options):
        # The table's folder is the files' base: partition columns (`dt=...`) as the stream
        # reads them (a folder given as a pattern has none: the stream sets none either).
        options["basePath"] = base
    reader = spark.read.format(str(table["format"])).options(**options, **EXACT_PATHS)
    if schema:
        reader = reader.schema(schema)
    files = [str(f) for f in part["files"]]
    return reader.load(files) if files else _empty(spark, table)


def _empty(spark: Any, table: dict[str, Any]) -> Any:
    schema = table.get("schema") or "value STRING"
    return spark.createDataFrame([], schema)


def register(session: Any, doc: dict[str, Any], frames: dict[str, Any]) -> None:
    """Each source of `doc` as a batch view of its slice, with its watermark (ignored by a
    batch query, kept so that the query analyses as its run's does)."""
    for name in doc.get("source-tables", []):
        frame = frames[name]
        watermark = doc["tables"][name].get("watermark")
        if watermark:
            frame = frame.withWatermark(watermark["column"], watermark["delay"])
        frame.createOrReplaceTempView(name)


class Reads:
    """The slice as each side reads it: in a session with that side's spark.sql.* settings
    (`conf`, as its run's session has them: a time zone changes how a time is read; without
    one, the JVM's, as a job's), each source counted once per settings and table definition, at
    most `limit` + 1 rows of it (past the limit nothing more is read)."""

    def __init__(self, spark: Any, parts: dict[str, Any], limit: int):
        self.spark, self.parts, self.limit = spark, parts, limit
        self.sessions: dict[str, Any] = {}
        self.frames: dict[tuple[str, str, str], tuple[Any, int]] = {}
        self.counts: dict[str, int] = {}

    def session(self, doc: dict[str, Any]) -> tuple[str, Any]:
        conf = {str(k): str(v) for k, v in (doc.get("conf") or {}).items()
                if str(k).startswith("spark.sql.")}  # fmt: skip
        said = json.dumps(conf, sort_keys=True)
        if said not in self.sessions:
            session = self.spark.newSession()
            # A job's session has its JVM's time zone unless it says otherwise (the probe's
            # base session is UTC): this machine's, as a local run's is.
            session.conf.set("spark.sql.session.timeZone", jvm_time_zone(self.spark))
            for key, value in conf.items():
                if session.conf.isModifiable(key):  # a static one is the session's start's
                    session.conf.set(key, value)
            self.sessions[said] = session
        return said, self.sessions[said]

    def of(self, doc: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        """`doc`'s session and its sources' frames (those the slice has); TooMany past the
        limit."""
        said, session = self.session(doc)
        frames, total = {}, 0
        for name in doc.get("source-tables", []):
            if name not in self.parts:
                continue
            table = doc["tables"][name]
            key = (said, name, json.dumps(table, sort_keys=True, default=str))
            if key not in self.frames:
                frame = batch_source(session, table, self.parts[name])
                # Counted up to the limit (past it nothing more is read); then queried as read,
                # from its files (not held in memory, where a row no longer knows its file:
                # `input_file_name()` answers ''; nor cached: Spark's cache is shared by every
                # session and would answer a read in another time zone with this one's rows).
                self.frames[key] = (frame, frame.limit(self.limit + 1).count())
            frames[name], rows = self.frames[key]
            self.counts.setdefault(name, rows)
            total += rows
            if total > self.limit:
                raise TooMany("the slice's input", total, self.limit)
        return session, frames

    def release(self) -> None:
        self.frames.clear()


def run_side(reads: Reads, doc: dict[str, Any], limit: int, which: str) -> dict[str, Any]:
    """`{"fields", "rows", "stateful"}` of one side, or `{"error"}`; TooMany past `limit`."""
    session, frames = reads.of(doc)
    try:
        missing = [n for n in doc.get("source-tables", []) if n not in frames]
        if missing:
            return {"error": f"no slice of {', '.join(missing)}"}
        register(session, doc, frames)
        frame = with_metadata(query_frame(session, doc, streaming=False), doc)
        stateful = stateful_operators(frame)
        rows = frame.limit(limit + 1).collect()
    except Exception as exc:  # noqa: BLE001 - Spark's reason is the side's result
        return {"error": one_line(exc)}
    if len(rows) > limit:
        raise TooMany(f"the {which} query's output", len(rows), limit)
    return {
        "fields": fields_of(json.loads(frame.schema.json())),
        "rows": [[plain(v) for v in row] for row in rows],
        "stateful": stateful,
    }


def probe(spark: Any, request: dict[str, Any]) -> dict[str, Any]:
    """Both sides' answer (the new one alone where `old` is null: a new job)."""
    answer: dict[str, Any] = {"spark": spark.version, "seconds": {}}
    limit = int(request.get("max-rows") or 100_000)
    began = time.perf_counter()

    def lap(what: str) -> None:
        nonlocal began
        answer["seconds"][what] = round(time.perf_counter() - began, 3)
        began = time.perf_counter()

    sides = {which: load_manifest(json.dumps(request[which]))
             for which in ("old", "new") if request.get(which) is not None}  # fmt: skip
    reads = Reads(spark, request["slice"], limit)
    try:
        for doc in sides.values():
            reads.of(doc)  # the input, read once per way it is read
        answer["inputs"] = reads.counts
        lap("input")
        for which, doc in sides.items():
            answer[which] = run_side(reads, doc, limit, which)
            lap(which)
    except TooMany as exc:
        answer["too-many"] = exc.doc
    except Exception as exc:  # noqa: BLE001 - the slice could not be read: Spark's reason
        answer["error"] = one_line(exc)
    finally:
        reads.release()
    return answer


def one_line(exc: BaseException) -> str:
    java = getattr(exc, "java_exception", None)
    try:
        text = str(java.toString() if java is not None else (getattr(exc, "desc", None) or exc))
    except Exception:  # noqa: BLE001 - the gateway may be gone
        text = str(exc)
    lines = text.strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:500]


def read_preview_request(location: str) -> dict[str, Any]:
    request = read_request(location)
    for field in ("new", "slice"):
        if not isinstance(request.get(field), dict):
            raise ValueError(f"{location}: {field} must be an object")
    if not isinstance(request.get("old"), (dict, type(None))):
        raise ValueError(f"{location}: old must be an object or null (a new job)")
    return request


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="preview_probe")
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    try:
        request = read_preview_request(args.input)
    except ValueError as exc:
        print(f"preview probe: {exc}", file=sys.stderr)
        return 2
    settings = {
        "spark.sql.shuffle.partitions": "2",
        # The slice's files are named one by one: list them here, not in a Spark job.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    }
    began = time.perf_counter()
    spark = probe_session("preview-probe", 2, settings)
    started = round(time.perf_counter() - began, 3)
    try:
        answer = probe(spark, request)
        answer.setdefault("seconds", {})["session"] = started
    finally:
        spark.stop()
    write_answer(args.output, answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
