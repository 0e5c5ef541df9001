"""A query change never breaks its sink's readers, on real Spark and real spark-submit.

One job writing a parquet folder another job reads (declaring `value BIGINT`): v1 deploys -> a type
change (value BIGINT -> STRING) is refused by the plan, naming the reader; the v1 run keeps running
and the sink still reads -> an added column deploys as v2 and the sink reads back rows of both
versions -> a code job (whose output the plan cannot know) writing value as STRING is stopped by
the run's own check before its first write: warm, in its pre-flight, and v2 runs on -> the same
type change into a new location ({query_version} in the path) deploys, and the plan says where
readers must move.
"""

from __future__ import annotations

import json

import pytest

from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def test_a_sinks_readers_are_never_broken(workspace: Workspace, spark) -> None:
    ws = workspace
    out = ws.root / "out" / "ticks"
    tables = [
        {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 5}},
        {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}},
        {
            "name": "tick_stream",
            "format": "parquet",
            "options": {"path": str(out)},
            "schema": "value BIGINT, __query_version INT",
        },
        {"name": "tick_copy", "format": "parquet", "options": {"path": str(ws.root / "copy")}},
    ]
    ws.write_tables(tables)
    job = {"target-table": "tick_out", "sql": "SELECT value, timestamp FROM ticks"}
    ws.write_job("ticks", **job)
    ws.write_job(
        "copy",
        **{"target-table": "tick_copy", "sql": "SELECT value FROM tick_stream"},
        **{"desired-state": "stopped"},
    )

    def rows(version: int, at_least: int):
        def check():
            frame = spark.read.option("mergeSchema", "true").parquet(str(out))
            found = frame.where(f"__query_version = {version}").collect()
            return found if len(found) >= at_least else None

        return check

    # 1. v1
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    first = ws.record("ticks")
    wait_for(rows(1, 10), what="v1 rows")

    # 2. value BIGINT -> STRING: refused before anything stops; the reader is named
    ws.write_job(
        "ticks", **{**job, "sql": "SELECT CAST(value AS STRING) AS value, timestamp FROM ticks"}
    )
    #    (the deploy's own plan, in JSON: a `plan` before it would start the sink's probe again)
    result = ws.deploy("--output", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    (planned,) = (j for j in json.loads(result.stdout)["jobs"] if j["name"] == "ticks")
    assert planned["action"] == "refused" and "value bigint -> string" in planned["reason"], planned
    schema = planned["schema"]
    assert schema["retyped"] == [{"name": "value", "from": "bigint", "to": "string"}]
    assert schema["readers"] == ["copy"]
    assert schema["conflicts"] == [
        "copy reads it as tick_stream: value is written as string, declared bigint"
    ]
    assert ws.record("ticks")["pid"] == first["pid"]
    assert ws.stored("ticks")["meta"]["query-version"] == 1
    assert spark.read.parquet(str(out)).count() >= 10  # still readable

    # 3. an added (nullable) column deploys as v2; the sink reads back rows of both versions
    #    (a NOT NULL one would not: Spark marks it required and fails on the older files)
    ws.write_job(
        "ticks",
        **{**job, "sql": "SELECT value, timestamp, IF(value >= 0, 'two', NULL) AS tag FROM ticks"},
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "schema of " in result.stdout and "+ tag string" in result.stdout
    assert ws.stored("ticks")["meta"]["query-version"] == 2
    assert {r["tag"] for r in wait_for(rows(2, 5), what="v2 rows")} == {"two"}
    assert {r["tag"] for r in rows(1, 10)()} == {None}

    # 4. a code job the plan cannot analyse, writing value as STRING: its run refuses before
    #    its first write, the deploy rolls back to v2, and the sink still reads
    code = (
        "execution_output = spark.table('ticks').select("
        "F.col('value').cast('string').alias('value'), 'timestamp', F.lit('three').alias('tag'))"
    )
    coded = {"target-table": "tick_out", "source-tables": ["ticks"], "code": code}
    ws.write_job("ticks", **coded)
    # whether its code keeps state cannot be read, and a rate source goes on from now: refused
    # before anything stops unless the job accepts partial windows (docs/concepts/state.md)
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "state: unknown, refused" in result.stdout
    assert ws.stored("ticks")["meta"]["query-version"] == 2
    ws.write_job("ticks", **coded, **{"on-state-change": "partial"})
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "its run checks the sink" in result.stdout  # the plan said what it could not know
    assert "breaking for its readers" in result.stdout + result.stderr
    assert "pre-flight failed" in result.stdout, "warm: the check stops it before v2 stops"
    assert ws.stored("ticks")["meta"]["query-version"] == 2
    wait_for(lambda: ws.record("ticks"), what="v2 running on")
    assert not rows(3, 1)()
    assert spark.read.parquet(str(out)).count() >= 15

    # 5. the same change into a new location: deploys; readers are told where to move
    moved = str(ws.root / "out" / "ticks-v{query_version}")
    tables[1] = {"name": "tick_out", "format": "parquet", "options": {"path": moved}}
    ws.write_tables(tables)
    ws.write_job(
        "ticks", **{**job, "sql": "SELECT CAST(value AS STRING) AS value, timestamp FROM ticks"}
    )
    planned = ws.plan_json()["ticks"]
    assert planned["action"] == "stop-and-start-clean", planned
    assert planned["schema"]["verdict"] == "new-location"
    assert f"readers of {out} must move to it" in planned["schema"]["notes"][0]
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    version = ws.stored("ticks")["meta"]["query-version"]
    written = ws.root / "out" / f"ticks-v{version}"
    wait_for(lambda: any((written / "_spark_metadata").glob("[0-9]*")), what="a new batch")
    assert dict(spark.read.parquet(str(written)).dtypes)["value"] == "string"
    assert spark.read.parquet(str(out)).count() >= 15
