"""Where a new version's Kafka sources start: what the plan decides (carried where exact,
declared, or as the table says; refused where a carry cannot be exact and nothing is declared),
what the stopped version's checkpoint gives (resolved once it stopped), and what a deploy hands
the new run."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.decisions import Action, Plan
from flink_sql_runner.decide.offsets import Refused, kafka_starts
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.gather.offsets import finished_batch, read_starts
from flink_sql_runner.migrate.convert import convert
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.offsets import CarryRefused, Starts
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.runtime import runtime_manifest
from flink_sql_runner.read.kafka_start import parse_kafka_start
from flink_sql_runner.stores.storage import StorageError
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import ROOT, fake_world, make_job, stored_of

pytestmark = pytest.mark.fast

BROKERS = "b2:9092,b1:9092"
CKPT = f"{ROOT}/orders/1"
ORDERS = {"orders": {"0": 5, "1": 7}}


def kafka(**options):
    found = {"kafka.bootstrap.servers": BROKERS, "subscribe": "orders", **options}
    return {"format": "kafka", "options": {k: v for k, v in found.items() if v is not None}}


def job(sql="SELECT id FROM src", tables=None, kafka_start=None):
    found = make_job(sql=sql, tables=tables or {"src": kafka()})
    if kafka_start is not None:
        found.spec["kafka-start"] = kafka_start
    return found


V1 = job()
V2 = job(sql="SELECT id FROM src WHERE id > 1")


def starts_of(new_job, old_job=V1, latest=(ORDERS,), declared=None):
    return kafka_starts(stored_of(old_job, 1), stored_of(new_job, 2), CKPT, latest, declared)


def offsets_file(*sources) -> str:
    return "\n".join(["v1", json.dumps({"batchWatermarkMs": 0}), *map(json.dumps, sources)])


def checkpoint(storage, committed, planned=None, sources=(ORDERS,)):
    for old in [f for f in storage.files if f.startswith(f"{CKPT}/")]:
        del storage.files[old]
    storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    for batch in range(committed + 1):
        storage.files[f"{CKPT}/offsets/{batch}"] = offsets_file(*sources)
        storage.files[f"{CKPT}/commits/{batch}"] = "v1\n{}"
    if planned is not None:
        storage.files[f"{CKPT}/offsets/{planned}"] = offsets_file({"orders": {"0": 9, "1": 9}})


def plan_one(desired, stored, running=None, sources=(ORDERS,), committed=7, declared=None):
    """The decision for `desired` against `stored` at v1, its checkpoint's batches reading
    `sources` (None: no batch)."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored)
    if running is not None:
        target.add_run(Run("orders", running, "run-1", "pid 42"))
    if sources is None:
        storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    else:
        checkpoint(storage, committed, sources=sources)
    facts = gather([desired], store, target, storage, workers=1)
    return build_plan(facts, kafka_start=declared).decisions[0]


# -- what the plan decides ----------------------------------------------------------------------
def test_same_topics_on_the_same_brokers_written_otherwise_carry():
    new = job(sql="SELECT id FROM src WHERE id > 1")
    new.tables["src"]["options"]["kafka.bootstrap.servers"] = " b1:9092, b2:9092,b1:9092"
    plan = starts_of(new)
    assert [(s.table, s.topics) for s in plan.carried] == [("src", ("orders",))]
    assert plan.describe() == "src at v1's committed offsets"
    assert plan.sink_folder == "/out"


@pytest.mark.parametrize(
    "options, why",
    [
        ({"startingOffsets": "earliest"}, "starts at its own startingOffsets (earliest)"),
        ({"startingTimestamp": "1700000000000"},
         "starts at its own startingTimestamp (1700000000000)"),
        ({"subscribe": "returns"},
         "starts at latest (Spark's default; the table sets no startingOffsets) (topics not "
         "read by v1)"),
        ({"subscribe": "returns", "kafka.bootstrap.servers": "b3:9092"},
         "(topics not read by v1)"),
    ],
    ids=["explicit-wins", "explicit-timestamp-wins", "other-topics", "other-topics-elsewhere"],
)  # fmt: skip
def test_a_source_that_reads_nothing_of_v1_or_says_its_own_start_starts_as_its_table_says(
    options, why
):
    plan = starts_of(job(sql="SELECT id FROM src WHERE id > 1", tables={"src": kafka(**options)}))
    assert plan.carried == ()
    assert why in plan.describe()


