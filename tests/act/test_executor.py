"""The executor on fakes: a manifest is recorded only after its job is confirmed healthy."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.runs import Run
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, fake_world, make_job, stored_of


def run(store, target, state, executor, jobs):
    plan = build_plan(gather(jobs, store, target, state, workers=1))
    return plan, executor.apply(plan)


def test_new_job_is_started_then_recorded_with_version_1():
    store, target, state, executor = fake_world()
    plan, results = run(store, target, state, executor, [BASE])
    assert results["orders"].ok, results["orders"]
    assert store.manifests["orders"].meta.query_version == 1
    submission = target.submissions[0]
    assert submission.app_name == "flink-sql-runner-orders-v1"
    assert submission.spark_conf["spark.sql.shuffle.partitions"] == "4"
    runtime = json.loads(state.files[submission.runtime_manifest])
    assert runtime["checkpoint-location"] == f"{ROOT}/orders/1"
    assert runtime["run-id"] == submission.run_id
    assert runtime["meta"]["query-id"] == store.manifests["orders"].meta.query_id


def test_config_change_restarts_same_version_and_keeps_query_id():
    store, target, state, executor = fake_world()
    stored = stored_of(BASE, 1)
    store.put(stored)
    target.add_run(Run("orders", 1, "old", "pid 1"))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)
    plan, results = run(store, target, state, executor, [CONFIG])
    assert plan.decisions[0].action is Action.STOP_AND_RESTART
    assert results["orders"].ok
    assert target.stops == ["orders"]
    assert store.manifests["orders"].meta == stored.meta
    assert store.manifests["orders"].job["description"] == "orders, now documented"


def test_query_change_starts_clean_with_new_version_and_id():
    store, target, state, executor = fake_world()
    stored = stored_of(BASE, 1)
    store.put(stored)
    target.add_run(Run("orders", 1, "old", "pid 1"))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)
    _, results = run(store, target, state, executor, [QUERY])
    assert results["orders"].ok
    meta = store.manifests["orders"].meta
    assert meta.query_version == 2 and meta.query_id != stored.meta.query_id
    (submission,) = target.submissions  # prepared beside v1 (a warm handover), then its go
    assert submission.prepared
    prepared = f"{ROOT}/orders/_control/v2.prepared-{submission.run_id[:8]}.manifest.json"
    assert submission.runtime_manifest == prepared


def test_failed_job_is_not_recorded_and_others_go_on():
    store, target, state, executor = fake_world()
    bad = make_job(name="bad")
    calls = []

    def status(submission):
        calls.append(submission.name)
        state_name = "failed" if submission.name == "bad" else "active"
        state.files[submission.status_file] = json.dumps(
            {"run-id": submission.run_id, "state": state_name, "error": "[DIVIDE_BY_ZERO] boom"}
        )
        if submission.name == "bad":
            target.runs.pop("bad")

    target.on_submit = status
    _, results = run(store, target, state, executor, [bad, BASE])
    assert calls == ["bad", "orders"]
    assert not results["bad"].ok
    assert "the job failed: [DIVIDE_BY_ZERO] boom" in results["bad"].summary
    assert "fake log tail" in results["bad"].detail
    assert "bad" not in store.manifests
    assert results["orders"].ok and "orders" in store.manifests


def test_job_that_dies_before_healthy_is_not_recorded():
    store, target, state, executor = fake_world(on_submit=None, die_after_submit=True)
    _, results = run(store, target, state, executor, [BASE])
    assert not results["orders"].ok
    assert "exited before it was healthy" in results["orders"].summary
    assert store.manifests == {}


def test_job_not_healthy_in_time_is_stopped_and_not_recorded():
    store, target, state, executor = fake_world(on_submit=None)
    _, results = run(store, target, state, executor, [BASE])
    assert "not healthy within 30 s" in results["orders"].summary
    assert target.stops == ["orders"] and target.running == {}
    assert store.manifests == {}


def test_refused_submission_is_reported_and_not_recorded():
    store, target, state, executor = fake_world(fail_submit=True)
    _, results = run(store, target, state, executor, [BASE])
    assert not results["orders"].ok
    assert "refused the submission" in results["orders"].summary
    assert store.manifests == {}


def test_clean_start_never_reuses_a_non_empty_checkpoint_folder():
    store, target, state, executor = fake_world()
    plan = build_plan(gather([BASE], store, target, state, workers=1))
    assert plan.decisions[0].version == 1
    state.files[f"{ROOT}/orders/1/offsets/.0.tmp"] = "junk"  # appeared since the plan
    results = executor.apply(plan)
    assert not results["orders"].ok
    assert "checkpoint folder /ckpt/orders/1 is not empty" in results["orders"].summary
    assert target.submissions == []


def test_desired_stopped_stops_and_records_the_state_only():
    store, target, state, executor = fake_world()
    stored = stored_of(BASE, 1)
    store.put(stored)
    target.add_run(Run("orders", 1, "old", "pid 1"))
    state.add_checkpoint(f"{ROOT}/orders/1", 5)
    stopped = make_job(**{"desired-state": "stopped"}, sql="SELECT id FROM src")
    _, results = run(store, target, state, executor, [stopped])
    assert results["orders"].ok and target.stops == ["orders"]
    recorded = store.manifests["orders"]
    assert recorded.job["desired-state"] == "stopped"
    assert recorded.job["sql"] == BASE.spec["sql"]  # the query change waits
    assert recorded.meta == stored.meta
    # Back to running: it resumes from its checkpoint at the same version.
    resumed = build_plan(gather([BASE], store, target, state)).decisions[0]
    assert (resumed.action, resumed.version) == (Action.RESTART, 1)


@pytest.mark.parametrize(
    "secret_key",
    [
        "spark.hadoop.fs.s3a.secret.key",
        "my.api.token",
        "spark.hadoop.fs.s3a.access.key",
        "spark.hadoop.fs.s3a.accesskey",
        "spark.kafka.sasl.jaas.config",
        "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net",
        "spark.hadoop.google.cloud.auth.service.account.private.key",
        "spark.hadoop.fs.azure.sas.container.acct.blob.core.windows.net",
    ],
)
def test_secret_properties_never_reach_the_command_line(secret_key):
    store, target, state, executor = fake_world()
    job = make_job(sparkProperties={"spark.sql.shuffle.partitions": "4", secret_key: "hunter2"})
    _, results = run(store, target, state, executor, [job])
    submission = target.submissions[0]
    assert secret_key not in submission.spark_conf
    assert submission.secret_conf == {secret_key: "hunter2"}


def test_an_interrupted_executor_finishes_the_job_in_flight_and_begins_no_other():
    store, target, state, executor = fake_world()
    jobs = [
        make_job(name=name, tables={"out": {"format": "parquet", "options": {"path": f"/{name}"}}})
        for name in ("a", "b", "c")
    ]
    told, sides = [], []
    written = store.write_side
    store.write_side = lambda key, text, **kw: (sides.append(key), written(key, text, **kw))[1]
    # Ctrl-C arrives while job a is being submitted (parallelism 1: b and c wait).
    target.before_submit = lambda submission: told.append(executor.interrupt())
    plan, results = run(store, target, state, executor, jobs)
    (in_flight, not_begun), *_ = told
    assert not_begun == ["b", "c"]
    assert in_flight["a"].startswith("start v1 clean in ") and in_flight["a"].endswith(
        "(then record v1)"
    )
    assert results["a"].ok and store.manifests["a"].meta.query_version == 1
    for name in ("b", "c"):
        assert results[name].outcome == "not-begun" and not results[name].ok
    assert [s.name for s in target.submissions] == ["a"]
    history = [key for key in sides if key.startswith("_history/")]
    assert set(sides) - set(history) == {"_intents/a.json"}, "jobs never begun write no intent"
    assert [key.split("/")[1] for key in history] == ["a"], "the finished job's history only"
    assert store.side_but_history == {}, "and the finished job's intent record is gone"
    assert executor.in_flight() == {}
