"""The runner's parts on the shared SparkSession: views, metadata columns, file sinks."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.targets.sparksubmit import find_spark_submit
from runner import failures, file_sink, job_runner, lifecycle, spark_internals
from runner.manifest import load_manifest
from runner.query import query_frame, register_sources, with_metadata
from runner.storage import Storage
from tests.support.runner_jobs import SCHEMA, manifest, run_to_end, write_input

pytestmark = pytest.mark.spark

RUNNER = Path(lifecycle.__file__).parent

HOSTILE = "it's \"quoted\" \\ back\\slash -- not a comment; DROP TABLE x;\nsecond line\t'); --"


def test_metadata_columns_follow_the_query_columns_as_typed_values(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(3))
    doc = manifest(tmp_path, description=HOSTILE)
    register_sources(spark, doc)
    frame = with_metadata(query_frame(spark, doc), doc)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema.fields] == [
        ("id", "bigint"),
        ("name", "string"),
        ("__create_timestamp", "timestamp"),
        ("__query_name", "string"),
        ("__query_description", "string"),
        ("__query_id", "string"),
        ("__query_version", "int"),
        ("__query_create_timestamp", "timestamp"),
    ]
    run_to_end(spark, doc)
    rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted(r["id"] for r in rows) == [0, 1, 2]
    row = rows[0]
    assert row["__query_description"] == HOSTILE  # byte for byte
    assert (row["__query_name"], row["__query_id"], row["__query_version"]) == (
        "people",
        "id-1",
        1,
    )
    created = row["__query_create_timestamp"].replace(tzinfo=timezone.utc)
    assert created == datetime(2026, 11, 22, 13, 50, tzinfo=timezone.utc)


def test_metadata_columns_can_be_renamed_or_switched_off(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(1))
    doc = manifest(tmp_path, **{"metadata-columns": {"create-timestamp-column": "made_at"}})
    register_sources(spark, doc)
    columns = with_metadata(query_frame(spark, doc), doc).columns
    assert columns[2] == "made_at" and "__create_timestamp" not in columns
    off = manifest(tmp_path, **{"metadata-columns": {"enabled": False}})
    assert with_metadata(query_frame(spark, off), off).columns == [
        "id",
        "name",
    ]


def test_a_query_column_named_like_a_metadata_column_is_refused(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(1))
    doc = manifest(tmp_path, sql="SELECT id, name AS __query_name FROM people")
    register_sources(spark, doc)
    with pytest.raises(ValueError, match="already has column"):
        with_metadata(query_frame(spark, doc), doc)


def test_code_jobs_see_spark_f_and_the_views(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(4))
    code = "execution_output = spark.table('people').where(F.col('id') % 2 == 0)"
    doc = manifest(tmp_path, sql=None, code=code)
    run_to_end(spark, doc)
    ids = sorted(r["id"] for r in spark.read.parquet(str(tmp_path / "out")).collect())
    assert ids == [0, 2]


def test_code_must_produce_a_streaming_dataframe(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(1))
    doc = manifest(tmp_path, sql=None, code="execution_output = spark.range(3)")
    register_sources(spark, doc)
    with pytest.raises(ValueError, match="must be a streaming DataFrame"):
        query_frame(spark, doc)


def read_versions(spark: Any, path: Path) -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for row in spark.read.parquet(str(path)).collect():
        found.setdefault(row["__query_version"], []).append(row["id"])
    return {version: sorted(ids) for version, ids in found.items()}


@pytest.mark.parametrize(
    "sink_format",
    # Spark's short name, an older name, and the DataSourceV2 class (streaming falls back to
    # the FileFormat): the same file sink each time.
    [
        "parquet",
        "org.apache.spark.sql.parquet",
        "org.apache.spark.sql.execution.datasources.v2.parquet.ParquetDataSourceV2",
    ],
)
def test_a_clean_start_into_a_used_file_sink_loses_no_rows(spark, tmp_path: Path, sink_format: str):
    """SPEC's trap: a new checkpoint's batch 0.. would be skipped by the sink's old log."""

    def job(version: int) -> dict[str, Any]:
        doc = manifest(tmp_path, version=version)
        doc["tables"]["people_out"]["format"] = sink_format
        return doc

    write_input(tmp_path, "a", range(5))
    # A new sink: nothing to shift past, Spark's own sink writes directly.
    assert run_to_end(spark, job(1)).startswith("FileSink")
    write_input(tmp_path, "b", range(5, 8))
    run_to_end(spark, job(1))  # a second batch of version 1
    assert read_versions(spark, tmp_path / "out") == {1: list(range(8))}

    # Version 2 starts clean (new checkpoint) into the same sink folder and reads everything.
    assert run_to_end(spark, job(2)) == "ForeachBatchSink"
    assert read_versions(spark, tmp_path / "out") == {1: list(range(8)), 2: list(range(8))}

    # Restarted from its checkpoint with new input, version 2 keeps its shifted batch ids.
    write_input(tmp_path, "c", range(8, 10))
    assert run_to_end(spark, job(2)) == "ForeachBatchSink"
    assert read_versions(spark, tmp_path / "out") == {1: list(range(8)), 2: list(range(10))}
    record = json.loads((tmp_path / "ckpt" / "2" / file_sink.SINK_OFFSET_FILE).read_text())
    assert record["segments"] == [[0, 2]]


