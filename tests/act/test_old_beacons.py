"""A version replaced for good leaves no status beacon behind: `watch` lists one folder of
beacons per checkpoint root each look, so each job keeps one key there, not one per version it
ever had. On fakes, warm and cold."""

from __future__ import annotations

import pytest

from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.model.control import beacon_location
from flink_sql_runner.stores.storage import StorageError
from tests.support.fakes import write_beacon, write_beat
from tests.support.jobs import BASE, CONFIG, QUERY, ROOT, fake_world


def deploy(world, job, handover):
    store, target, state, executor = world
    facts = gather([job], store, target, state, workers=1)
    results = executor.apply(build_plan(facts, handover=handover))
    assert results["orders"].ok, results["orders"]
    return results["orders"]


@pytest.mark.parametrize("handover", ["warm", "cold"])
def test_a_query_change_deletes_the_old_versions_beacon_once_the_new_one_is_recorded(handover):
    world = fake_world()
    store, _, state, _ = world
    deploy(world, BASE, handover)
    write_beacon(state, ROOT, "orders", 1, "run-1")
    deploy(world, CONFIG, handover)  # the same version: its new run starts its beacon over
    v1 = write_beacon(state, ROOT, "orders", 1, "run-2")
    deploy(world, CONFIG, handover)  # nothing to do
    assert v1 in state.files
    result = deploy(world, QUERY, handover)
    assert "recorded v2" in result.steps
    assert store.manifests["orders"].meta.query_version == 2
    assert v1 not in state.files and v1 in state.deleted


@pytest.mark.parametrize("handover", ["warm", "cold"])
def test_a_beat_file_goes_with_its_beacon_at_a_start_and_once_its_version_is_replaced(handover):
    """On a local folder or HDFS a run keeps a beat file beside its beacon: a new run of the
    version starts without the last run's, and a replaced version leaves neither behind."""
    world = fake_world()
    store, _, state, _ = world
    deploy(world, BASE, handover)
    files = [write_beacon(state, ROOT, "orders", 1, "run-1"), write_beat(state, ROOT, "orders", 1)]
    assert files[1] == f"{ROOT}/_status/orders.v1.beat"
    deploy(world, CONFIG, handover)  # the same version: its new run starts both over
    assert set(files) <= set(state.deleted) and not set(files) & set(state.files)
    state.deleted.clear()
    files = [write_beacon(state, ROOT, "orders", 1, "run-2"), write_beat(state, ROOT, "orders", 1)]
    deploy(world, QUERY, handover)
    assert store.manifests["orders"].meta.query_version == 2
    assert set(files) <= set(state.deleted) and not set(files) & set(state.files)


def test_on_s3_no_beat_file_is_asked_for_nor_deleted():
    """S3's listing keeps a beacon's ETag across rewrites of the same bytes: the beacon is its
    own heartbeat there, and no request goes to a beat file that is not."""
    from flink_sql_runner.model.control import ControlFiles

    on_s3 = ControlFiles.of("s3a://bucket/ckpt/orders", 3)
    assert on_s3.beacon == "s3a://bucket/ckpt/_status/orders.v3.json" and on_s3.beat == ""
    on_hdfs = ControlFiles.of("hdfs://nn:8020/ckpt/orders", 3)
    assert on_hdfs.beat == "hdfs://nn:8020/ckpt/_status/orders.v3.beat"
    assert ControlFiles.of("/ckpt/orders", 3).beat == "/ckpt/_status/orders.v3.beat"


def test_a_beacon_that_cannot_be_deleted_fails_nothing():
    world = fake_world()
    _, _, state, _ = world
    deploy(world, BASE, "cold")
    v1 = write_beacon(state, ROOT, "orders", 1, "run-1")
    deletes = state.delete

    def refuse_the_beacon(location):
        if location == v1:
            raise StorageError(f"cannot delete {location}: SlowDown (HTTP 503)")
        return deletes(location)

    state.delete = refuse_the_beacon
    result = deploy(world, QUERY, "cold")
    assert result.summary.endswith("manifest recorded"), result.summary
    assert v1 in state.files
    assert beacon_location(ROOT, "orders", 2) != v1


@pytest.mark.parametrize("handover", ["warm", "cold"])
def test_a_beacon_that_cannot_be_deleted_fails_no_start_and_no_go(handover):
    """A start (and a warm handover's go) deletes the version's beacon before the new run
    writes its own; a storage that answers 503 there must not fail the start: the leftover is a
    run's that is gone, overwritten by the new run within a heartbeat."""
    world = fake_world()
    store, _, state, _ = world
    deletes = state.delete

    def refuse_beacons(location):
        if "/_status/" in location:
            raise StorageError(f"cannot delete {location}: SlowDown (HTTP 503)")
        return deletes(location)

    state.delete = refuse_beacons
    deploy(world, BASE, handover)
    result = deploy(world, CONFIG, handover)  # a restart: warm, a prepared run and its go
    assert result.summary.endswith("manifest recorded"), result.summary
    assert store.manifests["orders"].job["description"] == CONFIG.spec["description"]
