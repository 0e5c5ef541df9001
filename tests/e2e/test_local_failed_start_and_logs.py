"""A job whose first start fails stays in view, and `logs NAME` prints a job's driver log,
through real spark-submit (findings 3 and 4 of issue 26): Spark refuses the source's option at
start; `status` shows the job failed with its error and log, `logs` prints that log, `stop` has
nothing to stop, `plan` says it failed beside the retry. Fixed, it runs: `logs --tail` prints
the running driver's last lines, and `logs -f` follows them until the run is stopped."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def tables(ws: Workspace, rows_per_second: int) -> None:
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate", "options": {"rowsPerSecond": rows_per_second}},
            {"name": "out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        ]
    )


def test_a_failed_first_start_stays_in_view_and_logs_prints_the_driver_log(
    workspace: Workspace,
):
    ws = workspace
    tables(ws, -1)  # Spark refuses it when the query starts, not before
    ws.write_job("bad-job", **{"target-table": "out"}, sql="SELECT value FROM ticks")
    spark_says = "Invalid value '-1'. The option 'rowsPerSecond' must be positive"

    result = ws.deploy()
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"FAIL bad-job: the job failed: {spark_says}" in result.stdout
    (log,) = (ws.state / "logs" / "bad-job").glob("*.log")
    assert f"last lines of {log}:" in result.stdout, "the FAIL line names the log file"

    status = ws.cli("status", paths=False)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[1].split()[:3] == ["bad-job", "-", "failed"]
    assert "failed to start at " in status.stdout and spark_says in status.stdout
    assert "next deploy: start-clean v2" in status.stdout
    assert f"log: {log}" in status.stdout
    (row,) = json.loads(ws.cli("status", "--output", "json", paths=False).stdout)["jobs"]
    assert (row["health"], row["log"]) == ("failed", str(log))
    assert row["failed-start"]["query-version"] == 1
    assert row["failed-start"]["error"] == f"the job failed: {spark_says}"

    logs = ws.cli("logs", "bad-job", paths=False)
    assert logs.returncode == 0, logs.stderr
    assert f"[flink-sql-runner] the job failed: {spark_says}" in logs.stdout
    assert logs.stdout.splitlines()[0].startswith("==== ")
    assert f"==> {log} <==" in logs.stderr

    stop = ws.cli("stop", "bad-job", paths=False)
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.startswith("bad-job: not running (v1 failed to start at ")
    assert ws.cli("stop", "no-such-job", paths=False).returncode == 2

    plan = ws.cli("plan")
    assert plan.returncode == 0, plan.stderr
    assert "v1 failed to start at " in plan.stdout and spark_says in plan.stdout
    assert ws.plan_json()["bad-job"]["failed-start"]["error"] == f"the job failed: {spark_says}"

    # Fixed: it starts, the failure is gone, and its running driver's log can be read.
    tables(ws, 1)
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dropped the record of its failed start" in result.stdout
    (row,) = json.loads(ws.cli("status", "--output", "json", paths=False).stdout)["jobs"]
    assert (row["health"], row["stored-version"], row["failed-start"]) in [
        ("healthy", 2, None),
        ("starting", 2, None),
    ]
    running_log = ws.record("bad-job")["log"]
    assert row["log"].endswith(running_log.rsplit("/", 1)[-1])

    def logged() -> bool:  # the file itself: each `logs` call is a whole CLI start
        return len(Path(running_log).read_text(errors="replace").splitlines()) > 5

    wait_for(logged, what="the running driver to log")
    tail = ws.cli("logs", "bad-job", "--tail", "5", paths=False)
    assert tail.returncode == 0, tail.stderr
    assert len(tail.stdout.splitlines()) == 5
    whole = ws.cli("logs", "bad-job", paths=False).stdout.splitlines()
    assert set(tail.stdout.splitlines()) <= set(whole[5:]), "the last lines (it still logs)"

    following = subprocess.Popen(  # noqa: S603 - a list, never a shell
        ws.argv("logs", "bad-job", "--tail", "0", "-f", paths=False),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ws.root,
    )
    try:
        assert following.stderr is not None
        header = following.stderr.readline()  # printed before it follows: the stop comes after
        assert header.startswith("==> ") and running_log.rsplit("/", 1)[-1] in header, header
        stop = ws.cli("stop", "bad-job", paths=False)
        assert stop.returncode == 0, stop.stderr
        out, err = following.communicate(timeout=120)  # it ends by itself with the run
        err = header + err
    finally:
        if following.poll() is None:
            following.kill()
            following.wait()
    assert following.returncode == 0, err
    assert "SparkContext" in out, "what the driver logged while it stopped was followed"
    assert (
        yaml.safe_load((ws.state / "manifests" / "bad-job.yaml").read_text())["desired-state"]
        == "stopped"
    )