def sink_log(path: Path) -> list[int]:
    return sorted(int(p.name) for p in (path / "_spark_metadata").iterdir() if p.name.isdigit())


def test_a_rolled_back_version_never_writes_under_ids_its_failed_successor_wrote(
    spark, tmp_path: Path
):
    """v2 starts clean into v1's sink, writes a batch (sink id 2) and is rolled back: v1 runs
    again from its checkpoint. Its next batch would be sink id 2, which the sink already holds
    and would skip: its rows would vanish. It gets a new segment past the log instead."""
    write_input(tmp_path, "a", range(5))
    run_to_end(spark, manifest(tmp_path, version=1))
    write_input(tmp_path, "b", range(5, 8))
    run_to_end(spark, manifest(tmp_path, version=1))
    run_to_end(spark, manifest(tmp_path, version=2))  # the failed v2: wrote sink batch 2
    out = tmp_path / "out"
    assert sink_log(out) == [0, 1, 2]
    write_input(tmp_path, "c", range(8, 10))
    assert run_to_end(spark, manifest(tmp_path, version=1)) == "ForeachBatchSink"
    assert sink_log(out) == [0, 1, 2, 3], "contiguous: Spark's log compaction needs that"
    assert read_versions(spark, out) == {1: list(range(10)), 2: list(range(8))}
    record = json.loads((tmp_path / "ckpt" / "1" / file_sink.SINK_OFFSET_FILE).read_text())
    assert record["segments"] == [[0, 0], [2, 1]]
    claims = sorted(p.name for p in (out / "_flink-sql-runner" / "claims").iterdir())
    assert claims == ["000000000001-0.json", "000000000002-2.json", "000000000003-3.json"]
    # Restarted again, v1 keeps its segments: nothing claimed after its own last claim.
    write_input(tmp_path, "d", range(10, 12))
    run_to_end(spark, manifest(tmp_path, version=1))
    assert read_versions(spark, out) == {1: list(range(12)), 2: list(range(8))}
    assert sink_log(out) == [0, 1, 2, 3, 4]


def test_a_successor_that_wrote_nothing_changes_nothing_for_the_restarted_version(
    spark, tmp_path: Path
):
    """v2 claimed sink ids from 2 on and failed on its first batch: v1 may use them."""
    write_input(tmp_path, "a", range(3))
    run_to_end(spark, manifest(tmp_path, version=1))
    doc = manifest(tmp_path, version=2)
    storage = Storage(spark)
    assert file_sink.sink_batch_segments(storage, doc, str(tmp_path / "out")) == [[0, 1]]
    write_input(tmp_path, "b", range(3, 5))
    assert run_to_end(spark, manifest(tmp_path, version=1)).startswith("FileSink"), (
        "no shift to make: Spark's own sink writes directly"
    )
    assert read_versions(spark, tmp_path / "out") == {1: list(range(5))}
    assert sink_log(tmp_path / "out") == [0, 1]


