"""The plan's own read of a file sink (gather/sink_footer.py) against the runner's read with
Spark, on forged and unusual sinks from the hostile review of issue 57's third part: the plan
gives Spark's answer, or None (Spark reads the sink), never another one. One Spark session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.parquet_footer import SPARK_SCHEMA_KEY
from tests.support.footer_forge import (
    both,
    pairs_of,
    short,
    sink,
    spark_file,
    spark_schema,
    with_pairs,
    with_spark_schema,
)
from tests.support.parquet_tail import struct_of, tail

pytestmark = pytest.mark.spark


def same_or_spark_s(here: Any, there: Any) -> None:
    assert here is None or short(here) == short(there), (short(here), short(there))


def test_a_key_written_twice_is_read_as_parquet_mr_reads_it_the_last(spark, tmp_path: Path):
    data = spark_file(spark, spark.sql("SELECT CAST(id AS STRING) AS id FROM range(2)"),
                      tmp_path / "src")  # fmt: skip
    bigint = struct_of(("id", "long", True))
    forged = with_pairs(data, [(SPARK_SCHEMA_KEY, json.dumps(bigint)), *pairs_of(data)])
    here, there = both(spark, sink(tmp_path / "out", forged))
    assert here is not None and short(here) == short(there)
    assert here["history"][0]["fields"][0]["type"] == "string"


@pytest.mark.parametrize(
    "kind",
    [
        "foo",
        "STRING",
        "decimal",
        "char(5)",
        "varchar(5)",
        "interval",
        "time(6)",
        "bigint",
        "int",
        "timestamp_ltz",
    ],  # fmt: skip
)
def test_a_type_name_spark_does_not_read_as_written_is_left_to_spark(spark, tmp_path, kind):
    data = spark_file(spark, spark.sql("SELECT id, CAST(id AS STRING) AS name FROM range(2)"),
                      tmp_path / "src")  # fmt: skip
    schema = spark_schema(data)
    schema["fields"][1]["type"] = kind
    here, there = both(spark, sink(tmp_path / "out", with_spark_schema(data, json.dumps(schema))))
    same_or_spark_s(here, there)


@pytest.mark.parametrize("case", ["_hidden", ".hidden", "localhost", "footer at 0", "dot-dot"])
def test_a_file_spark_does_not_read_is_not_read_here(spark, tmp_path: Path, case: str):
    data = spark_file(spark, spark.sql("SELECT id FROM range(2)"), tmp_path / "src")
    out = tmp_path / "out"
    if case in ("_hidden", ".hidden"):
        path = sink(out, data, name=f"{case}-0.parquet")
    elif case == "localhost":
        path = sink(out, data, entry_path=f"file://localhost{out}/part-0.parquet")
    elif case == "footer at 0":
        path = sink(out, tail(struct_of(("id", "long", True)), data=b""))
    else:  # `sub/..` is the sink to Hadoop, which drops it; the system follows the link
        path = sink(out, data, entry_path=f"file:{out}/sub/../part-0.parquet")
        other = tmp_path / "elsewhere"
        (other / "deep").mkdir(parents=True)
        secret = spark_file(spark, spark.sql("SELECT 'x' AS secret"), tmp_path / "src2")
        (other / "part-0.parquet").write_bytes(secret)
        (out / "sub").symlink_to(other / "deep")
    here, there = both(spark, path)
    assert here is None, short(here)
    assert "secret" not in json.dumps(there)


@pytest.mark.parametrize(
    ("setting", "sql"),
    [
        ("spark.sql.caseSensitive", "SELECT 1L AS id, 'x' AS ID"),
        ("spark.sql.timeType.enabled", "SELECT 1L AS id, TIME'12:00:00' AS t"),
    ],
)
def test_a_file_only_some_sessions_read_is_left_to_spark(spark, tmp_path, setting, sql):
    if int(spark.version.split(".")[0]) < 4 and setting == "spark.sql.timeType.enabled":
        sql = "SELECT 1L AS id, 'x' AS ID"  # no TIME type before Spark 4: case again
        setting = "spark.sql.caseSensitive"
    spark.conf.set(setting, "true")
    try:
        data = spark_file(spark, spark.sql(sql), tmp_path / "src")
    finally:
        spark.conf.unset(setting)
    here, there = both(spark, sink(tmp_path / "out", data))
    same_or_spark_s(here, there)


def test_names_equal_but_for_case_are_left_to_spark(spark, tmp_path: Path):
    data = spark_file(spark, spark.sql("SELECT id, CAST(id AS STRING) AS name FROM range(2)"),
                      tmp_path / "src")  # fmt: skip
    nested = {"type": "struct", "fields": [
        {"name": "a", "type": "long", "nullable": True, "metadata": {}},
        {"name": "A", "type": "long", "nullable": True, "metadata": {}}]}  # fmt: skip
    for label, change in [
        ("exact", lambda s: s["fields"][1].update(name="id")),
        ("nested", lambda s: s["fields"][1].update(type=nested)),
    ]:
        schema = spark_schema(data)
        change(schema)
        forged = with_spark_schema(data, json.dumps(schema))
        here, there = both(spark, sink(tmp_path / label, forged))
        assert here is None, (label, short(here), short(there))


def test_a_schema_too_deep_for_python_is_left_to_spark(spark, tmp_path: Path):
    deep = '{"type":"struct","fields":[{"name":"id","type":' + "[" * 3000 + "]" * 3000 + "}]}"
    data = spark_file(spark, spark.sql("SELECT id FROM range(2)"), tmp_path / "src")
    here, there = both(spark, sink(tmp_path / "out", with_spark_schema(data, deep)))
    assert here is None


@pytest.mark.parametrize("name", ["sp ace", "pct%41", "br{a}", "h#sh"])
def test_a_sink_whose_path_a_uri_escapes_is_read_both_ways(spark, tmp_path: Path, name: str):
    """Spark's log names the file by its URI (`sp%20ace`): decoded, it is read by the runner's
    check and the plan alike. Before, Spark read the escaped text as a path: not found, so the
    sink's history was unknown and a breaking change deployed unchecked."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"id": 1}\n')
    out = str(tmp_path / name)
    query = (
        spark.readStream.schema("id bigint")
        .json(str(tmp_path / "in"))
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    here, there = both(spark, out)
    assert there["unknown"] is None and there["history"], there
    assert here == there
