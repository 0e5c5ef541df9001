"""What a query change does to the rows it writes (decide/preview.py), from probe answers as the
runner's preview probe gives them: pure, no Spark."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from flink_sql_runner.decide.preview import judge_preview, stats
from flink_sql_runner.model.preview import ColumnStats, PreviewFacts, Slice, SlicePart

META = [{"name": "__create_timestamp", "type": "timestamp", "nullable": False},
        {"name": "__query_version", "type": "int", "nullable": False}]  # fmt: skip
ORDERS = [(1, 9500.0, "b1"), (2, 6000.0, "b2"), (3, 100.0, "b3"), (4, 9100.0, "b1"),
          (5, 5000.0, "b2"), (6, 7000.5, "b1")]  # fmt: skip


def fields(*spec: str) -> list[dict[str, Any]]:
    return [{"name": n, "type": t, "nullable": True} for n, t in (s.split() for s in spec)] + META


def side(names: list[str], rows: list[tuple[Any, ...]], version: int, **extra: Any) -> dict:
    return {"fields": fields(*names), "rows": [[*r, f"2026-11-28T0{version}:00:00", version]
                                               for r in rows], **extra}  # fmt: skip


def facts(answer: dict[str, Any], **kw: Any) -> PreviewFacts:
    part = SlicePart("orders", "files", files=("file:///in/a.json",))
    return PreviewFacts("expensive", 1, 2, Slice(1, 0, 9, (part,)), answer, **kw)


def filtered(threshold: float) -> list[tuple[Any, ...]]:
    return [r for r in ORDERS if r[1] > threshold]


def test_a_wider_filter_shows_exactly_the_rows_it_adds_and_none_lost() -> None:
    cols = ["order_id bigint", "price double", "buyer_id string"]
    answer = {
        "spark": "4.3.0",
        "inputs": {"orders": 6},
        "old": side(cols, filtered(9000), 1),
        "new": side(cols, filtered(5000), 2),
    }
    found = judge_preview(facts(answer), rows=10)
    assert found.unavailable is None and found.verdict == "same" and not found.refused
    assert (found.only_new, found.only_old, found.changed) == (2, 0, 0)
    assert [r["order_id"] for r in found.only_new_sample] == [2, 6]
    assert found.only_new_sample[0] == {"order_id": 2, "price": 6000.0, "buyer_id": "b2"}
    assert found.inputs == {"orders": 6}
    assert (len(found.old.rows), len(found.new.rows)) == (2, 4)
    by_name = {c.name: c for c in found.columns}
    assert set(by_name) == {"order_id", "price", "buyer_id"}, "metadata columns left out"
    assert by_name["price"].old == ColumnStats(0, 2, 9100.0, 9500.0)
    assert by_name["price"].new == ColumnStats(0, 4, 6000.0, 9500.0)
    assert judge_preview(facts(answer), rows=1).only_new_sample == found.only_new_sample[:1]


def test_an_added_column_and_a_type_change_compare_the_rows_they_share() -> None:
    old_cols = ["order_id bigint", "price double"]
    new_cols = ["order_id bigint", "price string", "buyer_id string"]
    new_rows = [(i, str(p), b) for i, p, b in filtered(5000)]
    answer = {"spark": "4.3.0", "inputs": {"orders": 6},
              "old": side(old_cols, [(i, p) for i, p, _ in filtered(9000)], 1),
              "new": side(new_cols, new_rows, 2)}  # fmt: skip
    found = judge_preview(facts(answer), rows=10)
    assert found.verdict == "breaking" and found.refused
    assert found.schema_change["retyped"] == [{"name": "price", "from": "double", "to": "string"}]
    assert [f["name"] for f in found.schema_change["added"]] == ["buyer_id"]
    assert (found.only_new, found.only_old) == (2, 0), "9500.0 and '9500.0' are one value"
    assert {c.name for c in found.columns} >= {"buyer_id", "price"}
    assert [c for c in found.columns if c.name == "buyer_id"][0].old is None
    allowed = judge_preview(facts(answer, policy="allow"), rows=10)
    assert allowed.verdict == "breaking" and not allowed.refused


def test_rows_with_a_key_both_write_are_changed_not_new_or_lost() -> None:
    cols = ["order_id bigint", "price double"]
    old = side(cols, [(1, 10.0), (2, 20.0), (3, 30.0)], 1)
    new = side(cols, [(1, 10.0), (2, 25.0), (4, 40.0)], 2)
    answer = {"spark": "4.3.0", "inputs": {"orders": 3}, "old": old, "new": new}
    keyed = judge_preview(facts(answer, key=("order_id",)), rows=10)
    assert (keyed.only_new, keyed.only_old, keyed.changed) == (1, 1, 1)
    assert keyed.changed_sample == ({"key": {"order_id": 2}, "columns": {"price": [20.0, 25.0]}},)
    plain = judge_preview(facts(answer), rows=10)
    assert (plain.only_new, plain.only_old, plain.changed) == (2, 2, 0)


def test_rows_are_multisets() -> None:
    cols = ["v bigint"]
    answer = {
        "spark": "4.3.0",
        "inputs": {"orders": 3},
        "old": side(cols, [(1,), (1,)], 1),
        "new": side(cols, [(1,), (1,), (1,)], 2),
    }
    found = judge_preview(facts(answer), rows=10)
    assert (found.only_new, found.only_old) == (1, 0)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"spark": "4.3.0", "too-many": {"where": "the slice's input", "rows": 11, "limit": 10}},
         "the slice's input holds more than 10 rows (--max-rows)"),
        ({"spark": "4.3.0", "error": "PATH_NOT_FOUND: gone.json"},
         "the slice could not be read: PATH_NOT_FOUND: gone.json"),
    ],
)  # fmt: skip
def test_what_stops_a_preview_is_said(answer: dict[str, Any], said: str) -> None:
    found = judge_preview(facts(answer), rows=5)
    assert found.unavailable is not None and said in found.unavailable
    assert found.only_new == 0 and found.old is None


def test_no_slice_and_a_failed_side_are_said() -> None:
    none = PreviewFacts("fresh", None, 1, Slice(None, missing="a new job: no version of it"))
    assert judge_preview(none, rows=5).unavailable == "no slice: a new job: no version of it"
    cols = ["v bigint"]
    answer = {"spark": "4.3.0", "inputs": {"orders": 1}, "old": side(cols, [(1,)], 1),
              "new": {"error": "UNRESOLVED_COLUMN: nope"}}  # fmt: skip
    found = judge_preview(facts(answer), rows=5)
    assert found.new is not None and found.new.error == "UNRESOLVED_COLUMN: nope"
    assert found.verdict is None


def test_a_stateful_query_says_what_a_batch_run_on_the_slice_means() -> None:
    cols = ["minute timestamp", "orders bigint"]
    old = side(cols, [("2026-01-01T00:00:00", 3)], 1, stateful=["Aggregate"])
    new = side(cols, [("2026-01-01T00:00:00", 2)], 2, stateful=["Aggregate"])
    answer = {"spark": "4.3.0", "inputs": {"orders": 3}, "old": old, "new": new}
    found = judge_preview(facts(answer, watermarks={"orders": ("order_time", "10 seconds")}), 5)
    assert any("windows and groups are cut at its edges" in n for n in found.notes)
    assert any("watermark of orders (order_time, delay 10 seconds) is not applied" in n
               for n in found.notes)  # fmt: skip
    stateless = judge_preview(facts({**answer, "old": side(cols, [], 1),
                                     "new": side(cols, [], 2)}), 5)  # fmt: skip
    assert stateless.notes == ()


def test_column_figures() -> None:
    assert stats([3, None, 1, 3]) == ColumnStats(1, 2, 1, 3)
    assert stats(["b", "a"]) == ColumnStats(0, 2, "a", "b")
    assert stats([]) == ColumnStats(0, 0, None, None)
    assert stats([{"a": 1}, {"a": 1}]) == ColumnStats(0, 1, None, None)


def test_a_new_job_has_no_old_side_and_every_row_is_its_own() -> None:
    """Issue 54, finding 14 (a): the probe runs a new job's query alone."""
    cols = ["order_id bigint", "price double", "buyer_id string"]
    answer = {"spark": "4.3.0", "inputs": {"orders": 6},
              "new": side(cols, filtered(9000), 1)}  # fmt: skip
    part = SlicePart("orders", "sample", sample="/rows.json")
    found = judge_preview(PreviewFacts("fresh", None, 1, Slice(None, parts=(part,)), answer), 1)
    assert found.old is None and found.unavailable is None and found.verdict is None
    assert found.only_new == 2 and found.only_new_sample == (
        {"order_id": 1, "price": 9500.0, "buyer_id": "b1"},)  # fmt: skip


