"""What a file sink's readers read today (runner/sink_schema.py), and a run's own check before
its first write, on real sinks written by real streaming queries on the shared SparkSession."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather.sink_footer import sink_history_here
from flink_sql_runner.stores.storage import FileStorage
from runner import file_sink, lifecycle
from runner.query import query_frame, register_sources, with_metadata
from runner.sink_schema import SchemaRefused, check_before_first_write
from runner.sink_schema import sink_history as spark_sink_history
from runner.storage import Storage
from tests.support.runner_jobs import SCHEMA, manifest, write_input

pytestmark = pytest.mark.spark

DOCS = "see docs/concepts/schema-contracts.md"
METADATA = [
    {"name": "__create_timestamp", "type": "timestamp", "nullable": False},
    {"name": "__query_name", "type": "string", "nullable": False},
    {"name": "__query_description", "type": "string", "nullable": False},
    {"name": "__query_id", "type": "string", "nullable": False},
    {"name": "__query_version", "type": "int", "nullable": False},
    {"name": "__query_create_timestamp", "type": "timestamp", "nullable": False},
]


def col(name: str, kind: str, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": nullable}


def run(spark: Any, tmp_path: Path, doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One real run of the runner's lifecycle on the shared session: its exit code, its status."""
    version = doc["meta"]["query-version"]
    doc = {**doc, "status-file": str(tmp_path / f"v{version}.status.json")}
    location = tmp_path / f"v{version}.manifest.json"
    location.write_text(json.dumps(doc))
    code = lifecycle.run_on(spark, str(location), lifecycle.StopRequest())
    return code, json.loads((tmp_path / f"v{version}.status.json").read_text())


def claims(sink: Path) -> list[dict[str, Any]]:
    folder = sink / "_flink-sql-runner" / "claims"
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def versions(spark: Any, sink: Path, *columns: str) -> dict[int, list[tuple[Any, ...]]]:
    found: dict[int, list[tuple[Any, ...]]] = {}
    for row in spark.read.option("mergeSchema", "true").parquet(str(sink)).collect():
        found.setdefault(row["__query_version"], []).append(tuple(row[c] for c in columns))
    return {version: sorted(rows) for version, rows in found.items()}


def sink_history(
    spark: Any, storage: Storage, fmt: str, path: str, here: bool = True
) -> dict[str, Any]:
    """What the runner reads of the sink with Spark; the plan's reader without Spark
    (gather/sink_footer.py) gives the same (`here`) or leaves it to Spark."""
    found = spark_sink_history(spark, storage, fmt, path)
    assert sink_history_here(FileStorage(), fmt, path) == (found if here else None)
    return found


def output(spark: Any, doc: dict[str, Any]) -> Any:
    register_sources(spark, doc)
    return with_metadata(query_frame(spark, doc), doc)


def stream(spark: Any, tmp_path: Path, fmt: str, out: Path, partition: str | None = None) -> None:
    """A plain Spark streaming query (no runner, no claims) from the people input into `out`."""
    frame = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in"))
    writer = (
        frame.writeStream.format(fmt)
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / f"plain-{out.name}"))
        .trigger(availableNow=True)
    )
    if partition:
        writer = writer.partitionBy(partition)
    query = writer.start()
    query.awaitTermination(120)
    assert query.exception() is None


