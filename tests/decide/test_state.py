"""A query change of a stateful query (decide/state.py): a verdict per stateful operator, and
never a silent half window. The operators stand in for the probe's answers (the corpus on real
Spark is tests/runner/test_stateful_plan.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.state import state_base, wants_state
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.schemas import with_contracts
from flink_sql_runner.model.lineage import plan_lineage
from flink_sql_runner.model.state import Analysed
from flink_sql_runner.read.kafka_start import parse_kafka_start
from flink_sql_runner.render.markdown import plan_markdown
from flink_sql_runner.render.plan import plan_text
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import make_job, stored_of
from tests.support.stateful import CKPT, COUNT, KAFKA, RATE, SUMS, decide_change, kafka_job, op


def test_a_windowed_count_carried_from_kafka_is_refused_before_anything_stops():
    decision = decide_change(kafka_job())
    assert decision.action is Action.REFUSED
    assert decision.steps == () and decision.rollback == ()
    assert decision.version == 1
    assert "source src: it goes on from where the previous version stopped" in decision.reason
    assert "on-state-change: partial" in decision.reason
    (verdict,) = decision.state.operators
    assert verdict.line() == (
        "aggregation by id, window(ts, 30 seconds): count(*): rebuilt: window 20 seconds -> "
        "30 seconds"
    )


@pytest.mark.parametrize("running", [True, False], ids=["running", "stopped"])
def test_a_state_kept_in_meaning_continues_from_the_old_version_s_checkpoint(running):
    """Every verdict kept and the source goes on: the new version continues from the old
    version's state, cold (its checkpoint is copied once the old run stopped), its Kafka
    sources at the copied offsets; the plan says what the kept state mixes and what the copy
    costs (before: refused, as if it started empty)."""
    decision = decide_change(kafka_job(), new_ops=(op(before=("id > 1",)),), running=running)
    assert decision.action is Action.STOP_AND_START_CLEAN if running else Action.START_CLEAN
    assert decision.state.how == "continued" and not decision.state.refused
    (verdict,) = decision.state.operators
    assert verdict.verdict == "kept"
    assert "a window open at the change holds records of both" in verdict.line()
    assert "v1's checkpoint (17 files, " in decision.state.summary
    (start,) = [s for s in decision.steps if isinstance(s, StartRun)]
    assert start.continues is not None and start.starting is None and not start.prepared
    assert start.to_dict()["continues-from"] == {"query-version": 1, "checkpoint": CKPT}


def _kept(new, **kw):
    return decide_change(new, new_ops=(op(),), **kw)


@pytest.mark.parametrize(
    ("new", "declared", "why"),
    [
        (kafka_job(**{"kafka-start": "latest"}), None, "where src starts is declared"),
        (kafka_job(), "earliest", "where src starts is declared"),
        (kafka_job(sparkProperties={"spark.sql.shuffle.partitions": "8"}), None,
         "sparkProperties.spark.sql.shuffle.partitions changed"),
    ],
    ids=["kafka-start declared", "deploy's kafka-start", "pinned setting"],
)  # fmt: skip
def test_a_kept_state_does_not_continue_where_spark_s_restart_would_not_keep_it(new, declared, why):
    """A declared start, a source changed, a setting the checkpoint pins: Spark's restart would
    not do what the change says, so the new version starts with its own state, judged as
    before, and the plan says why it does not continue."""
    decision = _kept(new, declared=parse_kafka_start(declared) if declared else None)
    assert decision.state.how != "continued", decision.state.summary
    assert f"cannot continue from it ({why}" in decision.state.summary + decision.reason
    assert not any(isinstance(s, StartRun) and s.continues for s in decision.steps)


def test_a_kept_state_whose_source_changed_does_not_continue():
    options = {**KAFKA["options"], "maxOffsetsPerTrigger": "9"}
    new = make_job(sql=COUNT, tables={"src": {**KAFKA, "options": options}})
    decision = _kept(new, old=kafka_job(sql=SUMS))
    assert "cannot continue from it (its sources changed (src)" in decision.reason


def test_a_kept_state_into_another_sink_does_not_continue():
    new = kafka_job()
    new.tables["out"] = {"format": "parquet", "options": {"path": "/elsewhere"}}
    decision = _kept(new)
    assert "it writes another sink than v1" in decision.reason


def test_a_file_source_continues_only_where_the_job_asks():
    """A file source reads every file again: rebuilt, the plan saying that continuing is
    possible; with `on-state-change: continue` it continues instead of a full recompute."""
    filtered = COUNT.replace("FROM src", "FROM src WHERE id > 0")
    rebuilt = _kept(make_job(sql=filtered))
    assert rebuilt.state.how == "rebuilt"
    assert "`on-state-change: continue` would go on from it" in rebuilt.state.summary
    asked = _kept(make_job(sql=filtered, **{"on-state-change": "continue"}))
    assert asked.state.how == "continued"
    assert _kept(make_job(sql=filtered), on_state_change="continue").state.how == "continued"
    changed = decide_change(make_job(sql=SUMS, **{"on-state-change": "continue"}))
    assert changed.state.how == "rebuilt"  # a state that is not kept is rebuilt, as asked


def test_partial_windows_declared_by_the_job_start_and_say_so():
    decision = decide_change(kafka_job(**{"on-state-change": "partial"}))
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.state.how == "partial" and not decision.state.refused
    assert "accepted (the job says on-state-change: partial)" in decision.state.summary
    text = plan_text(build_plan([]).__class__((decision,)))
    assert "state: partial (on-state-change: partial)" in text
    assert "~ aggregation by id, window(ts, 30 seconds): count(*): rebuilt" in text


@pytest.mark.parametrize(
    "declared, how, words",
    [
        ("earliest", "rebuilt", "every source reads again"),
        (
            "2026-11-25T02:00:00Z",
            "rebuilt",
            "state rebuilt from where source src: it starts from 2026-11-25T02:00:00Z, as declared",
        ),
    ],
    ids=["earliest", "a-time"],
)
def test_a_start_that_reads_again_rebuilds_the_state(declared, how, words):
    for by_job in (True, False):
        new = kafka_job(**({"kafka-start": declared} if by_job else {}))
        decision = decide_change(new, declared=None if by_job else parse_kafka_start(declared))
        assert decision.action is Action.STOP_AND_START_CLEAN, decision.reason
        assert decision.state.how == how and words in decision.state.summary


def test_a_file_source_reads_every_file_again_so_its_state_is_rebuilt():
    decision = decide_change(make_job(sql=SUMS))
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.state.how == "rebuilt"


def test_a_rate_source_goes_on_so_its_windows_would_be_partial():
    new = make_job(sql=SUMS, tables={"src": dict(RATE)})
    assert decide_change(new).action is Action.REFUSED


def test_a_new_query_that_keeps_no_state_has_no_report():
    decision = decide_change(kafka_job(sql="SELECT id FROM src"), new_ops=())
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.state is None


def test_a_new_query_whose_state_cannot_be_told_is_refused_where_a_source_goes_on():
    unknown = Analysed(unknown="a code job's query is known only when it runs")
    refused = decide_change(kafka_job(), new_ops=unknown)
    assert refused.action is Action.REFUSED
    assert "whether its new query keeps state cannot be told (a code job's" in refused.reason
    assert decide_change(make_job(sql=SUMS), new_ops=unknown).state.how == "rebuilt"


def test_a_config_change_restarts_from_the_checkpoint_with_its_state():
    old = kafka_job(sql=COUNT)
    decision = decide_change(kafka_job(sql=COUNT, description="now documented"), old=old)
    assert decision.action is Action.STOP_AND_RESTART
    assert decision.state is None


def test_the_report_is_in_the_plan_s_json_and_markdown():
    decision = decide_change(kafka_job())
    doc = decision.to_dict()["state"]
    assert doc["how"] == "partial" and doc["refused"] is True
    assert doc["operators"][0]["verdict"] == "rebuilt"
    plan = build_plan([]).__class__((decision,))
    markdown = plan_markdown(plan)
    assert "State: **partial, refused**" in markdown
    assert "| `aggregation by id, window(ts, 30 seconds): count(*)` | rebuilt |" in markdown
    assert "refused` for their state would write windows partial" in markdown


def test_only_a_query_change_of_a_query_that_may_keep_state_asks_spark():
    """What the plan asks the probe: both queries of a change whose new SQL may keep state; none
    where it certainly keeps none (read without Spark), nor for a config change."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    jobs = {
        "counted": kafka_job(sql=COUNT),
        "filtered": kafka_job(sql="SELECT id, ts FROM src WHERE id > 3"),
        "described": kafka_job(sql=COUNT, description="new words"),
    }
    desired = []
    for name, job in jobs.items():
        old = kafka_job(sql=COUNT if name != "filtered" else "SELECT id, ts FROM src")
        old.spec["name"] = name
        if name == "counted":
            old.spec["sql"] = SUMS
        store.put(stored_of(old, 1))
        job.spec["name"] = name
        desired.append(job)
    asked = []

    def ask(request):
        asked.append(request)
        return {"state": {s["key"]: {"operators": [op()]} for s in request.get("state", [])}}, None

    facts = gather(desired, store, target, storage, workers=1)
    assert [f.name for f in facts if wants_state(f)] == ["counted"]
    found = with_contracts(facts, plan_lineage(facts), storage, None, ask, state_base)
    states = {f.name: f.state for f in found}
    assert states["filtered"] is None and states["described"] is None
    assert [op.describe() for op in states["counted"].new.operators] == [
        "aggregation by id, window(ts, 20 seconds): count(*)"
    ]
    sqls = sorted(s["manifest"]["sql"] for s in asked[0]["state"])
    assert sqls == sorted([COUNT, SUMS])