def test_a_job_without_kafka_sources_has_no_starts():
    assert (
        kafka_starts(stored_of(make_job(), 1), stored_of(make_job(sql="SELECT 1"), 2), CKPT, ())
        is None
    )


def test_the_plan_says_where_a_new_version_starts():
    decision = plan_one(V2, stored_of(V1), running=1)
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.reason.endswith("; src at v1's committed offsets")
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    doc = start.to_dict()["starting-offsets"]
    assert doc["from-version"] == 1 and doc["checkpoint"] == CKPT
    assert doc["tables"] == ["src"] and doc["not-carried"] == {}
    assert doc["sources"]["src"]["start"] == "carried"
    restart = plan_one(V1, stored_of(V1), running=None)
    assert restart.action is Action.RESTART  # from the checkpoint: Spark keeps its offsets
    assert all(getattr(s, "starting", None) is None for s in restart.steps)


TWO_TABLES = {"a": kafka(), "b": kafka()}
#: Issue 39, finding 2: each a case where the plan promised carried offsets and the deploy
#: started at `latest`, exit 0.
NOT_EXACT = [
    # two tables read one topic (or a self-join): two offsets lines for one topic
    (
        job(sql="SELECT id FROM a UNION ALL SELECT id FROM b", tables=TWO_TABLES),
        job(sql="SELECT id FROM a UNION ALL SELECT id FROM b WHERE id > 1", tables=TWO_TABLES),
        (ORDERS, ORDERS),
        "v1 read its topics through 2 tables (a, b)",
    ),
    (
        V1,
        job(sql="SELECT x.id FROM src x JOIN src y ON x.id = y.id"),
        (ORDERS, ORDERS),
        "has 2 offsets for orders",
    ),
    # the previous version committed no batch
    (V1, V2, None, "v1 committed no batch"),
    # a subscribed topic missing from the offsets line
    (
        job(tables={"src": kafka(subscribe="orders,returns")}),
        job(sql="SELECT 2 AS id FROM src", tables={"src": kafka(subscribe="orders,returns")}),
        (ORDERS,),
        "returns is not in v1's latest batch's offsets",
    ),
    # a topic removed from the subscription
    (
        job(tables={"src": kafka(subscribe="orders,returns")}),
        V2,
        ({**ORDERS, "returns": {"0": 3}},),
        "returns is no longer read",
    ),
    # a topic added to the subscription
    (
        V1,
        job(sql="SELECT 2 AS id FROM src", tables={"src": kafka(subscribe="orders,returns")}),
        (ORDERS,),
        "returns was not read by the previous version",
    ),
]
NOT_EXACT_IDS = ["two-tables", "self-join", "nothing-committed", "missing", "removed", "added"]


@pytest.mark.parametrize("old, new, lines, why", NOT_EXACT, ids=NOT_EXACT_IDS)
@pytest.mark.parametrize("running", [1, None], ids=["running", "stopped"])
def test_a_carry_that_cannot_be_exact_refuses_the_job_before_anything_stops(
    old, new, lines, why, running
):
    decision = plan_one(new, stored_of(old), running=running, sources=lines)
    assert decision.action is Action.ERROR, decision.reason
    assert why in decision.reason
    assert "where its Kafka sources start cannot be carried exactly" in decision.reason
    assert "kafka-start" in decision.reason and "nothing is stopped or started" in decision.reason
    assert decision.steps == ()


