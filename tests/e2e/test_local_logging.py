"""What a local job logs, through real spark-submit: Spark's own lines at WARN by default (the
packaged template's `spark.log.level`), INFO for a job that asks for it, the runner's own lines
always; one log file per run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from flink_sql_runner.read.template import packaged_template
from tests.support.workspace import TEST_TEMPLATE, Workspace

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

#: A log4j line of Spark's at INFO: "26/11/23 12:46:22 INFO SparkContext: ..."
SPARK_INFO = re.compile(r"^\S+ \S+ INFO \S+: ", re.MULTILINE)


def test_spark_logs_at_warn_unless_a_job_asks_and_the_runner_always(workspace: Workspace):
    ws = workspace
    packaged = yaml.safe_load(packaged_template().read_text())["sparkProperties"]
    assert packaged["spark.log.level"] == "WARN"
    template = {**TEST_TEMPLATE, "sparkProperties": {**TEST_TEMPLATE["sparkProperties"]}}
    template["sparkProperties"]["spark.log.level"] = packaged["spark.log.level"]
    ws.template.write_text(yaml.safe_dump(template))
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 1}},
            {"name": "quiet_out", "format": "json", "options": {"path": str(ws.root / "q")}},
            {"name": "chatty_out", "format": "json", "options": {"path": str(ws.root / "c")}},
        ]
    )
    ws.write_job("quiet", **{"target-table": "quiet_out"}, sql="SELECT value FROM ticks")
    ws.write_job(
        "chatty",
        **{"target-table": "chatty_out", "sparkProperties": {"spark.log.level": "INFO"}},
        sql="SELECT value FROM ticks",
    )
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr

    logs = {name: Path(ws.record(name)["log"]) for name in ("quiet", "chatty")}
    for name, log in logs.items():
        assert log.parent == ws.state / "logs" / name, "one file per run, in the job's folder"
        text = log.read_text()
        assert f"[flink-sql-runner] job {name} v1 run " in text
        assert "[flink-sql-runner] active: first trigger done" in text
    quiet = logs["quiet"].read_text().split('Setting Spark log level to "WARN"', 1)
    assert len(quiet) == 2, "spark.log.level is applied when the SparkContext starts"
    assert SPARK_INFO.findall(quiet[1]) == [], "no INFO line of Spark's after that"
    chatty = logs["chatty"].read_text()
    assert len(SPARK_INFO.findall(chatty)) > 20, "a job's own spark.log.level wins"

    for name in ("quiet", "chatty"):
        assert ws.cli("stop", name, paths=False).returncode == 0
