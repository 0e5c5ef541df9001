"""One job, `orders`, recorded at v1 and running with a checkpoint, on fakes with a runner that
plays warm handovers (tests/support/jobs.py::FakeRunner): what the deploy tests of handovers,
rollbacks and settles share, and the Kafka job they change."""

from __future__ import annotations

import json

from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.intents import IntentLog
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, ROOT, FakeRunner, fake_executor, make_job, stored_of


class Crash(BaseException):
    """The deployer process dies here."""


class World:
    """A job `orders` recorded at v1 and running, with a checkpoint; a runner on fakes."""

    def __init__(self, base=BASE, **runner) -> None:
        self.store, self.target, self.state = FakeStore(), FakeTarget(), FakeStorage()
        self.runner = FakeRunner(self.state, self.target, **runner)
        self.store.put(stored_of(base, 1))
        self.target.add_run(Run("orders", 1, "old-run", "pid 1"))
        self.state.add_checkpoint(f"{ROOT}/orders/1", 7)
        self.events: list[str] = []
        self.target.before_submit = lambda s: self.events.append(
            "submit prepared" if s.prepared else "submit"
        )
        self.target.before_stop = lambda run: self.events.append(f"stop {run.run_id}")

    def plan(self, jobs, handover="warm", **asked):
        facts = gather(jobs, self.store, self.target, self.state, workers=1)
        return build_plan(facts, handover=handover, **asked)

    def deploy(self, jobs, handover="warm", timeouts=None, **asked):
        executor = fake_executor(self.store, self.target, self.state, timeouts)
        plan = self.plan(jobs, handover, **asked)
        return plan, executor.apply(plan)["orders"]

    def intent(self):
        return IntentLog(self.store).read_all().intents.get("orders")

    def runs(self) -> list[str]:
        return [run.run_id for run in self.target.runs.get("orders", [])]


KAFKA = {
    "format": "kafka",
    "options": {"kafka.bootstrap.servers": "b1:9092", "subscribe": "orders"},
}
KAFKA_V1 = make_job(tables={"src": KAFKA})
KAFKA_V2 = make_job(sql="SELECT id, ts FROM src WHERE id > 100", tables={"src": KAFKA})


def kafka_checkpoint(
    state: FakeStorage, committed: int = 4, version: int = 1, ends: dict | None = None
) -> None:
    """A version's checkpoint: batches 0..committed, the last reading `orders` up to `ends`
    ([0:5, 1:7] unless said)."""
    line = json.dumps({"orders": ends or {"0": 5, "1": 7}})
    where = f"{ROOT}/orders/{version}"
    for old in [f for f in state.files if f.startswith(f"{where}/")]:
        del state.files[old]
    state.files[f"{where}/metadata"] = json.dumps({"id": "x"})
    for batch in range(committed + 1):
        state.files[f"{where}/offsets/{batch}"] = f"v1\n{{}}\n{line}"
        state.files[f"{where}/commits/{batch}"] = "v1\n{}"
