"""The runner's watch loop on fake queries: it returns as soon as the query ends, not at its
next poll, and reports a failed query; the session stopped without waiting out PySpark's
accumulator server."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace
from typing import Any

import pytest
from py4j.java_gateway import JavaObject

from runner import lifecycle
from runner.query_look import QueryLook
from runner.spark_internals import stop_session
from runner.status import HEARTBEAT_SECONDS, KEEP_RUNS, Status, progress_summary
from runner.storage import Storage
from tests.runner.test_storage_default_fs import FakeHadoopFs, spark_on


class FakeQuery:
    """A streaming query that ends (or fails) during its first awaitTermination."""

    def __init__(self, failure: Exception | None = None):
        self.isActive = True
        self.lastProgress: dict[str, Any] | None = {"batchId": 3}
        self.failure = failure
        self.waits: list[float] = []

    def awaitTermination(self, timeout: float) -> bool:  # noqa: N802 - PySpark's name
        self.waits.append(timeout)
        self.isActive = False
        if self.failure is not None:
            raise self.failure
        return True

    def exception(self) -> Exception | None:
        return self.failure


def watch(query: FakeQuery) -> tuple[int, Status]:
    status = Status(storage=None, location=None, run_id="run-1")  # type: ignore[arg-type]
    code = lifecycle.watch(query, None, {}, status, lifecycle.StopRequest())  # type: ignore[arg-type]
    return code, status


def test_an_ended_query_is_seen_at_once_not_at_the_next_poll() -> None:
    query = FakeQuery()
    begun = time.monotonic()
    code, status = watch(query)
    assert (code, status.state) == (lifecycle.EXIT_OK, "finished")
    assert query.waits == [lifecycle.POLL_SECONDS]
    assert time.monotonic() - begun < lifecycle.POLL_SECONDS / 2


def test_a_stop_marker_on_a_local_folder_is_looked_at_more_often_than_one_on_s3() -> None:
    local = Storage(None)
    assert lifecycle.poll_seconds(local, "/state/checkpoints/j/_control/v1.stop") == 0.2
    assert lifecycle.poll_seconds(local, "file:///state/checkpoints/j/_control/v1.stop") == 0.2
    for elsewhere in ("s3a://bucket/j/_control/v1.stop", "hdfs://nn:8020/j/v1.stop", None, ""):
        assert lifecycle.poll_seconds(local, elsewhere) == lifecycle.POLL_SECONDS == 0.5
    query = ThreeLooks()
    status = Status(storage=None, location=None, run_id="run-1")  # type: ignore[arg-type]
    doc = {"stop-marker": "/nowhere/v1.stop"}
    lifecycle.watch(query, NoMarker(), doc, status, lifecycle.StopRequest())  # type: ignore[arg-type]
    assert query.waits == [0.2, 0.2, 0.2]


def test_local_is_where_the_storage_says_a_path_is() -> None:
    """A path without a scheme is on the default file system: on HDFS (YARN) it is a NameNode
    request, looked at as any other (second review of issue 57: by its spelling, every
    0.2 s); a relative path on a local default is local."""
    fs = FakeHadoopFs()
    on_hdfs = Storage(spark_on("hdfs://nn:8020", fs))
    query = ThreeLooks()
    status = Status(storage=None, location=None, run_id="run-1")  # type: ignore[arg-type]
    marker = "/user/etl/checkpoints/j/_control/v1.stop"
    lifecycle.watch(query, on_hdfs, {"stop-marker": marker}, status, lifecycle.StopRequest())
    assert fs.asked and query.waits == [lifecycle.POLL_SECONDS] * 3
    local = Storage(spark_on("file:///", FakeHadoopFs()))
    assert lifecycle.poll_seconds(local, "state/j/_control/v1.stop") == 0.2


class ThreeLooks:
    """A query that runs for three of the loop's looks, then ends."""

    def __init__(self) -> None:
        self.isActive, self.status, self.lastProgress = True, {"isTriggerActive": False}, None
        self.waits: list[float] = []

    def awaitTermination(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.isActive = len(self.waits) < 3

    def exception(self) -> None:
        return None


class NoMarker:
    def exists(self, location: str) -> bool:
        return False

    def is_local(self, location: str) -> bool:
        return True


def test_a_failed_query_is_reported_with_its_error() -> None:
    code, status = watch(FakeQuery(RuntimeError("the sink is gone")))
    assert (code, status.state) == (lifecycle.EXIT_FAILED, "failed")


class RunningQuery:
    """A query mid-run: its trigger active or not, its last progress as Spark reports it."""

    def __init__(self) -> None:
        self.status = {"isTriggerActive": False}
        self.lastProgress: dict[str, Any] | None = None


KAFKA_PROGRESS = {
    "batchId": 7,
    "timestamp": "2026-11-23T10:00:00.000Z",
    "numInputRows": 120,
    "inputRowsPerSecond": 12.5,
    "processedRowsPerSecond": 40.0,
    "durationMs": {"triggerExecution": 3000, "addBatch": 2500},
    "sources": [
        {"description": "KafkaV2[Subscribe[a]]", "metrics": {"maxOffsetsBehindLatest": "42"}},
        {"description": "KafkaV2[Subscribe[b]]", "metrics": {"maxOffsetsBehindLatest": "7"}},
    ],
}


def test_the_status_file_carries_a_heartbeat_the_running_batch_and_the_last_progress(
    tmp_path, monkeypatch
) -> None:
    location = tmp_path / "v1.status.json"
    clock = [100.0]
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: clock[0])
    status = Status(Storage(None), str(location), "run-1", "4.3.0")
    status.set("active", 6)
    query = RunningQuery()
    query.status["isTriggerActive"] = True
    status.beat(QueryLook(query))  # a batch starts; nothing new to say yet
    clock[0] += HEARTBEAT_SECONDS
    status.beat(QueryLook(query))  # the heartbeat: the batch has been running for 10 s
    doc = json.loads(location.read_text())
    assert (doc["heartbeat"], doc["batch-running-seconds"]) == (2, 10.0)
    query.status["isTriggerActive"] = False
    query.lastProgress = KAFKA_PROGRESS
    status.beat(QueryLook(query))  # a batch completed: written at once
    doc = json.loads(location.read_text())
    assert doc["heartbeat"] == 3 and doc["batch-running-seconds"] is None
    assert doc["batch-id"] == 7 and doc["state"] == "active"
    assert doc["last-batch"] == {
        "id": 7,
        "timestamp": "2026-11-23T10:00:00.000Z",
        "num-input-rows": 120,
        "input-rows-per-second": 12.5,
        "processed-rows-per-second": 40.0,
        "duration-ms": 3000,
        "offsets-behind-latest": 42.0,
    }
    status.beat(QueryLook(query))
    assert json.loads(location.read_text())["heartbeat"] == 3, "nothing new, not yet due"


