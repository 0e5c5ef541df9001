"""A job whose SQL and manifest name tables as Spark SQL does (backticks, qualified names, any
case), with its tables declared in a `.sql` file, runs on Spark through the runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runtime import runtime_manifest
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.catalog import load_catalog
from flink_sql_runner.read.manifest import load_jobs
from runner.query import query_frame, register_sources, start_query, with_metadata
from runner.storage import Storage

pytestmark = pytest.mark.spark


def test_backticked_qualified_tables_from_sql_ddl_run_on_spark(spark, tmp_path: Path):
    source = tmp_path / "in"
    source.mkdir()
    rows = [{"id": i, "name": f"n{i}", "time": "2026-11-01T12:00:00"} for i in range(5)]
    (source / "a.json").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    tables = tmp_path / "tables.sql"
    tables.write_text(
        "CREATE TABLE `kafka`.`some-input` (\n"
        "  id BIGINT, name STRING, `time` TIMESTAMP,\n"
        "  WATERMARK FOR `time` AS `time` - INTERVAL '1' MINUTE\n"
        f") USING json LOCATION '{source}';\n"
        "CREATE TABLE kafka.`some-output` USING parquet LOCATION '{state_dir}/out/{job_name}';\n"
    )
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "copy.yaml").write_text(
        "name: copy\n"
        'target-table: "`KAFKA`.`some-output`"\n'
        "trigger: {availableNow: true}\n"
        "sql: |\n"
        "  WITH kept AS (SELECT * FROM `kafka`.`SOME-INPUT` WHERE id > 0)\n"
        "  SELECT k.id, k.name FROM kept k JOIN Kafka.`some-input` o ON k.id = o.id\n"
        "    AND o.`time` BETWEEN k.`time` AND k.`time` + INTERVAL 1 MINUTE\n"
    )
    state = tmp_path / "state"
    (job,) = load_jobs([jobs], None, load_catalog([tables]), state)
    doc = runtime_manifest(
        StoredManifest(job.spec, job.tables, Meta(1, "id-1", "2026-11-22T13:50:00Z")),
        "run-1",
        ControlFiles.of(str(tmp_path / "control"), 1),
        job.file,
    )
    assert doc["source-tables"] == ["kafka__some_input"]

    register_sources(spark, doc)
    frame = with_metadata(query_frame(spark, doc), doc)
    assert frame.isStreaming
    query = start_query(spark, Storage(spark), doc, frame)
    query.awaitTermination(120)
    assert query.exception() is None

    written = spark.read.parquet(str(state.resolve() / "out" / "copy"))
    assert sorted((r.id, r.name, r["__query_name"]) for r in written.collect()) == [
        (i, f"n{i}", "copy") for i in range(1, 5)
    ]
