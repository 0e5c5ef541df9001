"""A job's history records, as commands write them on fakes (act/history.py): one after each
manifest recorded, with the decision's action, reason and changes and the job's SQL; none for a
decision that records nothing; a record that cannot be written is a warning line, never the
job's failure; `stop` writes one; `forget` deletes them."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

import flink_sql_runner
from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.forget import Places, forget_jobs, survey_jobs
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.act.stop import stop_job
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.errors import StoreError
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.history import read_history
from flink_sql_runner.model.history import history_key
from flink_sql_runner.model.runs import Run
from flink_sql_runner.stores.lock import StoreLock
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget
from tests.support.handover_world import KAFKA_V1, KAFKA_V2, World, kafka_checkpoint
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, fake_world, stored_of

RELEASE = flink_sql_runner.__version__
STATE = Path("/state")


def deploy(store, target, state, executor, jobs, handover="warm"):
    plan = build_plan(gather(jobs, store, target, state, workers=1), handover=handover)
    return plan, executor.apply(plan)


def records(store: FakeStore, name: str = "orders") -> list[dict]:
    """The job's history records as stored, in key order."""
    prefix = f"_history/{name}/"
    return [json.loads(text) for key, text in sorted(store.history.items())
            if key.startswith(prefix)]  # fmt: skip


def running_v1():
    """`orders` v1 recorded and running, with a checkpoint; no history yet."""
    store, target, state, executor = fake_world()
    store.put(stored_of(BASE, 1))
    target.add_run(Run("orders", 1, "old", "pid 1"))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)
    return store, target, state, executor


# -- deploys ------------------------------------------------------------------------------------
def test_a_deploy_of_a_changed_job_writes_one_record_of_its_decision():
    store, target, state, executor = running_v1()
    plan, results = deploy(store, target, state, executor, [QUERY])
    (decision,) = plan.decisions
    assert results["orders"].ok, results["orders"]
    assert decision.action is Action.STOP_AND_START_CLEAN and decision.changes

    [record] = records(store)

    stored = store.manifests["orders"]
    assert record["name"] == "orders" and record["query-version"] == 2
    assert record["action"] == "stop-and-start-clean"
    assert record["reason"] == decision.reason, "the reason as the plan gave it"
    assert record["changes"] == [c.to_dict() for c in decision.changes]
    assert {"field": "sql", "kind": "query"}.items() <= record["changes"][0].items()
    assert record["query"] == stored.job["sql"] == QUERY.spec["sql"]
    assert (record["command"], record["release"], record["note"]) == ("deploy", RELEASE, None)
    assert record["at"].endswith("Z") and len(record["at"]) == len("2026-11-29T16:36:17.123Z")
    assert [key.split("/")[2][:8] for key in store.history] == ["v000002-"]
    assert results["orders"].steps[-1] == "recorded v2", "no warning"
    history = read_history(store, "orders")
    assert [e.version for e in history.entries] == [2] and history.missing_versions(2) == []


def test_a_config_change_writes_the_same_version_again_with_its_changes():
    store, target, state, executor = running_v1()
    plan, _ = deploy(store, target, state, executor, [CONFIG])
    [record] = records(store)
    assert (record["query-version"], record["action"]) == (1, "stop-and-restart-from-checkpoint")
    assert [c["field"] for c in record["changes"]] == ["description"]
    assert record["changes"][0]["new"] == "orders, now documented"


def test_an_unchanged_job_writes_no_record_and_a_new_job_writes_its_first():
    store, target, state, executor = fake_world()
    _, results = deploy(store, target, state, executor, [BASE])
    assert results["orders"].ok
    [first] = records(store)
    assert (first["query-version"], first["action"], first["changes"]) == (1, "start-clean", [])
    before = dict(store.history)

    plan, results = deploy(store, target, state, executor, [BASE])

    assert plan.decisions[0].action is Action.NOOP and results["orders"].summary == "unchanged"
    assert store.history == before, "a decision that records nothing writes no history"


def test_watch_s_restarts_are_told_apart_from_a_deploy_s():
    store, target, state, _ = fake_world()
    store.put(stored_of(BASE, 1))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)  # recorded, not running: a restart
    clock = FakeClock()
    watching = Executor(store, target, state, Timeouts(start=30, stop=5, poll=1), clock,
                        clock.sleep, command="watch")  # fmt: skip
    plan, results = deploy(store, target, state, watching, [BASE])
    assert plan.decisions[0].action is Action.RESTART and results["orders"].ok
    [record] = records(store)
    assert (record["command"], record["action"]) == ("watch", "restart-from-checkpoint")


