"""A stored version whose checkpoint holds only its query id (its first run was stopped before it
planned a batch): Spark starts such a checkpoint as a new query, so the deploy restarts from it
where that is the version's clean start again, and refuses, saying what happened, where a Kafka
source would start at `latest` instead of where the previous version stopped."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.decide.steps import Record, StartRun
from flink_sql_runner.gather.checkpoint_reader import inspect_checkpoint
from flink_sql_runner.gather.facts import gather
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import BASE, CONFIG, ROOT, make_job, stored_of

pytestmark = pytest.mark.fast

WHERE = f"{ROOT}/orders/3"


def kafka(**options):
    return {
        "format": "kafka",
        "options": {"kafka.bootstrap.servers": "k1:9092", "subscribe": "orders", **options},
    }


def decide_on(desired, stored_job, files: dict[str, str]):
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    stored = stored_of(stored_job, 3)
    store.put(stored)
    storage.files.update({f"{WHERE}/{name}": text for name, text in files.items()})
    return build_plan(gather([desired], store, target, storage, workers=1)).decisions[0]


METADATA_ONLY = {"metadata": json.dumps({"id": "q-3"})}


@pytest.mark.parametrize(
    "files, valid, unplanned",
    [
        (METADATA_ONLY, False, True),
        ({**METADATA_ONLY, "flink-sql-runner-sink.json": "{}"}, False, True),
        ({**METADATA_ONLY, "offsets/0": "v1\n{}\n{}"}, True, False),
        ({**METADATA_ONLY, "commits/0": "v1\n{}"}, False, False),
        ({"metadata": "{}"}, False, False),
        ({"metadata": "not json"}, False, False),
    ],
    ids=["metadata-only", "with-sink-record", "planned", "commit-only", "no-id", "junk"],
)
def test_inspect_tells_a_checkpoint_that_planned_no_batch(files, valid, unplanned):
    storage = FakeStorage()
    storage.files.update({f"{WHERE}/{name}": text for name, text in files.items()})
    info = inspect_checkpoint(storage, WHERE)
    assert (info.valid, info.unplanned) == (valid, unplanned)


def test_an_empty_folder_is_not_taken_for_an_unplanned_checkpoint():
    info = inspect_checkpoint(FakeStorage(), WHERE)
    assert (info.exists, info.unplanned) == (False, False)


@pytest.mark.parametrize("desired", [BASE, CONFIG], ids=["unchanged", "config-change"])
def test_file_sources_restart_from_it_as_the_clean_start_did(desired):
    decision = decide_on(desired, BASE, METADATA_ONLY)
    assert decision.action is Action.RESTART
    assert decision.version == 3
    assert "v3's first run was stopped before it planned a batch" in decision.reason
    assert f"{WHERE} holds its query id, no offsets or commits" in decision.reason
    assert "Spark starts as new, every source at its configured start" in decision.reason
    start, record = decision.steps
    assert isinstance(start, StartRun) and not start.clean and start.starting is None
    assert start.manifest.meta.query_version == 3
    assert isinstance(record, Record) and record.manifest.meta.query_version == 3
    if desired is CONFIG:
        assert decision.reason.startswith("not running; config changed (description);")


def test_a_kafka_source_at_its_default_is_refused_saying_what_happened_and_what_to_do():
    job = make_job(tables={"src": kafka()})
    decision = decide_on(job, job, METADATA_ONLY)
    assert decision.action is Action.ERROR
    assert decision.version == 3
    assert "v3's first run was stopped before it planned a batch" in decision.reason
    assert "Kafka source src at its table's startingOffsets (default latest)" in decision.reason
    assert "set startingOffsets on src" in decision.reason
    assert not decision.steps


def test_a_kafka_source_with_its_own_starting_offsets_restarts():
    stored = make_job(tables={"src": kafka()})
    desired = make_job(tables={"src": kafka(startingOffsets='{"orders": {"0": 42}}')})
    decision = decide_on(desired, stored, METADATA_ONLY)
    assert decision.action is Action.RESTART
    assert decision.steps[0].manifest.tables["src"]["options"]["startingOffsets"] == (
        '{"orders": {"0": 42}}'
    )


def test_a_checkpoint_without_a_query_id_is_still_refused():
    decision = decide_on(BASE, BASE, {"metadata": "{}"})
    assert decision.action is Action.ERROR
    assert "no valid checkpoint" in decision.reason