class Writes:
    """The runner's storage, counting what it writes where; a location in `failing` fails."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.writes: list[str] = []
        self.failing: set[str] = set()

    def write(self, location: str, text: str) -> None:
        if location in self.failing:
            raise OSError("HTTP 503 SlowDown")
        self.writes.append(location)
        self.files[location] = text

    def read(self, location: str) -> str | None:
        return self.files.get(location)


def test_the_beacon_changes_only_with_what_a_watcher_judges_and_is_rewritten_as_a_heartbeat(
    monkeypatch,
) -> None:
    clock = [100.0]
    monkeypatch.setattr(lifecycle.time, "monotonic", lambda: clock[0])
    storage = Writes()
    status = Status(storage, "v1.status.json", "run-1", "4.3.0", "_status/a.v1.json")  # type: ignore[arg-type]
    status.set("active", 6)
    first = storage.files["_status/a.v1.json"]
    assert json.loads(first) == {"run-id": "run-1", "state": "active", "error": None,
                                 "spark-version": "4.3.0", "long-batch-minutes": None}  # fmt: skip
    query = RunningQuery()
    for batch in range(8, 20):  # a batch completes every second: the status file each time
        clock[0] += 1
        query.lastProgress = {**KAFKA_PROGRESS, "batchId": batch}
        status.beat(QueryLook(query))
    assert storage.writes.count("v1.status.json") == 13
    # The same content, rewritten once per HEARTBEAT_SECONDS only: its modification time moves.
    assert storage.writes.count("_status/a.v1.json") == 2
    assert storage.files["_status/a.v1.json"] == first
    query.status["isTriggerActive"] = True  # a long batch: whole minutes, from the first on
    minutes = []
    for _ in range(30):
        clock[0] += HEARTBEAT_SECONDS
        status.beat(QueryLook(query))
        minutes.append(json.loads(storage.files["_status/a.v1.json"])["long-batch-minutes"])
    assert minutes[:6] == [None] * 6 and minutes[6:12] == [1] * 6 and minutes[-1] == 4
    assert "heartbeat" not in storage.files["_status/a.v1.json"]
    storage.failing.add("_status/a.v1.json")  # a failed beacon is said and tried again
    status.set("failed", error="boom")
    assert json.loads(storage.files["v1.status.json"])["state"] == "failed"
    storage.failing.clear()
    status.set("failed", error="boom")
    assert json.loads(storage.files["_status/a.v1.json"])["error"] == "boom"


def test_a_run_without_a_beacon_file_writes_none() -> None:
    storage = Writes()
    status = Status(storage, "v1.status.json", "run-1", "4.3.0")  # type: ignore[arg-type]
    status.set("active", 1)
    assert storage.writes == ["v1.status.json"]


def test_with_a_beat_file_the_beacon_is_written_on_a_change_only_and_the_beat_every_heartbeat() -> (
    None
):
    """A local folder or HDFS (the runtime manifest's `beat-file`): the listing's tokens move at
    every write there, so the beacon is written only when what it says changes and the empty
    beat file carries the heartbeat."""
    clock = [100.0]
    storage = Writes()
    beacon, beat = "_status/a.v1.json", "_status/a.v1.beat"
    status = Status(storage, "v1.status.json", "run-1", "4.3.0", beacon, beat,  # type: ignore[arg-type]
                    clock=lambda: clock[0])  # fmt: skip
    status.set("active", 6)
    assert storage.writes == ["v1.status.json", beacon, beat] and storage.files[beat] == ""
    first = storage.files[beacon]
    query = RunningQuery()
    for batch in range(8, 38):  # 30 s of a batch a second, then 60 s idle
        clock[0] += 1
        query.lastProgress = {**KAFKA_PROGRESS, "batchId": batch}
        status.beat(QueryLook(query))
    for _ in range(6):
        clock[0] += HEARTBEAT_SECONDS
        status.beat(QueryLook(query))
    assert storage.writes.count(beacon) == 1, "unchanged: never written again"
    assert storage.writes.count(beat) == 1 + 3 + 6, "one heartbeat per HEARTBEAT_SECONDS"
    assert storage.files[beacon] == first
    query.status["isTriggerActive"] = True  # a long batch: the beacon says its whole minutes
    for _ in range(13):
        clock[0] += HEARTBEAT_SECONDS
        status.beat(QueryLook(query))
    assert storage.writes.count(beacon) == 3, "minute 1, minute 2"
    assert json.loads(storage.files[beacon])["long-batch-minutes"] == 2
    storage.failing.add(beat)  # a heartbeat that fails is said and tried again
    clock[0] += HEARTBEAT_SECONDS
    status.beat(QueryLook(query))
    storage.failing.clear()
    beats = storage.writes.count(beat)
    clock[0] += 1
    status.set("stopped")  # a change: the beacon at once, the heartbeat overdue: written too
    assert json.loads(storage.files[beacon])["state"] == "stopped"
    assert storage.writes.count(beat) == beats + 1


def test_the_run_history_keeps_each_runs_start_first_batch_and_end() -> None:
    storage = Writes()
    first = Status(storage, "v1.status.json", "run-1", "4.3.0", runs="v1.runs.json")  # type: ignore[arg-type]
    first.set("starting")
    first.set("active", 6)
    first.set("active", 9)  # the first trigger's batch is kept, not a later one's
    first.set("stopped", 9)
    second = Status(storage, "v1.status.json", "run-2", "4.3.0", runs="v1.runs.json")  # type: ignore[arg-type]
    second.set("starting")
    second.set("active", 10)
    runs = json.loads(storage.files["v1.runs.json"])["runs"]
    assert runs == [
        {"run-id": "run-1", "started": first.started, "first-batch": 6, "ended": "stopped",
         "spark-version": "4.3.0"},
        {"run-id": "run-2", "started": second.started, "first-batch": 10, "ended": None,
         "spark-version": "4.3.0"},
    ]  # fmt: skip
    assert storage.writes.count("v1.runs.json") == 5, "start, first trigger, end: no more"


def test_the_run_history_keeps_the_newest_runs_and_survives_a_bad_file() -> None:
    storage = Writes()
    storage.files["v1.runs.json"] = "{not json"
    for number in range(KEEP_RUNS + 5):
        status = Status(storage, None, f"run-{number}", runs="v1.runs.json")  # type: ignore[arg-type]
        status.set("failed", error="boom")
    runs = json.loads(storage.files["v1.runs.json"])["runs"]
    assert [r["run-id"] for r in runs] == [f"run-{n}" for n in range(5, KEEP_RUNS + 5)]
    assert {(r["first-batch"], r["ended"]) for r in runs} == {(None, "failed")}
    storage.failing.add("v1.runs.json")  # a history that cannot be written: the run goes on
    Status(storage, "v1.status.json", "run-x", runs="v1.runs.json").set("starting")  # type: ignore[arg-type]
    assert json.loads(storage.files["v1.status.json"])["state"] == "starting"


def test_a_run_without_a_runs_file_keeps_no_history() -> None:
    storage = Writes()
    status = Status(storage, "v1.status.json", "run-1", "4.3.0")  # type: ignore[arg-type]
    status.set("starting")
    status.set("active", 1)
    status.set("stopped", 1)
    assert set(storage.writes) == {"v1.status.json"}


class BusyQuery:
    """A query whose micro-batches run back to back: its trigger is active whenever it is
    asked; batch `first` commits after `commit_after` seconds of the stop's own clock."""

    def __init__(self, first: int, commit_after: float | None) -> None:
        self.isActive = True
        self.status = {"isTriggerActive": True}
        self.first, self.commit_after = first, commit_after
        self.now = 0.0
        self.stopped_at: float | None = None

    @property
    def lastProgress(self) -> dict[str, Any]:  # noqa: N802 - PySpark's name
        committed = self.commit_after is not None and self.now >= self.commit_after
        return {"batchId": self.first if committed else self.first - 1}

    def stop(self) -> None:
        self.stopped_at = self.now
        self.isActive = False

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def stop(query: BusyQuery) -> str:
    return lifecycle.stop_gracefully(query, "test", clock=lambda: query.now, sleep=query.sleep)


def test_a_stop_of_back_to_back_batches_waits_for_the_running_one_to_commit_only() -> None:
    query = BusyQuery(first=8, commit_after=2.0)
    assert stop(query) == "after batch 8 committed"
    assert query.stopped_at is not None
    assert 2.0 <= query.stopped_at < 2.0 + 2 * lifecycle.DRAIN_POLL_SECONDS


def test_a_batch_that_never_commits_is_interrupted_at_the_limit() -> None:
    query = BusyQuery(first=8, commit_after=None)
    assert (
        stop(query) == f"interrupting its micro-batch after {lifecycle.BATCH_DRAIN_SECONDS:.0f} s"
    )
    assert query.stopped_at is not None
    assert lifecycle.BATCH_DRAIN_SECONDS <= query.stopped_at < lifecycle.BATCH_DRAIN_SECONDS + 1


def test_a_query_between_batches_is_stopped_at_once() -> None:
    query = BusyQuery(first=8, commit_after=None)
    query.status["isTriggerActive"] = False
    assert stop(query) == "between micro-batches"
    assert query.stopped_at == 0.0


class AccumulatorServer:
    """PySpark's: its shutdown() waits up to 0.5 s for its loop to look; TCP unless a path."""

    def __init__(self, address: Any = ("127.0.0.1", 40000)) -> None:
        self.server_address, self.server_shutdown, self.shut_down = address, False, False

    def shutdown(self) -> None:  # PySpark's own: waits for the loop, removes a socket file
        self.server_shutdown = self.shut_down = True


def a_session(server: AccumulatorServer, seen: list[str]) -> Any:
    context = SimpleNamespace(_accumulatorServer=server)

    def stop() -> None:  # SparkContext.stop(): the JVM's first, then what is left of the server
        seen.append(f"context stopped, server told: {server.server_shutdown}")
        if context._accumulatorServer is not None:
            context._accumulatorServer.shutdown()

    return SimpleNamespace(sparkContext=context, stop=stop)


def test_a_run_stops_its_session_without_waiting_for_the_accumulator_servers_loop() -> None:
    """And tells the server to stop only once the context has, as PySpark does (second review
    of issue 57: told before, an update sent meanwhile went unacknowledged)."""
    server, seen = AccumulatorServer(), []
    stop_session(a_session(server, seen))
    assert seen == ["context stopped, server told: False"]
    assert server.server_shutdown and not server.shut_down, "not waited for"


def test_a_unix_socket_accumulator_server_is_stopped_as_pyspark_does_it() -> None:
    """Its shutdown removes its socket file (second review of issue 57: one left per run)."""
    server, seen = AccumulatorServer("/tmp/spark-uds/accumulator.sock"), []
    stop_session(a_session(server, seen))
    assert server.shut_down


def test_a_session_without_a_context_of_its_own_is_stopped_as_is() -> None:
    stopped: list[bool] = []

    class Connect:
        @property
        def sparkContext(self) -> Any:  # noqa: N802 - PySpark's name
            raise RuntimeError("not supported in Spark Connect")

        def stop(self) -> None:
            stopped.append(True)

    stop_session(Connect())
    assert stopped == [True]


@pytest.mark.spark
def test_pyspark_has_the_accumulator_server_the_stop_skips_waiting_for(spark) -> None:
    """On every Spark line of the matrix: the attribute stop_session relies on is there."""
    server = spark.sparkContext._accumulatorServer
    assert server is not None and server.server_shutdown is False


class JavaProgress:
    """What the JVM's StreamingQueryProgress answers, with a count of its JSON writes."""

    def __init__(self, batch: int, when: str, owner: JavaQuery) -> None:
        self.doc, self.owner = {"batchId": batch, "timestamp": when, "numInputRows": 1}, owner

    def batchId(self) -> int:  # noqa: N802 - Spark's name
        return int(self.doc["batchId"])

    def timestamp(self) -> str:
        return str(self.doc["timestamp"])

    def json(self) -> str:
        self.owner.written += 1
        return json.dumps(self.doc)


class JavaQuery:
    """The JVM's StreamingQuery as py4j gives it: a new object for each progress."""

    def __init__(self) -> None:
        self.progress: JavaProgress | None = None
        self.written = 0
        self.trigger = False

    def lastProgress(self) -> JavaProgress | None:  # noqa: N802 - Spark's name
        return self.progress

    def isActive(self) -> bool:  # noqa: N802 - Spark's name
        return True

    def status(self) -> Any:
        trigger = self.trigger

        class JavaStatus:
            def isTriggerActive(self) -> bool:  # noqa: N802 - Spark's name
                return trigger

        return JavaStatus()


def test_a_look_asks_spark_for_a_progress_s_json_once_per_progress() -> None:
    look = QueryLook(object())
    java = JavaQuery()
    look.jsq = java
    assert look.progress() is None and look.batch_id() is None
    java.progress = JavaProgress(0, "2026-11-30T10:00:00.000Z", java)
    for _ in range(20):
        assert look.progress() == {"batchId": 0, "timestamp": "2026-11-30T10:00:00.000Z",
                                   "numInputRows": 1}  # fmt: skip
    assert java.written == 1
    # an idle report of the same batch is another progress: its trigger time tells it apart
    java.progress = JavaProgress(0, "2026-11-30T10:00:10.000Z", java)
    java.progress.doc["numInputRows"] = 0
    assert look.progress()["numInputRows"] == 0 and java.written == 2
    java.progress = JavaProgress(1, "2026-11-30T10:00:13.000Z", java)
    assert look.batch_id() == 1 and look.batch_id() == 1 and java.written == 3
    # a batch id alone or a time alone does not tell two progresses apart
    java.progress = JavaProgress(2, "2026-11-30T10:00:13.000Z", java)
    assert look.batch_id() == 2 and java.written == 4
    assert look.active() is True and look.trigger_active() is False
    java.trigger = True
    assert look.trigger_active() is True


def test_a_query_with_no_jvm_query_is_read_through_pyspark_s_properties() -> None:
    query = RunningQuery()
    look = QueryLook(query)
    assert look.jsq is None and look.progress() is None
    query.lastProgress, query.status["isTriggerActive"] = KAFKA_PROGRESS, True
    assert look.progress() == KAFKA_PROGRESS and look.trigger_active() is True


@pytest.mark.spark
def test_a_look_gives_spark_s_own_progress_and_reads_each_one_once(spark) -> None:
    """On every Spark line of the matrix: the JVM's query and the methods a look asks are
    there, and what it gives is what PySpark's `lastProgress` gives."""
    frame = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
    query = frame.writeStream.format("noop").trigger(processingTime="200 milliseconds").start()
    try:
        look = QueryLook(query)
        assert look.jsq is not None, "the JVM's query, not PySpark's properties"
        assert look.active() is True and look.trigger_active() in (True, False)
        compared: set[int] = set()
        returned: set[tuple[int, str]] = set()
        deadline = time.monotonic() + 60
        while len(compared) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            public = query.lastProgress
            mine = look.progress()
            if mine is None:
                continue
            returned.add((mine["batchId"], mine["timestamp"]))
            if public is not None and public["timestamp"] == mine["timestamp"]:
                # PySpark 4 gives a dict of its own objects, with the JSON beside it; 3.5 the JSON
                raw = json.loads(public.json) if hasattr(public, "json") else public
                assert mine == raw
                assert progress_summary(mine) == progress_summary(public)
                compared.add(mine["batchId"])
        assert len(compared) == 3, f"3 progresses compared within 60 s: {compared}"
        assert look.parsed == len(returned), "each progress read as JSON once"
    finally:
        query.stop()
    assert look.active() is False


class JvmQuery(JavaObject):
    """The JVM's query as `java_query` takes it (a py4j JavaObject, no gateway behind it): its
    trigger active, and batch `first` committed once the clock reaches `commit_at`."""

    def __init__(self, first: int, commit_at: float, trigger: bool = True) -> None:
        object.__setattr__(self, "_s", {"now": 0.0, "active": True, "first": first,
                                        "at": commit_at, "trigger": trigger})  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)

    def isActive(self) -> bool:  # noqa: N802 - Spark's name
        return bool(self._s["active"])

    def status(self) -> Any:
        return SimpleNamespace(isTriggerActive=lambda: self._s["trigger"])

    def lastProgress(self) -> JavaProgress:  # noqa: N802 - Spark's name
        done = self._s["now"] >= self._s["at"]
        batch = self._s["first"] if done else self._s["first"] - 1
        owner = JavaQuery()
        return JavaProgress(batch, f"2026-11-30T10:00:{batch:02d}.000Z", owner)