# -- a record that cannot be written ------------------------------------------------------------
def test_a_history_the_store_will_not_take_leaves_the_deploy_ok_with_a_warning():
    store, target, state, executor = running_v1()
    store.failing_side = {"_history/"}
    attempts: list[str] = []
    store.before_side_write = lambda key, text: attempts.append(key)

    plan, results = deploy(store, target, state, executor, [QUERY])

    result = results["orders"]
    assert result.ok and result.outcome == "done", result
    assert store.manifests["orders"].meta.query_version == 2, "recorded all the same"
    assert result.summary.startswith("running v2") and "history" not in result.summary
    assert result.steps[-2:] == [
        "recorded v2",
        "history not written: cannot write memory://store/_history/orders/"
        f"{attempts[-1].rsplit('/', 1)[1]}: SlowDown (HTTP 503) (switch)",
    ]
    tried = [key for key in attempts if key.startswith("_history/")]
    assert len(tried) == 4 and len(set(tried)) == 1, "asked again as every side write is"
    assert store.history == {} and store.side_but_history == {}, "no intent record left"


def test_a_history_write_that_raises_anything_else_is_a_warning_too():
    store, target, state, executor = running_v1()

    def surprise(key: str, text: str) -> None:
        if key.startswith("_history/"):
            raise RuntimeError("a bug")

    store.before_side_write = surprise
    _, results = deploy(store, target, state, executor, [QUERY])
    assert results["orders"].ok
    assert (
        results["orders"].steps[-1] == "history not written: unexpected error: RuntimeError: a bug"
    )


def test_no_history_is_written_once_the_lease_is_gone():
    """The manifest write landed, then the lease lapsed (not renewed in time): the record is not
    written on a store another deployer may hold now, and the job's result says so."""
    store, target, state, _ = fake_world()
    clock = FakeClock()
    lease = StoreLock(store.lock, "deploy", ttl=60, clock=clock, sleep=clock.sleep)
    assert lease.try_acquire() is None
    written = store.write

    def write_then_lapse(manifest, expected):
        token = written(manifest, expected)
        clock.now += 100  # no renewal meanwhile: the lease is past its trust
        return token

    store.write = write_then_lapse  # type: ignore[method-assign]
    executor = Executor(store, target, state, Timeouts(start=30, stop=5, poll=1), clock,
                        clock.sleep, lease=lease)  # fmt: skip

    _, results = deploy(store, target, state, executor, [BASE])

    result = results["orders"]
    assert store.manifests["orders"].meta.query_version == 1
    assert store.history == {}
    assert "recorded v1" in result.steps
    said = result.steps[result.steps.index("recorded v1") + 1]
    assert said.startswith("history not written: stopped acting: this deploy lost the manifest ")


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_start_that_wrote_and_failed_is_recorded_with_its_history_and_a_note(handover):
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.runner.status = lambda submission: "failed" if submission.version == 2 else "active"
    world.runner.on_start = lambda submission: (
        submission.version == 2
        and kafka_checkpoint(world.state, committed=1, version=2, ends={"0": 20, "1": 25})
    )
    plan, result = world.deploy([KAFKA_V2], handover=handover)
    assert not result.ok and "then failed: not rolled back" in result.summary, result
    [record] = records(world.store)
    assert record["query-version"] == 2 and record["action"] == plan.decisions[0].action.value
    assert record["reason"] == plan.decisions[0].reason
    assert record["note"] == "v2 committed 2 batches (0 to 1), then failed: recorded, the job down"
    assert not [s for s in result.steps if s.startswith("history not written")]


def test_a_failed_history_of_a_start_that_wrote_is_said_beside_its_failure():
    world = World(KAFKA_V1)
    kafka_checkpoint(world.state)
    world.store.failing_side = {"_history/"}
    world.runner.status = lambda submission: "failed" if submission.version == 2 else "active"
    world.runner.on_start = lambda submission: (
        submission.version == 2 and kafka_checkpoint(world.state, committed=0, version=2)
    )
    _, result = world.deploy([KAFKA_V2], handover="cold")
    assert not result.ok and world.store.manifests["orders"].meta.query_version == 2
    assert "the job is down" in result.summary, "its failure is said as before"
    assert [s for s in result.steps if s.startswith("history not written: cannot write")]


def test_a_start_rolled_back_writes_no_history():
    store, target, state, executor = running_v1()
    healthy = target.on_submit

    def v2_fails(submission):
        if submission.version != 2:
            return healthy(submission)
        state.files[submission.status_file] = json.dumps(
            {"run-id": submission.run_id, "state": "failed", "error": "boom"})  # fmt: skip
        target.runs[submission.name] = [
            r for r in target.runs[submission.name] if r.run_id != submission.run_id
        ]

    target.on_submit = v2_fails
    _, results = deploy(store, target, state, executor, [QUERY], handover="cold")
    assert results["orders"].outcome == "rolled-back", results["orders"]
    assert [s.version for s in target.submissions] == [2, 1], "v1 started again"
    assert store.manifests["orders"].meta.query_version == 1
    assert store.history == {}, "the store keeps v1's manifest: no record either"


