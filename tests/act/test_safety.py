"""The promises that need more than the decision table, on fakes that fail the way real parts
do: unknown liveness, two runs, submissions whose answer is lost, stops that cannot be
confirmed, failed starts rolled back, one writer per sink, intents settled on evidence, and one
job's trouble staying that job's."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.warm import COLD, DEFAULT_HANDOVER, HANDOVERS, WARM
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.intents import IntentLog, Phase, new_intent
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Meta, StoredManifest
from tests.support.jobs import (
    BASE,
    CONFIG,
    QUERY,
    ROOT,
    SINK,
    FakeRunner,
    fake_world,
    given_go,
    make_job,
    stored_of,
)


def deployed(store, target, state, job=BASE, version=1, run_id="old"):
    store.put(stored_of(job, version))
    target.add_run(Run(job.name, version, run_id, "pid 1"))
    state.add_checkpoint(f"{ROOT}/{job.name}/{version}", 5)


def plan_of(store, target, state, jobs, prune=False, handover=DEFAULT_HANDOVER):
    facts = gather(jobs, store, target, state, workers=1)
    return build_plan(facts, prune=prune, handover=handover)


# -- liveness fails closed --------------------------------------------------------------------


@pytest.mark.parametrize("desired", [BASE, CONFIG, QUERY], ids=["same", "config", "query"])
def test_a_run_that_cannot_be_told_alive_or_gone_is_never_joined(desired):
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    target.unknown.add("orders")  # e.g. a pod in phase Unknown, a gateway answering 503
    plan = plan_of(store, target, state, [desired])
    (decision,) = plan.decisions
    assert decision.action is Action.ERROR and "cannot tell whether it runs" in decision.reason
    results = executor.apply(plan)
    assert not results["orders"].ok
    assert target.stops == [] and target.submissions == [] and target.double_starts == []


def test_a_listing_that_fails_stops_the_plan():
    store, target, state, _ = fake_world()
    deployed(store, target, state)
    target.fail_listing = True
    with pytest.raises(FsrError, match="HTTP 503 to the listing"):
        plan_of(store, target, state, [BASE])


def test_two_runs_of_one_job_are_an_error_and_neither_is_touched():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    target.add_run(Run("orders", 1, "stray", "pid 2"))
    (decision,) = plan_of(store, target, state, [CONFIG]).decisions
    assert decision.action is Action.ERROR
    assert "2 runs of this job are up: v1 (pid 1), v1 (pid 2)" in decision.reason
    assert target.stops == [] and target.submissions == []


@pytest.mark.parametrize("handover", HANDOVERS)
def test_a_stop_that_cannot_be_confirmed_starts_nothing(handover):
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    target.stop_unconfirmed = True
    results = executor.apply(plan_of(store, target, state, [QUERY], handover=handover))
    assert not results["orders"].ok and "cannot say it stopped" in results["orders"].summary
    # Warm, the new run was prepared before the stop; it is told to end, never to go.
    assert [s.prepared for s in target.submissions] == ([True] if handover == WARM else [])
    assert given_go(state) == []
    assert store.manifests["orders"].meta.query_version == 1
    # Its record stays at `stopping`: the run was told to stop and may yet end by its marker,
    # so the next command finishes that stop (tests/act/test_records_accounted.py).
    [record] = store.side.values()
    assert json.loads(record)["phase"] == "stopping"


# -- submissions whose answer is lost -------------------------------------------------------


def test_a_lost_submission_answer_with_the_run_up_is_waited_for_and_recorded():
    store, target, state, executor = fake_world(lose_submit_answer=True)
    results = executor.apply(plan_of(store, target, state, [BASE]))
    assert results["orders"].ok, results["orders"]
    assert len(target.submissions) == 1 and target.double_starts == []
    assert store.manifests["orders"].meta.query_version == 1


def test_a_lost_submission_answer_with_the_run_unknown_keeps_the_intent_and_starts_nothing():
    store, target, state, executor = fake_world(lose_submit_answer=True)
    deployed(store, target, state)

    def cannot_tell(submission):
        target.unknown.add(submission.name)

    target.on_submit = cannot_tell
    # Cold: the run whose answer is lost is the one that writes (warm: test_warm_handover.py).
    results = executor.apply(plan_of(store, target, state, [QUERY], handover=COLD))
    assert not results["orders"].ok
    assert "the run may still be up, so nothing else is started" in results["orders"].summary
    assert len(target.submissions) == 1, "no rollback start beside a run that may be up"
    assert store.manifests["orders"].meta.query_version == 1
    assert "_intents/orders.json" in store.side, "kept for the next deploy to settle"
    # The next deploy cannot tell either: it acts on nothing.
    (decision,) = plan_of(store, target, state, [QUERY]).decisions
    assert decision.action is Action.ERROR
    # Once the cluster answers again and the run is up, it is waited for and recorded.
    target.unknown.clear()
    state.files[f"{ROOT}/orders/_control/v2.status.json"] = json.dumps(
        {"run-id": target.submissions[0].run_id, "state": "active"}
    )
    plan = plan_of(store, target, state, [QUERY])
    (decision,) = plan.decisions
    assert decision.action is Action.ADOPT, decision.reason
    assert executor.apply(plan)["orders"].ok
    assert store.manifests["orders"].meta.query_version == 2 and store.side_but_history == {}
    assert len(target.submissions) == 1


# -- rollback ---------------------------------------------------------------------------------


@pytest.mark.parametrize("handover", HANDOVERS)
@pytest.mark.parametrize("desired, action", [(CONFIG, "config"), (QUERY, "query")])
def test_a_changed_job_whose_new_run_fails_gets_its_previous_run_back(desired, action, handover):
    """Its new run fails on its first batch, after it started (warm: after its go)."""
    store, target, state, executor = fake_world(on_submit=None)
    deployed(store, target, state)
    before = store.manifests["orders"]
    started: list[str] = []

    def first_fails(submission) -> str:
        return "failed" if started == [] or started == [submission.run_id] else "active"

    def started_then_gone_if_failed(submission) -> None:
        started.append(submission.run_id)
        if len(started) == 1:
            target.runs.pop(submission.name)

    FakeRunner(
        state,
        target,
        first_fails,
        error="[CAST_INVALID_INPUT] boom",
        on_start=started_then_gone_if_failed,
    )
    plan = plan_of(store, target, state, [desired], handover=handover)
    (decision,) = plan.decisions
    assert decision.rollback, decision
    result = executor.apply(plan)["orders"]
    assert not result.ok and result.outcome == "rolled-back"
    assert result.summary.startswith("rolled back: v1 running again from its checkpoint")
    assert "[CAST_INVALID_INPUT] boom" in result.summary
    assert [s.version for s in target.submissions] == [decision.version, 1]
    assert target.running["orders"].run_id == target.submissions[1].run_id
    assert store.manifests["orders"] is before, "the store keeps the previous manifest"
    assert store.side == {} and target.double_starts == []


def test_no_rollback_while_the_new_run_may_still_be_up():
    store, target, state, executor = fake_world(on_submit=None)
    deployed(store, target, state)

    def hangs(submission):  # never healthy, and then the cluster stops answering
        target.before_stop = lambda run: target.unknown.add(run.name)

    target.on_submit = hangs
    result = executor.apply(plan_of(store, target, state, [QUERY]))["orders"]
    assert not result.ok and "may still be up" in result.summary
    assert len(target.submissions) == 1
    assert store.manifests["orders"].meta.query_version == 1


# -- one writer per sink ----------------------------------------------------------------------


def renamed(name="orders-v2"):
    return make_job(name=name)  # the same target table, so the same sink folder


def test_a_renamed_job_does_not_start_into_the_sink_its_old_name_still_writes():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    plan = plan_of(store, target, state, [renamed()])
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["orders"].action is Action.ORPHANED
    assert by_name["orders-v2"].action is Action.ERROR
    assert "would write folder /out, which job orders (stored v1, running v1 (pid 1)) writes" in (
        by_name["orders-v2"].reason
    )
    executor.apply(plan)
    assert target.submissions == []


def test_with_prune_the_old_owner_is_stopped_first():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    order = []
    target.before_stop = lambda run: order.append(f"stop {run.name}")
    target.before_submit = lambda sub: order.append(f"start {sub.name}")
    plan = plan_of(store, target, state, [renamed()], prune=True)
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["orders-v2"].after == ("orders",)
    executor.parallelism = 4
    results = executor.apply(plan)
    assert results["orders-v2"].ok and results["orders"].ok
    assert order == ["stop orders", "start orders-v2"]


def test_a_job_moving_to_another_sink_frees_its_old_one_in_the_same_deploy():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    moved = make_job(**{"target-table": "elsewhere"}, tables={"elsewhere": {
        **SINK, "options": {"path": "/out-2"}}})  # fmt: skip
    plan = plan_of(store, target, state, [moved, renamed("newcomer")])
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["orders"].action is Action.STOP_AND_START_CLEAN
    assert by_name["newcomer"].after == ("orders",)


def test_a_sink_owner_that_fails_holds_the_newcomer_back():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    target.stop_unconfirmed = True
    results = executor.apply(plan_of(store, target, state, [renamed()], prune=True))
    assert not results["orders"].ok
    assert results["orders-v2"].outcome == "skipped"
    assert "held back, orders (the writer of" in results["orders-v2"].summary
    assert results["orders-v2"].summary.endswith("until now) failed")


# -- intents are settled on evidence of their own run ----------------------------------------


def test_an_old_checkpoint_is_no_evidence_that_a_restart_took_effect():
    """Before, a same-version intent was adopted because the old version's checkpoint was
    valid: the new manifest was recorded with nothing running."""
    store, target, state, _ = fake_world()
    deployed(store, target, state)
    target.runs.clear()  # the old run was stopped, then the deployer died before submitting
    changed = StoredManifest(CONFIG.spec, CONFIG.tables, store.manifests["orders"].meta)
    intent = new_intent(changed, "stop-and-restart-from-checkpoint", "new-run").at(
        Phase.OLD_STOPPED
    )
    IntentLog(store).write(intent)
    (decision,) = plan_of(store, target, state, [CONFIG]).decisions
    assert "its new run was never submitted" in decision.reason
    assert decision.action is Action.RESTART


def test_a_submitted_intent_with_its_run_up_is_adopted_even_without_run_ids_in_the_listing():
    store, target, state, executor = fake_world()
    deployed(store, target, state)
    target.runs.clear()
    target.add_run(Run("orders", 2, None, "app-7"))  # standalone lists no run ids
    manifest = StoredManifest(QUERY.spec, QUERY.tables, Meta.new(2))
    intent = new_intent(manifest, "stop-and-start-clean", "r2").at(Phase.SUBMITTED)
    IntentLog(store).write(intent)
    state.files[f"{ROOT}/orders/_control/v2.status.json"] = json.dumps(
        {"run-id": "r2", "state": "active"}
    )
    plan = plan_of(store, target, state, [QUERY])
    assert plan.decisions[0].action is Action.ADOPT
    assert executor.apply(plan)["orders"].ok
    assert store.manifests["orders"].meta.query_version == 2 and target.submissions == []


# -- one job's trouble is that job's ----------------------------------------------------------


def test_an_unreadable_manifest_or_intent_is_its_jobs_error_only():
    store, target, state, _ = fake_world()
    other = make_job(name="other", tables={"out": {**SINK, "options": {"path": "/o2"}}})
    deployed(store, target, state)
    deployed(store, target, state, job=other)
    store.unreadable.add("orders")
    store.side["_intents/other.json"] = "{not json"
    plan = plan_of(store, target, state, [BASE, other])
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["orders"].action is Action.ERROR
    assert (
        "cannot be decided: stored manifest memory://store/orders.yaml" in by_name["orders"].reason
    )
    assert by_name["other"].action is Action.ERROR
    assert "intent record memory://store/_intents/other.json is unreadable" in (
        by_name["other"].reason
    )


def test_a_checkpoint_storage_failure_is_that_jobs_error():
    store, target, state, _ = fake_world()
    deployed(store, target, state)
    state.fail = True
    (decision,) = plan_of(store, target, state, [BASE]).decisions
    assert decision.action is Action.ERROR and "SlowDown (HTTP 503)" in decision.reason


def test_an_unexpected_error_in_one_job_is_one_line_and_the_others_go_on():
    store, target, state, executor = fake_world()
    other = make_job(name="other", tables={"out": {**SINK, "options": {"path": "/o2"}}})

    def explode(submission):
        if submission.name == "orders":
            raise OSError(28, "No space left on device")

    target.before_submit = explode
    executor.parallelism = 2
    results = executor.apply(plan_of(store, target, state, [BASE, other]))
    assert not results["orders"].ok
    assert results["orders"].summary == (
        "unexpected error: OSError: [Errno 28] No space left on device"
    )
    assert results["other"].ok and "other" in store.manifests
