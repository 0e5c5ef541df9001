"""`changes.diff`: which fields changed, and how much it matters. Only fields whose raw values
differ are normalized and walked, with the same result as walking the whole documents."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from deepdiff import DeepDiff

from flink_sql_runner import changes
from flink_sql_runner.changes import ChangeKind, _rule_for, diff, same
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


def reference_fields(old: Any, new: Any) -> dict[str, ChangeKind]:
    """What diff reported before the fast path: DeepDiff over the whole normalized documents."""

    def whole(spec: dict[str, Any], tables: dict[str, Any]) -> dict[str, Any]:
        doc = {}
        for key, value in spec.items():
            rule = changes.JOB_RULES.get(key)
            doc[key] = rule.normalize(value) if rule and rule.normalize else value
        doc.setdefault("sparkProperties", {})
        doc["tables"] = tables
        return doc

    tree = DeepDiff(whole(*old), whole(*new), view="tree", ignore_order=False)
    found: dict[str, ChangeKind] = {}
    for levels in tree.values():
        for level in levels:
            field, rule = _rule_for(level.path(output_format="list"), new[0].get("target-table"))
            pinned = [spec.get("sparkProperties") for spec in (old[0], new[0])]
            if field == "sparkProperties" and changes._pins(*pinned):
                rule = changes.PINNED_RULE
            found.setdefault(field, rule.kind)
    return found


def edited(**edits: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    spec, tables = copy.deepcopy(BASE.spec), copy.deepcopy(BASE.tables)
    for key, value in edits.items():
        if key == "tables":
            tables = value(tables)
        elif value is None:
            spec.pop(key)
        else:
            spec[key] = value
    return spec, tables


EDITS = {
    "nothing": {},
    "description": {"description": "new words"},
    "sql-whitespace-only": {"sql": "select id,  ts\nFROM src  -- c\nWHERE id > 0;"},
    "sql": {"sql": "SELECT id FROM src"},
    "pinned-setting": {"sparkProperties": {"spark.sql.shuffle.partitions": "8"}},
    "property-added": {
        "sparkProperties": {**BASE.spec["sparkProperties"], "spark.executor.cores": "2"}
    },
    "properties-dropped": {"sparkProperties": None},
    "field-dropped": {"description": None},
    "unknown-field": {"x-new": 1},
    "source-option": {"tables": lambda t: {**t, "src": {**t["src"], "options": {"path": "/b"}}}},
    "int-to-float": {"tables": lambda t: {**t, "out": {**t["out"], "options": {"n": 10.0}}}},
    "trigger-bool-to-int": {"trigger": {"once": 1}},
    "table-dropped": {"tables": lambda t: {"out": t["out"]}},
}


@pytest.mark.parametrize("edit", list(EDITS), ids=list(EDITS))
def test_diff_reports_what_the_whole_document_diff_reports(edit: str) -> None:
    old = (copy.deepcopy(BASE.spec), copy.deepcopy(BASE.tables))
    if edit in ("int-to-float",):
        old[1]["out"]["options"]["n"] = 10
    if edit == "trigger-bool-to-int":
        old[0]["trigger"] = {"once": True}
    new = edited(**EDITS[edit])
    found = {c.field: c.kind for c in diff(*old, *new)}
    assert found == reference_fields(old, new)
    assert found == {c.field: c.kind for c in diff(*old, *new)}  # stable


def test_type_changes_count_even_when_python_calls_the_values_equal() -> None:
    assert not same(10, 10.0) and not same(True, 1) and not same({"a": 1}, {"a": True})
    assert same({"a": [1, {"b": "x"}], "c": None}, {"c": None, "a": [1, {"b": "x"}]})
    old = edited(tables=lambda t: {**t, "out": {**t["out"], "options": {"n": 10}}})
    new = edited(tables=lambda t: {**t, "out": {**t["out"], "options": {"n": 10.0}}})
    assert [(c.field, c.kind) for c in diff(*old, *new)] == [
        ("tables.out.options", ChangeKind.CONFIG)
    ]


def test_an_unchanged_job_is_not_normalized_or_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_: Any) -> Any:
        raise AssertionError("normalized an unchanged field")

    monkeypatch.setitem(
        changes.JOB_RULES, "sql", changes.Rule(ChangeKind.QUERY, "the query changed", refuse)
    )
    assert diff(*edited(), *edited()) == []
    assert [c.field for c in diff(*edited(), *edited(description="other"))] == ["description"]
