"""Spark's schema read from a parquet footer without Spark (runner/parquet_footer.py): the same
fields Spark's reader gives, on a corpus of files Spark wrote in one session; and on bytes that
are not what it expects, None (Spark reads the file then), never an exception or a guess."""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from runner.parquet_footer import SPARK_SCHEMA_KEY, spark_read_fields, spark_schema_json
from tests.support.parquet_tail import file_metadata, struct_of, tail

MAP = {"type": "map", "keyType": "string", "valueType": "integer", "valueContainsNull": False}


def test_spark_s_schema_is_read_as_its_reader_gives_it() -> None:
    schema = struct_of(("id", "long", False), ("tags", MAP, True), ("note", "string", True))
    assert spark_read_fields(tail(schema)) == [
        {"name": "id", "type": "bigint", "nullable": True},  # a file source reads asNullable
        {"name": "tags", "type": "map<string,int>", "nullable": True},
        {"name": "note", "type": "string", "nullable": True},
    ]
    many = [(f"k{i}", str(i)) for i in range(40)] + [(SPARK_SCHEMA_KEY, json.dumps(schema))]
    footer = file_metadata(many)  # a list of 15 or more: its size in a varint of its own
    assert spark_read_fields(b"x" + footer + struct.pack("<I", len(footer)) + b"PAR1")


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(tail(None), id="written by another tool"),
        pytest.param(tail("StructType(StructField(id,LongType,true))"), id="old string form"),
        pytest.param(
            tail({"type": "struct", "fields": [{"name": "p", "type": {"type": "udt"}}]}),
            id="a user-defined type",
        ),  # fmt: skip
        pytest.param(tail(struct_of(("id", "long", True)))[:-4] + b"PARE", id="encrypted"),
        pytest.param(tail(struct_of(("id", "long", True)))[-40:], id="footer cut"),
        pytest.param(b"PAR1", id="too short"),
        pytest.param(b"a,b\n1,2\n", id="no parquet"),
    ],
)
def test_what_it_cannot_tell_is_left_to_spark(data: bytes) -> None:
    assert spark_read_fields(data) is None


def _bomb(unit: bytes, times: int) -> bytes:
    footer = unit * times
    return footer + struct.pack("<I", len(footer)) + b"PAR1"


def test_broken_footers_give_none_or_fields_never_an_exception() -> None:
    rng = random.Random(57)
    schemas = [
        struct_of(("id", "long", False)),
        struct_of(*[(f"c{i}", "string", True) for i in range(30)], ("m", MAP, False)),
    ]
    told = 0
    for schema in schemas:
        good = tail(schema)
        for cut in range(len(good)):
            assert spark_read_fields(good[cut:]) in (None, spark_read_fields(good))
        for _ in range(1500):
            data = bytearray(good)
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            found = spark_read_fields(bytes(data))
            assert found is None or isinstance(found, list)
            told += found is not None
    assert told > 0, "flips outside the footer's key-values change nothing"
    # Nested lists and structs past any real footer's depth, and a list longer than its bytes.
    assert spark_read_fields(_bomb(b"\x49", 50_000)) is None  # field 4: list of lists ...
    assert spark_read_fields(_bomb(b"\x1c", 50_000)) is None  # struct in struct ...
    assert spark_read_fields(_bomb(b"\x19\xfc\xff\xff\xff\x0f", 1)) is None
    assert spark_schema_json(_bomb(b"\x5b\xff\xff\xff\x0f", 1)) is None  # a map of 4 G entries


# The corpus Spark writes, one batch write per schema, on the shared session.
CORPUS = {
    "primitives": "SELECT true AS b, CAST(1 AS TINYINT) AS t, CAST(2 AS SMALLINT) AS s, 3 AS i, "
    "4L AS l, CAST(5 AS FLOAT) AS f, 6D AS d, CAST(7 AS DECIMAL(38,18)) AS dec, 'x' AS str, "
    "X'01' AS bin, DATE'2026-11-30' AS day, TIMESTAMP'2026-11-30 05:00:00' AS ts, "
    "TIMESTAMP_NTZ'2026-11-30 05:00:00' AS ntz",
    "nested": "SELECT named_struct('a', 1, 'b', array(named_struct('c', map('k', 1L)))) AS s, "
    "array(array(1)) AS aa, map(1, named_struct('x', 'y')) AS m",
    "nullable and not": "SELECT id, CAST(NULL AS STRING) AS maybe, "
    "CASE WHEN id > 0 THEN id END AS sometimes FROM range(3)",
    "names": "SELECT 1 AS `with space`, 2 AS `ünïcödé`, 3 AS `dotted.name`, 4 AS `MiXeD`",
    "char and varchar": "SELECT CAST('a' AS CHAR(3)) AS c, CAST('b' AS VARCHAR(5)) AS v",
    "metadata columns": "SELECT id, current_timestamp() AS __create_timestamp, 'q' AS "
    "__query_name, 1 AS __query_version FROM range(2)",
    "wide": "SELECT " + ", ".join(f"id + {i} AS c{i}" for i in range(300)) + " FROM range(2)",
}


@pytest.mark.spark
def test_the_footer_tells_what_spark_s_reader_tells_on_files_spark_wrote(
    spark: Any, tmp_path: Path
) -> None:
    from runner.sink_schema import read_schema

    corpus = dict(CORPUS)
    if int(spark.version.split(".")[0]) >= 4:
        corpus["variant and collation"] = (
            "SELECT parse_json('{\"a\": 1}') AS v, 'A' COLLATE UTF8_LCASE AS lcase"
        )
    for name, sql in corpus.items():
        folder = tmp_path / name.replace(" ", "_")
        spark.sql(sql).coalesce(1).write.parquet(str(folder))
        (file,) = folder.glob("part-*.parquet")
        expected = read_schema(spark, "parquet", f"file:{file}", str(folder))
        assert spark_read_fields(file.read_bytes()) == expected, name
