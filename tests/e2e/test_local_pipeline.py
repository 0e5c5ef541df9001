"""A two-job pipeline on local Spark: A reads orders and writes T as parquet; B reads T as a file
source and writes U. Every path is written relative to the project's folder, where `deploy` runs.

1. Both deploy: the stored manifests hold the paths made absolute; the logs (one file per run,
   in the job's folder) have Spark's own lines at WARN by default (the packaged template's
   `spark.log.level`), at INFO for B, which asks for it, and the runner's own lines always.
2. A's query changes. Without a policy the plan warns that B will read A's rows again; with
   `reprocessing: consistent` and `{query_version}` in T's path, one deploy moves A and then B to
   new versions, and U's current version holds each order's result exactly once.
3. A's driver is killed; `watch --once`, run from another folder (as a service unit or another CI
   step would), restarts it, and the new run reads the next file of orders, which B carries on
   to U.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from pathlib import Path

import pyspark
import pytest
import yaml

from flink_sql_runner.read.template import packaged_template
from tests.support.workspace import TEST_TEMPLATE, Workspace, kill_driver, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

IDS = [1, 2, 3, 4, 5, 6]
#: A log4j line of Spark's at INFO: "26/11/23 12:46:22 INFO SparkContext: ..."
SPARK_INFO = re.compile(r"^\S+ \S+ INFO \S+: ", re.MULTILINE)


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


def drop(folder: Path, name: str, ids: list[int]) -> None:
    (folder / f".{name}").write_text("".join(json.dumps({"id": i}) + "\n" for i in ids))
    (folder / f".{name}").rename(folder / name)  # whole, as a file source wants it


def test_a_consistent_consumer_follows_its_producer_and_sees_each_row_once(
    workspace: Workspace, spark, tmp_path: Path
):
    ws = workspace
    orders, t_fixed = ws.root / "in" / "orders", ws.root / "lake" / "t"
    t_versioned, u = ws.root / "lake" / "tv", ws.root / "lake" / "u"
    orders.mkdir(parents=True)
    drop(orders, "orders.json", IDS)
    # Spark's own lines at WARN, as the packaged template has it.
    packaged = yaml.safe_load(packaged_template().read_text())["sparkProperties"]
    assert packaged["spark.log.level"] == "WARN"
    template = {**TEST_TEMPLATE, "sparkProperties": {**TEST_TEMPLATE["sparkProperties"]}}
    template["sparkProperties"]["spark.log.level"] = packaged["spark.log.level"]
    ws.template.write_text(yaml.safe_dump(template))

    def tables(t_path: str) -> None:  # relative to ws.root, where the CLI runs
        ws.write_tables(
            [
                {"name": "orders", "format": "json", "schema": "id BIGINT",
                 "options": {"path": "in/orders"}},
                {"name": "t", "format": "parquet", "schema": "id BIGINT",
                 "options": {"path": t_path}},
                {"name": "u", "format": "parquet", "options": {"path": "lake/u"}},
            ]
        )  # fmt: skip

    def a(sql: str) -> None:
        ws.write_job("a", **{"target-table": "t"}, sql=sql)

    def b(**extra: str) -> None:
        chatty = {"sparkProperties": {"spark.log.level": "INFO"}}  # a job's own level wins
        ws.write_job("b", **{"target-table": "u"}, sql="SELECT id FROM t", **chatty, **extra)

    tables("lake/t")
    a("SELECT id FROM orders")
    b()
    result = ws.deploy("--output", "json")  # from the project's folder, ws.root
    assert result.returncode == 0, result.stdout + result.stderr
    stored_a = ws.stored("a")
    assert stored_a is not None
    assert stored_a["tables"]["orders"]["options"]["path"] == str(orders)
    assert stored_a["tables"]["t"]["options"]["path"] == str(t_fixed)
    assert ws.stored("b")["tables"]["u"]["options"]["path"] == str(u)
    assert wait_for(lambda: rows_of(spark, u).get(1) == IDS or None, what="U v1") is True

    # What each run logs: one file per run, in the job's folder; the runner's lines always.
    logs = {name: Path(ws.record(name)["log"]) for name in ("a", "b")}
    installed = Path(pyspark.__file__).parent
    for name, log in logs.items():
        assert log.parent == ws.state / "logs" / name, "one file per run, in the job's folder"
        text = log.read_text()
        assert f"[flink-sql-runner] job {name} v1 run " in text
        assert "[flink-sql-runner] active: first trigger done" in text
        # pip's pyspark is SPARK_HOME: its modules, compiled at install, not spark-submit's zip
        assert f" on Spark {pyspark.__version__} (pyspark from {installed}), " in text
    quiet = logs["a"].read_text().split('Setting Spark log level to "WARN"', 1)
    assert len(quiet) == 2, "spark.log.level is applied when the SparkContext starts"
    assert SPARK_INFO.findall(quiet[1]) == [], "no INFO line of Spark's after that"
    chatty = logs["b"].read_text()
    assert len(SPARK_INFO.findall(chatty)) > 20, "a job's own spark.log.level wins"

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
    tables("lake/tv/{query_version}")
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

    # A's driver is killed; `watch --once` from another folder restarts it from the store alone.
    kill_driver(int(a_run["pid"]))
    wait_for(lambda: ws.record("a") is None, timeout=30, what="A's driver gone")
    drop(orders, "more.json", [7, 8])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    argv = ws.argv("watch", "--once", "--output", "json", paths=False)
    for option in ("--table-definition-path", "--template-file"):  # from the store alone
        at = argv.index(option)
        del argv[at : at + 2]
    watched = subprocess.run(  # noqa: S603 - a list, never a shell
        argv, cwd=elsewhere, capture_output=True, text=True, timeout=300, check=False
    )
    ws.runs("a")  # its run is killed at teardown, pass or fail
    assert watched.returncode == 0, watched.stdout + watched.stderr
    assert "PATH_NOT_FOUND" not in watched.stdout + watched.stderr
    restarted = wait_for(lambda: ws.record("a"), timeout=30, what="A's restarted run")
    assert restarted["pid"] != a_run["pid"]
    assert ws.record("b")["pid"] == b_run["pid"], "B ran on"
    more = sorted([*expected, 70, 80])
    wait_for(lambda: rows_of(spark, u).get(2) == more, what="the next file of orders in U v2")
    assert not (elsewhere / "in").exists() and not (elsewhere / "lake").exists()

    stopped = ws.cli("stop", "a", "b", paths=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