def _kafka_side(rows: list[tuple[str, str, list[dict[str, str]]]], version: int) -> dict:
    """A Kafka sink's output as the runner writes it: the metadata columns, and each of them
    also as a header after the query's own (runner/query.py `_as_headers`; values base64)."""

    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    created = f"2026-11-28 0{version}:00:00"
    ours = [{"key": "__create_timestamp", "value": b64(created)},
            {"key": "__query_id", "value": b64(f"q{version}")},
            {"key": "__query_version", "value": b64(str(version))}]  # fmt: skip
    headers = {"name": "headers", "type": "array<struct<key:string,value:binary>>"}
    return {
        "fields": [*fields("key string", "value string"), {**headers, "nullable": True}],
        "rows": [[k, v, created, version, [*own, *ours]] for k, v, own in rows],
    }


def test_a_kafka_sinks_headers_are_compared_without_the_runners_metadata() -> None:
    """Review of issue 54, P3: the runner copies the metadata columns into a Kafka sink's
    `headers`; an unchanged query must not show every row changed by them. Headers the query
    writes itself are still compared."""
    trace = [{"key": "trace", "value": "dA=="}]
    rows = [("1", "100.0", trace), ("2", "200.0", [])]
    answer = {"spark": "4.3.0", "inputs": {"orders": 2},
              "old": _kafka_side(rows, 1), "new": _kafka_side(rows, 2)}  # fmt: skip
    same = judge_preview(facts(answer, key=("key",), sink_format="kafka"), rows=5)
    assert (same.only_new, same.only_old, same.changed) == (0, 0, 0)
    assert same.columns == ()
    other = [{"key": "trace", "value": "eA=="}]
    answer["new"] = _kafka_side([("1", "100.0", other), ("2", "200.0", [])], 2)
    found = judge_preview(facts(answer, key=("key",), sink_format="kafka"), rows=5)
    assert (found.only_new, found.only_old, found.changed) == (0, 0, 1)
    assert found.changed_sample == (
        {"key": {"key": "1"}, "columns": {"headers": [trace, other]}},)  # fmt: skip


def test_a_custom_create_timestamp_column_is_left_out_of_changed_rows() -> None:
    """Review of issue 54, P12: the job's own name for the creation time's column is metadata
    like the fixed names, in the rows changed by key too."""

    def made(rows: list[tuple[Any, ...]], version: int) -> dict:
        names = [{"name": "order_id", "type": "bigint", "nullable": True},
                 {"name": "price", "type": "double", "nullable": True},
                 {"name": "ingested_at", "type": "timestamp", "nullable": False},
                 {"name": "__query_version", "type": "int", "nullable": False}]  # fmt: skip
        return {
            "fields": names,
            "rows": [[*r, f"2026-11-28T0{version}:00:00", version] for r in rows],
        }

    answer = {"spark": "4.3.0", "inputs": {"orders": 2},
              "old": made([(1, 10.0), (2, 20.0)], 1),
              "new": made([(1, 10.0), (2, 40.0)], 2)}  # fmt: skip
    found = judge_preview(facts(answer, key=("order_id",), created_column="ingested_at"), 5)
    assert found.changed_sample == ({"key": {"order_id": 2}, "columns": {"price": [20.0, 40.0]}},)
    assert {c.name for c in found.columns} == {"price"}
