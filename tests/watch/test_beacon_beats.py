"""On a local folder and on HDFS a listing's content token is a file's size and modification
time, which every write moves: the runner keeps its beacon's heartbeat in an empty beat file
beside it (`<name>.v<N>.beat`) and writes the beacon only when what it says changes, so a look of
`watch` at unchanged jobs reads no beacon there either. Counted over several looks with the
runners' heartbeats in between, the runner's own `Status` writing (the runner's local storage
on a local folder; on HDFS the deployer's WebHDFS client stands in for Hadoop's FileSystem), on
a local folder, on the fake WebHDFS (its requests counted) and on the real MiniDFSCluster
(marker yarn). A run of the previous release (no beat file, its beacon rewritten every
heartbeat) is watched as before: each look reads its beacon again."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import FileStorage, Listed
from flink_sql_runner.watch.beacons import Beacons
from flink_sql_runner.watch.stalls import Stalls
from runner.query_look import QueryLook
from runner.status import HEARTBEAT_SECONDS, Status
from runner.storage import Storage as RunnerStorage
from tests.support.fake_webhdfs import FakeWebHdfs
from tests.support.fakes import FakeClock
from tests.support.hadoop_site import site
from tests.support.jobs import make_job, stored_of

JOBS = 6
STALL_TIMEOUT = 3 * HEARTBEAT_SECONDS


class Counted:
    """The watcher's storage, counting its calls by method."""

    def __init__(self, storage: FileStorage) -> None:
        self.storage, self.calls = storage, Counter[str]()

    def listing(self, folder: str) -> list[Listed]:
        self.calls["listing"] += 1
        return self.storage.listing(folder)

    def read_text(self, location: str) -> str | None:
        self.calls["read_text"] += 1
        return self.storage.read_text(location)


class Through:
    """The runner's storage as a runner on HDFS has it: `write` replaces a file."""

    def __init__(self, storage: FileStorage) -> None:
        self.storage = storage

    def write(self, location: str, text: str) -> None:
        self.storage.write_text(location, text)


@dataclass
class Place:
    """Where the checkpoints are: a root, the watcher's storage and the runners'; `requests`
    gives the WebHDFS requests the fake has answered so far (None elsewhere); `tick` lets the
    storage's clock move before the next heartbeat (a real file system's or NameNode's clock
    ticks every few milliseconds; the runners beat every 10 s)."""

    root: str
    storage: FileStorage
    runner_storage: Any
    requests: Callable[[], list[tuple[str, str, str]]] | None = None
    tick: Callable[[], None] = lambda: None


@pytest.fixture(params=["local", "hdfs-fake", pytest.param("hdfs-real", marks=pytest.mark.yarn)])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "local":
        yield Place(str(tmp_path / "ckpt"), FileStorage(), RunnerStorage(None),
                    tick=lambda: time.sleep(0.02))  # fmt: skip
    elif request.param == "hdfs-fake":
        with FakeWebHdfs() as server:
            conf = tmp_path / "conf"
            site(conf, "core-site.xml", **{"fs.defaultFS": "hdfs://127.0.0.1:8020"})
            address = server.url.removeprefix("http://")
            site(conf, "hdfs-site.xml", **{"dfs.namenode.http-address": address})
            env = {"HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": "ci"}
            storage = FileStorage(env=env, hdfs_timeout=5)
            yield Place("hdfs:///ckpt", storage, Through(storage), lambda: list(server.requests))
    else:
        cluster = request.getfixturevalue("hadoop_cluster")
        storage = FileStorage(env={"HADOOP_CONF_DIR": str(cluster.conf_dir)})
        yield Place(f"{cluster.default_fs}/beats-{uuid.uuid4().hex[:8]}", storage,
                    Through(storage), tick=lambda: time.sleep(0.01))  # fmt: skip


class Query:
    """A running query as the runner's Status follows it: idle, or in a long micro-batch."""

    def __init__(self) -> None:
        self.status = {"isTriggerActive": False}
        self.lastProgress: dict[str, Any] | None = None


@dataclass
class Runs:
    """JOBS jobs at v1 on `place`, each with a runner's Status writing as a run does; a run
    of the previous release (`beats=False`) is given no beat file, as its manifest gave none."""

    place: Place
    beats: bool = True
    now: list[float] = field(default_factory=lambda: [0.0])
    names: list[str] = field(default_factory=lambda: [f"job{i}" for i in range(JOBS)])

    def __post_init__(self) -> None:
        self.manifests: dict[str, StoredManifest] = {}
        self.status: dict[str, Status] = {}
        self.queries: dict[str, Query] = {}
        for name in self.names:
            job = make_job(name=name, **{"checkpoint-root": self.place.root})
            self.manifests[name] = stored_of(job)
            control = ControlFiles.of(f"{self.place.root}/{name}", 1)
            assert bool(control.beat) is True, "a local folder or HDFS: a beat file"
            status = Status(self.place.runner_storage, control.status_file, f"run-{name}",
                            "4.3.0", control.beacon, control.beat if self.beats else None,
                            clock=lambda: self.now[0])  # fmt: skip
            status.set("active", 0)
            self.status[name], self.queries[name] = status, Query()

    def beat(self, frozen: Collection[str] = ()) -> None:
        """HEARTBEAT_SECONDS later: every run but the frozen ones follows its query."""
        self.place.tick()
        self.now[0] += HEARTBEAT_SECONDS
        for name in self.names:
            if name not in frozen:
                self.status[name].beat(QueryLook(self.queries[name]))


