"""A Kafka sink writes only key, value, topic, partition and headers: the metadata columns reach
its records as headers (beside any the query writes itself), or a replayed batch could not be told
from the rest."""

from __future__ import annotations

import pytest

from runner.query import with_metadata

pytestmark = pytest.mark.spark


def doc_into(target: dict) -> dict:
    return {
        "name": "copy",
        "description": "copies",
        "meta": {
            "query-id": "id-1",
            "query-version": 3,
            "query-create-timestamp": "2026-11-25T05:00:00Z",
        },
        "metadata-columns": {"enabled": True, "create-timestamp-column": "__created"},
        "target-table": "out",
        "tables": {"out": target},
    }


KAFKA = {"format": "kafka", "options": {"topic": "t", "kafka.bootstrap.servers": "b:9092"}}


def test_a_kafka_sink_gets_the_metadata_columns_as_headers(spark):
    frame = spark.range(2).selectExpr("CAST(id AS STRING) AS value")
    rows = with_metadata(frame, doc_into(KAFKA)).collect()
    headers = {key: value.decode() for key, value in rows[0]["headers"]}
    assert set(headers) == {
        "__created",
        "__query_name",
        "__query_description",
        "__query_id",
        "__query_version",
        "__query_create_timestamp",
    }
    assert (headers["__query_name"], headers["__query_id"], headers["__query_version"]) == (
        "copy",
        "id-1",
        "3",
    )
    assert headers["__query_description"] == "copies"
    assert headers["__query_create_timestamp"].startswith("2026-11-25")
    assert rows[0]["__query_version"] == 3  # the columns stay, for a probe or a file sink


def test_headers_the_query_writes_come_first(spark):
    frame = spark.sql(
        "SELECT 'v' AS value, array(named_struct('key', 'mine', 'value', CAST('x' AS BINARY)))"
        " AS headers"
    )
    (row,) = with_metadata(frame, doc_into(KAFKA)).collect()
    assert [key for key, _ in row["headers"]][:2] == ["mine", "__created"]


def test_a_file_sink_gets_no_headers(spark):
    frame = spark.range(1).selectExpr("CAST(id AS STRING) AS value")
    out = with_metadata(frame, doc_into({"format": "parquet", "options": {"path": "/x"}}))
    assert "headers" not in out.columns