def test_a_copy_made_to_continue_claims_the_sink_so_its_source_version_moves_past_it(
    spark, tmp_path: Path
):
    """v2's checkpoint is a copy of v1's, made by the deployer to continue from its state
    (act/state_copy.py, its marker among the files): v2 reads only what v1 had not read, goes
    on with v1's sink batch ids and claims them; v1, started again later (a rollback: it reads
    what it had not read), moves past what v2 wrote instead of writing ids the sink would skip
    (before: v2 claimed nothing, and v1's next rows vanished)."""
    import shutil

    write_input(tmp_path, "a", range(5))
    run_to_end(spark, manifest(tmp_path, version=1))
    ckpt = tmp_path / "ckpt"
    shutil.copytree(ckpt / "1", ckpt / "2")
    (ckpt / "2" / file_sink.CONTINUED_FILE).write_text(json.dumps({"continued-from": "v1"}))
    write_input(tmp_path, "b", range(5, 8))
    run_to_end(spark, manifest(tmp_path, version=2))
    out = tmp_path / "out"
    assert read_versions(spark, out) == {1: list(range(5)), 2: list(range(5, 8))}
    assert sink_log(out) == [0, 1]
    write_input(tmp_path, "c", range(8, 10))
    run_to_end(spark, manifest(tmp_path, version=1))
    assert read_versions(spark, out) == {1: list(range(10)), 2: list(range(5, 8))}
    assert sink_log(out) == [0, 1, 2]


@pytest.mark.parametrize(
    "fmt, expected",
    [
        ("parquet", True),
        ("Parquet", True),
        ("org.apache.spark.sql.parquet", True),
        ("org.apache.spark.sql.execution.datasources.json.JsonFileFormat", True),
        ("org.apache.spark.sql.execution.datasources.v2.orc.OrcDataSourceV2", True),
        ("com.databricks.spark.csv", True),
        ("org.apache.spark.sql.execution.datasources.text.TextFileFormat", True),
        ("rate", False),
        ("console", False),
        ("noop", False),
        ("org.apache.spark.sql.execution.streaming.sources.TextSocketSourceProvider", False),
        ("no.such.format", False),
    ],
)
def test_spark_itself_says_which_formats_are_file_sinks(spark, fmt: str, expected: bool):
    assert spark_internals.is_file_format(spark, fmt) is expected


def test_a_re_run_batch_is_not_written_twice(spark, tmp_path: Path):
    """After a crash between the sink's commit and the checkpoint's, Spark re-runs the batch."""
    write_input(tmp_path, "a", range(3))
    doc = manifest(tmp_path)
    run_to_end(spark, doc)
    commits = tmp_path / "ckpt" / "1" / "commits"
    for name in ("0", ".0.crc"):  # as if the driver died before committing batch 0
        (commits / name).unlink()
    run_to_end(spark, doc)
    assert read_versions(spark, tmp_path / "out") == {1: [0, 1, 2]}


def test_a_catalog_table_stored_as_files_is_safe_across_versions(spark, tmp_path: Path):
    name = f"people_table_{tmp_path.name[-12:].replace('-', '_')}"
    write_input(tmp_path, "a", range(4))
    columns = "id BIGINT, name STRING, __create_timestamp TIMESTAMP, __query_name STRING, "
    columns += "__query_description STRING, __query_id STRING, __query_version INT, "
    columns += "__query_create_timestamp TIMESTAMP"
    location = tmp_path / "table"
    schema = spark.createDataFrame([], columns).schema
    spark.catalog.createTable(name, path=str(location), source="parquet", schema=schema)
    try:
        target = {"people_out": {"table": name}}
        sinks = []
        for version in (1, 2):  # version 2 starts clean into the same table
            doc = manifest(tmp_path, version=version)
            doc["tables"] = {**doc["tables"], **target}
            sinks.append(run_to_end(spark, doc))
        assert sinks[0] != "ForeachBatchSink" and sinks[1] == "ForeachBatchSink"
        spark.catalog.refreshTable(name)  # this session listed the table's files before
        rows = spark.table(name).collect()
        by_version: dict[int, list[int]] = {}
        for row in rows:
            by_version.setdefault(row["__query_version"], []).append(row["id"])
        assert {v: sorted(ids) for v, ids in by_version.items()} == {
            1: [0, 1, 2, 3],
            2: [0, 1, 2, 3],
        }
        assert (location / "_spark_metadata").is_dir()
    finally:
        spark.sql("DROP TABLE IF EXISTS IDENTIFIER(:t)", args={"t": name})


def test_the_adapter_says_in_one_line_what_spark_lacks_and_passes_spark_errors_on(spark):
    jvm = spark._jvm
    with pytest.raises(spark_internals.UnsupportedSpark) as missing:
        with spark_internals.spark_internal(spark, "it lacks a method"):
            jvm.java.lang.StringBuilder().noSuchMethod("1")
    assert str(missing.value) == (
        f"Spark {spark.version} is not supported: it lacks a method "
        "(Method noSuchMethod([class java.lang.String]) does not exist). "
        "The runner knows Spark 3.5 to 4.3."
    )
    with pytest.raises(Exception, match="not a number") as thrown:
        with spark_internals.spark_internal(spark, "it lacks a method"):
            jvm.java.lang.Integer.parseInt("not a number")
    assert not isinstance(thrown.value, spark_internals.UnsupportedSpark)


