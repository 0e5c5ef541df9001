"""What one look of `watch` asks S3, counted on moto's S3 server (real HTTP): the store's
listings and the checkpoint root's listing of status beacons, and a GET only of what they show
changed since the last look (docs/reference/status-json.md). JOBS jobs, few enough to build and
look at
quickly, enough that a count growing with them (a GET a job) cannot pass for the few requests
a look makes (the store's side is the same 4 requests at 300 jobs as at JOBS); one page of
each listing either way (S3 gives up to 1,000 keys a page)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import ABSENT
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.stores.storage import FileStorage
from flink_sql_runner.watch.events import Notifier
from flink_sql_runner.watch.records import WatchLog, WatchRecord
from flink_sql_runner.watch.watcher import Watcher, WatchSettings
from tests.support.fakes import FakeTarget, write_beacon
from tests.support.jobs import make_job, stored_of
from tests.support.s3_requests import Requests

JOBS = 40
pytestmark = pytest.mark.s3


def world(
    client: Any, bucket: str, target: FakeTarget, jobs: int = JOBS, beacons: bool = True
) -> S3Store:
    store, storage = S3Store(bucket, "store/", client), FileStorage(s3_client=client)
    for i in range(jobs):
        name = f"job{i:04d}"
        sink = {"format": "parquet", "options": {"path": f"/out/{name}"}}  # one writer each
        job = make_job(
            name=name, tables={"out": sink}, **{"checkpoint-root": f"s3://{bucket}/ckpt"}
        )
        store.write(stored_of(job), ABSENT)
        target.add_run(Run(name, 1, "run-0", "pid 1"))
        status = {"run-id": "run-0", "state": "active", "heartbeat": 1}
        storage.write_text(f"s3://{bucket}/ckpt/{name}/_control/v1.status.json", json.dumps(status))
        if beacons:  # a runner of this release (an older one writes none)
            write_beacon(storage, f"s3://{bucket}/ckpt", name, 1, "run-0")
    store.refresh_index()  # as deploys keep it
    return store


@pytest.fixture(params=[True, False], ids=["beacons", "older-runners"])
def watching(
    s3_client: Any, s3_bucket: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[Watcher, FakeTarget]]:
    target = FakeTarget()
    store = world(s3_client, s3_bucket, target, beacons=request.param)
    deployment = Deployment(Settings(state_dir=tmp_path), store=store, target=target)
    deployment.storage = FileStorage(s3_client=s3_client)
    # A lease that needs no renewal but the look's own while the test counts.
    settings = WatchSettings(leader_ttl=3600)
    watcher = Watcher(deployment, settings, Notifier(io.StringIO(), "json"))
    try:
        yield watcher, target
    finally:
        watcher.stopping.set()
        watcher.settle()
        watcher.actions.close()
        watcher.leader.release()


def store_side(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(op, key) for op, key in sent if key.startswith("store/")]


def status_reads(sent: list[tuple[str, str]]) -> int:
    return sum(1 for op, key in sent if op == "GetObject" and key.endswith(".status.json"))


def storage_side(sent: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(op, key) for op, key in sent if key.startswith("ckpt/")]


def test_a_look_at_unchanged_jobs_lists_and_reads_only_what_changed(
    watching: tuple[Watcher, FakeTarget],
    s3_client: Any,
    s3_bucket: str,
    request: pytest.FixtureRequest,
) -> None:
    watcher, _ = watching
    beacons = request.node.callspec.params["watching"]
    counted = Requests(s3_client, s3_bucket)
    watcher.step()  # the first look reads everything and writes each job's record
    watcher.step()  # the second reads again the records the first one wrote
    counted.take()

    watcher.step()
    sent = counted.take()
    assert sorted(store_side(sent)) == [
        ("GetObject", "store/_watch/_leader.json"),  # the lease, renewed by each look
        ("ListObjectsV2", "store/"),
        ("ListObjectsV2", "store/_watch/"),
        ("PutObject", "store/_watch/_leader.json"),
    ], "one listing of the manifests and one of the records; nothing read again"
    if beacons:
        # One listing of the beacons; none read again (a rewrite of the same bytes keeps
        # their ETags), no status file read (no metrics served).
        assert storage_side(sent) == [("ListObjectsV2", "ckpt/_status/")]
        writer = FileStorage(s3_client=s3_client)
        write_beacon(writer, f"s3://{s3_bucket}/ckpt", "job0011", 1, "run-0")  # a heartbeat
        # A micro-batch running for two minutes: the beacon says so, once a minute.
        write_beacon(writer, f"s3://{s3_bucket}/ckpt", "job0012", 1, "run-0", running=120.0)
        counted.take()
        watcher.step()
        assert sorted(storage_side(counted.take())) == [
            ("GetObject", "ckpt/_status/job0012.v1.json"),
            ("ListObjectsV2", "ckpt/_status/"),
        ], "only the beacon whose content changed is read"
    else:
        # Runs of an older runner: each job's full status file, as before.
        assert status_reads(sent) == JOBS

    # Another writer changes one job's record, and a deploy one job's manifest.
    other = S3Store(s3_bucket, "store/", s3_client)
    record = WatchLog(other).read_all()["job0007"]
    WatchLog(other).write(WatchRecord(record.name, record.manifest, restarts=3))
    changed = other.read("job0003")
    assert changed.manifest is not None
    manifest = changed.manifest
    manifest.job["description"] = "changed by a deploy"
    other.write(manifest, changed.token)
    counted.take()

    watcher.step()
    reads = {key for op, key in store_side(counted.take()) if op == "GetObject"}
    assert reads == {
        "store/_watch/_leader.json",
        "store/_watch/job0007.json",
        "store/job0003.yaml",
        "store/_index.json",  # read only because a listed manifest is not known as listed
    }
    assert WatchLog(other).read_all()["job0007"].restarts == 3, "not overwritten by the look"


@pytest.fixture
def client_trying_twice(fault_proxy: Any, s3_session: Any) -> Any:
    """A client like `proxied_client`, through the fault proxy, that tries a request twice, not
    five times: a listing the proxy refuses fails after one retry instead of four, with their
    backoff (up to 1, 2, 4 and 8 s), what the look decides being the same."""
    from botocore.config import Config

    retries = {"mode": "standard", "total_max_attempts": 2}
    config = Config(retries=retries, max_pool_connections=64)
    return s3_session.client("s3", endpoint_url=fault_proxy.url, config=config)


def test_a_listing_that_fails_leaves_every_job_unknown_and_nothing_restarted(
    client_trying_twice: Any, fault_proxy: Any, s3_bucket: str, tmp_path: Path
) -> None:
    proxied_client = client_trying_twice
    target = FakeTarget()
    storage = FileStorage(s3_client=proxied_client)
    store = world(proxied_client, s3_bucket, target, jobs=20)
    checkpoint = f"s3://{s3_bucket}/ckpt/job0001/1"  # where its restart resumes
    storage.write_text(f"{checkpoint}/metadata", '{"id": "x"}')
    storage.write_text(f"{checkpoint}/offsets/0", "v1\n{}\n{}")
    storage.write_text(f"{checkpoint}/commits/0", "v1\n{}")

    def runs(submission: Any) -> None:  # the runner: its first trigger completes
        doc = {"run-id": submission.run_id, "state": "active", "heartbeat": 1}
        storage.write_text(submission.status_file, json.dumps(doc))

    target.on_submit = runs
    settings = Settings(state_dir=tmp_path, timeouts=Timeouts(start=30, stop=5, poll=0.1))
    deployment = Deployment(settings, store=store, target=target)
    deployment.storage = storage
    said = io.StringIO()
    watcher = Watcher(deployment, WatchSettings(leader_ttl=3600), Notifier(said, "json"))
    try:
        watcher.step()
        watcher.step()
        target.runs.pop("job0001")  # down: the next look that can see it restarts it
        fault_proxy.clear()
        fault_proxy.inject("slowdown", times=1000, method="GET", path=f"/{s3_bucket}")
        watcher.step()
        watcher.settle()
        assert target.submissions == [], "a store that did not answer is not a store without jobs"
        assert "cannot look now" in said.getvalue() and "SlowDown" in said.getvalue()
        assert not [s for s in fault_proxy.seen("GET") if s.path.endswith(".status.json")]
        assert not fault_proxy.seen("PUT", f"/{s3_bucket}/store/_watch/job0001.json")

        fault_proxy.clear()
        watcher.step()
        watcher.settle()
        assert [s.name for s in target.submissions] == ["job0001"], "down, once it could look"
    finally:
        watcher.stopping.set()
        watcher.settle()
        watcher.actions.close()
        watcher.leader.release()