# -- found by review: each failed before its fix ------------------------------------------------


def code_job(code, **spec):
    job = make_job(code=code, **{"source-tables": ["src"], **spec})
    del job.spec["sql"]
    return job


def file_source(**options):
    return {"format": "json", "options": {"path": "/in", **options},
            "schema": "id BIGINT, ts TIMESTAMP"}  # fmt: skip


@pytest.mark.parametrize("clean", ["delete", "archive"])
def test_a_file_source_that_removes_what_it_read_cannot_rebuild_the_state(clean):
    new = make_job(sql=SUMS, tables={"src": file_source(cleanSource=clean)})
    decision = decide_change(new)
    assert decision.action is Action.REFUSED
    assert f"its files are removed once read (cleanSource {clean})" in decision.reason


def test_a_file_source_that_reads_another_folder_than_the_state_was_built_from_goes_on():
    """A consistent consumer following its producer to `/out/p/2` reads only what the producer's
    new version wrote: its windows open at the change would be partial."""
    old = make_job(sql=COUNT, tables={"src": file_source()})
    new = make_job(sql=SUMS, tables={"src": {**file_source(), "options": {"path": "/in/2"}}})
    decision = decide_change(new, old=old)
    assert decision.action is Action.REFUSED
    assert "it reads /in/2, not /in that the state was built from" in decision.reason


