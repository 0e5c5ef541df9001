"""Safety with real processes: a deployer SIGKILLed mid-deploy, the same job then forgotten for
good and deployed again, and two deploys at once against one S3 store (moto's server on
127.0.0.1)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from typing import Any

import pytest

from flink_sql_runner.host import processes as procs
from tests.support.rows import assert_exactly_once, rows_by_version
from tests.support.workspace import Workspace, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.spark,
    pytest.mark.timeout(1800),  # a safety net, not a limit asserted: five starts and two probes
]

#: A micro-batch every 3 s, of as many rows as a step waits for: the job idles between its
#: batches, so a graceful stop finds none running and ends at once (a stop waits for the running
#: batch, up to 30 s, and batches back to back on a busy machine kept it waiting all that time,
#: past the deploy's stop timeout), and a running job costs the machine less.
TRIGGER = {"processingTime": "3 seconds"}


def tick_job(ws: Workspace, sql: str = "SELECT value FROM ticks") -> None:
    ws.write_tables(
        [
            {"name": "ticks", "format": "rate-micro-batch", "options": {"rowsPerBatch": 10}},
            {"name": "tick_out", "format": "parquet", "options": {"path": str(ws.root / "out")}},
        ]
    )
    ws.write_job("ticks-job", **{"target-table": "tick_out"}, sql=sql, trigger=TRIGGER)


def a_killed_deploy_converges(ws: Workspace, spark, handover: str, sql: str) -> None:
    """A query change to `sql`; the deployer is SIGKILLed once the new run is submitted, before
    it could see the run healthy and record the manifest; the next deploy converges."""
    first = ws.record("ticks-job")
    old = ws.stored("ticks-job")["meta"]["query-version"]
    new = old + 1
    tick_job(ws, sql=sql)
    deployer = subprocess.Popen(
        ws.argv("deploy", "--handover", handover),
        cwd=ws.root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # Cold, the kill waits for the intent to say the target accepted the run (its run record is
    # written a moment before that phase is); warm, for the prepared run, before its go.
    phase = "submitted" if handover == "cold" else "preparing"
    try:
        record = wait_for(
            lambda: (
                ws.intent_phase("ticks-job") == phase
                and next((r for r in ws.runs("ticks-job") if r["version"] == new), None)
            ),
            timeout=120,
            interval=0.2,
            what=f"the v{new} submission (intent at {phase})",
        )
    finally:
        deployer.send_signal(signal.SIGKILL)
        deployer.wait(30)
    ws.remember(record)
    assert record["pid"] != first["pid"]
    assert ws.stored("ticks-job")["meta"]["query-version"] == old, "killed before recording"

    result = ws.deploy("--handover", handover)
    assert result.returncode == 0, result.stdout + result.stderr
    if handover == "cold":
        # The next deploy takes the dead deployer's lock, adopts the run it started: no second
        # start.
        assert (
            f"interrupted start of v{new} (stop-and-start-clean, at submitted): its run is up"
            in result.stdout
        )
        assert ws.record("ticks-job")["pid"] == record["pid"]
    else:
        assert "never given its go" in result.stdout, result.stdout
    version = ws.stored("ticks-job")["meta"]["query-version"]
    assert version >= new
    # One run, of the stored version (a prepared run told to end leaves within seconds).
    wait_for(lambda: len(ws.runs("ticks-job")) == 1, timeout=60, what="one run of ticks-job")
    assert ws.record("ticks-job")["version"] == version
    if handover == "warm":  # a run of its own, neither the old one's nor the one never go'd
        assert ws.record("ticks-job")["pid"] not in (record["pid"], first["pid"])
    assert ws.plan_json()["ticks-job"]["action"] == "noop"
    out = ws.root / "out"
    values = wait_for(
        lambda: (v := rows_by_version(spark, out)[0]) and len(v.get(version, [])) >= 10 and v,
        what=f"v{version} rows",
    )
    assert_exactly_once(values)


def test_killed_deployers_converge_and_the_job_forgotten_comes_back_as_v1(
    workspace: Workspace, spark
):
    """Cold, the deployer dies once v2 is submitted (v1 already stopped): the next deploy adopts
    v2. Then warm, it dies once v3 is submitted prepared, beside v2: the next deploy ends the
    prepared run, which never wrote, and hands over again. Then the job is forgotten: its
    process, checkpoints, control files, run records and logs are gone; its sink keeps every
    row; deployed again, it comes back as v1 and runs."""
    ws = workspace
    out = ws.root / "out"
    tick_job(ws)
    assert ws.deploy().returncode == 0
    wait_for(lambda: len(rows_by_version(spark, out)[0].get(1, [])) >= 2, what="v1 rows")
    a_killed_deploy_converges(ws, spark, "cold", "SELECT value FROM ticks WHERE value >= 0")
    a_killed_deploy_converges(ws, spark, "warm", "SELECT value FROM ticks WHERE value >= -1")

    # The job is forgotten: first listed (--dry-run), then carried out as listed.
    run = ws.record("ticks-job")
    versions = sorted(rows_by_version(spark, out)[0])
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
    assert sorted(values) == versions and 1 in versions and len(versions) >= 3
    assert all(len(values[v]) >= 2 for v in versions), "the sink keeps every row"
    assert (out / "_spark_metadata").is_dir()
    before = len(values[1])

    result = ws.deploy()

    assert result.returncode == 0, result.stdout + result.stderr
    assert "start-clean" in result.stdout and "stop-and" not in result.stdout
    assert ws.stored("ticks-job")["meta"]["query-version"] == 1
    _, meta = wait_for(
        lambda: (r := rows_by_version(spark, out)) and len(r[0].get(1, [])) >= before + 2 and r,
        what="rows of the new v1",
    )
    assert len(meta[1]) == 2, "v1's rows: the forgotten job's, then the new query's"
    assert ws.record("ticks-job") is not None


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
    history = [k for k in keys if k.startswith("jobs/_history/ticks-job/v000001-")]
    assert len(history) == 1, "the one start that recorded v1 wrote its history record"
    others = [k for k in keys if k not in history]
    assert others == ["jobs/_index.json", "jobs/ticks-job.yaml"], "no lock or intent left behind"
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