def test_a_type_change_stops_the_run_before_it_writes_and_the_sink_stays_readable(
    spark, tmp_path: Path
):
    """The issue's example: v1 wrote `id` as bigint; v2 selects it as a string. Without the
    check every reader of the sink would fail on the old files for good."""
    out = tmp_path / "out"
    write_input(tmp_path, "a", range(3))
    code, status = run(spark, tmp_path, manifest(tmp_path, 1))
    assert (code, status["state"]) == (lifecycle.EXIT_OK, "finished")
    before = claims(out)
    assert before[0]["schema"] == [col("id", "bigint"), col("name", "string"), *METADATA]

    write_input(tmp_path, "b", range(3, 5))
    v2 = manifest(tmp_path, 2, sql="SELECT CAST(id AS STRING) AS id, name FROM people")
    code, status = run(spark, tmp_path, v2)
    assert (code, status["state"]) == (lifecycle.EXIT_FAILED, "failed")
    assert status["error"] == (
        f"the sink {out} holds id as bigint (v1 of job people, claimed {before[0]['claimed']}); "
        "this run writes id as string: breaking for its readers, not started "
        f"(on-schema-change: additive; {DOCS})"
    )
    assert claims(out) == before, "nothing claimed"
    assert not (tmp_path / "ckpt" / "2").exists(), "nothing started"
    assert sorted(r["id"] for r in spark.read.parquet(str(out)).collect()) == [0, 1, 2]


def test_an_added_column_deploys_every_version_reads_back_and_the_rollback_is_not_refused(
    spark, tmp_path: Path
):
    out = tmp_path / "out"
    write_input(tmp_path, "a", range(3))
    assert run(spark, tmp_path, manifest(tmp_path, 1))[0] == lifecycle.EXIT_OK
    v2 = manifest(tmp_path, 2, sql="SELECT id, name, upper(name) AS note FROM people")
    code, status = run(spark, tmp_path, v2)
    assert (code, status["state"]) == (lifecycle.EXIT_OK, "finished"), status
    assert versions(spark, out, "id", "note") == {
        1: [(0, None), (1, None), (2, None)],
        2: [(0, "N0"), (1, "N1"), (2, "N2")],
    }
    history = sink_history(spark, Storage(spark), "parquet", str(out))
    assert [e["from"].split(",")[0] for e in history["history"]] == [
        "v1 of job people",
        "v2 of job people",
    ], "the newest file's footer says what v2's claim says: not repeated"
    assert history["history"][1]["fields"][2] == col("note", "string")
    assert history["unknown"] is None

    # v2 fails later and is rolled back: v1 restarts from its checkpoint. It "drops" v2's
    # column; that must not block the rollback.
    write_input(tmp_path, "b", range(3, 5))
    code, status = run(spark, tmp_path, manifest(tmp_path, 1))
    assert (code, status["state"]) == (lifecycle.EXIT_OK, "finished"), status
    assert versions(spark, out, "id")[1] == [(i,) for i in range(5)]

    # A restart is still refused for a column whose type changed.
    doc = manifest(tmp_path, 1, sql="SELECT CAST(id AS STRING) AS id, name FROM people")
    with pytest.raises(SchemaRefused, match=r"holds id as bigint \(v1 of job people, claimed "):
        check_before_first_write(spark, Storage(spark), doc, output(spark, doc))


def test_the_policy_says_what_is_refused(spark, tmp_path: Path, capfd):
    out = tmp_path / "out"
    write_input(tmp_path, "a", range(2))
    assert run(spark, tmp_path, manifest(tmp_path, 1))[0] == lifecycle.EXIT_OK
    storage = Storage(spark)
    added = manifest(tmp_path, 2, sql="SELECT id, name, id + 1 AS n FROM people")
    check_before_first_write(spark, storage, added, output(spark, added))
    assert "this run writes n as bigint (new): additive" in capfd.readouterr().err
    strict = {**added, "on-schema-change": "fail"}
    with pytest.raises(SchemaRefused) as refused:
        check_before_first_write(spark, storage, strict, output(spark, strict))
    assert str(refused.value).startswith(f"the sink {out} holds the columns of v1 of job people")
    assert str(refused.value).endswith(
        f"this run writes n as bigint (new): additive (older files read the new columns as null), "
        f"not started (on-schema-change: fail; {DOCS})"
    )
    # A new NOT NULL column: Spark writes it as required, and reading the older files fails.
    constant = manifest(tmp_path, 2, sql="SELECT id, name, 'x' AS note FROM people")
    with pytest.raises(SchemaRefused) as refused:
        check_before_first_write(spark, storage, constant, output(spark, constant))
    assert "holds files without note (v1 of job people" in str(refused.value)
    assert "this run writes note as string NOT NULL (new): breaking for its readers" in str(
        refused.value
    )
    dropped = manifest(tmp_path, 2, sql="SELECT id FROM people", **{"on-schema-change": "allow"})
    check_before_first_write(spark, storage, dropped, output(spark, dropped))
    said = capfd.readouterr().err
    assert "holds name as string (v1 of job people" in said
    assert "this run writes no name: breaking for its readers, written anyway" in said

    # A checkpoint that ran before claims were written, restarted, is a restart too.
    restarted = manifest(tmp_path, 2, sql="SELECT id FROM people")
    with pytest.raises(SchemaRefused, match="this run writes no name: breaking"):
        check_before_first_write(spark, storage, restarted, output(spark, restarted))
    (tmp_path / "ckpt" / "2" / "offsets").mkdir(parents=True)
    (tmp_path / "ckpt" / "2" / "offsets" / "0").write_text("v1\n")
    check_before_first_write(spark, storage, restarted, output(spark, restarted))


