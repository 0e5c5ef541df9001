"""What `status` asks S3, counted on moto's S3 server (real HTTP): where nothing changed since
the last `status`, listings only (the store's, its index, its watch records', the checkpoint
root's beacons), however many jobs; a job whose run is alive costs its status file and a
listing of its commits, which move with every micro-batch (watch/status_reads.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.watch.records import WatchLog, WatchRecord
from flink_sql_runner.watch.status import status_rows
from tests.support.fakes import write_beacon
from tests.support.s3_requests import Requests
from tests.support.status_world import status_world

pytestmark = pytest.mark.s3


def status_again(client: Any, bucket: str, deployment: Deployment) -> tuple[list, list]:
    """The rows of a second `status` (the first reads everything), and its requests."""
    first = status_rows(deployment, [])
    counted = Requests(client, bucket)
    rows = status_rows(deployment, [])
    assert rows == first, "given back unread, the rows are the same"
    return rows, counted.take()


@pytest.mark.parametrize("jobs", [10, 30])
def test_a_status_of_unchanged_jobs_whose_runs_are_gone_lists_only(
    s3_client: Any, s3_bucket: str, tmp_path: Path, jobs: int
) -> None:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, jobs, alive=False)
    rows, sent = status_again(s3_client, s3_bucket, deployment)
    assert sorted(sent) == [
        ("GetObject", "store/_index.json"),  # the manifests, under the ETags listed
        ("ListObjectsV2", "ckpt/_status/"),  # the beacons, one listing per root
        ("ListObjectsV2", "store/"),
        ("ListObjectsV2", "store/_intents/"),
        ("ListObjectsV2", "store/_watch/"),  # the records, under the ETags listed
    ], "the same few requests at any number of jobs"
    assert len(rows) == jobs
    row = rows[7]
    assert (row["health"], row["last-committed-batch"], row["restarts"]) == ("down", 3, 1)
    assert row["last-batch"] == {"id": 3, "num-input-rows": 10}
    assert row["checkpoint"] == f"s3://{s3_bucket}/ckpt/job0007/1"


def test_a_job_whose_run_wrote_since_is_read_again(
    s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    deployment, target = status_world(s3_client, s3_bucket, tmp_path, 20, alive=False)
    status_rows(deployment, [])
    storage, root = deployment.storage, f"s3://{s3_bucket}/ckpt"
    # A run of job0004 ran two more batches and stopped: its beacon says a new run id.
    status = {"run-id": "run-1", "state": "stopped", "last-batch": {"id": 5}}
    storage.write_text(f"{root}/job0004/_control/v1.status.json", json.dumps(status))
    storage.write_text(f"{root}/job0004/1/commits/5", "v1\n{}")
    write_beacon(storage, root, "job0004", 1, "run-1", state="stopped")
    # job0009's watch record changed.
    WatchLog(deployment.store).write(WatchRecord("job0009", "other digest", restarts=4))
    counted = Requests(s3_client, s3_bucket)
    rows = {row["name"]: row for row in status_rows(deployment, [])}
    reads = sorted((op, key) for op, key in counted.take() if op == "GetObject")
    assert reads == [
        ("GetObject", "ckpt/job0004/_control/v1.status.json"),
        ("GetObject", "store/_index.json"),
        ("GetObject", "store/_watch/job0009.json"),
    ]
    assert rows["job0004"]["last-committed-batch"] == 5
    assert rows["job0004"]["last-batch"] == {"id": 5}
    assert rows["job0009"]["restarts"] == 0, "a record of another manifest is not the job's"


def test_a_job_whose_run_is_alive_is_read_every_time(
    s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, 20, alive=True)
    rows, sent = status_again(s3_client, s3_bucket, deployment)
    per_job = [(op, key) for op, key in sent if key.startswith("ckpt/job")]
    assert len(per_job) == 2 * 20
    assert ("GetObject", "ckpt/job0003/_control/v1.status.json") in per_job
    assert ("ListObjectsV2", "ckpt/job0003/1/commits/") in per_job
    assert rows[3]["health"] == "healthy" and rows[3]["last-committed-batch"] == 3


def test_a_status_that_keeps_nothing_reads_every_job(
    s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, 10, alive=False)
    deployment.status_cache = None  # --no-cache
    first = status_rows(deployment, [])
    counted = Requests(s3_client, s3_bucket)
    assert status_rows(deployment, []) == first
    reads = [key for op, key in counted.take() if op == "GetObject" and key.startswith("ckpt/")]
    assert len(reads) == 10
