"""Table-driven tests of the decision tree: every row of SPEC's table, and the extra cases."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.tree import as_stopped, decide
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.facts import CheckpointFacts, IntentFacts, JobFacts
from flink_sql_runner.model.intents import Kind, new_intent, settle
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import (
    BASE,
    CONFIG,
    QUERY,
    ROOT,
    SINK,
    SOURCE,
    add_version_folder,
    make_job,
    stored_of,
)


def plan_one(desired, stored=None, running=None, checkpoint_batch=None, highest=None):
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    name = (desired or stored).name
    if stored is not None:
        store.put(stored)
    if running is not None:
        target.add_run(Run(name, running, "run-1", "pid 42"))
    if checkpoint_batch is not None and stored is not None:
        storage.add_checkpoint(f"{ROOT}/{name}/{stored.meta.query_version}", checkpoint_batch)
    if highest is not None:
        add_version_folder(storage, name, highest)
    jobs = [desired] if desired is not None else []
    return build_plan(gather(jobs, store, target, storage, workers=1)).decisions[0]


# (id, desired, stored version, running version, checkpoint last batch, action, version, reason)
SPEC_ROWS = [
    ("new", BASE, None, None, None, Action.START_CLEAN, 1, "new job"),
    ("running-unchanged", BASE, 1, 1, 7, Action.NOOP, 1, "running, nothing changed"),
    ("running-config", CONFIG, 1, 1, 7, Action.STOP_AND_RESTART, 1, "config changed (description)"),
    ("running-query", QUERY, 1, 1, 7, Action.STOP_AND_START_CLEAN, 2, "query changed (sql)"),
    ("stopped-unchanged", BASE, 1, None, 7, Action.RESTART, 1, "last committed batch 7"),
    ("stopped-unchanged-no-state", BASE, 1, None, None, Action.ERROR, 1, "no valid checkpoint"),
    ("stopped-config", CONFIG, 1, None, 7, Action.RESTART, 1, "config changed (description)"),
    ("stopped-query", QUERY, 1, None, 7, Action.START_CLEAN, 2, "query changed (sql)"),
]


@pytest.mark.parametrize(
    "desired, stored_version, running, batch, action, version, reason",
    [row[1:] for row in SPEC_ROWS],
    ids=[row[0] for row in SPEC_ROWS],
)
def test_spec_decision_table(desired, stored_version, running, batch, action, version, reason):
    stored = stored_of(BASE, stored_version) if stored_version else None
    decision = plan_one(desired, stored, running, batch)
    assert decision.action is action
    assert decision.version == version
    assert reason in decision.reason


EXTRA_ROWS = [
    (
        "pinned-setting-is-a-query-change",
        make_job(
            sparkProperties={"spark.sql.shuffle.partitions": "8", "spark.executor.memory": "1g"}
        ),
        Action.STOP_AND_START_CLEAN,
        2,
        "sparkProperties.spark.sql.shuffle.partitions",
    ),
    (
        "other-setting-is-a-config-change",
        make_job(
            sparkProperties={"spark.sql.shuffle.partitions": "4", "spark.executor.memory": "2g"}
        ),
        Action.STOP_AND_RESTART,
        1,
        "sparkProperties.spark.executor.memory",
    ),
    (
        "whitespace-comment-and-keyword-case-only-sql-edit",
        make_job(
            sql="-- the filter\nselect id,\n       ts\n  from src   /* all */ where id > 0;\n"
        ),
        Action.NOOP,
        1,
        "nothing changed",
    ),
    (
        "source-table-options-are-config",
        make_job(tables={"src": {**SOURCE, "options": {"path": "/in", "maxFilesPerTrigger": 5}}}),
        Action.STOP_AND_RESTART,
        1,
        "tables.src.options.maxFilesPerTrigger",
    ),
    (
        "source-table-schema-is-query",
        make_job(tables={"src": {**SOURCE, "schema": "id BIGINT, ts TIMESTAMP, extra STRING"}}),
        Action.STOP_AND_START_CLEAN,
        2,
        "tables.src.schema",
    ),
    (
        "source-watermark-is-query",
        make_job(tables={"src": {**SOURCE, "watermark": {"column": "ts", "delay": "1 minute"}}}),
        Action.STOP_AND_START_CLEAN,
        2,
        "tables.src.watermark",
    ),
    (
        "target-table-is-query",
        make_job(**{"target-table": "other"}, tables={"other": SINK}),
        Action.STOP_AND_START_CLEAN,
        2,
        "target-table",
    ),
    (
        "output-mode-is-query",
        make_job(outputMode="update"),
        Action.STOP_AND_START_CLEAN,
        2,
        "outputMode",
    ),
    (
        "trigger-is-config",
        make_job(trigger={"availableNow": True}),
        Action.STOP_AND_RESTART,
        1,
        "trigger",
    ),
    (
        "checkpoint-root-is-query",
        make_job(**{"checkpoint-root": "/elsewhere"}),
        Action.STOP_AND_START_CLEAN,
        2,
        "checkpoint-root",
    ),
    (
        "desired-stopped-stops-running-job",
        make_job(**{"desired-state": "stopped"}),
        Action.STOP,
        1,
        "desired-state is stopped",
    ),
]


@pytest.mark.parametrize(
    "desired, action, version, reason", [r[1:] for r in EXTRA_ROWS], ids=[r[0] for r in EXTRA_ROWS]
)
def test_field_rules_on_a_running_job(desired, action, version, reason):
    decision = plan_one(desired, stored_of(BASE, 1), running=1, checkpoint_batch=4)
    assert decision.action is action
    assert decision.version == version
    assert reason in decision.reason or any(c.field == reason for c in decision.changes)


def test_running_job_without_stored_manifest_is_an_error_not_a_second_start():
    decision = plan_one(BASE, stored=None, running=1)
    assert decision.action is Action.ERROR
    assert "no manifest is stored" in decision.reason
    assert "not starting it a second time" in decision.reason


def test_shared_table_change_touches_only_jobs_that_use_it():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    uses = make_job(name="uses-src", tables={"out": {**SINK, "options": {"path": "/out-a"}}})
    other = make_job(
        name="other",
        sql="SELECT id FROM src2",
        tables={
            "src2": {**SOURCE, "options": {"path": "/in2"}},
            "out": {**SINK, "options": {"path": "/out-b"}},
        },
    )
    other = replace(
        other, tables={k: v for k, v in other.tables.items() if k != "src"}, source_tables=("src2",)
    )
    for job in (uses, other):
        store.put(stored_of(job, 1))
        target.add_run(Run(job.name, 1, "r", "pid 1"))
    changed_src = {**SOURCE, "options": {"path": "/in", "maxFilesPerTrigger": 1}}
    desired = [replace(uses, tables={**uses.tables, "src": changed_src}), other]
    decisions = {d.name: d for d in build_plan(gather(desired, store, target, storage)).decisions}
    assert decisions["uses-src"].action is Action.STOP_AND_RESTART
    assert [c.field for c in decisions["uses-src"].changes] == [
        "tables.src.options.maxFilesPerTrigger"
    ]
    assert decisions["other"].action is Action.NOOP


def test_clean_start_skips_version_folders_that_already_exist():
    decision = plan_one(BASE, stored=None, highest=3)
    assert (decision.action, decision.version) == (Action.START_CLEAN, 4)
    query = plan_one(QUERY, stored_of(BASE, 1), running=1, checkpoint_batch=2, highest=5)
    assert (query.action, query.version) == (Action.STOP_AND_START_CLEAN, 6)


FUTURE_SETTING = "spark.sql.streaming.someFutureStateFormat.version"


def checkpoint_pins(conf: dict[str, str]) -> FakeStorage:
    """A checkpoint of version 1 whose latest offsets file pins `conf`, as Spark writes it."""
    storage = FakeStorage()
    storage.add_checkpoint(f"{ROOT}/orders/1", 2)
    line = {"batchWatermarkMs": 0, "batchTimestampMs": 1700000000000, "conf": conf}
    storage.files[f"{ROOT}/orders/1/offsets/2"] = "v1\n" + json.dumps(line) + '\n{"0":7}'
    return storage


@pytest.mark.parametrize("running", [1, None], ids=["running", "stopped"])
def test_a_setting_the_checkpoint_pins_starts_clean_though_no_list_names_it(running):
    """What the checkpoint's offsets file pins counts, not only the list kept by hand: a restart
    would keep the checkpoint's value and silently ignore the new one."""
    store, target = FakeStore(), FakeTarget()
    store.put(stored_of(BASE, 1))
    if running:
        target.add_run(Run("orders", running, "run-1", "pid 42"))
    storage = checkpoint_pins({"spark.sql.shuffle.partitions": "4", FUTURE_SETTING: "1"})
    desired = make_job(sparkProperties={**BASE.spec["sparkProperties"], FUTURE_SETTING: "2"})
    [decision] = build_plan(gather([desired], store, target, storage, workers=1)).decisions
    assert decision.action is (Action.STOP_AND_START_CLEAN if running else Action.START_CLEAN)
    assert decision.version == 2
    [change] = decision.changes
    assert change.field == f"sparkProperties.{FUTURE_SETTING}"
    assert change.why.startswith("pinned by the checkpoint")