def test_a_code_job_s_unknown_state_is_said_and_judged_by_the_sources_it_declares():
    """A code job's query cannot be read before it runs: its state is unknown, said; where its
    declared sources read again the change deploys (its declared sources are its sources, as for
    lineage and the carry), where one goes on it is refused unless declared."""
    unknown = Analysed(unknown="a code job's query is known only when it runs")
    rereads = decide_change(code_job("execution_output = src"), new_ops=unknown)
    assert rereads.action is Action.STOP_AND_START_CLEAN
    assert (
        rereads.state.how == "rebuilt" and "cannot be told (a code job's" in rereads.state.summary
    )
    goes_on = code_job("execution_output = src", tables={"src": dict(RATE)})
    assert decide_change(goes_on, new_ops=unknown).action is Action.REFUSED
    accepted = code_job("execution_output = src", tables={"src": dict(RATE)},
                        **{"on-state-change": "partial"})  # fmt: skip
    assert decide_change(accepted, new_ops=unknown).action is Action.STOP_AND_START_CLEAN


def test_a_catalog_table_is_read_whole_again():
    table = {"table": "db.orders"}
    decision = decide_change(make_job(sql=SUMS, tables={"src": table}),
                             old=make_job(sql=COUNT, tables={"src": table}))  # fmt: skip
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.state.how == "rebuilt"


def test_now_minus_an_interval_not_yet_made_a_time_is_a_start_from_a_time():
    """The deploy makes it a time before the old run stops, where the plan could not read the
    store's clock."""
    decision = decide_change(kafka_job(**{"kafka-start": "now - 1 hour"}))
    assert decision.action is Action.STOP_AND_START_CLEAN, decision.reason
    assert decision.state.how == "rebuilt"


