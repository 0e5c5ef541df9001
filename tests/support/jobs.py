"""Jobs and manifests as tests build them: one job with every field a deploy needs, its config
and query changes, manifests as a store holds them; and a world of fakes with an executor."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.read.manifest import Job
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget

ROOT = "/ckpt"


SOURCE = {"format": "json", "options": {"path": "/in"}, "schema": "id BIGINT, ts TIMESTAMP"}


SINK = {"format": "parquet", "options": {"path": "/out"}}


def make_job(**overrides) -> Job:
    spec = {
        "name": "orders",
        "description": "all orders",
        "target-table": "out",
        "sql": "SELECT id, ts FROM src WHERE id > 0",
        "desired-state": "running",
        "outputMode": "append",
        "trigger": {"processingTime": "5 seconds"},
        "checkpoint-root": ROOT,
        "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
        "sparkProperties": {"spark.sql.shuffle.partitions": "4", "spark.executor.memory": "1g"},
    }
    tables = {"src": copy.deepcopy(SOURCE), "out": copy.deepcopy(SINK)}
    for key, value in overrides.pop("tables", {}).items():
        tables[key] = value
    spec.update(overrides)
    return Job(spec=spec, tables=tables, source_tables=("src",), file="queries/orders.yaml")


def stored_of(job: Job, version: int = 1) -> StoredManifest:
    return StoredManifest(copy.deepcopy(job.spec), copy.deepcopy(job.tables), Meta.new(version))


def add_version_folder(storage: FakeStorage, name: str, version: int) -> None:
    """A checkpoint folder of `version` exists (e.g. left by a failed start)."""
    storage.files[f"{ROOT}/{name}/{version}/metadata"] = '{"id": "x"}'


BASE = make_job()


CONFIG = make_job(description="orders, now documented")


QUERY = make_job(sql="SELECT id, ts FROM src WHERE id > 100")


def healthy(state: FakeStorage, status: str = "active", error: str | None = None):
    """A target hook that plays the runner: it writes the status file of the new run."""

    def write(submission) -> None:
        state.files[submission.status_file] = json.dumps(
            {"run-id": submission.run_id, "state": status, "error": error}
        )

    return write


#: What `probe` says every query writes and every sink holds.
FIELDS = [{"name": "id", "type": "bigint", "nullable": True}]


def probe(request: dict[str, Any]) -> tuple[dict[str, Any], None]:
    """Plays the runner's schema probe (gather/schemas.py's `ask_spark`): every query writes
    `id` and keeps no state, every sink holds `id`."""
    return {
        "spark": "4.3.0",
        "jobs": {j["key"]: {"fields": FIELDS} for j in request["jobs"]},
        "state": {j["key"]: {"operators": []} for j in request.get("state", [])},
        "sinks": {
            s["key"]: {"history": [{"fields": FIELDS, "from": "v1"}]} for s in request["sinks"]
        },  # fmt: skip
        "ddl": {},
    }, None


class FakeRunner:
    """Plays the runner on fakes, warm handovers included: a run submitted at once reports
    `status`; a prepared run reports `prepared` on its own status file (None: nothing, as a
    driver that never got room), and on its go reports `after_go` on the version's. A go given
    while another run of the job is up is a second writer (`target.double_starts`); an abort
    ends the prepared run. `status` may be a function of the submission; `on_start` is called
    with the submission when its run begins to write (at once, or at its go)."""

    def __init__(
        self,
        state: FakeStorage,
        target: FakeTarget,
        status: str | Callable[[Any], str] = "active",
        prepared: str | None = "ready",
        error: str | None = "boom: division by zero",
        after_go: str | None = None,
        on_start: Callable[[Any], None] | None = None,
    ):
        """`after_go`: what a prepared run reports once given its go (default `status`)."""
        self.state, self.target = state, target
        self.status, self.prepared, self.error = status, prepared, error
        self.after_go = after_go
        self.on_start = on_start
        self.waiting: dict[str, Any] = {}  # prepared submissions by run id
        self.words: list[dict[str, Any]] = []  # every go or abort given, in order
        target.on_submit = self._submitted
        state.on_write = self._written

    def _status_of(self, submission) -> str:
        return self.status(submission) if callable(self.status) else self.status

    def _report(self, location: str, run_id: str, status: str) -> None:
        self.state.files[location] = json.dumps(
            {"run-id": run_id, "state": status, "error": self.error if status == "failed" else None}
        )

    def _started(self, submission, status_file: str, status: str) -> None:
        self._report(status_file, submission.run_id, status)
        if self.on_start is not None:
            self.on_start(submission)

    def _submitted(self, submission) -> None:
        if not submission.prepared:
            self._started(submission, submission.status_file, self._status_of(submission))
            return
        self.waiting[submission.run_id] = submission
        if self.prepared is not None:
            self._report(submission.status_file, submission.run_id, self.prepared)

    def _written(self, location: str, text: str) -> None:
        if self.prepared is None:
            return  # its prepared runs never reported: never placed, they read nothing
        for run_id, submission in list(self.waiting.items()):
            if location != submission.stop_marker.removesuffix(".stop") + ".go.json":
                continue
            word = json.loads(text)
            if word.get("run-id") != run_id:
                continue
            self.words.append(word)
            del self.waiting[run_id]
            if word.get("go") is True:
                others = self.target.runs.get(submission.name, [])
                if any(run.run_id != run_id for run in others):
                    self.target.double_starts.append(submission.name)
                version_status = re.sub(
                    r"\.prepared-[^.]+\.status\.json$", ".status.json", submission.status_file
                )
                self._started(
                    submission, version_status, self.after_go or self._status_of(submission)
                )
            else:  # aborted: the run ends
                runs = self.target.runs.get(submission.name, [])
                self.target.runs[submission.name] = [r for r in runs if r.run_id != run_id]


def given_go(state: FakeStorage) -> list[str]:
    """The run ids of the prepared runs given their go (a warm handover's start)."""
    words = [json.loads(text) for name, text in state.files.items() if name.endswith(".go.json")]
    return [word["run-id"] for word in words if word.get("go") is True]


def fake_world(on_submit="active", **target_switches):
    store, state = FakeStore(), FakeStorage()
    target = FakeTarget(**target_switches)
    if on_submit:
        FakeRunner(state, target, status=on_submit)
    return store, target, state, fake_executor(store, target, state)


def fake_executor(
    store: FakeStore, target: FakeTarget, state: FakeStorage, timeouts: Timeouts | None = None
) -> Executor:
    """An executor on fakes whose waits pass on a fake clock (30 s to start, 5 s to stop,
    unless `timeouts` says)."""
    clock = FakeClock()
    return Executor(
        store,
        target,
        state,
        timeouts=timeouts or Timeouts(start=30, stop=5, poll=1),
        clock=clock,
        sleep=clock.sleep,
    )


def manifest(name: str, version: int = 1, description: str = "d") -> StoredManifest:
    job = {
        "name": name,
        "description": description,
        "target-table": "out",
        "sql": "SELECT a, b FROM src WHERE a > 1",
        "sparkProperties": {"spark.sql.shuffle.partitions": "4"},
    }
    tables = {"src": {"format": "rate", "options": {"rowsPerSecond": "1"}}}
    return StoredManifest(
        job, tables, Meta(version, f"id-{name}-{version}", "2024-01-01T00:00:00Z")
    )
