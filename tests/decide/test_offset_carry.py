"""A new version's Kafka sources start where the previous version stopped: which ones (decided
from the two manifests), what offsets (read from the stopped version's checkpoint), and what a
deploy hands the new run."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.decisions import Action, Plan
from flink_sql_runner.decide.offsets import offset_carry
from flink_sql_runner.decide.steps import StartRun
from flink_sql_runner.gather.offsets import finished_batch, starting_offsets
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runtime import runtime_manifest
from flink_sql_runner.stores.storage import StorageError
from tests.decide.test_tree import plan_one
from tests.support.fakes import FakeStorage
from tests.support.jobs import ROOT, fake_world, make_job, stored_of

pytestmark = pytest.mark.fast

BROKERS = "b2:9092,b1:9092"
CKPT = f"{ROOT}/orders/1"


def kafka(**options):
    return {
        "format": "kafka",
        "options": {"kafka.bootstrap.servers": BROKERS, "subscribe": "orders", **options},
    }


def job(sql="SELECT id FROM src", **source_options):
    return make_job(sql=sql, tables={"src": kafka(**source_options)})


V1 = job()
V2 = job(sql="SELECT id FROM src WHERE id > 1")


def carry_of(new_job, old_job=V1):
    return offset_carry(stored_of(old_job, 1), stored_of(new_job, 2), CKPT)


def test_same_topics_on_the_same_brokers_written_otherwise_carry():
    new = job(sql="SELECT id FROM src WHERE id > 1")
    new.tables["src"]["options"]["kafka.bootstrap.servers"] = " b1:9092, b2:9092,b1:9092"
    carry = carry_of(new)
    assert [(s.table, s.topics) for s in carry.sources] == [("src", ("orders",))]
    assert carry.describe() == "src at v1's committed offsets"
    assert carry.sink_folder == "/out"


@pytest.mark.parametrize(
    "options, why",
    [
        ({"startingOffsets": "earliest"}, "starts at its own startingOffsets"),
        ({"subscribe": "orders,returns"}, "other topics than v1"),
        ({"kafka.bootstrap.servers": "b3:9092"}, "other brokers than v1"),
        ({"subscribe": None, "subscribePattern": "ord.*"}, "a subscribePattern"),
    ],
    ids=["explicit-wins", "other-topics", "other-brokers", "pattern"],
)
def test_a_source_that_reads_something_else_starts_as_its_table_says(options, why):
    new = job(sql="SELECT id FROM src WHERE id > 1")
    for key, value in options.items():
        if value is None:
            new.tables["src"]["options"].pop(key)
        else:
            new.tables["src"]["options"][key] = value
    carry = carry_of(new)
    assert carry.sources == ()
    assert why in carry.describe()


def test_a_job_without_kafka_sources_carries_nothing():
    assert (
        offset_carry(stored_of(make_job(), 1), stored_of(make_job(sql="SELECT 1"), 2), CKPT) is None
    )


def test_the_plan_says_where_a_new_version_starts():
    decision = plan_one(V2, stored_of(V1), running=1, checkpoint_batch=7)
    assert decision.action is Action.STOP_AND_START_CLEAN
    assert decision.reason.endswith("; src at v1's committed offsets")
    start = next(s for s in decision.steps if isinstance(s, StartRun))
    assert start.to_dict()["starting-offsets"] == {
        "from-version": 1,
        "checkpoint": CKPT,
        "tables": ["src"],
        "not-carried": {},
    }
    restart = plan_one(V1, stored_of(V1), running=None, checkpoint_batch=7)
    assert restart.action is Action.RESTART  # from the checkpoint: Spark keeps its offsets
    assert all(getattr(s, "carry", None) is None for s in restart.steps)


def offsets_file(*sources) -> str:
    return "\n".join(["v1", json.dumps({"batchWatermarkMs": 0}), *map(json.dumps, sources)])


def checkpoint(storage, committed, planned=None, sources=({"orders": {"0": 5, "1": 7}},)):
    storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    for batch in range(committed + 1):
        storage.files[f"{CKPT}/offsets/{batch}"] = offsets_file(*sources)
        storage.files[f"{CKPT}/commits/{batch}"] = "v1\n{}"
    if planned is not None:
        storage.files[f"{CKPT}/offsets/{planned}"] = offsets_file({"orders": {"0": 9, "1": 9}})


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


def test_starting_offsets_are_the_finished_batch_s_per_topic():
    storage = FakeStorage()
    checkpoint(storage, committed=2, sources=({"other": {"0": 1}}, {"orders": {"1": 7, "0": 5}}))
    found = starting_offsets(storage, carry_of(V2))
    assert found.by_table == {"src": '{"orders": {"0": 5, "1": 7}}'}
    assert found.notes == ("src starts at v1's batch 2: orders[0:5,1:7]",)


def test_without_a_committed_batch_or_the_topic_the_table_says():
    storage = FakeStorage()
    storage.files[f"{CKPT}/metadata"] = json.dumps({"id": "x"})
    found = starting_offsets(storage, carry_of(V2))
    assert found.by_table == {}
    assert found.notes == ("src starts as its table says: v1 committed no batch",)
    checkpoint(storage, committed=0, sources=({"returns": {"0": 1}},))
    assert "has no offsets for orders" in starting_offsets(storage, carry_of(V2)).notes[0]


def test_an_unreadable_sink_record_is_an_error_not_a_guess():
    storage = FakeStorage()
    checkpoint(storage, committed=1, planned=2)
    storage.files[f"{CKPT}/flink-sql-runner-sink.json"] = "{not json"
    with pytest.raises(StorageError, match="cannot be told"):
        starting_offsets(storage, carry_of(V2))


def test_the_runtime_manifest_gives_the_source_its_starting_offsets():
    manifest = stored_of(V2, 2)
    doc = runtime_manifest(
        manifest, "r", ControlFiles.of(f"{ROOT}/orders", 2), "x", {"src": '{"orders": {"0": 5}}'}
    )
    assert doc["tables"]["src"]["options"]["startingOffsets"] == '{"orders": {"0": 5}}'
    assert "startingOffsets" not in manifest.tables["src"]["options"]  # not stored


def test_a_deploy_starts_the_new_version_where_the_old_one_stopped():
    store, target, state, executor = fake_world()
    store.put(stored_of(V1))
    checkpoint(state, committed=4)
    decision = plan_one(V2, stored_of(V1), running=None, checkpoint_batch=None)
    assert decision.action is Action.START_CLEAN
    result = executor.apply(Plan((decision,)))["orders"]
    written = json.loads(state.files[f"{ROOT}/orders/_control/v2.manifest.json"])
    assert written["tables"]["src"]["options"]["startingOffsets"] == '{"orders": {"0": 5, "1": 7}}'
    assert "src starts at v1's batch 4: orders[0:5,1:7]" in result.steps


def test_a_checkpoint_that_cannot_be_read_starts_nothing_in_its_place():
    store, target, state, executor = fake_world()
    store.put(stored_of(V1))
    checkpoint(state, committed=4, planned=5)
    state.files[f"{CKPT}/flink-sql-runner-sink.json"] = "{not json"
    decision = plan_one(V2, stored_of(V1), running=None, checkpoint_batch=None)
    result = executor.apply(Plan((decision,)))["orders"]
    assert target.submissions == []
    assert "cannot read where v1 stopped" in " ".join(result.steps + [result.summary])