def test_a_rate_source_is_not_told_to_declare_a_kafka_start():
    decision = decide_change(make_job(sql=SUMS, tables={"src": dict(RATE)}))
    assert decision.action is Action.REFUSED
    assert "kafka-start" not in decision.reason
    assert "a rate source reads on from now" in decision.reason
    assert "accept partial windows with `on-state-change: partial` (or deploy" in decision.reason


def test_a_garbled_answer_of_the_probe_is_unknown_not_a_crash():
    for doc in (
        {"operators": [{"kind": "aggregation", "watermarks": [{"column": "ts"}]}]},
        {"operators": [{"kind": "aggregation", "watermarks": [["ts"]]}]},
        {"operators": "x"},
        {"operators": [{"kind": "join", "sides": 3}]},
    ):
        assert Analysed.from_dict(doc).unknown is not None, doc


def test_a_variable_the_old_version_named_and_no_longer_set_leaves_its_state_unknown(monkeypatch):
    monkeypatch.delenv("FSR_GONE", raising=False)
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    old = kafka_job(sql=COUNT)
    old.tables["src"]["options"]["subscribe"] = "${FSR_GONE}"
    store.put(stored_of(old, 1))
    facts = gather([kafka_job()], store, target, storage, workers=1)

    def ask(request):
        return {"state": {s["key"]: {"operators": [op()]} for s in request.get("state", [])}}, None

    (found,) = with_contracts(facts, plan_lineage(facts), storage, None, ask, state_base)
    assert "FSR_GONE" in found.state.old.unknown
    assert found.state.new.operators


