"""The world `watch` is tested in: a store, a cluster and checkpoint storage on fakes, clocks that
move only when told, and watchers on them (tests/watch/)."""

from __future__ import annotations

import io
import json
from datetime import datetime, timedelta, timezone

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.model.runs import Run
from flink_sql_runner.watch.events import Notifier
from flink_sql_runner.watch.records import WatchLog
from flink_sql_runner.watch.watcher import Watcher, WatchSettings
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, ROOT, stored_of


def status_of(name: str) -> str:
    return f"{ROOT}/{name}/_control/v1.status.json"


STATUS = status_of("orders")


class World:
    """A store, a cluster, checkpoint storage and clocks; one or more watchers on them."""

    def __init__(self) -> None:
        self.store, self.target, self.storage = FakeStore(), FakeTarget(), FakeStorage()
        self.clock = FakeClock(1000.0)
        self.start = datetime(2026, 11, 23, 12, 0, tzinfo=timezone.utc)
        self.outcome = "active"  # what the next run of a job reports
        self.error = "[CAST_INVALID_INPUT] The value 'x' cannot be cast to INT"
        self.target.on_submit = self._runs
        self.stream = io.StringIO()

    def wall(self) -> datetime:
        return self.start + timedelta(seconds=self.clock.now - 1000.0)

    def _runs(self, submission) -> None:
        """Like the runner: its first trigger completes, or it fails on it and ends."""
        doc = {"run-id": submission.run_id, "state": self.outcome, "heartbeat": 1,
               "error": self.error if self.outcome == "failed" else None}  # fmt: skip
        self.storage.files[submission.status_file] = json.dumps(doc)
        if self.outcome == "failed":
            self.target.runs.pop(submission.name, None)

    def deployed(self, job=BASE, running: bool = True) -> None:
        self.store.put(stored_of(job, 1))
        self.storage.add_checkpoint(f"{ROOT}/{job.name}/1", 4)
        if running:
            self.target.add_run(Run(job.name, 1, "run-0", "pid 1"))
            self.storage.files[status_of(job.name)] = json.dumps(
                {"run-id": "run-0", "state": "active", "heartbeat": 1}
            )

    def dies(self, name: str = "orders", error: str | None = None) -> None:
        run = self.target.runs.pop(name)[0]
        doc = {"run-id": run.run_id, "state": "failed" if error else "active", "error": error}
        self.storage.files[status_of(name)] = json.dumps(doc)

    def watcher(
        self, settings: WatchSettings | None = None, parallelism: int = 4, **notify
    ) -> Watcher:
        deployment = Deployment(
            Settings(timeouts=Timeouts(start=30, stop=5, poll=1), parallelism=parallelism),
            store=FakeStore(self.store.data),
            target=self.target,
        )
        deployment.storage = self.storage
        settings = settings or WatchSettings(
            interval=10,
            backoff_first=10,
            backoff_max=40,
            max_failures=4,
            stall_timeout=60,
            leader_ttl=30,
        )
        watcher = Watcher(deployment, settings, Notifier(self.stream, "json", **notify),
                          clock=self.clock, wall=self.wall)  # fmt: skip
        # The executor waits on the same clock.
        original = deployment.executor

        def executor(lease=None, command="deploy"):
            made = original(lease, command)
            made.clock, made.sleep = self.clock, self.clock.sleep
            return made

        deployment.executor = executor  # type: ignore[method-assign]
        return watcher

    def events(self) -> list[dict]:
        return [json.loads(line) for line in self.stream.getvalue().splitlines()]

    def kinds(self) -> list[str]:
        return [e["event"] for e in self.events() if e["event"] != "warning"]

    def record(self, name: str = "orders"):
        return WatchLog(self.store).read_all().get(name)

    def look(self, watcher: Watcher, seconds: float = 10.0) -> None:
        watcher.step()
        watcher.settle()  # the restarts it began, ended
        self.clock.now += seconds