def test_a_pinned_setting_set_to_the_checkpoints_own_value_restarts_from_it():
    store, target = FakeStore(), FakeTarget()
    stored = stored_of(make_job(sparkProperties={"spark.executor.memory": "1g"}), 1)
    store.put(stored)
    target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage = checkpoint_pins({"spark.sql.shuffle.partitions": "4"})
    [decision] = build_plan(gather([BASE], store, target, storage, workers=1)).decisions
    assert (decision.action, decision.version) == (Action.STOP_AND_RESTART, 1)


def test_desired_stopped_and_not_running_is_recorded_stopped_with_changes_listed():
    desired = make_job(**{"desired-state": "stopped"}, sql="SELECT id FROM src")
    decision = plan_one(desired, stored_of(BASE, 1), running=None, checkpoint_batch=2)
    assert decision.action is Action.STOP
    assert "record it, so that watch leaves it down" in decision.reason
    assert "changes apply once desired-state is running" in decision.reason
    assert "sql" in [c.field for c in decision.changes]
    (record,) = decision.steps
    assert record.manifest.job["desired-state"] == "stopped"
    assert record.manifest.job["sql"] == BASE.spec["sql"], "the query change waits"
    stored_stopped = stored_of(make_job(**{"desired-state": "stopped"}), 1)
    again = plan_one(desired, stored_stopped, running=None, checkpoint_batch=2)
    assert again.action is Action.NOOP and "stopped, as desired" in again.reason