@pytest.mark.parametrize("old, new, lines, why", NOT_EXACT, ids=NOT_EXACT_IDS)
def test_a_deploy_s_declared_start_lets_it_through_and_the_plan_says_each_source_s_start(
    old, new, lines, why
):
    declared = parse_kafka_start("now - 10 minutes")
    decision = plan_one(new, stored_of(old), running=1, sources=lines, declared=declared)
    assert decision.action is Action.STOP_AND_START_CLEAN, decision.reason
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    assert start.starting is not None
    for source in start.starting.sources:
        assert f"{source.table} from now - 10 minutes (deploy --kafka-start)" in decision.reason


def test_a_job_s_declared_carry_takes_what_can_be_carried_and_the_rest_from_the_earliest():
    removed = job(tables={"src": kafka(subscribe="orders,returns")})
    added = job(sql="SELECT 2 AS id FROM src", kafka_start="carry",
                tables={"src": kafka(subscribe="orders,payments")})  # fmt: skip
    decision = plan_one(added, stored_of(removed), sources=({**ORDERS, "returns": {"0": 3}},))
    assert decision.action is Action.START_CLEAN, decision.reason
    assert "src at v1's committed offsets where it read them, the rest from the earliest" in (
        decision.reason
    )
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    found = read_starts(checkpointed({**ORDERS, "returns": {"0": 3}}), start.starting)
    assert found.by_table["src"] == {
        "options": {"startingOffsets": json.dumps(ORDERS)},
        "new-partitions": "earliest",
    }
    assert "src: payments was not read by the previous version: from its earliest offset" in (
        found.notes
    )


def test_a_declared_carry_is_refused_where_there_is_nothing_to_carry():
    decision = plan_one(job(kafka_start={"src": "carry"}, sql="SELECT 3 AS id FROM src"),
                        stored_of(V1), sources=(ORDERS, ORDERS))  # fmt: skip
    assert decision.action is Action.ERROR and "has 2 offsets for orders" in decision.reason


def test_a_job_declares_a_start_per_table_and_a_deploy_s_wins_over_it():
    both = {"a": kafka(), "b": kafka(subscribe="returns")}
    old = job(sql="SELECT id FROM a UNION ALL SELECT id FROM b", tables=both)
    new = job(sql="SELECT id FROM a UNION ALL SELECT 1 AS id FROM b", tables=both,
              kafka_start={"b": "2026-11-25T02:00:00Z"})  # fmt: skip
    lines = (ORDERS, {"returns": {"0": 1}})
    decision = plan_one(new, stored_of(old), sources=lines)
    assert decision.reason.endswith(
        "; a at v1's committed offsets; b from 2026-11-25T02:00:00Z (the job's kafka-start)"
    )
    decision = plan_one(new, stored_of(old), sources=lines, declared=parse_kafka_start("latest"))
    assert decision.reason.endswith(
        "; a from latest (deploy --kafka-start); b from latest (deploy --kafka-start)"
    )


# -- what the stopped version's checkpoint gives ------------------------------------------------
def checkpointed(*sources, committed=2) -> FakeStorage:
    storage = FakeStorage()
    checkpoint(storage, committed=committed, sources=sources)
    return storage


def test_the_last_committed_batch_counts_unless_the_file_sink_holds_the_next():
    storage = FakeStorage()
    checkpoint(storage, committed=3, planned=4)
    assert finished_batch(storage, CKPT, "/out") == 3
    # A file sink commits its log before the checkpoint commits the batch: a run killed in
    # between wrote batch 4, so v2 must start after it, not read it again.
    storage.files["/out/_spark_metadata/4"] = "v1"
    assert finished_batch(storage, CKPT, "/out") == 4
    # Written with shifted ids (the sink held 10 batches of an earlier version): 4 is 14.
    storage.files[f"{CKPT}/flink-sql-runner-sink.json"] = json.dumps(
        {"segments": [[0, 10]], "sink-path": "/out"}
    )
    assert finished_batch(storage, CKPT, "/out") == 3
    storage.files["/out/_spark_metadata/14"] = "v1"
    assert finished_batch(storage, CKPT, "/out") == 4
    del storage.files[f"{CKPT}/flink-sql-runner-sink.json"]
    assert finished_batch(storage, CKPT, None) == 3  # a Kafka sink: the commit counts


