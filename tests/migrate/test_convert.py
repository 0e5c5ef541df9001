"""The original tool's stored manifests, converted (migrate/convert.py)."""

from __future__ import annotations

import datetime

from flink_sql_runner.decide.changes import ChangeKind, diff, severity
from flink_sql_runner.migrate.convert import convert, same_migration

ORIGINAL = {
    "name": "q",
    "description": "d",
    "target-table": "`kafka`.`out`",
    "sql": "SELECT 1",
    "flinkProperties": {"state.backend": "rocksdb"},
    "custom-template-key": 1,
    "meta": {
        "query-version": 3,
        "query-id": "35d3d720-760d-11ed-bfeb-02e547cf7baa",
        "query-create-timestamp": datetime.datetime(2022, 12, 7, 8, 57, 42),
    },
}


def test_a_converted_manifest_keeps_meta_and_carries_the_rest():
    converted, problems = convert(ORIGINAL, "q", "store/q.yaml")
    assert problems == []
    assert converted is not None
    manifest = converted.manifest
    assert manifest.meta.to_dict() == {
        "query-version": 3,
        "query-id": "35d3d720-760d-11ed-bfeb-02e547cf7baa",
        "query-create-timestamp": "2022-12-07 08:57:42",
    }
    assert {k: v for k, v in manifest.job.items() if k != "migrated-from"} == {
        "name": "q",
        "description": "d",
        "target-table": "`kafka`.`out`",
        "sql": "SELECT 1",
    }
    marker = manifest.job["migrated-from"]
    assert marker["tool"] == "flink-sql-runner (Flink)"
    assert marker["original"] == {
        "flinkProperties": {"state.backend": "rocksdb"},
        "custom-template-key": 1,
    }
    assert converted.carried == ("custom-template-key", "flinkProperties")
    assert manifest.to_dict()["schema-version"] == 1
    assert same_migration(manifest.to_dict(), manifest)


def test_migrated_from_is_a_query_change_against_any_desired_manifest():
    converted, _ = convert(ORIGINAL, "q", "store/q.yaml")
    assert converted is not None
    desired = {"name": "q", "description": "d", "target-table": "`kafka`.`out`", "sql": "SELECT 1"}
    changes = diff(converted.manifest.job, {}, desired, {})
    assert severity(changes) is ChangeKind.QUERY
    (change,) = changes
    assert (change.field, change.why) == (
        "migrated-from",
        "the original tool's (Flink) state cannot be restored by Spark",
    )