def test_new_job_with_desired_state_stopped_is_not_started():
    decision = plan_one(make_job(**{"desired-state": "stopped"}))
    assert decision.action is Action.NOOP and decision.version is None


def test_running_version_differs_from_stored_is_an_error():
    decision = plan_one(BASE, stored_of(BASE, 2), running=1, checkpoint_batch=1)
    assert decision.action is Action.ERROR
    assert "runs version 1" in decision.reason and "records version 2" in decision.reason


def test_orphaned_job_is_listed_and_left_alone():
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(
        stored_of(make_job(name="gone", tables={"out": {**SINK, "options": {"path": "/o2"}}}), 3)
    )
    plan = build_plan(gather([BASE], store, target, storage))
    by_name = {d.name: d for d in plan.decisions}
    assert by_name["gone"].action is Action.ORPHANED and by_name["gone"].version == 3
    assert [d.name for d in plan.decisions] == ["gone", "orders"]


def test_changes_list_old_and_new_values_most_severe_first():
    desired = make_job(description="new words", sql="SELECT id FROM src")
    decision = plan_one(desired, stored_of(BASE, 1), running=1, checkpoint_batch=0)
    fields = [(c.field, c.kind.label) for c in decision.changes]
    assert fields == [("sql", "query"), ("description", "config")]
    description = decision.changes[1]
    assert (description.old, description.new) == ("all orders", "new words")