def test_starts_are_the_finished_batch_s_offsets_and_new_partitions_start_earliest():
    storage = checkpointed({"other": {"0": 1}}, {"orders": {"1": 7, "0": 5}})
    found = read_starts(storage, starts_of(V2))
    assert found.by_table == {
        "src": {"options": {"startingOffsets": json.dumps(ORDERS)}, "new-partitions": "earliest"}
    }
    assert found.notes == ("src starts at v1's batch 2: orders[0:5,1:7]",)


def test_a_carry_not_exact_once_v1_stopped_is_refused_not_started_at_latest():
    storage = FakeStorage()
    storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    with pytest.raises(CarryRefused, match="v1 committed no batch"):
        read_starts(storage, starts_of(V2))
    checkpoint(storage, committed=0, sources=({"returns": {"0": 1}},))
    with pytest.raises(CarryRefused, match="v1's batch 0 has no offsets for orders"):
        read_starts(storage, starts_of(V2))


def test_an_unreadable_sink_record_is_an_error_not_a_guess():
    storage = FakeStorage()
    checkpoint(storage, committed=1, planned=2)
    storage.files[f"{CKPT}/flink-sql-runner-sink.json"] = "{not json"
    with pytest.raises(StorageError, match="cannot be told"):
        read_starts(storage, starts_of(V2))


def test_declared_starts_become_spark_s_options_and_now_minus_is_made_a_time_once():
    plan = starts_of(V2, declared=parse_kafka_start("now - 1 hour")).at(1_700_000_000_000)
    [source] = plan.sources
    assert source.start is not None and source.start.ms == 1_700_000_000_000 - 3_600_000
    assert source.start.text == "now - 1 hour (2023-11-14T21:13:20Z)"
    found = read_starts(FakeStorage(), plan)
    assert found.by_table["src"]["options"] == {
        "startingTimestamp": str(1_700_000_000_000 - 3_600_000),
        "startingOffsetsByTimestampStrategy": "latest",
    }
    assert plan.at(1_800_000_000_000) == plan  # made a time once: later, it stays


def test_the_runtime_manifest_gives_the_source_its_start():
    manifest = stored_of(V2, 2)
    spec = {"options": {"startingOffsets": '{"orders": {"0": 5}}'}, "new-partitions": "earliest"}
    doc = runtime_manifest(
        manifest, "r", ControlFiles.of(f"{ROOT}/orders", 2), "x", Starts({"src": spec})
    )
    assert doc["tables"]["src"]["start"] == spec
    assert "startingOffsets" not in manifest.tables["src"]["options"]  # not stored


# -- what a deploy does -------------------------------------------------------------------------
def test_a_deploy_starts_the_new_version_where_the_old_one_stopped():
    store, target, state, executor = fake_world()
    store.put(stored_of(V1))
    checkpoint(state, committed=4)
    decision = plan_one(V2, stored_of(V1), running=None)
    assert decision.action is Action.START_CLEAN
    result = executor.apply(Plan((decision,)))["orders"]
    written = json.loads(state.files[f"{ROOT}/orders/_control/v2.manifest.json"])
    assert written["tables"]["src"]["start"] == {
        "options": {"startingOffsets": json.dumps(ORDERS)},
        "new-partitions": "earliest",
    }
    assert "src starts at v1's batch 4: orders[0:5,1:7]" in result.steps


def test_a_checkpoint_that_cannot_be_read_starts_nothing_in_its_place():
    store, target, state, executor = fake_world()
    store.put(stored_of(V1))
    checkpoint(state, committed=4, planned=5)
    state.files[f"{CKPT}/flink-sql-runner-sink.json"] = "{not json"
    decision = plan_one(V2, stored_of(V1), running=None)
    result = executor.apply(Plan((decision,)))["orders"]
    assert target.submissions == []
    assert "cannot read where v1 stopped" in " ".join(result.steps + [result.summary])


