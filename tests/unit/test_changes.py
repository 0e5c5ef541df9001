"""`changes.diff`: which fields changed, and how much it matters."""

from __future__ import annotations

import copy

from flink_sql_runner.changes import ChangeKind, diff
from tests.unit.test_decisions import BASE


def test_dropping_every_spark_property_with_a_pinned_one_is_a_query_change() -> None:
    spec = {k: v for k, v in copy.deepcopy(BASE.spec).items() if k != "sparkProperties"}
    assert "spark.sql.shuffle.partitions" in BASE.spec["sparkProperties"]
    [change] = diff(BASE.spec, BASE.tables, spec, BASE.tables)
    assert (change.field, change.kind) == ("sparkProperties", ChangeKind.QUERY)
    assert (change.old, change.new) == (BASE.spec["sparkProperties"], "<unset>")
    [back] = diff(spec, BASE.tables, BASE.spec, BASE.tables)
    assert back.kind is ChangeKind.QUERY


def test_dropping_only_unpinned_spark_properties_at_once_is_a_config_change() -> None:
    old = {**BASE.spec, "sparkProperties": {"spark.executor.memory": "1g", "spark.a": "b"}}
    new = {k: v for k, v in BASE.spec.items() if k != "sparkProperties"}
    [change] = diff(old, BASE.tables, new, BASE.tables)
    assert (change.field, change.kind) == ("sparkProperties", ChangeKind.CONFIG)
