"""`watch` never undoes `stop NAME` (issue 20, finding 3), on an S3 store over moto's server:
a stop recorded between the watcher's look and its acting, or before a look, keeps the job
stopped. The store's index (`_index.json`, written by deploys) is where a stale read would come
from: every read here goes through a snapshot the reader holds."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.act.stop import stop_job
from flink_sql_runner.model.runs import Run
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.watch.events import Notifier
from flink_sql_runner.watch.watcher import Watcher, WatchSettings
from tests.support.fakes import FakeClock, FakeStorage, FakeTarget
from tests.support.jobs import BASE, ROOT, stored_of

pytestmark = pytest.mark.s3

STATUS = f"{ROOT}/orders/_control/v1.status.json"


class World:
    """A store on moto's S3, a fake cluster and checkpoint storage; a watcher and a `stop`,
    each with its own store object, as two processes have."""

    def __init__(self, client: Any, bucket: str) -> None:
        self.client, self.bucket = client, bucket
        self.target, self.storage = FakeTarget(), FakeStorage()
        self.clock = FakeClock(1000.0)
        self.stream = io.StringIO()
        self.target.on_submit = self._runs

    def store(self) -> S3Store:
        return S3Store(self.bucket, "jobs/", self.client)

    def _runs(self, submission) -> None:
        doc = {"run-id": submission.run_id, "state": "active", "heartbeat": 1}
        self.storage.files[submission.status_file] = json.dumps(doc)

    def deployed(self) -> None:
        """What a deploy leaves: the manifest, the index over it, a running job."""
        deployer = self.store()
        deployer.write(stored_of(BASE, 1), None)
        assert deployer.refresh_index()
        self.storage.add_checkpoint(f"{ROOT}/orders/1", 4)
        self.target.add_run(Run("orders", 1, "run-0", "pid 1"))
        self.storage.files[STATUS] = json.dumps({"run-id": "run-0", "state": "active"})

    def dies(self) -> None:
        run = self.target.runs.pop("orders")[0]
        self.storage.files[STATUS] = json.dumps({"run-id": run.run_id, "state": "active"})

    def stop(self) -> str:
        """`stop orders` in another process: its own store object."""
        return stop_job(self.store(), self.target, self.storage, "orders", 5).outcome

    def watcher(self) -> Watcher:
        deployment = Deployment(
            Settings(timeouts=Timeouts(start=30, stop=5, poll=1), parallelism=2),
            store=self.store(),
            target=self.target,
        )
        deployment.storage = self.storage
        settings = WatchSettings(interval=10, backoff_first=10, leader_ttl=30)
        watcher = Watcher(deployment, settings, Notifier(self.stream, "json"), clock=self.clock)
        original = deployment.executor

        def executor(lease=None, command="deploy"):
            made = original(lease, command)
            made.clock, made.sleep = self.clock, self.clock.sleep
            return made

        deployment.executor = executor  # type: ignore[method-assign]
        return watcher

    def look(self, watcher: Watcher) -> None:
        watcher.step()
        watcher.settle()
        self.clock.now += 10

    def recorded_state(self) -> str:
        stored = self.store().read("orders").manifest
        assert stored is not None
        return str(stored.job.get("desired-state", "running"))


def test_a_stop_between_the_watchers_look_and_its_acting_is_not_undone(s3_client, s3_bucket):
    world = World(s3_client, s3_bucket)
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.dies()
    # The watcher looks (the job is down) and, before it takes the store's lock, `stop orders`
    # takes it, records the job stopped and lets go.
    hold = watcher.actions.hold

    def stopped_first():
        watcher.actions.hold = hold  # type: ignore[method-assign]
        assert world.stop() == "not-running"
        return hold()

    watcher.actions.hold = stopped_first  # type: ignore[method-assign]
    world.look(watcher)
    assert watcher.actions.hold == hold, "the stop came between the look and the acting"
    assert world.target.submissions == [], "the stopped job is not restarted"
    assert world.recorded_state() == "stopped", "nor recorded as running"
    world.look(watcher)
    assert world.target.submissions == [] and world.recorded_state() == "stopped"


def test_a_watcher_that_looked_before_a_stop_sees_the_job_stopped_at_its_next_look(
    s3_client, s3_bucket
):
    world = World(s3_client, s3_bucket)
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    assert world.stop() == "stopped"
    for _ in range(3):
        world.look(watcher)
    assert world.target.submissions == [], "the stopped job is not restarted"
    assert world.recorded_state() == "stopped"


def test_a_store_object_that_read_before_a_stop_reads_the_stop_in_a_new_snapshot(
    s3_client, s3_bucket
):
    world = World(s3_client, s3_bucket)
    world.deployed()
    watching = world.store()
    before = watching.snapshot()
    assert (
        watching.read_many(["orders"], 4, snapshot=before).manifests["orders"].job["desired-state"]
        == "running"
    )
    world.stop()
    now = watching.snapshot()
    after = watching.read_many(["orders"], 4, snapshot=now)
    assert after.manifests["orders"].job["desired-state"] == "stopped"
    assert after.tokens["orders"] == now.etags["orders"] != before.etags["orders"]
    assert watching.read("orders").manifest.job["desired-state"] == "stopped"