def test_plan_is_pending_only_when_something_would_change():
    unchanged = plan_one(BASE, stored_of(BASE, 1), running=1, checkpoint_batch=2)
    stopped = plan_one(BASE, stored_of(BASE, 1), running=None, checkpoint_batch=2)
    from flink_sql_runner.decide.decisions import Plan

    assert not Plan(()).pending and not Plan((unchanged,)).pending
    assert Plan((unchanged, stopped)).pending
    error = plan_one(BASE, stored_of(BASE, 2), running=1, checkpoint_batch=1)
    assert Plan((error,)).errors and not Plan((unchanged,)).errors


def stop_over_a_start_left_up(desired, *runs):
    """Facts after seed 1007: the store records v1; `stop` took an interrupted start's v2 as
    what to record stopped, wrote its stop intent over the start's and failed before it stopped
    anything."""
    started = stored_of(desired, 2)
    intent = new_intent(as_stopped(started), "stop", "stop-run", Kind.STOP)
    checkpoint = CheckpointFacts(f"{ROOT}/orders/2", True, 3, 2)
    facts = JobFacts(
        "orders",
        desired,
        stored_of(BASE, 1),
        runs,
        checkpoint,
        IntentFacts(settle(intent, runs, None), checkpoint),
    )
    return started, decide(facts)


def test_a_stop_that_failed_over_a_start_left_up_completes_that_start():
    spec = {k: v for k, v in QUERY.spec.items() if k != "desired-state"}  # the file omits it
    desired = replace(QUERY, spec=spec)
    started, decision = stop_over_a_start_left_up(desired, Run("orders", 2, "r2", "fake 2"))

    assert decision.action is Action.ADOPT, decision.reason
    assert [type(s).__name__ for s in decision.steps] == ["AwaitRun", "Record", "DropIntent"]
    recorded = decision.steps[1].manifest
    assert recorded.job == desired.spec, "as it ran: not stopped, as the job file writes it"
    assert recorded.meta == started.meta


def test_a_stop_that_failed_with_two_runs_up_adopts_nothing():
    runs = (Run("orders", 1, "r1", "fake 1"), Run("orders", 2, "r2", "fake 2"))
    _, decision = stop_over_a_start_left_up(QUERY, *runs)
    assert decision.action is Action.ERROR
    assert not any(type(s).__name__ in ("AwaitRun", "Record") for s in decision.steps)


def test_every_decision_of_a_plan_carries_the_token_its_facts_were_read_with() -> None:
    """The tree makes its decisions with their facts' token, and the plan gives it to those
    made otherwise (an intent settled, a consumer decided again): each Record and Archive
    lands only on the version decided on."""
    alive = (Run("orders", 1, "run-1", "pid 42"),)

    def job(name: str, spec: dict) -> object:
        return make_job(name=name, **spec)

    cases = {
        "a-noop": (job("a-noop", {}), alive),
        "b-config": (job("b-config", {"description": "now documented"}), alive),
        "c-stopped": (job("c-stopped", {"desired-state": "stopped"}), ()),
    }
    facts = [
        JobFacts(name, desired, stored_of(job(name, {})), runs, token=f"etag-{name}")
        for name, (desired, runs) in cases.items()
    ]
    facts.append(JobFacts("d-broken", job("d-broken", {}), None, problem="unreadable"))
    facts.append(JobFacts("e-new", job("e-new", {}), None))
    plan = build_plan(facts)
    assert {d.name: d.token for d in plan.decisions} == {
        "a-noop": "etag-a-noop",
        "b-config": "etag-b-config",
        "c-stopped": "etag-c-stopped",
        "d-broken": None,
        "e-new": None,
    }
    # decided apart from the tree's own: a checkpoint whose first run planned no batch
    unplanned = CheckpointFacts(f"{ROOT}/orders/1", False, None, 1, unplanned=True)
    alone = JobFacts("orders", BASE, stored_of(BASE), (), unplanned, token="etag-orders")
    decision = build_plan([alone]).decisions[0]
    assert decision.action is Action.RESTART, decision.reason
    assert decision.token == "etag-orders"
    intent = new_intent(stored_of(job("a-noop", {}), 1), "start", "run-1", Kind.START)
    settling = replace(facts[0], intent=IntentFacts(settle(intent, alive, None)))
    decision = build_plan([settling]).decisions[0]
    assert decision.action is Action.ADOPT, decision.reason
    assert decision.token == "etag-a-noop"
