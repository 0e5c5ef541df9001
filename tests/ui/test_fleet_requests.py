"""What the page's looks ask S3, counted on moto's S3 server (real HTTP): once a running job's
reads are older than `fresh_for`, a look costs the listings `status` makes at unchanged jobs
whose runs are gone, shows what was read last, and reads the running jobs again behind it, on
a thread of its own (ui/fleet.py); a job whose beacon changed (a new run) is read in the look,
and so is every job whose reads are older than `keep_for`."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.host import runtime
from flink_sql_runner.ui.fleet import KEEP_FOR, Fleet
from tests.support.fakes import write_beacon
from tests.support.s3_requests import Requests
from tests.support.status_world import status_world

pytestmark = pytest.mark.s3

JOBS = 12
#: A look's requests where nothing is read per job: the store's index and listings, the beacons'.
LISTINGS = [
    ("GetObject", "store/_index.json"),
    ("ListObjectsV2", "ckpt/_status/"),
    ("ListObjectsV2", "store/"),
    ("ListObjectsV2", "store/_intents/"),
    ("ListObjectsV2", "store/_watch/"),
]


def per_job(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return sorted((op, key) for op, key in sent if key.startswith("ckpt/job"))


def reads_of(*names: str) -> list[tuple[str, str]]:
    """A running job's reads: its status file and a listing of its checkpoint's commits."""
    return sorted(
        pair
        for name in names
        for pair in (
            ("GetObject", f"ckpt/{name}/_control/v1.status.json"),
            ("ListObjectsV2", f"ckpt/{name}/1/commits/"),
        )
    )


def progress(storage: Any, bucket: str, name: str, batch: int) -> None:
    """The run of `name` committed `batch` and wrote it in its status file (its beacon, which
    says neither, stays as it is)."""
    status = {"run-id": "run-0", "state": "active", "heartbeat": 2, "last-batch": {"id": batch}}
    storage.write_text(f"s3://{bucket}/ckpt/{name}/_control/v1.status.json", json.dumps(status))
    storage.write_text(f"s3://{bucket}/ckpt/{name}/1/commits/{batch}", "v1\n{}")


@pytest.fixture
def fleet(s3_client: Any, s3_bucket: str, tmp_path: Path) -> Any:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, JOBS, alive=True)
    # fresh_for 0: every look after the first finds the running jobs' reads past it.
    made = Fleet(deployment, reuse_for=0.0, fresh_for=0.0)
    yield made
    made.settle(30)


def test_a_look_after_fresh_for_lists_and_reads_the_running_jobs_behind_it(
    fleet: Fleet, s3_client: Any, s3_bucket: str
) -> None:
    counted = Requests(s3_client, s3_bucket, apart="behind")
    first = fleet.seen().look
    assert first is not None and first.by_name["job0003"]["last-committed-batch"] == 3
    assert per_job(counted.take()) == reads_of(*(f"job{i:04d}" for i in range(JOBS)))
    assert not fleet.reading_behind(), "the first look read them itself"
    progress(fleet.deployment.storage, s3_bucket, "job0003", 9)
    counted.take()

    look = fleet.seen().look
    assert look is not None
    assert sorted(counted.take()) == LISTINGS, "a look after fresh_for: its listings only"
    row = look.by_name["job0003"]
    assert (row["last-batch"]["id"], row["last-committed-batch"]) == (3, 3), "as read last"
    assert fleet.settle(30)
    assert per_job(counted.take(apart=True)) == reads_of(*(f"job{i:04d}" for i in range(JOBS)))
    assert fleet.behind_jobs == JOBS

    look = fleet.seen().look
    assert look is not None
    assert sorted(counted.take()) == LISTINGS
    row = look.by_name["job0003"]
    assert (row["last-batch"]["id"], row["last-committed-batch"]) == (9, 9), "read behind"
    assert row["health"] == "healthy"


def test_a_look_within_fresh_for_reads_nothing_per_job_in_it_or_behind_it(
    fleet: Fleet, s3_client: Any, s3_bucket: str
) -> None:
    fleet.seen()
    fleet._reads.fresh_for = 600.0
    counted = Requests(s3_client, s3_bucket, apart="behind")
    fleet.seen()
    assert not fleet.reading_behind()
    assert sorted(counted.take()) == LISTINGS and counted.take(apart=True) == []


def test_a_job_whose_beacon_changed_is_read_in_the_look(
    fleet: Fleet, s3_client: Any, s3_bucket: str
) -> None:
    fleet.seen()
    fleet._reads.fresh_for = 600.0  # the others are fresh: only the beacon says read it
    storage, root = fleet.deployment.storage, f"s3://{s3_bucket}/ckpt"
    counted = Requests(s3_client, s3_bucket, apart="behind")
    write_beacon(storage, root, "job0005", 1, "run-1")  # a new run of the version
    counted.take()
    fleet.seen()
    assert per_job(counted.take()) == reads_of("job0005")


class Later(runtime.Runtime):
    """The real runtime, its monotonic clock `ahead` seconds ahead."""

    def __init__(self, ahead: float) -> None:
        self.ahead = ahead

    def monotonic(self) -> float:
        return time.monotonic() + self.ahead


def test_reads_older_than_keep_for_are_made_in_the_look(
    fleet: Fleet, s3_client: Any, s3_bucket: str
) -> None:
    fleet.seen()
    counted = Requests(s3_client, s3_bucket, apart="behind")
    with runtime.install(Later(KEEP_FOR + 1)):
        fleet.seen()
    assert per_job(counted.take()) == reads_of(*(f"job{i:04d}" for i in range(JOBS)))
    assert not fleet.reading_behind() and counted.take(apart=True) == []


def test_without_keep_for_the_look_reads_them_as_before(
    s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, 5, alive=True)
    fleet = Fleet(deployment, reuse_for=0.0, fresh_for=0.0, keep_for=None)
    fleet.seen()
    counted = Requests(s3_client, s3_bucket, apart="behind")
    fleet.seen()
    assert per_job(counted.take()) == reads_of(*(f"job{i:04d}" for i in range(5)))
    assert not fleet.reading_behind()


def test_what_a_look_gives_back_while_the_reads_behind_run_is_read_once(
    s3_client: Any, s3_bucket: str, tmp_path: Path
) -> None:
    deployment, _ = status_world(s3_client, s3_bucket, tmp_path, JOBS, alive=True)
    fleet = Fleet(deployment, reuse_for=0.0, fresh_for=1.0)
    fleet.seen()
    time.sleep(1.1)
    counted = Requests(s3_client, s3_bucket, apart="behind")
    fleet.seen()  # past fresh_for: it starts the reads behind
    fleet.seen()  # while they run, or just after: what it gives back is read by them, once
    assert fleet.settle(30)
    fleet._reads.fresh_for = 600.0
    fleet.seen()
    assert not fleet.reading_behind(), "nothing left to read behind"
    behind = per_job(counted.take(apart=True))
    assert behind == reads_of(*(f"job{i:04d}" for i in range(JOBS))), "each job once"
    assert per_job(counted.take()) == [], "none in the looks"