def test_declared_schemas_and_kafkas_contract_are_checked(spark, tmp_path: Path):
    write_input(tmp_path, "a", range(1))
    storage = Storage(spark)
    doc = manifest(tmp_path, 1, sql="SELECT CAST(id AS STRING) AS id, name FROM people")
    doc["tables"]["people_out"]["schema"] = "id BIGINT, name STRING"
    with pytest.raises(SchemaRefused) as refused:
        check_before_first_write(spark, storage, doc, output(spark, doc))
    assert str(refused.value) == (
        "the table people_out declares columns its readers read, and this run's output "
        "differs: id is written as string, declared bigint: breaking for its readers, not "
        f"started (on-schema-change: additive; {DOCS})"
    )
    kafka = manifest(tmp_path, 1, sql="SELECT id AS value FROM people")
    kafka["tables"]["people_out"] = {
        "format": "kafka",
        "options": {"topic": "ticks", "kafka.bootstrap.servers": "127.0.0.1:9"},
    }
    with pytest.raises(SchemaRefused, match=r"the Kafka sink ticks .*`value` is bigint"):
        check_before_first_write(spark, storage, kafka, output(spark, kafka))

    name = f"people_table_{tmp_path.name[-12:].replace('-', '_')}"
    schema = spark.createDataFrame([], SCHEMA).schema
    spark.catalog.createTable(name, path=str(tmp_path / "t"), source="parquet", schema=schema)
    try:
        doc["tables"]["people_out"] = {"table": name}
        with pytest.raises(SchemaRefused, match="id is written as string, declared bigint"):
            check_before_first_write(spark, storage, doc, output(spark, doc))
    finally:
        spark.sql("DROP TABLE IF EXISTS IDENTIFIER(:t)", args={"t": name})


def test_sinks_written_without_the_runner_are_read_from_their_files(spark, tmp_path: Path):
    storage = Storage(spark)
    write_input(tmp_path, "a", range(4))
    plain = tmp_path / "plain"
    stream(spark, tmp_path, "parquet", plain)
    found = sink_history(spark, storage, "parquet", str(plain))
    assert found["unknown"] is None and len(found["history"]) == 1
    assert found["history"][0]["from"].startswith("footer of file:")
    assert found["history"][0]["fields"] == [col("id", "bigint"), col("name", "string")]

    parted = tmp_path / "parted"
    stream(spark, tmp_path, "parquet", parted, partition="id")
    (entry,) = sink_history(spark, storage, "org.apache.spark.sql.parquet", str(parted), False)[
        "history"
    ]
    assert sink_history(spark, storage, "parquet", str(parted), here=False)["history"] == [entry]
    assert entry["fields"] == [col("name", "string"), col("id", "int")], "as readers see it"

    batch = tmp_path / "batch"
    spark.createDataFrame([(1, "a")], SCHEMA).write.orc(str(batch))
    assert sink_history(spark, storage, "orc", str(batch), here=False) == {
        "history": [
            {
                "fields": [col("id", "bigint"), col("name", "string")],
                "from": f"the orc files in {batch}",
            }
        ],
        "unknown": None,
    }

    text = tmp_path / "text"
    stream(spark, tmp_path, "json", text)
    assert sink_history(spark, storage, "json", str(text)) == {
        "history": [],
        "unknown": f"the json sink {text} holds files written without a recorded schema",
    }

    (tmp_path / "empty").mkdir()
    for folder in ("empty", "missing"):
        empty = sink_history(spark, storage, "json", str(tmp_path / folder))
        assert empty == {"history": [], "unknown": None}
        assert sink_history(spark, storage, "parquet", str(tmp_path / folder)) == empty