class OnTheJvm:
    """PySpark's query around a JvmQuery: what `watch` and the stop ask of it themselves."""

    def __init__(self, jsq: JvmQuery) -> None:
        self._jsq = jsq

    def stop(self) -> None:
        self._jsq._s["active"] = False

    def sleep(self, seconds: float) -> None:
        self._jsq._s["now"] += seconds


def test_a_graceful_stop_on_the_jvm_s_query_waits_for_the_running_batch_to_commit_only() -> None:
    """The review of issue 57's seventh part: the tests above run on PySpark's properties."""
    query = OnTheJvm(JvmQuery(first=8, commit_at=2.0))
    assert QueryLook(query).jsq is query._jsq
    clock = lambda: query._jsq._s["now"]  # noqa: E731
    assert lifecycle.stop_gracefully(query, "t", clock=clock, sleep=query.sleep) == (
        "after batch 8 committed"
    )
    assert 2.0 <= clock() < 2.1 and not query._jsq.isActive()


def test_watch_on_the_jvm_s_query_says_active_then_stopped_after_the_committed_batch() -> None:
    query = OnTheJvm(JvmQuery(first=8, commit_at=0.0, trigger=False))
    states: list[tuple[str, int | None]] = []

    class Seen(Status):
        def set(self, state: str, batch_id: int | None = None, error: str | None = None) -> None:
            states.append((state, batch_id))
            super().set(state, batch_id, error)

    status = Seen(Storage(None), None, "run-1")
    stop = lifecycle.StopRequest()

    def wait(seconds: float) -> None:
        stop.reason = "test"  # a stop after the first look

    query.awaitTermination = wait  # type: ignore[attr-defined]
    assert lifecycle.watch(query, NoMarker(), {}, status, stop) == lifecycle.EXIT_OK  # type: ignore[arg-type]
    assert states == [("active", 8), ("stopped", 8)]