def test_a_setting_pinned_on_the_target_s_spark_is_judged_with_that_spark():
    """A change of spark.sql.shuffle.partitions alone: a config change on 4.1 (SPARK-53942), a
    query change on 4.0, where the checkpoint pins it: judged on the Spark the plan decides
    with (the target's), not the one the stored version last ran on."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    old = kafka_job(sql=COUNT)
    store.put(replace(stored_of(old, 1), meta=replace(stored_of(old, 1).meta,
                                                       spark_version="4.1.0")))  # fmt: skip
    new = kafka_job(sql=COUNT, sparkProperties={"spark.sql.shuffle.partitions": "8"})
    (facts,) = gather([new], store, target, storage, workers=1)
    assert state_base(facts) is None
    assert state_base(facts, "4.0.0") is not None


def test_the_deploy_s_on_state_change_wins_over_the_job_s():
    accepted = decide_change(kafka_job(), on_state_change="partial")
    assert accepted.action is Action.STOP_AND_START_CLEAN
    assert "accepted (the deploy says on-state-change: partial)" in accepted.state.summary
    refused = decide_change(kafka_job(**{"on-state-change": "partial"}), on_state_change="refuse")
    assert refused.action is Action.REFUSED
    assert refused.state.policy_from == "the deploy"
    assert "or deploy --on-state-change partial" in refused.reason


def test_a_secret_a_filter_assigns_is_masked_in_the_state_block_as_in_the_diff():
    """Found by review: the plan masked the query's diff but printed the filter the probe read
    (`token = 'hunter2'`) in full in the state block and the JSON."""
    from flink_sql_runner.decide.decisions import Plan
    from flink_sql_runner.render.plan import plan_json

    sql = COUNT.replace("FROM src", "FROM src WHERE token = 'hunter2'")
    decision = decide_change(kafka_job(sql=sql), new_ops=(op(before=("token = 'hunter2'",)),))
    assert decision.state.how == "continued"
    assert "hunter2" not in plan_text(Plan((decision,)))
    assert "hunter2" not in plan_json(Plan((decision,)))


def test_a_table_s_own_starting_offsets_are_said_and_win_over_continuing():
    """Found by review: a Kafka table naming its own offsets (startingOffsets JSON) was said to
    start at the latest offset, and a kept change continued from v1's offsets, its start
    dropped (SPEC: a table's own startingOffsets wins)."""
    table = json.loads(json.dumps(KAFKA))
    table["options"]["startingOffsets"] = json.dumps({"orders": {"0": 100}})
    old = make_job(sql=SUMS, tables={"src": table})
    changed = decide_change(make_job(sql=COUNT, tables={"src": table}), old=old)
    assert "latest" not in changed.state.summary, changed.state.summary
    assert "the offsets its table's startingOffsets names" in changed.state.summary
    kept = decide_change(make_job(sql=COUNT, tables={"src": table}), old=old, new_ops=(op(),))
    assert kept.state.how != "continued", kept.state.summary
    assert "where src starts is declared" in kept.state.summary


# -- found by the simulation (tests/simulation/windows.py) -------------------------------------


def _window_ask(request):
    """The probe: the count, in the windows its query names, the filter before it."""

    def ops(doc):
        sql = doc["manifest"]["sql"]
        window = sql.split("window(ts, '")[1].split("'")[0]
        return {"operators": [op(window=window, before=("id > 1",) if "WHERE" in sql else ())]}

    return {"state": {s["key"]: ops(s) for s in request.get("state", [])}}, None


@pytest.mark.parametrize(
    ("sql", "how"),
    [
        (COUNT.replace("20 seconds", "30 seconds"), "refused"),
        (COUNT.replace("FROM src", "FROM src WHERE id > 1"), "continued"),
    ],  # fmt: skip
)
def test_a_first_version_recorded_by_the_plan_that_changes_its_query_is_the_state_it_judges(
    sql, how
):
    """Seed 394: v1, the job's first version, started and its deployer died before recording
    it; the next deploy recorded v1 (its run up: the start took effect) and, in the same plan,
    started v2 (its windows resized) at v1's offsets with empty state, judged against nothing:
    every window open at the change was written partial, unasked."""
    from flink_sql_runner.model.intents import IntentLog, Phase, new_intent
    from flink_sql_runner.model.runs import Run

    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    v1 = kafka_job(sql=COUNT)
    IntentLog(store).write(new_intent(stored_of(v1, 1), "start-clean", "run-1").at(Phase.HEALTHY))
    target.add_run(Run("orders", 1, "run-1", "pid 42"))
    storage.add_checkpoint(CKPT, 7)
    for batch in range(8):
        storage.files[f"{CKPT}/offsets/{batch}"] = 'v1\n{}\n{"orders": {"0": 5}}'
    facts = gather([kafka_job(sql=sql)], store, target, storage, workers=1)
    facts = with_contracts(facts, plan_lineage(facts), storage, None, _window_ask, state_base)
    (decision,) = build_plan(facts).decisions
    assert decision.state is not None, decision.reason
    if how == "refused":
        assert decision.action is Action.REFUSED and decision.steps == ()
        assert decision.state.operators[0].reasons == ("window 20 seconds -> 30 seconds",)
    else:
        (start,) = [s for s in decision.steps if isinstance(s, StartRun)]
        assert decision.state.how == "continued"
        assert start.continues is not None and start.continues.meta.query_version == 1


def test_a_kept_state_does_not_continue_onto_an_older_spark():
    """Found by review: a restart on an older Spark than the checkpoint's is refused by the
    tree, but a continued start (a restart on a copy) was made."""
    filtered = COUNT.replace("FROM src", "FROM src WHERE id > 1")
    older = decide_change(kafka_job(sql=filtered), new_ops=(op(before=("id > 1",)),),
                          spark="3.5.3", stored_spark="4.1.0")  # fmt: skip
    assert not any(isinstance(s, StartRun) and s.continues for s in older.steps), older.reason
    assert "written by Spark 4.1.0; the next run uses Spark 3.5.3, which is older" in (older.reason)
    newer = decide_change(kafka_job(sql=filtered), new_ops=(op(before=("id > 1",)),),
                          spark="4.3.0", stored_spark="4.1.0")  # fmt: skip
    assert newer.state.how == "continued"
    assert "offsets" not in newer.reason.split("state")[0], newer.reason  # no carry words


def test_a_kept_state_does_not_continue_into_another_output_mode():
    """Found by review: update -> append continued: v1 had written each open window as it
    went, and v2 wrote it again once closed (a window twice, the first partial)."""
    filtered = COUNT.replace("FROM src", "FROM src WHERE id > 1")
    old = kafka_job(sql=COUNT, outputMode="update")
    decision = decide_change(kafka_job(sql=filtered, outputMode="append"), old=old,
                             new_ops=(op(before=("id > 1",)),))  # fmt: skip
    assert "its output mode changed" in decision.reason