def test_claims_say_what_the_runner_wrote_and_old_claims_still_read(spark, tmp_path: Path):
    storage = Storage(spark)
    out = tmp_path / "out"
    write_input(tmp_path, "a", range(2))
    assert run(spark, tmp_path, manifest(tmp_path, 1))[0] == lifecycle.EXIT_OK
    (claim_file,) = (out / "_flink-sql-runner" / "claims").glob("*.json")
    body = json.loads(claim_file.read_text())

    # A claim whose schema is not what the newest file holds: the footer is the newest word.
    claim_file.write_text(json.dumps({**body, "schema": [col("id", "string")]}))
    history = sink_history(spark, storage, "parquet", str(out))["history"]
    assert [e["from"].split(" ")[0] for e in history] == ["v1", "footer"]
    assert history[1]["fields"][:2] == [col("id", "bigint"), col("name", "string")]

    # A claim written before schemas were recorded: the footer alone.
    del body["schema"]
    claim_file.write_text(json.dumps(body))
    (entry,) = sink_history(spark, storage, "parquet", str(out))["history"]
    assert entry["from"].startswith("footer of ")

    # json keeps no schema in its files: with such a claim only, what it holds is unknown.
    json_out = tmp_path / "json_out"
    doc = manifest(tmp_path, 1, **{"checkpoint-location": str(tmp_path / "ckpt-json")})
    doc["tables"]["people_out"] = {"format": "json", "options": {"path": str(json_out)}}
    assert run(spark, tmp_path, doc)[0] == lifecycle.EXIT_OK
    assert sink_history(spark, storage, "json", str(json_out)) == {
        "history": [
            {
                "fields": [col("id", "bigint"), col("name", "string"), *METADATA],
                "from": f"v1 of job people, claimed {claims(json_out)[0]['claimed']}",
            }
        ],
        "unknown": None,
    }
    (claim_file,) = (json_out / "_flink-sql-runner" / "claims").glob("*.json")
    old = json.loads(claim_file.read_text())
    del old["schema"]
    claim_file.write_text(json.dumps(old))
    assert sink_history(spark, storage, "json", str(json_out))["unknown"] == (
        f"the json sink {json_out} holds files written without a recorded schema"
    )


def test_a_newer_claim_that_wrote_nothing_yet_is_not_contradicted_by_older_files(
    spark, tmp_path: Path
):
    """v2 claimed the sink and failed before its first batch: the newest file is v1's, older
    than v2's claim, and says nothing about what v2 writes."""
    out = tmp_path / "out"
    write_input(tmp_path, "a", range(2))
    assert run(spark, tmp_path, manifest(tmp_path, 1))[0] == lifecycle.EXIT_OK
    storage = Storage(spark)
    v2 = manifest(tmp_path, 2, sql="SELECT id, name, upper(name) AS note FROM people")
    fields = [col("id", "bigint"), col("name", "string"), col("note", "string"), *METADATA]
    assert file_sink.sink_batch_segments(storage, v2, str(out), fields) == [[0, 1]]
    history = sink_history(spark, storage, "parquet", str(out))["history"]
    assert [e["from"].split(",")[0] for e in history] == ["v1 of job people", "v2 of job people"]
    assert history[1]["fields"] == fields
