"""Declared schemas read without Spark, with Spark's own type names (for `validate`)."""

from __future__ import annotations

import pytest

from flink_sql_runner.read.columns import parse_columns


def test_types_come_out_as_spark_writes_them() -> None:
    ddl = (
        "order_id BIGINT, price DECIMAL(10, 2) NOT NULL, n INTEGER, t TIMESTAMP, "
        "s STRUCT<a: INT, b ARRAY<STRING>>, m MAP<STRING, LONG>, `x y` VARCHAR(5) COMMENT 'c', "
        "d DEC, ntz TIMESTAMP WITHOUT TIME ZONE"
    )
    assert [(f["name"], f["type"]) for f in parse_columns(ddl)] == [
        ("order_id", "bigint"),
        ("price", "decimal(10,2)"),
        ("n", "int"),
        ("t", "timestamp"),
        ("s", "struct<a:int,b:array<string>>"),
        ("m", "map<string,bigint>"),
        ("x y", "string"),
        ("d", "decimal(10,0)"),
        ("ntz", "timestamp_ntz"),
    ]


@pytest.mark.parametrize("ddl", ["BIGINT", "a", "a BIGINT, 'b' INT"])
def test_what_is_not_a_column_list_says_so(ddl: str) -> None:
    with pytest.raises(ValueError):
        parse_columns(ddl)