def test_a_carry_that_is_no_longer_exact_once_v1_stopped_rolls_back():
    """Planned on v1's latest batch, found otherwise in the batch it finished (a topic that
    appeared in the subscription meanwhile): refused then, not started at `latest`."""
    store, target, state, executor = fake_world()
    store.put(stored_of(V1))
    checkpoint(state, committed=4)
    decision = plan_one(V2, stored_of(V1), running=None)
    checkpoint(state, committed=5, sources=(ORDERS, ORDERS))
    result = executor.apply(Plan((decision,)))["orders"]
    assert target.submissions == [] and not result.ok
    assert "src cannot start where v1 stopped: v1's batch 5 has 2 offsets for orders" in (
        result.summary
    )


def test_refusals_are_a_plain_value():
    assert isinstance(starts_of(V2, latest=None), Refused)


# -- issue 52, finding 2: a declared start applies to a job's first version too -------------
def first_plan(desired, declared=None, forgotten_up_to=0):
    """The decision for `desired` with nothing stored of it; checkpoint folders up to
    `forgotten_up_to` left by a version `forget` archived."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    for version in range(1, forgotten_up_to + 1):
        storage.files[f"{ROOT}/orders/{version}/metadata"] = json.dumps({"id": "x"})
    facts = gather([desired], store, target, storage, workers=1)
    return build_plan(facts, kafka_start=declared).decisions[0]


@pytest.mark.parametrize(
    "kafka_start, declared, forgotten, said, options",
    [
        ("earliest", None, 0, "src from earliest (the job's kafka-start)",
         {"startingOffsets": "earliest"}),
        (None, "2026-11-25T02:00:00Z", 0, "src from 2026-11-25T02:00:00Z (deploy --kafka-start)",
         {"startingTimestamp": "1795572000000", "startingOffsetsByTimestampStrategy": "latest"}),
        ({"src": "earliest"}, None, 3, "src from earliest (the job's kafka-start)",
         {"startingOffsets": "earliest"}),
    ],
    ids=["job-earliest", "deploy-timestamp", "after-forget-v4"],
)  # fmt: skip
def test_a_declared_start_applies_to_a_job_s_first_version(
    kafka_start, declared, forgotten, said, options
):
    """Before: the plan said "new job", the run got no start, and the source began at Spark's
    default, `latest`, exit 0."""
    desired = job(kafka_start=kafka_start)
    found = parse_kafka_start(declared) if declared else None
    decision = first_plan(desired, found, forgotten)
    assert decision.action is Action.START_CLEAN and decision.version == forgotten + 1
    assert decision.reason.endswith(said), decision.reason
    store, target, state, executor = fake_world()
    for version in range(1, forgotten + 1):
        state.files[f"{ROOT}/orders/{version}/metadata"] = json.dumps({"id": "x"})
    result = executor.apply(Plan((decision,)))["orders"]
    assert result.ok, result
    written = json.loads(state.files[f"{ROOT}/orders/_control/v{forgotten + 1}.manifest.json"])
    assert written["tables"]["src"]["start"] == {"options": options}


def test_a_first_version_names_every_source_s_start_and_a_carry_it_cannot_make():
    decision = first_plan(job())
    assert decision.reason == (
        "new job; src starts at latest (Spark's default; the table sets no startingOffsets)"
    )
    decision = first_plan(job(kafka_start="carry"))
    assert decision.reason == (
        "new job; src starts at latest (Spark's default; the table sets no startingOffsets) "
        "(the job's kafka-start says carry, but v1 is its first version: nothing to carry)"
    )
    own = job(tables={"src": kafka(startingOffsets="earliest")})
    assert first_plan(own).reason == "new job; src starts at its own startingOffsets (earliest)"


# -- issue 52, finding 3: brokers changed for the same topics ------------------------------
def test_a_broker_added_to_the_list_is_the_same_cluster_and_carries():
    """Before: "other brokers than v1", the source started at `latest`: what v1 had not read
    and what arrived during the handover was skipped, exit 0."""
    servers = {"kafka.bootstrap.servers": "b1:9092,b2:9092,b3:9092"}
    added = job(sql="SELECT id FROM src WHERE id > 1", tables={"src": kafka(**servers)})
    decision = plan_one(added, stored_of(V1), running=1)
    assert decision.action is Action.STOP_AND_START_CLEAN, decision.reason
    assert decision.reason.endswith("; src at v1's committed offsets")
    removed = job(sql="SELECT id FROM src WHERE id > 1",
                  tables={"src": kafka(**{"kafka.bootstrap.servers": "b2:9092"})})  # fmt: skip
    assert plan_one(removed, stored_of(V1), running=1).reason.endswith(
        "; src at v1's committed offsets"
    )


@pytest.mark.parametrize("running", [1, None], ids=["running", "stopped"])
def test_the_same_topics_on_brokers_v1_never_named_are_refused_unless_declared(running):
    moved = job(sql="SELECT id FROM src WHERE id > 1",
                tables={"src": kafka(**{"kafka.bootstrap.servers": "c1:9092"})})  # fmt: skip
    decision = plan_one(moved, stored_of(V1), running=running)
    assert decision.action is Action.ERROR and decision.steps == ()
    assert (
        "src reads orders from c1:9092, none of the brokers v1 read them from "
        "(b1:9092,b2:9092): whether it is the same cluster cannot be told"
    ) in decision.reason
    declared = plan_one(moved, stored_of(V1), running=running,
                        declared=parse_kafka_start("earliest"))  # fmt: skip
    assert declared.reason.endswith("; src from earliest (deploy --kafka-start)")
    carry = job(sql="SELECT id FROM src WHERE id > 1", kafka_start="carry",
                tables={"src": kafka(**{"kafka.bootstrap.servers": "c1:9092"})})  # fmt: skip
    assert plan_one(carry, stored_of(V1), running=running).reason.endswith(
        "; src from earliest (the job's kafka-start; v1 read them from other brokers)"
    )


# -- the hostile review of issue 52 ----------------------------------------------------------
def test_a_timestamp_strategy_alone_is_not_a_start_of_its_own():
    """Review 2: `startingOffsetsByTimestampStrategy` only says what a startingTimestamp that
    finds no offset does; alone, a new query starts at `latest`. Before: taken as the table's
    own start, nothing carried, what arrived during the change lost."""
    strategy = kafka(startingOffsetsByTimestampStrategy="latest")
    decision = plan_one(job(sql="SELECT id FROM src WHERE id > 1", tables={"src": strategy}),
                        stored_of(job(tables={"src": strategy})), running=1)  # fmt: skip
    assert decision.reason.endswith("; src at v1's committed offsets"), decision.reason
    assert first_plan(job(tables={"src": strategy})).reason == (
        "new job; src starts at latest (Spark's default; the table sets no startingOffsets)"
    )


@pytest.mark.parametrize("how", ["job", "deploy"])
def test_a_job_migrated_from_the_original_tool_starts_its_first_spark_version_as_declared(how):
    """Review 3: a converted manifest names no checkpoint of Spark's, so its first version on
    Spark carries nothing. Before: its declared start was dropped and the plan named none (the
    source started at `latest`)."""
    original = {
        "name": "orders", "description": "all orders", "target-table": "out",
        "sql": "SELECT id, ts FROM src WHERE id > 0",
        "flinkProperties": {"parallelism.default": "2"},
        "meta": {"query-id": "q-1", "query-version": 3,
                 "query-create-timestamp": "2022-12-07 08:57:42"},
    }  # fmt: skip
    converted, problems = convert(original, "orders", "memory://store/orders.yaml")
    assert not problems, problems
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(converted.manifest)
    desired = job(kafka_start="earliest" if how == "job" else None)
    declared = parse_kafka_start("earliest") if how == "deploy" else None
    facts = gather([desired], store, target, storage, workers=1)
    decision = build_plan(facts, kafka_start=declared).decisions[0]
    assert decision.action is Action.START_CLEAN and decision.version == 4, decision.reason
    by = "deploy --kafka-start" if how == "deploy" else "the job's kafka-start"
    assert decision.reason.endswith(f"; src from earliest ({by})"), decision.reason
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    assert start.starting is not None and start.starting.version is None