# -- stop ---------------------------------------------------------------------------------------
def test_stop_writes_a_stop_record_and_a_stopped_job_none():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE, 3))
    target.add_run(Run("orders", 3, "run-3", "pid 3"))

    result = stop_job(store, target, storage, "orders", 5)

    assert result.outcome == "stopped" and "history" not in result.message
    [record] = records(store)
    assert (record["query-version"], record["action"], record["command"]) == (3, "stop", "stop")
    assert record["reason"] == (
        "`stop orders`: every run stopped with its checkpoint; recorded as stopped"
    )
    assert record["changes"] == [{"field": "desired-state", "kind": "config", "old": "running",
                                  "new": "stopped", "why": "running or stopped"}]  # fmt: skip
    assert record["query"] == BASE.spec["sql"]

    again = stop_job(store, target, storage, "orders", 5)
    assert again.outcome == "not-running" and len(store.history) == 1, "nothing recorded: none"


def test_a_stop_whose_history_fails_is_stopped_and_says_so():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE, 1))
    store.failing_side = {"_history/"}
    result = stop_job(store, target, storage, "orders", 5)
    assert result.outcome == "not-running" and result.exit_code == 0
    assert store.manifests["orders"].job["desired-state"] == "stopped"
    assert result.message.startswith(
        "orders: was not running; recorded as stopped (checkpoint kept); history not written: "
        "cannot write memory://store/_history/orders/v000001-"
    )


# -- forget -------------------------------------------------------------------------------------
def forget(store, target, storage, names):
    places = Places(store, target, storage, STATE)
    surveys = survey_jobs(places, names)
    return surveys, list(forget_jobs(places, surveys, stop_timeout=5))


def test_forget_lists_and_deletes_the_history_after_the_manifest_is_archived():
    store, target, state, executor = running_v1()
    deploy(store, target, state, executor, [CONFIG])
    deploy(store, target, state, executor, [QUERY])
    assert len(store.history) == 2
    order: list[str] = []
    deleted = store.delete_side
    store.before_archive = lambda name: order.append(f"archive with {len(store.history)}")

    def delete(key, **kw):
        if key.startswith("_history/"):
            order.append("delete history")
        deleted(key, **kw)

    store.delete_side = delete  # type: ignore[method-assign]

    [survey], [result] = forget(store, target, state, ["orders"])

    item = next(i for i in survey.items if i.what == "history")
    assert (item.action, item.location, item.files) == (
        "delete", "memory://store/_history/orders", 2)  # fmt: skip
    assert item.size == sum(len(doc.text.encode()) for doc in survey.history.values()) > 0
    assert "  delete   history         memory://store/_history/orders  (2 files, " in "\n".join(
        survey.listing()
    )
    assert result.outcome == "forgotten", result.message
    # The stop (a record of its own) before the archive; every record deleted after it.
    assert order == ["archive with 3", "delete history", "delete history", "delete history"]
    assert store.history == {} and store.side == {}


def test_a_forget_killed_before_the_history_went_is_finished_by_the_next():
    store, target, state, executor = running_v1()
    deploy(store, target, state, executor, [QUERY])
    deleted = store.delete_side

    def killed(key, **kw):
        if key.startswith("_history/"):
            raise SystemExit  # killed right there
        deleted(key, **kw)

    store.delete_side = killed  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        forget(store, target, state, ["orders"])
    store.delete_side = deleted  # type: ignore[method-assign]
    assert "orders" in store.archived and store.history, "archived, its history still there"

    [survey], [result] = forget(store, target, state, ["orders"])

    assert [i.what for i in survey.items if i.action == "delete"][:1] == ["history"]
    assert result.outcome == "forgotten" and store.history == {}


def test_a_forget_whose_survey_found_no_history_deletes_the_stop_s_record():
    """A job a release before history recorded: the survey lists none, the stop writes one."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE, 1))
    target.add_run(Run("orders", 1, "run-1", "pid 1"))
    [survey], [result] = forget(store, target, storage, ["orders"])
    assert not [i for i in survey.items if i.what == "history"]
    assert result.outcome == "forgotten" and store.history == {}


def test_forget_of_a_job_only_its_history_is_left_of_finishes_it():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.write_side(history_key("gone", 1, datetime(2026, 1, 1)), "{}")
    [survey], [result] = forget(store, target, storage, ["gone"])
    assert [i.what for i in survey.items] == ["history"]
    assert result.outcome == "forgotten" and store.history == {}


def test_a_history_that_cannot_be_read_refuses_the_job_at_the_survey():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE, 1))
    failing = store.read_side_docs

    def fails(folder, known=None):
        if folder.startswith("_history/"):
            raise StoreError("cannot list memory://store/_history/orders/: SlowDown (HTTP 503)")
        return failing(folder, known)

    store.read_side_docs = fails  # type: ignore[method-assign]
    [survey], [result] = forget(store, target, storage, ["orders"])
    assert result.outcome == "failed" and "nothing was touched" in result.message
    assert "orders" in store.manifests
