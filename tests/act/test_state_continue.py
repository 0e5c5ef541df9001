"""A query change whose every stateful operator keeps its state's meaning, on a Kafka source
that goes on: the new version continues from the old version's state (decide/state.py), its
checkpoint copied once the old run stopped (act/state_copy.py). On fakes that fail as the real
parts do: a copy the storage refuses halfway, a deployer killed halfway through the copy, a new
version that fails after it wrote, or before."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.state import state_base
from flink_sql_runner.decide.steps import PrepareRun, StartRun
from flink_sql_runner.errors import StoreError
from flink_sql_runner.gather.checkpoint_reader import read_checkpoint
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.schemas import with_contracts
from flink_sql_runner.model.lineage import plan_lineage
from flink_sql_runner.model.runs import Run
from flink_sql_runner.render.inspect import _checkpoint_lines
from flink_sql_runner.stores.storage import StorageError
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import ROOT, FakeRunner, stored_of
from tests.support.stateful import COUNT, kafka_job, op

FILTERED = COUNT.replace("FROM src", "FROM src WHERE id > 1")
V1, V2, V3 = (f"{ROOT}/orders/{v}" for v in (1, 2, 3))


class Crash(BaseException):
    """The deployer process dies here."""


def ask(request):
    """The probe: the count, with the filter before it where the query has one (kept)."""

    def ops(doc):
        before = ("id > 1",) if "WHERE id > 1" in json.dumps(doc) else ()
        return {"operators": [op(before=before)]}

    return {"state": {s["key"]: ops(s) for s in request.get("state", [])}}, None


class World:
    """v1, a windowed count of a Kafka topic, running, its checkpoint at batch 7."""

    def __init__(self, commits_after_start: int | None = None, fails: bool = False) -> None:
        self.store, self.target, self.state = FakeStore(), FakeTarget(), FakeStorage()
        self.commits_after_start = commits_after_start
        # With `fails`, v2's run fails; any other (v1 started again) is healthy.
        status = lambda sub: "failed" if fails and sub.version == 2 else "active"  # noqa: E731
        self.runner = FakeRunner(self.state, self.target, status=status, on_start=self._ran)
        v1 = kafka_job(sql=COUNT)
        self.store.put(stored_of(v1, 1))
        self.target.add_run(Run("orders", 1, "old-run", "fake 0"))
        self.state.add_checkpoint(V1, 7)
        offsets = json.dumps({"orders": {"0": 5}})
        for batch in range(8):
            self.state.files[f"{V1}/offsets/{batch}"] = f"v1\n{{}}\n{offsets}"
        self.state.files[f"{V1}/state/0/0/1.delta"] = b"\x00state"
        self.v1_files = dict(self._under(V1))

    def _under(self, folder: str):
        return {
            k[len(folder) :]: v.encode() if isinstance(v, str) else v
            for k, v in self.state.files.items()
            if k.startswith(folder + "/")
        }

    def _ran(self, submission) -> None:
        """A run that commits `commits_after_start` once it starts (None: nothing new)."""
        if self.commits_after_start is not None:
            where = f"{ROOT}/{submission.name}/{submission.version}"
            self.state.files[f"{where}/commits/{self.commits_after_start}"] = "v1\n{}"

    def plan(self, job):
        facts = gather([job], self.store, self.target, self.state, workers=1)
        facts = with_contracts(facts, plan_lineage(facts), self.state, None, ask, state_base)
        return build_plan(facts, handover="warm")

    def deploy(self, job):
        plan = self.plan(job)
        clock = FakeClock()
        executor = Executor(self.store, self.target, self.state,
                            timeouts=Timeouts(start=30, stop=5, poll=1), clock=clock,
                            sleep=clock.sleep)  # fmt: skip
        return plan, executor.apply(plan)

    def running(self) -> int | None:
        run = self.target.running.get("orders")
        return run.version if run else None


def test_a_kept_state_on_a_kafka_carry_continues_from_the_old_checkpoint_copied_cold():
    world = World()
    plan, results = world.deploy(kafka_job(sql=FILTERED))
    (decision,) = plan.decisions
    assert decision.state.how == "continued" and not decision.state.refused
    assert "a window open at the change holds records of both" in decision.state.operators[0].line()
    (start,) = [s for s in decision.steps if isinstance(s, StartRun)]
    assert start.continues.meta.query_version == 1 and start.starting is None
    assert not any(isinstance(s, PrepareRun) for s in decision.steps)  # warm asked: cold
    assert "from v1's state" in start.describe()
    assert results["orders"].ok, results["orders"]
    assert world.running() == 2 and world.store.data.manifests["orders"].meta.query_version == 2
    copied = world._under(V2)
    assert {k: copied[k] for k in world.v1_files} == world.v1_files  # every file, as it was
    assert world._under(V1) == world.v1_files  # the old checkpoint, untouched
    assert set(copied) - set(world.v1_files) >= {"/flink-sql-runner-continued.json"}  # its marker
    assert any("continued from v1's state (" in s for s in results["orders"].steps)
    report = read_checkpoint(world.state, V2)  # what `inspect` shows of it
    assert report.continued_from == V1 and "continued   from the state of" in "\n".join(
        _checkpoint_lines(report)
    )
    # not "running v2 (clean)": it started on the copy, as a restart (seen on the real broker)
    assert results["orders"].summary.startswith("running v2 (from v1's state), healthy after ")


def test_a_continued_version_that_fails_without_a_new_batch_is_rolled_back_to_v1():
    """Its copy holds v1's batches 0..7: they are not its writes (before: a clean start's
    record said nothing was committed before it, so the copied batches would have counted as
    written and v1 left down)."""
    world = World(fails=True)
    _, results = world.deploy(kafka_job(sql=FILTERED))
    assert not results["orders"].ok
    assert world.running() == 1, results["orders"]
    assert world.store.data.manifests["orders"].meta.query_version == 1


def test_a_continued_version_that_failed_after_a_new_batch_is_kept_not_rolled_back_over():
    world = World(commits_after_start=8, fails=True)
    _, results = world.deploy(kafka_job(sql=FILTERED))
    assert not results["orders"].ok
    assert world.running() is None  # down, said: v1 would read again what v2 wrote
    assert world.store.data.manifests["orders"].meta.query_version == 2
    assert "committed" in str(results["orders"])


def test_a_copy_the_storage_refuses_rolls_back_to_v1_on_its_untouched_checkpoint():
    world = World()
    write = world.state.write_bytes

    def refusing(location, data):
        if location.startswith(V2):
            raise StorageError(f"cannot write {location}: SlowDown (HTTP 503)")
        write(location, data)

    world.state.write_bytes = refusing
    _, results = world.deploy(kafka_job(sql=FILTERED))
    assert not results["orders"].ok
    assert "cannot continue from v1's state" in str(results["orders"])
    assert world.running() == 1 and world._under(V1) == world.v1_files


def test_a_deployer_killed_halfway_through_the_copy_continues_into_the_next_version():
    world = World()
    write, written = world.state.write_bytes, []

    def dies(location, data):
        written.append(location)
        if len(written) == 3:
            raise Crash
        write(location, data)

    world.state.write_bytes = dies
    with pytest.raises(Crash):
        world.deploy(kafka_job(sql=FILTERED))
    world.state.write_bytes = write
    assert world.running() is None and world.store.data.manifests["orders"].meta.query_version == 1
    assert f"{V2}/metadata" not in world.state.files  # the copy cut short says so
    plan, results = world.deploy(kafka_job(sql=FILTERED))
    (start,) = [s for s in plan.decisions[0].steps if isinstance(s, StartRun)]
    assert (start.manifest.meta.query_version, start.continues.meta.query_version) == (3, 1)
    assert results["orders"].ok and world.running() == 3
    assert world._under(V1) == world.v1_files
    assert {k: world._under(V3)[k] for k in world.v1_files} == world.v1_files


def test_a_store_that_fails_leaves_the_continue_undecided_not_partial():
    """Whether v1's checkpoint can be copied is read before deciding: a storage that cannot
    list it leaves the change refused (its windows would be partial), never started empty."""
    world = World()
    tree = world.state.tree

    def failing(folder):
        if folder.rstrip("/") == V1:
            raise StoreError("cannot list: SlowDown (HTTP 503)")
        return tree(folder)

    world.state.tree = failing
    (decision,) = world.plan(kafka_job(sql=FILTERED)).decisions
    assert decision.action.value == "refused", decision.reason
    assert "v1's checkpoint cannot be read" in decision.reason


def test_a_copy_refused_after_its_commits_rolls_back_to_v1():
    """Found by review: a copy the storage refuses after `commits/` was copied (at a state
    file) was read as "v2 wrote" (its record still said nothing was committed before it), so
    v2, a checkpoint without its metadata, was recorded and the job left down."""
    world = World()
    write = world.state.write_bytes

    def refusing(location, data):
        if location.startswith(f"{V2}/state/"):
            raise StorageError(f"cannot write {location}: SlowDown (HTTP 503)")
        write(location, data)

    world.state.write_bytes = refusing
    _, results = world.deploy(kafka_job(sql=FILTERED))
    assert f"{V2}/commits/7" in world.state.files  # the copy got that far
    assert "cannot continue from v1's state" in str(results["orders"])
    assert world.store.data.manifests["orders"].meta.query_version == 1, str(results["orders"])
    assert world.running() == 1, str(results["orders"])