def test_the_adapter_finds_the_file_sink_this_spark_offers(spark, tmp_path: Path):
    """By reflection, whatever the line: the sink is Spark's own FileStreamSink."""
    schema = spark.createDataFrame([], SCHEMA)._jdf.schema()
    options = {"path": str(tmp_path / "out")}
    sink = spark_internals.new_file_sink(spark, "parquet", options, schema)
    assert sink.getClass().getSimpleName() == "FileStreamSink"


def test_a_spark_the_adapter_does_not_know_fails_the_start_in_one_line(tmp_path: Path):
    """Through real spark-submit: status `failed` with one line, exit 1, no py4j trace. The
    unknown Spark is this one, asked for a DataSource constructor no Spark line has."""
    write_input(tmp_path, "a", range(2))
    (tmp_path / "out" / "_spark_metadata").mkdir(parents=True)
    (tmp_path / "out" / "_spark_metadata" / "0").write_text("v1\n")  # an earlier version wrote
    doc = manifest(tmp_path, version=2)
    doc["status-file"] = str(tmp_path / "status.json")
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    runner = tmp_path / "unknown_spark_runner.py"
    runner.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(RUNNER.parent)!r})\n"
        "from runner import lifecycle, spark_internals\n"
        "spark_internals.DATA_SOURCE_PARAMETERS += ('Integer',)\n"
        "sys.exit(lifecycle.main(sys.argv[1:]))\n"
    )
    argv = [find_spark_submit(), "--master", "local[1]", "--conf", "spark.ui.enabled=false"]
    argv += [str(runner), "--manifest", str(tmp_path / "manifest.json")]
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    process = subprocess.Popen(  # noqa: S603 - a list, never a shell
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    try:
        output = process.communicate(timeout=240)[0].decode("utf-8", errors="replace")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    status = json.loads((tmp_path / "status.json").read_text())
    assert process.returncode == lifecycle.EXIT_FAILED, output
    assert status["state"] == "failed"
    assert status["error"].startswith("Spark ") and "\n" not in status["error"]
    assert (
        "is not supported: its DataSource constructors are (SparkSession, String, Seq"
        in (status["error"])
    )
    assert status["error"].endswith("The runner knows Spark 3.5 to 4.3.")
    assert f"the job cannot start: {status['error']}" in output
    assert "Traceback" not in output and "Py4J" not in output
    assert not (tmp_path / "ckpt" / "2" / "commits").exists()


@pytest.mark.parametrize(
    "text, message",
    [
        ("not json", "not JSON"),
        ('{"schema-version": 9}', "schema-version must be 1"),
        ('{"schema-version": 1}', "missing fields: name, target-table"),
        (
            json.dumps(manifest(Path("/x"), **{"on-schema-change": "sometimes"})),
            "on-schema-change must be one of additive, fail, allow",
        ),
    ],
)
def test_bad_runtime_manifests_are_refused(text: str, message: str):
    with pytest.raises(failures.BadManifest, match=message):
        load_manifest(text)


def test_the_runner_imports_nothing_from_the_deployer():
    for module in RUNNER.glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            assert not [n for n in names if n.split(".")[0] == "flink_sql_runner"], module


def test_a_driver_given_only_the_entry_gets_the_runner_from_its_package(spark, tmp_path: Path):
    """The zip the deployer places beside the control files, read back as a driver does: through
    Spark's Hadoop file system (here its file: one), then imported as the runner's package."""
    from flink_sql_runner.targets.runner_files import PACKAGE, runner_zip

    name, data = runner_zip()
    (tmp_path / name).write_bytes(data)
    assert job_runner.PACKAGE == PACKAGE
    assert job_runner.hadoop_bytes(spark, (tmp_path / name).as_uri()) == data
    assert name == runner_zip()[0], "one runner makes one zip, byte for byte"
    names = zipfile.ZipFile(tmp_path / name).namelist()
    assert sorted(names) == sorted(f"{PACKAGE}/{m.name}" for m in RUNNER.glob("*.py"))
