"""Safety with real processes: a deployer SIGKILLed mid-deploy, and two deploys at once against
one S3 store (moto's server on 127.0.0.1)."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Any

import pytest

from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def tick_job(ws: Workspace, sql: str = "SELECT value FROM ticks") -> None:
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 5}},
            {"name": "tick_out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        ]
    )
    ws.write_job("ticks-job", **{"target-table": "tick_out"}, sql=sql)


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_deployer_killed_after_the_start_converges(
    workspace: Workspace, spark, handover: str, monkeypatch: pytest.MonkeyPatch
):
    """Cold, the deployer dies once v2 is submitted (v1 already stopped): the next deploy adopts
    v2. Warm, it dies once v2 is submitted prepared, beside v1: the next deploy ends the
    prepared run, which never wrote, and hands over again."""
    monkeypatch.setenv("FLINK_SQL_RUNNER_HANDOVER", handover)
    ws = workspace
    tick_job(ws)
    assert ws.deploy().returncode == 0
    first = ws.record("ticks-job")

    # A query change; the deployer is SIGKILLed once the new run is submitted, before it could
    # see the run healthy and record the manifest.
    tick_job(ws, sql="SELECT value FROM ticks WHERE value >= 0")
    deployer = subprocess.Popen(
        ws.argv("deploy"), cwd=ws.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    # Cold, the kill waits for the intent to say the target accepted the run (its run record is
    # written a moment before that phase is); warm, for the prepared run, before its go.
    phase = "submitted" if handover == "cold" else "preparing"
    try:
        record = wait_for(
            lambda: (
                ws.intent_phase("ticks-job") == phase
                and next((r for r in ws.runs("ticks-job") if r["version"] == 2), None)
            ),
            timeout=120,
            interval=0.2,
            what=f"the v2 submission (intent at {phase})",
        )
    finally:
        deployer.send_signal(signal.SIGKILL)
        deployer.wait(30)
    ws.remember(record)
    assert record["pid"] != first["pid"]
    assert ws.stored("ticks-job")["meta"]["query-version"] == 1, "killed before recording"

    result = ws.deploy()
    assert result.returncode == 0, result.stdout + result.stderr
    if handover == "cold":
        # The next deploy takes the dead deployer's lock, adopts the run it started: no second
        # start.
        assert "interrupted start of v2 (stop-and-start-clean, at submitted): its run is up" in (
            result.stdout
        )
        assert ws.record("ticks-job")["pid"] == record["pid"]
    else:
        assert "never given its go" in result.stdout, result.stdout
    version = ws.stored("ticks-job")["meta"]["query-version"]
    assert version >= 2
    # One run, of the stored version (a prepared run told to end leaves within seconds).
    wait_for(lambda: len(ws.runs("ticks-job")) == 1, timeout=60, what="one run of ticks-job")
    assert ws.record("ticks-job")["version"] == version
    if handover == "warm":  # a run of its own, neither v1's nor the one never given its go
        assert ws.record("ticks-job")["pid"] not in (record["pid"], first["pid"])
    assert ws.plan_json()["ticks-job"]["action"] == "noop"
    out = ws.root / "out"
    values = wait_for(
        lambda: (v := rows_by_version(spark, out)[0]) and len(v.get(version, [])) >= 10 and v,
        what=f"v{version} rows",
    )
    assert_exactly_once(values)


def test_two_deploys_at_once_on_one_s3_store(
    workspace: Workspace, s3_env: dict[str, str], s3_client: Any
):
    ws = workspace
    tick_job(ws)
    s3_client.create_bucket(Bucket="deploys")
    store = ["--manifest-store", "s3://deploys/jobs/"]
    env = {**os.environ, **s3_env}
    both = [
        subprocess.Popen(
            ws.argv("deploy", *store),
            cwd=ws.root,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    started = [out for out, _ in outputs if "running v1 (clean)" in out]
    waited = [out for out, _ in outputs if "noop" in out and "running v1 (clean)" not in out]
    assert len(started) == 1 and len(waited) == 1, outputs
    record = ws.record("ticks-job")
    ws.remember(record)
    keys = sorted(o["Key"] for o in s3_client.list_objects_v2(Bucket="deploys")["Contents"])
    assert keys == ["jobs/_index.json", "jobs/ticks-job.yaml"], "no lock or intent left behind"
    assert (
        subprocess.run(
            ws.argv("plan", *store, "--detailed-exitcode"),
            cwd=ws.root,
            env=env,
            capture_output=True,
            timeout=120,
        ).returncode
        == 0
    )
