"""Two jobs deployed together, one failing at runtime; and a hostile description, byte for byte.

How the text output words a failed start (`FAIL <job>: the job failed: <Spark's message>`) is
shown on real Spark by tests/e2e/test_local_failed_start_and_logs.py, and its closing line
(`Deploy finished with 1 failed: <job>.`) by tests/e2e/test_local_recovery_rules.py; the failing
job is not started a second time here."""

from __future__ import annotations

import json

import pytest

from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

HOSTILE = "it's \"quoted\" \\ back\\slash -- not a comment; DROP TABLE x;\nsecond line\t'); --"


def test_one_failing_job_does_not_stop_the_other(workspace: Workspace, spark):
    ws = workspace
    good_out, bad_out = ws.root / "out" / "good", ws.root / "out" / "bad"
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 3}},
            {"name": "good_out", "format": "json", "options": {"path": str(good_out)}},
            {"name": "bad_out", "format": "parquet", "options": {"path": str(bad_out)}},
        ]
    )
    ws.write_job(
        "good", description=HOSTILE, **{"target-table": "good_out"}, sql="SELECT value FROM ticks"
    )
    ws.write_job(
        "bad",
        **{"target-table": "bad_out"},
        sql="SELECT value, CAST(raise_error('boom: the job cannot go on') AS STRING) AS x "
        "FROM ticks",
    )

    result = ws.deploy("--output", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    jobs = {j["name"]: j for j in json.loads(result.stdout)["jobs"]}
    assert jobs["good"]["result"]["ok"] is True
    assert jobs["bad"]["result"]["ok"] is False
    assert "boom: the job cannot go on" in jobs["bad"]["result"]["summary"]
    assert ws.stored("good") is not None
    assert ws.stored("bad") is None
    assert ws.record("bad") is None or not _alive(ws.record("bad"))

    def described():
        try:
            rows = spark.read.json(str(good_out)).select("__query_description").collect()
        except Exception:  # noqa: BLE001 - nothing committed yet
            return None
        return rows or None

    def read_good() -> list[int]:
        return read_good_rows(spark, good_out)

    rows = wait_for(described, what="rows of the good job")
    assert {r["__query_description"] for r in rows} == {HOSTILE}

    # desired-state: stopped stops the good job with its checkpoint, and it stays stopped.
    (ws.jobs / "bad.yaml").unlink()
    good = {"description": HOSTILE, "target-table": "good_out", "sql": "SELECT value FROM ticks"}
    ws.write_job("good", **good, **{"desired-state": "stopped"})
    stopped = ws.deploy()
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "stopped with its checkpoint; stays stopped" in stopped.stdout
    assert ws.record("good") is None
    assert ws.plan_json()["good"]["action"] == "noop"
    rows_when_stopped = len(read_good())

    # deploy-job with the stored (final) manifest: nothing to do while it says stopped.
    final = ws.state / "manifests" / "good.yaml"
    dry = ws.cli("deploy-job", "--job-config-path", str(final), "--dry-run", paths=False)
    assert dry.returncode == 0, dry.stderr
    assert "stopped, as desired" in dry.stdout

    # Back to running through deploy-job with the plain job file: resumes from its checkpoint.
    job_file = ws.write_job("good", **good)
    resumed = ws.cli("deploy-job", "--job-config-path", str(job_file), paths=False)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "restart-from-checkpoint" in resumed.stdout
    assert ws.stored("good")["meta"]["query-version"] == 1

    def grown() -> list[int] | None:  # a batch of the resumed run: the seam it must not break
        values = read_good()
        return values if len(values) > rows_when_stopped else None

    values = wait_for(grown, what="rows after resuming")
    assert values == list(range(len(values))), "a gap or a duplicate across stop and resume"


def read_good_rows(spark, path) -> list[int]:
    try:
        return sorted(r["value"] for r in spark.read.json(str(path)).select("value").collect())
    except Exception:  # noqa: BLE001 - nothing committed yet
        return []


def _alive(record) -> bool:
    from flink_sql_runner.host import processes as procs

    return procs.is_same_process(int(record["pid"]), str(record["started"]))
