"""A job removed for good on local Spark, with real spark-submit: deployed twice (v2), forgotten,
then deployed again. Its process, checkpoints, control files, run records and logs are gone; its
sink keeps every row; the job comes back as v1 and runs."""

from __future__ import annotations

import re

import pytest

from flink_sql_runner.host import processes as procs
from tests.support.rows import rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def test_a_forgotten_job_comes_back_as_v1_and_its_sink_keeps_its_rows(workspace: Workspace, spark):
    ws = workspace
    out = ws.root / "out" / "ticks"
    ws.write_one_job("ticks-job", str(out))

    def rows(version: int, at_least: int):
        def check():
            values, meta = rows_by_version(spark, out)
            return (values, meta) if len(values.get(version, [])) >= at_least else None

        return check

    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    wait_for(rows(1, 2), what="v1 rows")
    ws.write_one_job("ticks-job", str(out), sql="SELECT value FROM ticks WHERE value >= 0")
    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stop-and-start-clean" in result.stdout
    wait_for(rows(2, 2), what="v2 rows")
    run = ws.record("ticks-job")
    assert run is not None and ws.stored("ticks-job")["meta"]["query-version"] == 2

    dry = ws.cli("forget", "ticks-job", "--dry-run", paths=False)
    assert dry.returncode == 0, dry.stderr
    result = ws.cli("forget", "ticks-job", "--yes", paths=False)

    assert result.returncode == 0, result.stdout + result.stderr
    print(dry.stdout + result.stdout)
    shown = [re.sub(r"  \(\d+ files?, [^)]*\)$", "", line) for line in dry.stdout.splitlines()]
    listed = [re.sub(r"  \(\d+ files?, [^)]*\)$", "", line) for line in result.stdout.splitlines()]
    assert listed[: len(shown)] == shown, "it did what the listing showed (sizes grow as it runs)"
    assert listed[-1].startswith("ticks-job: forgotten: stopped gracefully")
    assert not procs.is_same_process(int(run["pid"]), str(run["started"])), "its driver is gone"
    for gone in ("checkpoints/ticks-job", "runs/ticks-job", "logs/ticks-job",
                 "manifests/ticks-job.yaml"):  # fmt: skip
        assert not (ws.state / gone).exists(), gone
    assert list((ws.state / "manifests" / "_archive" / "ticks-job").glob("*.yaml"))
    values, meta = rows_by_version(spark, out)
    assert len(values[1]) >= 2 and len(values[2]) >= 2, "the sink keeps every row"
    assert (out / "_spark_metadata").is_dir()
    before = len(values[1])

    result = ws.deploy()

    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout and "stop-and" not in result.stdout
    assert ws.stored("ticks-job")["meta"]["query-version"] == 1
    _, meta = wait_for(rows(1, before + 2), what="rows of the new v1")
    assert len(meta[1]) == 2, "v1's rows: the forgotten job's, then the new query's"
    assert ws.record("ticks-job") is not None
