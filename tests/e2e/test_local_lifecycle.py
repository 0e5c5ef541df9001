"""One job through its whole life on local Spark, with real spark-submit, checking the data.

new (v1) -> unchanged (noop, same process) -> config change, warm (restart, same version) ->
query change, cold (v2, clean) -> driver SIGKILLed, deploy (restart from checkpoint) -> stopped
and checkpoint removed, deploy (error for that job, exit 1).
After each step the target, read with spark.read, holds every row exactly once. The config
change goes warm (the default: the new run prepared on the same checkpoint while the old one
runs), as CI makes it: `plan --out` on the pull request, `deploy --plan` after the merge,
exactly the saved steps (a saved plan, README "Deploy what was reviewed"); the query change goes
cold (`--handover cold`: stop, then start). The same on every Spark line of the matrix
(tests/matrix.py). The other two, on real Spark too: a query change carried out warm in
tests/e2e/test_schema_contracts.py (its v2) and tests/e2e/test_local_recovery_rules.py (a v2
that fails after its go, rolled back); a config change carried out cold in
tests/e2e/test_local_recovery_rules.py (a run that fails on the same checkpoint, rolled back)
and on a cluster in tests/e2e/test_standalone_lifecycle.py.
"""

from __future__ import annotations

import json
import shutil
import stat

import pyspark
import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, kill_driver, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: four starts and a probe
]

#: How the config change and the query change are carried out (module docstring).
CONFIG_HANDOVERS, QUERY_HANDOVERS = ("warm",), ("cold",)

#: A micro-batch every 3 s, of as many rows as a step waits for: the job idles between its
#: batches, so a graceful stop finds none running and ends at once (a stop waits for the running
#: batch, up to 30 s, and batches back to back on a busy machine kept it waiting all that time,
#: past the deploy's stop timeout), and a running job costs the machine less.
TRIGGER = {"processingTime": "3 seconds"}


