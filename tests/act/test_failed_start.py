"""A job whose first start failed stays in view (finding 4 of issue 26): its intent record is
kept at phase failed with the error, and `status`, `stop`, `logs` and the next plan know it; the
next start that succeeds clears it. On fakes."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.settings import Settings
from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import DropIntent, StartRun
from flink_sql_runner.errors import UnknownJob
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.logs import find_log
from flink_sql_runner.model.intents import INTENT_SCHEMA_VERSION, IntentLog, Phase
from flink_sql_runner.model.json_values import json_time_of_text
from flink_sql_runner.render.status import status_text
from flink_sql_runner.watch.status import status_rows
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, CONFIG, ROOT, fake_world, healthy, stored_of

ERROR = "the job failed: boom: division by zero"


def plan_of(store, target, state, jobs, prune=False):
    return build_plan(gather(jobs, store, target, state, workers=1), prune=prune)


def failed_first_start():
    """A deploy of the new job `orders` whose first start failed (the runner said why)."""
    store, target, state, executor = fake_world(on_submit="failed")
    results = executor.apply(plan_of(store, target, state, [BASE]))
    assert not results["orders"].ok and ERROR in results["orders"].summary
    assert store.manifests == {}, "nothing is recorded of a start that failed"
    return store, target, state, executor


def test_a_failed_first_start_keeps_its_record_with_the_error():
    store, target, state, _ = failed_first_start()
    intent = IntentLog(store).read_all().intents["orders"]
    assert intent.phase is Phase.FAILED
    failed = intent.failed_start
    assert failed is not None
    assert (failed.version, failed.error) == (1, ERROR)
    assert failed.run_id == target.submissions[0].run_id
    assert json.loads(intent.to_json())["schema-version"] == INTENT_SCHEMA_VERSION


def test_the_next_plan_says_it_failed_beside_the_retry():
    store, target, state, _ = failed_first_start()
    (decision,) = plan_of(store, target, state, [BASE]).decisions
    failed = decision.failed_start
    assert failed is not None
    assert decision.action is Action.START_CLEAN
    assert decision.reason.startswith(f"v1 failed to start at {failed.at}: {ERROR}; new job")
    assert isinstance(decision.steps[0], DropIntent) and decision.steps[0].failed_start
    assert isinstance(decision.steps[1], StartRun)
    doc = decision.to_dict()
    assert doc["failed-start"] == {"query-version": 1, "at": json_time_of_text(failed.at),
                                   "error": ERROR,
                                   "run-id": failed.run_id}  # fmt: skip
    assert doc["steps"][0] == {
        "step": "drop-intent", "why": "started again", "failed-start": True,
        "text": "drop the failed start's record (started again)",
    }  # fmt: skip


def test_a_start_that_succeeds_afterwards_clears_the_failure():
    store, target, state, executor = failed_first_start()
    target.on_submit = healthy(state)
    results = executor.apply(plan_of(store, target, state, [BASE]))
    assert results["orders"].ok, results["orders"]
    assert "dropped the record of its failed start (started again)" in results["orders"].steps
    assert IntentLog(store).read_all().intents == {}
    (decision,) = plan_of(store, target, state, [BASE]).decisions
    assert decision.failed_start is None and decision.action is Action.NOOP
    (row,) = status_rows(deployment(store, target, state), [])
    assert row["health"] == "healthy" and row["failed-start"] is None


def test_a_failed_restart_of_a_stored_job_keeps_no_record():
    """Only a first start's failure is kept: a stored job shows its own state."""
    store, target, state, executor = fake_world(on_submit="failed")
    store.put(stored_of(BASE, 1))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)
    results = executor.apply(plan_of(store, target, state, [CONFIG]))
    assert not results["orders"].ok
    assert IntentLog(store).read_all().intents == {}


def test_a_job_gone_from_git_keeps_its_failure_until_a_prune_drops_it():
    store, target, state, executor = failed_first_start()
    (left,) = plan_of(store, target, state, []).decisions
    assert left.action is Action.ORPHANED and not left.steps
    assert "deploy --prune drops the record of the failed start" in left.reason
    (pruned,) = plan_of(store, target, state, [], prune=True).decisions
    assert pruned.action is Action.PRUNE
    assert [type(s) for s in pruned.steps] == [DropIntent]
    results = executor.apply(plan_of(store, target, state, [], prune=True))
    assert results["orders"].ok
    assert IntentLog(store).read_all().intents == {}


def test_stop_knows_it_and_has_nothing_to_stop():
    store, target, state, _ = failed_first_start()
    stops = list(target.stops)
    (result,) = list(stop_jobs(store, target, state, ["orders"], timeout=5))
    assert (result.outcome, result.exit_code) == ("not-running", 0)
    assert result.message.startswith("orders: not running (v1 failed to start at ")
    assert target.stops == stops, "nothing is asked to stop"
    with pytest.raises(UnknownJob):
        list(stop_jobs(store, target, state, ["nope"], timeout=5))


def deployment(store: FakeStore, target: FakeTarget, state: FakeStorage) -> Deployment:
    found = Deployment(Settings(), store=store, target=target)
    found.storage = state
    return found


def test_status_shows_it_failed_with_its_error_log_and_next_deploy():
    store, target, state, _ = failed_first_start()
    state.files[f"{ROOT}/orders/_control/v1.manifest.json"] = "{}"  # written by the start
    (row,) = status_rows(deployment(store, target, state), [])
    run_id = target.submissions[0].run_id
    assert row["health"] == "failed"
    assert row["failed-start"]["error"] == ERROR
    assert row["failed-start"]["next-deploy"] == "start-clean v2"
    assert row["log"] == f"fake log of orders run {run_id}"
    text = status_text([row])
    assert "orders  -        failed" in text
    said = row["failed-start"]["at"].replace(".000Z", "Z")  # the text's UTC seconds
    assert f"v1 failed to start at {said}: {ERROR}" in text
    assert "next deploy: start-clean v2" in text
    assert f"log: fake log of orders run {run_id}" in text


def test_status_names_no_log_when_the_target_cannot_say():
    store, target, state, _ = failed_first_start()
    target.fail_logs = True
    (row,) = status_rows(deployment(store, target, state), [])
    assert row["health"] == "failed" and row["log"] is None


def test_logs_finds_the_failed_start_s_log_and_an_unknown_job_is_bad_input():
    store, target, state, _ = failed_first_start()
    found = find_log("orders", store, target)
    assert found.failed is not None and found.run is None
    assert found.log is not None and found.log.run_id == target.submissions[0].run_id
    with pytest.raises(UnknownJob, match="unknown job 'nope'"):
        find_log("nope", store, target)


def test_a_secret_in_the_error_is_masked_before_it_is_kept():
    store, target, state, executor = fake_world(on_submit="failed")
    target.on_submit = healthy(state, "failed", 'login refused: password="hunter2" for bob')
    executor.apply(plan_of(store, target, state, [BASE]))
    kept = store.side["_intents/orders.json"]
    assert "hunter2" not in kept
    failed = IntentLog(store).read_all().intents["orders"].failed_start
    assert failed is not None and failed.error.startswith(
        "the job failed: login refused: password="
    )


def test_a_refused_submission_keeps_no_record_nothing_ran():
    """Kept is the failure of a run that existed (it has a log, Spark's error): a submission
    the cluster refused started nothing, and leaves no record, as before."""
    store, target, state, executor = fake_world(fail_submit=True)
    results = executor.apply(plan_of(store, target, state, [BASE]))
    assert not results["orders"].ok
    assert IntentLog(store).read_all().intents == {}
    assert store.side == {}
