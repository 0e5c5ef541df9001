"""The rules of what a new output schema does to a sink's readers (runner/schema_rules.py):
pure, no Spark."""

from __future__ import annotations

from typing import Any

import pytest

from runner.schema_rules import (
    compare,
    describe,
    fields_of,
    kafka_conflicts,
    reader_conflicts,
    type_text,
)


def col(name: str, kind: str = "bigint", nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": nullable}


V1 = [col("id"), col("value"), col("ts", "timestamp")]


def test_fields_come_from_sparks_schema_json_as_simple_strings() -> None:
    struct = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long", "nullable": False, "metadata": {}},
            {"name": "b", "type": "decimal(10,2)", "nullable": True, "metadata": {}},
            {
                "name": "c",
                "type": {
                    "type": "array",
                    "elementType": {
                        "type": "struct",
                        "fields": [{"name": "k", "type": "integer", "nullable": True}],
                    },
                    "containsNull": True,
                },
                "nullable": True,
                "metadata": {},
            },
            {
                "name": "d",
                "type": {
                    "type": "map",
                    "keyType": "string",
                    "valueType": "short",
                    "valueContainsNull": True,
                },
                "nullable": True,
            },
        ],
    }
    assert fields_of(struct) == [
        col("a", "bigint", False),
        col("b", "decimal(10,2)"),
        col("c", "array<struct<k:int>>"),
        col("d", "map<string,smallint>"),
    ]
    assert type_text("byte") == "tinyint"


def test_nothing_written_yet_is_no_change() -> None:
    assert compare([], V1)["verdict"] == "same"


def test_the_same_columns_in_another_nullability_are_the_same() -> None:
    assert compare([V1], [col("id", nullable=False), *V1[1:]])["verdict"] == "same"


def test_a_type_change_is_breaking_and_named() -> None:
    found = compare([V1], [col("id"), col("value", "string"), col("ts", "timestamp")])
    assert found["verdict"] == "breaking"
    assert found["retyped"] == [{"name": "value", "from": "bigint", "to": "string"}]
    assert describe(found) == "value bigint -> string"


def test_a_new_column_is_additive_and_a_dropped_one_breaking() -> None:
    added = compare([V1], [*V1, col("note", "string")])
    assert (added["verdict"], [f["name"] for f in added["added"]]) == ("additive", ["note"])
    dropped = compare([V1], V1[:2])
    assert dropped["verdict"] == "breaking" and dropped["dropped"] == [V1[2]]


def test_a_renamed_column_is_breaking() -> None:
    found = compare([V1], [col("id"), col("amount"), col("ts", "timestamp")])
    assert found["renamed"] == [{"from": "value", "to": "amount", "type": "bigint"}]
    assert found["verdict"] == "breaking"


def test_an_older_versions_column_brought_back_with_another_type_is_retyped() -> None:
    found = compare([V1, V1[:2]], [*V1[:2], col("ts", "string")])
    assert found["retyped"] == [{"name": "ts", "from": "timestamp", "to": "string"}]


def test_names_are_compared_as_spark_resolves_them() -> None:
    assert compare([V1], [col("ID"), *V1[1:]])["verdict"] == "same"


def test_a_positional_sink_breaks_when_columns_move() -> None:
    swapped = [V1[1], V1[0], V1[2]]
    assert compare([V1], swapped, "parquet")["verdict"] == "same"
    assert compare([V1], swapped, "csv")["verdict"] == "breaking"


@pytest.mark.parametrize("fmt", ["csv", "text"])
def test_a_positional_sink_breaks_when_a_column_is_added_before_others(fmt: str) -> None:
    """A csv reader reads the old files by position: a column inserted before `ts` makes it read
    the old files' `ts` as the new column. Only a column added at the end is additive."""
    inserted = [col("id"), col("value"), col("note", "string"), col("ts", "timestamp")]
    found = compare([V1], inserted, fmt)
    assert found["verdict"] == "breaking" and found["moved"] == ["id", "value", "ts"]
    assert compare([V1], [*V1, col("note", "string")], fmt)["verdict"] == "additive"
    assert compare([V1], inserted, "json")["verdict"] == "additive"


def test_readers_declaring_columns_see_them_missing_or_retyped() -> None:
    new = [col("id", "string"), col("ts", "timestamp"), col("extra")]
    assert reader_conflicts(V1, new) == [
        "id is written as string, declared bigint",
        "value (bigint) is not written",
    ]
    assert reader_conflicts(V1, [*V1, col("extra")]) == []


def test_kafka_takes_a_string_or_binary_value_and_key() -> None:
    assert kafka_conflicts([col("value", "string"), col("key", "binary")]) == []
    assert kafka_conflicts([col("value")]) == [
        "`value` is bigint; Kafka's sink takes string or binary"
    ]
    assert kafka_conflicts([col("key", "string")]) == [
        "no `value` column (Kafka's sink needs one, string or binary)"
    ]


def test_a_new_not_null_column_breaks_a_parquet_or_orc_sinks_readers() -> None:
    """Spark writes a NOT NULL column as `required` in the footer; reading the sink's older
    files, which lack it, then fails ("Required column is missing in data file", seen on Spark
    4.3 reading a streaming sink). json and csv files keep no nullability."""
    new = [*V1, col("note", "string", nullable=False)]
    for fmt in ("parquet", "orc", None):
        found = compare([V1], new, fmt)
        assert found["verdict"] == "breaking" and found["required"] == ["note"]
        assert describe(found) == "added NOT NULL, which the older files lack: note (string)"
    assert compare([V1], new, "json")["verdict"] == "additive"
    assert compare([V1], [*V1, col("note", "string")], "parquet")["required"] == []


def test_an_older_versions_column_brought_back_not_null_breaks_a_parquet_or_orc_sink() -> None:
    """Issue 40, item 3: v1 wrote `b`, v2 dropped it (allowed), v3 brings it back NOT NULL: the
    v2 files lack it, as the files before a new column do, and reading them fails alike. Judged
    `same, no change` before; with v2 alone as the history the same change is refused."""
    a, b, strict = col("a"), col("b"), col("b", nullable=False)
    for fmt in ("parquet", "orc", None):
        found = compare([[a, b], [a]], [a, strict], fmt)
        assert found["verdict"] == "breaking" and found["required"] == ["b"]
        assert describe(found) == "added NOT NULL, which the older files lack: b (bigint)"
        assert found == compare([[a]], [a, strict], fmt)
    # Nullable, it is not new to the readers (v1's files hold it); json keeps no nullability.
    assert describe(compare([[a, b], [a]], [a, b], "parquet")) == "no change"
    assert compare([[a, b], [a]], [a, strict], "json")["verdict"] == "same"