def test_job_lifecycle_keeps_every_row_exactly_once(workspace: Workspace, spark):
    ws = workspace
    out = ws.root / "out" / "ticks"
    ws.write_tables(
        [
            {
                "name": "ticks",
                "format": "rate-micro-batch",
                "options": {"rowsPerBatch": 14, "numPartitions": 2},
            },
            {"name": "tick_out", "format": "parquet", "options": {"path": str(out)}},
        ]
    )
    job = {
        "description": "first words",
        "target-table": "tick_out",
        "sql": "SELECT value FROM ticks",
        "trigger": TRIGGER,
    }
    ws.write_job("ticks-job", **job)

    def progressed(version, at_least):
        def check():
            values, _ = rows_by_version(spark, out)
            return values if len(values.get(version, [])) >= at_least else None

        return check

    # 1. new -> start clean, version 1
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout
    first = ws.record("ticks-job")
    stored = ws.stored("ticks-job")
    assert stored["meta"]["query-version"] == 1
    query_id_v1 = stored["meta"]["query-id"]
    runtime = ws.state / "checkpoints" / "ticks-job" / "_control" / "v1.manifest.json"
    assert stat.S_IMODE(runtime.stat().st_mode) == 0o600, "it may hold resolved ${ENV} values"
    status_file = runtime.with_name("v1.status.json")
    assert json.loads(status_file.read_text())["spark-version"] == pyspark.__version__
    values = wait_for(progressed(1, 14), what="v1 rows")
    assert_exactly_once(values)

    # 2. unchanged -> noop, the same process keeps running
    result = ws.deploy()
    assert result.returncode == 0, result.stderr
    plan = ws.plan_json()
    assert plan["ticks-job"]["action"] == "noop"
    assert ws.record("ticks-job")["pid"] == first["pid"]

    # 3. config change (description) -> stop with checkpoint, restart, same version and id:
    #    warm, from a saved plan. Each run's rows carry the description it was deployed with.
    descriptions = ["first words"]
    words = ("second words", "third words")[: len(CONFIG_HANDOVERS)]
    for handover, description in zip(CONFIG_HANDOVERS, words, strict=True):
        before = len(rows_by_version(spark, out)[0][1])
        pid_before = ws.record("ticks-job")["pid"]
        ws.write_job("ticks-job", **{**job, "description": description})
        if handover == "warm":  # as reviewed: a saved plan, carried out as saved
            saved = saved_plan(ws, "config.json")
            assert saved["ticks-job"]["action"] == "stop-and-restart-from-checkpoint"
            result = deploy_saved(ws, "config.json", saved)
        else:
            assert ws.plan_json()["ticks-job"]["action"] == "stop-and-restart-from-checkpoint"
            result = ws.deploy("--handover", handover)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "stopped gracefully" in result.stdout
        assert ("prepared v1 in " in result.stdout) == (handover == "warm"), result.stdout
        assert ws.record("ticks-job")["pid"] not in (first["pid"], pid_before)
        stored = ws.stored("ticks-job")
        assert (stored["meta"]["query-version"], stored["meta"]["query-id"]) == (1, query_id_v1)
        values = wait_for(progressed(1, before + 14), what=f"v1 rows after the {handover} restart")
        assert_exactly_once(values)
        descriptions.append(description)
        _, meta = rows_by_version(spark, out)
        assert meta[1] == {("ticks-job", d, query_id_v1) for d in descriptions}

    # 4. query change -> stop, start clean as a new version (v2) in a new checkpoint folder:
    #    cold. The version before keeps its rows, once.
    query_ids = {1: query_id_v1}
    for version, handover in enumerate(QUERY_HANDOVERS, start=2):
        sql = f"SELECT value FROM ticks WHERE value >= {2 - version}"  # a new query each time
        ws.write_job("ticks-job", **{**job, "description": descriptions[-1], "sql": sql})
        if handover == "warm":  # as reviewed: a saved plan, carried out as saved
            saved = saved_plan(ws, "query.json")
            assert saved["ticks-job"]["action"] == "stop-and-start-clean"
            result = deploy_saved(ws, "query.json", saved)
        else:
            result = ws.deploy("--handover", handover)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "stop-and-start-clean" in result.stdout
        stored = ws.stored("ticks-job")
        assert stored["meta"]["query-version"] == version
        query_ids[version] = stored["meta"]["query-id"]
        assert query_ids[version] not in [query_ids[v] for v in range(1, version)]
        assert (ws.state / "checkpoints" / "ticks-job" / str(version) / "metadata").exists()
        rows = rows_by_version(spark, out)[0]
        earlier = {v: len(rows[v]) for v in range(1, version)}
        values = wait_for(progressed(version, 14), what=f"v{version} rows ({handover})")
        assert_exactly_once(values)
        # the earlier versions' rows are all still there, once
        assert {v: len(values[v]) for v in range(1, version)} == earlier
    last = 1 + len(QUERY_HANDOVERS)  # v2

    # 5. the driver dies by SIGKILL -> deploy restarts it from its checkpoint
    before = len(values[last])
    kill_driver(ws.record("ticks-job")["pid"])
    wait_for(
        lambda: ws.plan_json()["ticks-job"]["action"] == "restart-from-checkpoint",
        timeout=30,
        what="the job to be seen as not running",
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "restart-from-checkpoint" in result.stdout
    values = wait_for(progressed(last, before + 14), what=f"v{last} rows after SIGKILL and restart")
    assert_exactly_once(values)
    _, meta = rows_by_version(spark, out)
    assert meta[last] == {("ticks-job", descriptions[-1], query_ids[last])}

    # status shows the job, its version, running, and a committed batch
    status = ws.cli("status", "--output", "json")
    assert status.returncode == 0, status.stderr
    (row,) = json.loads(status.stdout)["jobs"]
    assert (row["name"], row["stored-version"], row["running"]) == ("ticks-job", last, True)
    assert row["drift"] == "in sync" and row["last-committed-batch"] >= 1

    # 6. stopped, checkpoint removed -> deploy says error for that job, exit 1
    result = ws.cli("stop", "ticks-job", "--stop-timeout", "30", paths=False)
    assert result.returncode == 0, result.stderr
    assert "stopped gracefully" in result.stdout
    again = ws.cli("stop", "ticks-job", paths=False)  # a stopped job: nothing to do, no failure
    assert again.returncode == 0, again.stderr
    assert again.stdout == "ticks-job: already stopped; checkpoint kept\n"
    shutil.rmtree(ws.state / "checkpoints" / "ticks-job" / str(last))
    result = ws.deploy()
    assert result.returncode == 1
    assert "no valid checkpoint" in result.stdout
    assert ws.record("ticks-job") is None


def saved_plan(ws: Workspace, name: str) -> dict[str, dict]:
    """`plan --out`: the decisions it saved, by job."""
    result = ws.cli("plan", "--out", str(ws.root / name))
    assert result.returncode == 0, result.stdout + result.stderr
    doc = json.loads((ws.root / name).read_text())
    return {j["name"]: j for j in doc["jobs"]}


def deploy_saved(ws: Workspace, name: str, saved: dict[str, dict]):
    """`deploy --plan`: it carries out the saved steps, the same ones (JSON), and says what it
    did (text, as `deploy` says it)."""
    result = ws.deploy("--plan", str(ws.root / name), "--output", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    (done,) = json.loads(result.stdout)["jobs"]
    assert done["steps"] == saved[done["name"]]["steps"], "exactly the saved steps"
    assert done["result"]["ok"], done["result"]
    text = "\n".join([done["action"], *done["result"]["steps"], done["result"]["summary"]])
    return type(result)(result.args, 0, text, result.stderr)
