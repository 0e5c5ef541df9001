"""`watch` reads the runs' status beacons through one listing per checkpoint root and reads a
beacon again only when its content changed (`watch/beacons.py`); the listing's modification
token is the heartbeat. Counted on the in-memory storage, which fails and lags on cue."""

from __future__ import annotations

import json

import pytest

from flink_sql_runner.model.control import LONG_BATCH_SECONDS, beacon_location
from flink_sql_runner.watch.metrics import Metrics
from flink_sql_runner.watch.stalls import UNREADABLE
from flink_sql_runner.watch.watcher import WatchSettings
from runner import status as runner_status
from tests.support.fakes import write_beacon
from tests.support.jobs import ROOT, make_job
from tests.support.watch_world import World, status_of

JOBS = 40
NAMES = [f"job{i:02d}" for i in range(JOBS)]


def test_the_runner_counts_long_batches_as_the_watcher_reads_them() -> None:
    assert runner_status.LONG_BATCH_SECONDS == LONG_BATCH_SECONDS


def world_of(names: list[str] = NAMES, beacons: bool = True) -> World:
    world = World()
    for name in names:
        sink = {"format": "parquet", "options": {"path": f"/out/{name}"}}  # one writer each
        world.deployed(make_job(name=name, tables={"out": sink}))
        if beacons:
            write_beacon(world.storage, ROOT, name, 1, "run-0")
    return world


def settings(**changed: float) -> WatchSettings:
    base = dict(interval=10, stall_timeout=60, leader_ttl=3600, backoff_first=10, backoff_max=40)
    return WatchSettings(**{**base, **changed})  # type: ignore[arg-type]


def states(world: World) -> dict[str, str]:
    return {name: world.record(name).state for name in NAMES}


def test_a_look_at_unchanged_beacons_lists_once_and_reads_nothing() -> None:
    world = world_of()
    watcher = world.watcher(settings())
    world.look(watcher)  # the first look reads every beacon once
    assert world.storage.calls["read_text"] == JOBS
    assert set(states(world).values()) == {"healthy"}
    for _ in range(5):
        world.storage.calls.clear()
        for name in NAMES:  # the runners' heartbeats: the same bytes again
            write_beacon(world.storage, ROOT, name, 1, "run-0")
        world.storage.calls.clear()
        world.look(watcher)
        assert world.storage.calls == {"listing": 1}, "one listing, no read, whatever the jobs"
    assert set(states(world).values()) == {"healthy"}


def test_only_a_beacon_whose_content_changed_is_read_again() -> None:
    world = world_of()
    watcher = world.watcher(settings())
    world.look(watcher)
    write_beacon(world.storage, ROOT, "job07", 1, "run-0", running=125.0)  # a long batch
    world.storage.calls.clear()
    world.look(watcher)
    assert world.storage.calls == {"listing": 1, "read_text": 1}
    assert (
        watcher.beacons.status(world.store.read("job07").manifest)["batch-running-seconds"] == 120
    )
    world.target.runs.pop("job08")
    write_beacon(world.storage, ROOT, "job08", 1, "run-0", "failed", "sim: the query failed")
    world.look(watcher)
    last = world.record("job08").last_failure
    assert last is not None and last.reason == "sim: the query failed", "the beacon's own error"


def test_a_listing_that_fails_says_nothing_about_the_runs() -> None:
    world = world_of()
    watcher = world.watcher(settings(stall_timeout=30))
    world.look(watcher)
    world.storage.listing_fails = True
    for _ in range(10):  # far longer than the stall timeout: the driver may not write either
        world.storage.calls.clear()
        world.look(watcher)
        assert world.storage.calls["read_text"] == 0, "no job read one by one instead"
    assert set(states(world).values()) == {"starting"}, "neither down nor stalled"
    assert world.target.submissions == []
    status = watcher.beacons.status(world.store.read("job03").manifest)
    assert status is UNREADABLE
    world.storage.listing_fails = False
    world.look(watcher)
    assert set(states(world).values()) == {"healthy"}


def test_a_beacon_the_listing_does_not_show_falls_back_to_the_status_file() -> None:
    world = world_of()
    watcher = world.watcher(settings())
    world.look(watcher)
    world.storage.unlisted.add(beacon_location(ROOT, "job05", 1))  # a listing that lags
    world.storage.calls.clear()
    world.look(watcher)
    assert world.storage.calls == {"listing": 1, "read_text": 1}
    assert world.record("job05").state == "healthy"


