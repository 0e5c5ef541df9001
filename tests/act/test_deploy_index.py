"""A deploy on an S3 store leaves the store's index (`_index.json`) up to date without reading
back what it just wrote: it hands the index the manifests its Record steps wrote, with the ETags
S3 answered (moto's server on 127.0.0.1)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.stores.s3 import INDEX_KEY, S3Store
from tests.support.fakes import FakeClock, FakeStorage, FakeTarget
from tests.support.jobs import make_job

pytestmark = pytest.mark.s3


def test_a_deploy_writes_the_index_from_its_own_writes(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    target, storage, clock = FakeTarget(), FakeStorage(), FakeClock()

    def runs(submission) -> None:
        doc = {"run-id": submission.run_id, "state": "active"}
        storage.files[submission.status_file] = json.dumps(doc)

    target.on_submit = runs
    deployment = Deployment(
        Settings(timeouts=Timeouts(start=30, stop=5, poll=1)), store=store, target=target
    )
    deployment.storage = storage
    original = deployment.executor

    def executor(lease=None):
        made = original(lease)
        made.clock, made.sleep = clock, clock.sleep
        made.runs.clock, made.runs.sleep = clock, clock.sleep
        return made

    deployment.executor = executor  # type: ignore[method-assign]
    jobs = [make_job(name=n) for n in ("a-job", "b-job")]
    gets: list[str] = []
    s3_client.meta.events.register(
        "before-send.s3.GetObject", lambda request, **_: gets.append(request.url.rsplit("/", 1)[1])
    )
    _, results = deployment.deploy(jobs, include_orphans=True, prune=False, on_plan=lambda _: None)
    assert all(r.ok for r in results.values()), results
    assert "a-job.yaml" not in gets and "b-job.yaml" not in gets, "nothing read back"
    index = json.loads(
        s3_client.get_object(Bucket=s3_bucket, Key=f"jobs/{INDEX_KEY}")["Body"].read()
    )
    etags = {
        n: s3_client.head_object(Bucket=s3_bucket, Key=f"jobs/{n}.yaml")["ETag"]
        for n in ("a-job", "b-job")
    }
    assert {n: e["etag"] for n, e in index["entries"].items()} == etags
