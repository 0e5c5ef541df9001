"""Never lose, double or strand a job, on local Spark with real spark-submit.

One job (a rate source into parquet) and one file-source job, through:
- a config change whose driver cannot start (`spark.driver.memory: banana`: the driver's JVM
  refuses the heap size before any of Spark runs), warm: its pre-flight fails and v1 commits
  on, the same driver;
- a config change Spark refuses at start -> warm, its pre-flight fails and v1 commits on, the
  same driver; cold, rolled back: v1 runs again from its checkpoint; the store keeps v1's
  manifest, exit code 1 either way;
- a query change whose v2 fails on its first batch -> rolled back the same way;
- a sink path change and, in the same deploy, the other job's file source path change -> each
  a clean start as a new version (the ticks' v3: the failed v2 left its folder), the file
  source job reading only the new folder.
After each step the targets, read with spark.read, hold every row exactly once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: nine starts
]


#: A micro-batch every 3 s, of as many rows as a step waits for: the job idles between its
#: batches, so a graceful stop finds none running and ends at once (a stop waits for the running
#: batch, up to 30 s, and batches back to back on a busy machine kept it waiting all that time,
#: past the deploy's stop timeout), and a running job costs the machine less.
TRIGGER = {"processingTime": "3 seconds"}


def progressed(spark, out: Path, version: int, at_least: int):
    def check():
        values, _ = rows_by_version(spark, out)
        return values if len(values.get(version, [])) >= at_least else None

    return check


def file_rows(spark, out: Path) -> dict[int, list[str]]:
    try:
        rows = spark.read.parquet(str(out)).collect()
    except Exception:  # noqa: BLE001 - nothing committed yet
        return {}
    found: dict[int, list[str]] = {}
    for row in rows:
        found.setdefault(row["__query_version"], []).append(row["word"])
    return {version: sorted(words) for version, words in found.items()}


def test_failed_starts_roll_back_and_moved_sources_and_sinks_start_clean(
    workspace: Workspace, spark
):
    ws = workspace
    out, out_moved = ws.root / "out" / "ticks", ws.root / "out" / "ticks-moved"
    files_out = ws.root / "out" / "words"
    in_a, in_b = ws.root / "in" / "a", ws.root / "in" / "b"
    for folder, words in ((in_a, ["apple", "avocado"]), (in_b, ["banana", "blueberry"])):
        folder.mkdir(parents=True)
        (folder / "words.json").write_text("".join(json.dumps({"word": w}) + "\n" for w in words))
    ticks = {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 14}}
    tick_out = {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}}
    words = {
        "name": "words",
        "format": "json",
        "schema": "word STRING",
        "options": {"path": str(in_a)},
    }
    word_out = {"name": "word_out", "format": "parquet", "options": {"path": str(files_out)}}
    ws.write_tables([ticks, tick_out, words, word_out])
    job = {"target-table": "tick_out", "sql": "SELECT value FROM ticks", "trigger": TRIGGER}
    ws.write_job("ticks-job", **job)
    ws.write_job("words-job", **{"target-table": "word_out", "sql": "SELECT word FROM words"})

    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert_exactly_once(wait_for(progressed(spark, out, 1, 14), what="v1 rows"))
    wait_for(lambda: file_rows(spark, files_out).get(1), what="the words of folder a")
    stored_v1 = ws.stored("ticks-job")

    # 1. A config change whose driver cannot start: its JVM refuses the heap size before any of
    # Spark runs. Warm (the default), the pre-flight fails and v1 is untouched, committing on.
    pid_before = ws.runs("ticks-job")[0]["pid"]
    ws.write_job("ticks-job", **job, sparkProperties={"spark.driver.memory": "banana"})
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL"))
    assert "pre-flight failed:" in fail and fail.endswith("v1 untouched, still running"), fail
    assert "banana" in result.stdout, "the JVM's own words on why"
    assert ws.stored("ticks-job") == stored_v1, "the store keeps v1's manifest"
    assert [(r["version"], r["pid"]) for r in ws.runs("ticks-job")] == [(1, pid_before)]
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(wait_for(progressed(spark, out, 1, before + 3), what="v1 committing on"))
    ws.write_job("ticks-job", **job)

    # A config change Spark refuses at start. Warm, the new run fails its pre-flight and v1 is
    # untouched: the same driver commits on. Cold, the new run fails after v1 stopped, and v1
    # runs again.
    ws.write_tables([{**ticks, "options": {"rowsPerBatch": -1}}, tick_out, words, word_out])
    assert ws.plan_json()["ticks-job"]["action"] == "stop-and-restart-from-checkpoint"
    pid_before = ws.runs("ticks-job")[0]["pid"]
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL ticks-job: pre-flight failed: " in result.stdout, result.stdout
    assert "rowsPerBatch" in result.stdout and "v1 untouched, still running" in result.stdout
    assert ws.stored("ticks-job") == stored_v1, "the store keeps v1's manifest"
    assert [(r["version"], r["pid"]) for r in ws.runs("ticks-job")] == [(1, pid_before)]
    before = len(rows_by_version(spark, out)[0][1])
    assert_exactly_once(wait_for(progressed(spark, out, 1, before + 3), what="v1 committing on"))
    result = ws.deploy("--handover", "cold")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL ticks-job: rolled back: v1 running again from its checkpoint" in result.stdout
    assert "rowsPerBatch" in result.stdout, "Spark's own words on why"
    assert ws.stored("ticks-job") == stored_v1, "the store keeps v1's manifest"
    (run,) = ws.runs("ticks-job")
    assert run["version"] == 1 and run["pid"] != pid_before
    before = len(rows_by_version(spark, out)[0][1])
    values = wait_for(progressed(spark, out, 1, before + 14), what="v1 rows after rollback")
    assert_exactly_once(values)
    assert sorted(values) == [1]

    # 2. A query change whose v2 fails on its first batch: rolled back to v1 as well.
    ws.write_tables([ticks, tick_out, words, word_out])
    failing = "SELECT value FROM ticks WHERE assert_true(value < 0) IS NULL"
    ws.write_job("ticks-job", **{**job, "sql": failing})
    assert ws.plan_json()["ticks-job"]["action"] == "stop-and-start-clean"
    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "rolled back: v1 running again from its checkpoint" in result.stdout
    assert ws.stored("ticks-job") == stored_v1
    assert [r["version"] for r in ws.runs("ticks-job")] == [1]
    before = len(rows_by_version(spark, out)[0][1])
    values = wait_for(progressed(spark, out, 1, before + 14), what="v1 rows after 2nd rollback")
    assert_exactly_once(values)
    assert sorted(values) == [1], "the failed v2 wrote no row"

    # 3. The sink of one job and the file source of the other move, in one deploy: each a clean
    # start as a new version of its job. The ticks' sink: v3 (v2's folder exists). The words:
    # v2, reading only the new folder.
    ws.write_job("ticks-job", **job)
    ws.write_tables(
        [ticks, {**tick_out, "options": {"path": str(out_moved)}},
         {**words, "options": {"path": str(in_b)}}, word_out]
    )  # fmt: skip
    plans = ws.plan_json()
    plan = plans["ticks-job"]
    assert (plan["action"], plan["query-version"]) == ("stop-and-start-clean", 3)
    assert [c["field"] for c in plan["changes"]] == ["tables.tick_out.options.path"]
    plan = plans["words-job"]
    assert (plan["action"], plan["query-version"]) == ("stop-and-start-clean", 2)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    v1_rows = len(rows_by_version(spark, out)[0][1])  # v1 is stopped: no more rows there
    values = wait_for(progressed(spark, out_moved, 3, 14), what="v3 rows in the new folder")
    assert_exactly_once(values)
    assert len(rows_by_version(spark, out)[0][1]) == v1_rows, "the old folder is left as it was"
    by_version = wait_for(
        lambda: file_rows(spark, files_out).get(2) and file_rows(spark, files_out),
        what="the words of folder b",
    )
    assert by_version == {1: ["apple", "avocado"], 2: ["banana", "blueberry"]}
    shutil.rmtree(in_a)  # nothing reads it any more