class Watching:
    """What `watch` does with beacons each look: one listing, then each job judged."""

    def __init__(self, runs: Runs) -> None:
        self.runs, self.clock = runs, FakeClock(1000.0)
        self.storage = Counted(runs.place.storage)
        self.beacons = Beacons(self.storage, self.clock)  # type: ignore[arg-type]
        self.stalls = Stalls(STALL_TIMEOUT, 3600.0, self.clock)
        self.seen = 0

    def look(self) -> tuple[dict[str, Any], dict[str, str | None], Counter[str], Counter[str]]:
        """Each job's status and stall, the storage calls and the WebHDFS requests of one
        look."""
        self.storage.calls.clear()
        before = len(self.runs.place.requests()) if self.runs.place.requests else 0
        manifests = self.runs.manifests
        self.beacons.look(manifests.values())
        status, stalled = {}, {}
        for name, manifest in manifests.items():
            status[name] = self.beacons.status(manifest)
            run = (Run(name, 1, f"run-{name}", "pid 1"),)
            stalled[name] = self.stalls.judge(name, run, status[name])
        sent: Counter[str] = Counter()
        if self.runs.place.requests:
            sent.update(f"{method} {op}" for method, op, _ in self.runs.place.requests()[before:])
        self.clock.now += HEARTBEAT_SECONDS
        return status, stalled, Counter(self.storage.calls), sent


def test_a_look_at_unchanged_jobs_reads_no_beacon_and_a_change_is_read_once(place) -> None:
    runs = Runs(place)
    watching = Watching(runs)
    status, stalled, calls, _ = watching.look()
    assert calls == {"listing": 1, "read_text": JOBS}, "the first look reads each beacon once"
    assert {s["state"] for s in status.values()} == {"active"}
    for _ in range(5):
        runs.beat()
        status, stalled, calls, sent = watching.look()
        assert calls == {"listing": 1}, "one listing, no beacon read"
        if place.requests:
            assert sent == {"GET LISTSTATUS": 1}, "no OPEN: one request a look"
        assert set(stalled.values()) == {None}
    runs.queries["job2"].status["isTriggerActive"] = True  # a micro-batch that runs long
    reads = []
    for _ in range(8):  # it has run for a minute at the seventh heartbeat since it began
        runs.beat()
        status, stalled, calls, _ = watching.look()
        reads.append(calls["read_text"])
    assert reads == [0] * 6 + [1, 0], "the beacon read once, at the look after its change"
    assert status["job2"]["batch-running-seconds"] == 60
    assert set(stalled.values()) == {None}


def test_a_run_whose_heartbeat_stops_is_stalled_and_no_beacon_is_read_to_see_it(place) -> None:
    runs = Runs(place)
    watching = Watching(runs)
    watching.look()
    found = []
    for _ in range(6):  # job4's driver hangs: its files stay as they are
        runs.beat(frozen={"job4"})
        _, stalled, calls, _ = watching.look()
        assert calls == {"listing": 1}
        found.append({name: why for name, why in stalled.items() if why})
    assert found[:2] == [{}, {}]
    assert found[2] == {"job4": "no heartbeat from its driver for 30 s"}
    assert found[-1] == {"job4": "no heartbeat from its driver for 60 s"}


def test_runs_of_the_previous_release_are_read_each_look_and_judged_as_before(place) -> None:
    """No beat file: the beacon is rewritten unchanged every heartbeat, its modification time
    the heartbeat; on these storages that moves its content token, so each look reads it."""
    runs = Runs(place, beats=False)
    watching = Watching(runs)
    watching.look()
    found = []
    for _ in range(4):
        runs.beat(frozen={"job1"})
        _, stalled, calls, sent = watching.look()
        assert calls == {"listing": 1, "read_text": JOBS - 1}, "the frozen one's is unchanged"
        if place.requests:  # an OPEN answered through the datanode's redirect: two each
            assert sent == {"GET LISTSTATUS": 1, "GET OPEN": 2 * (JOBS - 1)}
        found.append({name: why for name, why in stalled.items() if why})
    assert found[:2] == [{}, {}]
    assert found[2:] == [{"job1": "no heartbeat from its driver for 30 s"},
                         {"job1": "no heartbeat from its driver for 40 s"}]  # fmt: skip


def test_a_beat_file_left_by_a_later_run_does_not_hide_a_previous_release_runs_heartbeat(
    place,
) -> None:
    """A run of the previous release started after one of this release (a deployer rolled
    back, which deletes the beacon only): the leftover beat file does not move, the beacon does,
    and the run is not judged stalled."""
    runs = Runs(place)
    runs.beat()
    runs = Runs(place, beats=False)  # the same jobs' new runs, beacons rewritten every beat
    watching = Watching(runs)
    watching.look()
    for _ in range(5):
        runs.beat()
        _, stalled, _, _ = watching.look()
        assert set(stalled.values()) == {None}
