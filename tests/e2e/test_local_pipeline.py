"""A two-job pipeline on local Spark: A reads orders and writes T as parquet; B reads T as a file
source and writes U. A's query changes. Without a policy the plan warns that B will read A's rows
again; with `reprocessing: consistent` and `{query_version}` in T's path, one deploy moves A and
then B to new versions, and U's current version holds each order's result exactly once."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

IDS = [1, 2, 3, 4, 5, 6]


def rows_of(spark, path) -> dict[int, list[int]]:
    """U's ids by B's version, as Spark reads the file sink (its `_spark_metadata` log)."""
    try:
        rows = spark.read.parquet(str(path)).select("id", "__query_version").collect()
    except Exception:  # noqa: BLE001 - nothing committed yet
        return {}
    found: dict[int, list[int]] = {}
    for row in rows:
        found.setdefault(row["__query_version"], []).append(row["id"])
    return {version: sorted(ids) for version, ids in found.items()}


def test_a_consistent_consumer_follows_its_producer_and_sees_each_row_once(
    workspace: Workspace, spark
):
    ws = workspace
    orders, t_fixed = ws.root / "in" / "orders", ws.root / "lake" / "t"
    t_versioned, u = ws.root / "lake" / "tv", ws.root / "lake" / "u"
    orders.mkdir(parents=True)
    (orders / "orders.json").write_text("".join(json.dumps({"id": i}) + "\n" for i in IDS))

    def tables(t_path: str) -> None:
        ws.write_tables(
            [
                {"name": "orders", "format": "json", "schema": "id BIGINT",
                 "options": {"path": str(orders)}},
                {"name": "t", "format": "parquet", "schema": "id BIGINT",
                 "options": {"path": t_path}},
                {"name": "u", "format": "parquet", "options": {"path": str(u)}},
            ]
        )  # fmt: skip

    def a(sql: str) -> None:
        ws.write_job("a", **{"target-table": "t"}, sql=sql)

    def b(**extra: str) -> None:
        ws.write_job("b", **{"target-table": "u"}, sql="SELECT id FROM t", **extra)

    tables(str(t_fixed))
    a("SELECT id FROM orders")
    b()
    result = ws.deploy("--output", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert wait_for(lambda: rows_of(spark, u).get(1) == IDS or None, what="U v1") is True

    # Without the policy: the plan warns that B will read A's rows again.
    a("SELECT id * 10 AS id FROM orders")
    plan = ws.cli("plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "a  stop-and-start-clean  v2" in plan.stdout
    assert "downstream: b reads-again: reads v1's rows again: a v2 writes t from the start" in (
        plan.stdout
    )
    assert "b  noop" in plan.stdout

    # With it: T's path carries the writer's version, B follows.
    tables(str(t_versioned) + "/{query_version}")
    b(reprocessing="consistent")
    planned = ws.plan_json()
    assert (planned["a"]["action"], planned["a"]["query-version"]) == ("stop-and-start-clean", 2)
    assert (planned["b"]["action"], planned["b"]["query-version"]) == ("stop-and-start-clean", 2)
    assert planned["b"]["after"] == ["a"] and planned["a"]["stop-after"] == ["b"]
    assert [(d["job"], d["effect"]) for d in planned["a"]["downstream"]] == [("b", "follows")]

    result = ws.deploy("--output", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = {j["name"]: j for j in json.loads(result.stdout)["jobs"]}
    assert jobs["a"]["result"]["ok"] and jobs["b"]["result"]["ok"], result.stdout
    a_run, b_run = ws.record("a"), ws.record("b")
    assert a_run is not None and b_run is not None
    assert (a_run["version"], b_run["version"]) == (2, 2)
    stored_b = ws.stored("b")
    assert stored_b is not None
    assert stored_b["tables"]["t"]["options"]["path"] == f"{t_versioned}/2"

    # U's current version: each order's new result exactly once; v1's rows left as they were.
    expected = [i * 10 for i in IDS]
    by_version = wait_for(
        lambda: (found := rows_of(spark, u)).get(2) == expected and found,
        what="U v2, each order once",
    )
    assert by_version == {1: IDS, 2: expected}
    assert Counter(by_version[2]) == Counter(expected)