def test_a_beacon_caught_mid_write_is_unreadable_then_read_whole() -> None:
    world = world_of()
    watcher = world.watcher(settings())
    world.look(watcher)
    beacon = beacon_location(ROOT, "job02", 1)
    world.storage.write_text(beacon, '{"run-id": "run-0", "sta')
    world.look(watcher)
    assert world.record("job02").state == "starting", "not judged from half a beacon"
    write_beacon(world.storage, ROOT, "job02", 1, "run-0", running=70.0)
    world.storage.calls.clear()
    world.look(watcher)
    assert world.storage.calls == {"listing": 1, "read_text": 1}
    assert world.record("job02").state == "healthy"


def test_a_beacon_not_rewritten_is_a_stalled_run_and_a_rewrite_is_a_heartbeat() -> None:
    world = world_of(["alive", "frozen"])
    watcher = world.watcher(settings(stall_timeout=60))
    world.look(watcher)
    for second in range(10, 80, 10):  # 70 s: only `alive` beats, the same bytes each time
        write_beacon(world.storage, ROOT, "alive", 1, "run-0")
        world.storage.calls.clear()
        watcher.step()
        if second < 60:  # not yet stalled, nothing restarted
            assert world.storage.calls == {"listing": 1}, "a heartbeat is not read"
        watcher.settle()
        world.clock.now += 10
    stalled = [e for e in world.events() if e["event"] == "stalled"]
    assert [e["job"] for e in stalled] == ["frozen"]
    assert "no heartbeat from its driver for 60 s" in stalled[0]["message"]


def test_a_beacon_of_a_long_batch_is_judged_by_its_whole_minutes() -> None:
    world = world_of(["slow"])
    watcher = world.watcher(settings(batch_timeout=120))
    write_beacon(world.storage, ROOT, "slow", 1, "run-0", running=119.0)
    status = watcher.beacons
    watcher.step()
    watcher.settle()
    assert world.record("slow").state == "healthy"
    assert status.status(world.store.read("slow").manifest)["batch-running-seconds"] == 60
    write_beacon(world.storage, ROOT, "slow", 1, "run-0", running=181.0)
    world.clock.now += 10
    watcher.step()
    watcher.settle()
    stalled = [e for e in world.events() if e["event"] == "stalled"]
    assert stalled and "180 s" in stalled[0]["message"]


def test_runs_without_a_beacon_are_judged_from_their_status_files_as_before() -> None:
    world = world_of(beacons=False)
    watcher = world.watcher(settings())
    world.look(watcher)
    world.storage.calls.clear()
    world.look(watcher)
    assert world.storage.calls == {"listing": 1, "read_text": JOBS}
    assert set(states(world).values()) == {"healthy"}


@pytest.mark.parametrize("served", [True, False])
def test_metrics_read_the_full_status_once_per_refresh(served: bool) -> None:
    world = world_of(["a", "b"])
    status = json.loads(world.storage.files[status_of("a")])
    status["last-batch"] = {"id": 41}
    world.storage.files[status_of("a")] = json.dumps(status)
    metrics = Metrics() if served else None
    deployment_watcher = world.watcher(settings(metrics_refresh=60))
    if metrics is not None:  # the same watcher, with metrics served
        from flink_sql_runner.watch.watcher import Watcher

        deployment_watcher = Watcher(deployment_watcher.deployment, deployment_watcher.settings,
                                     deployment_watcher.notifier, metrics, clock=world.clock,
                                     wall=world.wall)  # fmt: skip
    watcher = deployment_watcher
    reads = []
    for _ in range(13):  # 130 s of looks
        for name in ("a", "b"):  # the runners' heartbeats
            write_beacon(world.storage, ROOT, name, 1, "run-0")
        world.storage.calls.clear()
        watcher.step()
        watcher.settle()
        reads.append(world.storage.calls["read_text"])
        world.clock.now += 10
    beacon_reads = 2
    if served:
        # At the first look, then once the refresh is due (60 s, 120 s): two jobs each time.
        assert sum(reads) == beacon_reads + 3 * 2
        assert metrics is not None
        value = metrics.registry.get_sample_value("flink_sql_runner_job_last_batch_id",
                                                  {"job": "a"})  # fmt: skip
        assert value == 41
    else:
        assert sum(reads) == beacon_reads
