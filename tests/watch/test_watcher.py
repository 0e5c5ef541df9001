"""`watch` on fakes and clocks that move only when told: restarts, growing delays that start
over, crash-looping, finished jobs, stalls, a deploy holding the lock, two watchers, events and
metrics."""

from __future__ import annotations

import io
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client import generate_latest

from flink_sql_runner.render.status import status_text
from flink_sql_runner.stores.lock import Holder
from flink_sql_runner.watch.events import Event, Notifier
from flink_sql_runner.watch.metrics import Metrics
from flink_sql_runner.watch.records import WatchLog
from flink_sql_runner.watch.status import status_rows
from flink_sql_runner.watch.watcher import WatchSettings
from tests.support.jobs import ROOT, make_job, stored_of
from tests.support.watch_world import STATUS, World


def test_a_dead_job_is_restarted_from_its_checkpoint_at_once():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    assert world.kinds() == ["watching"] and world.target.submissions == []
    world.dies()
    world.look(watcher)
    (submission,) = world.target.submissions
    assert submission.version == 1, "the stored version, from its checkpoint"
    assert submission.runtime_manifest.endswith("v1.manifest.json")
    restarted = world.events()[-1]
    assert restarted["event"] == "restarted" and restarted["ok"] is True
    assert "restart from checkpoint (last committed batch 4)" in restarted["message"]
    record = world.record()
    assert (record.restarts, record.consecutive, record.state) == (1, 1, "healthy")
    assert record.last_failure.reason == "its driver ended without a word (killed?)"
    assert world.target.double_starts == []


def test_failures_in_a_row_wait_longer_each_time_then_the_job_is_left_crash_looping():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.outcome = "failed"  # every restart fails on its first batch: a poison record
    world.dies(error=world.error)
    restarts_at = []
    for _ in range(40):
        before = len(world.target.submissions)
        world.look(watcher, seconds=5)
        if len(world.target.submissions) > before:
            restarts_at.append(world.clock.now - 5)
    delays = [b - a for a, b in zip(restarts_at, restarts_at[1:], strict=False)]
    assert len(restarts_at) == 3 and delays[0] < delays[1], (restarts_at, delays)
    assert world.kinds() == [
        "watching",
        "restart-failed", "backing-off", "restart-failed", "backing-off", "restart-failed",
        "crash-looping",
    ]  # fmt: skip
    looping = world.events()[-1]
    assert world.error in looping["reason"]
    assert "`flink-sql-runner resume orders`" in looping["message"]
    assert world.record().crash_looping and world.record().state == "crash-looping"
    # A deploy that changes the job lifts the mark: watch restarts it again.
    world.outcome = "active"
    changed = stored_of(make_job(description="fixed the parser"), 1)
    world.store.put(changed)
    world.look(watcher)
    assert world.kinds()[-1] == "restarted" and len(world.target.submissions) == 4


def test_the_backoff_starts_over_once_the_job_has_been_healthy_for_the_stable_period():
    world = World()
    world.deployed()
    settings = WatchSettings(interval=10, backoff_first=10, max_failures=10, stable_after=100)
    watcher = world.watcher(settings)
    world.look(watcher)
    for _ in range(2):
        world.dies()
        for _ in range(4):
            world.look(watcher)
    assert world.record().consecutive == 2
    for _ in range(12):
        world.look(watcher)
    assert "recovered" in world.kinds()
    assert world.record().consecutive == 0
    world.dies()
    world.look(watcher)
    assert world.kinds()[-1] == "restarted", "the first failure in a row restarts at once"


def test_a_failed_restart_and_a_crash_loop_are_said_once_their_record_is_written():
    """What `status` reads on `restart-failed` and `crash-looping` agrees with them (found by a
    review: the events came before the record was written, and `status` read on the
    crash-looping event could say `down`, 2 restarts)."""
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.outcome = "failed"
    world.dies(error=world.error)
    seen = []
    emit = watcher.notifier.emit

    def emitted(event):
        if event.kind in ("restart-failed", "crash-looping"):
            record = world.record()
            seen.append((event.kind, record.restarts, len(record.failures), record.state))
        emit(event)

    watcher.notifier.emit = emitted
    for _ in range(40):
        world.look(watcher, seconds=5)
    assert seen == [
        ("restart-failed", 1, 2, "down"),
        ("restart-failed", 2, 3, "down"),
        ("restart-failed", 3, 4, "crash-looping"),
        ("crash-looping", 3, 4, "crash-looping"),
    ], seen


def test_a_finished_job_is_finished_not_failed_and_a_stopped_one_stays_down():
    world = World()
    world.deployed()
    world.deployed(make_job(name="halted", **{"desired-state": "stopped"},
                            tables={"out": {"format": "parquet", "options": {"path": "/o2"}}}),
                   running=False)  # fmt: skip
    watcher = world.watcher()
    world.target.runs.clear()
    world.storage.files[STATUS] = json.dumps({"run-id": "run-0", "state": "finished"})
    for _ in range(3):
        world.look(watcher)
    assert world.target.submissions == []
    assert world.record().state == "finished" and world.record("halted").state == "stopped"


def test_a_driver_whose_heartbeat_stops_is_stalled_and_replaced():
    world = World()
    world.deployed()
    watcher = world.watcher()
    for _ in range(7):  # the heartbeat never moves: 60 s on the watcher's clock
        world.look(watcher)
    assert world.kinds()[-2:] == ["stalled", "restarted"]
    assert "no heartbeat from its driver for 60 s" in world.events()[-2]["message"]
    assert world.target.stops == ["orders"] and len(world.target.submissions) == 1
    assert world.record().last_failure.reason.startswith("stalled: no heartbeat")


def test_sigterm_during_a_replacement_lets_its_start_happen_and_begins_nothing_new():
    world = World()
    world.deployed()
    shipping = make_job(name="shipping", tables={"out": {"format": "parquet",
                                                        "options": {"path": "/o2"}}})  # fmt: skip
    world.deployed(shipping)
    watcher = world.watcher(parallelism=1)
    for _ in range(6):
        world.look(watcher)
    world.dies("shipping")  # shipping goes down as orders stalls; it comes after orders
    world.target.before_stop = lambda run: watcher.stopping.set()  # SIGTERM arrives here
    world.look(watcher)
    assert world.kinds()[-2:] == ["stalled", "restarted"]
    assert world.target.stops == ["orders"], "the stalled run was stopped"
    assert [s.name for s in world.target.submissions] == ["orders"], "and started again"
    assert world.record("shipping").consecutive == 1
    watcher.stopping.clear()  # the next watcher restarts shipping, its failure counted once
    world.look(watcher)
    assert [s.name for s in world.target.submissions] == ["orders", "shipping"]
    assert world.record("shipping").consecutive == 1


def test_several_jobs_down_at_once_are_restarted_side_by_side():
    world = World()
    names = ["a", "b", "c", "d"]
    for name in names:
        world.deployed(
            make_job(
                name=name, tables={"out": {"format": "parquet", "options": {"path": f"/{name}"}}}
            )
        )
    watcher = world.watcher(parallelism=4)
    world.look(watcher)
    started = threading.Barrier(4, timeout=10)  # each start waits until all four are under way
    world.target.before_submit = lambda submission: started.wait()
    for name in names:
        world.dies(name)
    world.look(watcher)
    assert sorted(s.name for s in world.target.submissions) == names
    assert [world.record(n).restarts for n in names] == [1, 1, 1, 1]


def test_a_slow_restart_holds_up_neither_the_looks_nor_another_jobs_restart():
    world = World()
    world.deployed()
    shipping = make_job(name="shipping", tables={"out": {"format": "parquet",
                                                        "options": {"path": "/o2"}}})  # fmt: skip
    world.deployed(shipping)
    watcher = world.watcher(parallelism=2)
    world.look(watcher)
    slow = threading.Event()  # orders' new run takes its time to be submitted
    world.target.before_submit = lambda s: slow.wait(30) if s.name == "orders" else None
    world.dies("orders")
    watcher.step()
    assert world.record("orders").state == "restarting" and world.target.submissions == []
    world.dies("shipping")
    world.clock.now += 10
    watcher.step()  # the next look, while orders' restart is under way
    deadline = time.monotonic() + 30
    while not world.target.submissions and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [s.name for s in world.target.submissions] == ["shipping"]
    assert world.store.data.lock.holder is not None, "the lock is held while restarts run"
    slow.set()
    watcher.settle()
    assert sorted(s.name for s in world.target.submissions) == ["orders", "shipping"]
    assert world.kinds()[-2:] == ["restarted", "restarted"]
    assert world.store.data.lock.holder is None, "and released once none is under way"
    assert world.target.double_starts == []


def test_a_micro_batch_that_runs_too_long_is_a_stall():
    world = World()
    world.deployed()
    world.storage.files[STATUS] = json.dumps(
        {"run-id": "run-0", "state": "active", "heartbeat": 9, "batch-running-seconds": 4000}
    )
    watcher = world.watcher()
    world.look(watcher)
    assert "its micro-batch has run for 4000 s" in world.events()[-2]["message"]


def test_a_run_that_cannot_be_told_alive_or_gone_is_left_alone():
    world = World()
    world.deployed()
    world.target.unknown.add("orders")
    watcher = world.watcher()
    for _ in range(10):
        world.look(watcher)
    assert world.target.submissions == [] and world.target.stops == []
    assert world.record().state == "unknown"


def test_a_deploy_holding_the_lock_is_waited_out_never_joined():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.dies()
    deploy = Holder.me("deploy", 120)
    world.store.data.lock.create(deploy)
    world.look(watcher)
    world.look(watcher)
    assert world.target.submissions == []
    warnings = [e for e in world.events() if e["event"] == "warning"]
    assert len(warnings) == 1 and "locked by deploy by pid" in warnings[0]["message"]
    world.store.data.lock.holder = None  # the deploy is done
    world.look(watcher)
    assert len(world.target.submissions) == 1


def test_two_watchers_one_acts_and_the_other_takes_over_when_it_stops_renewing():
    world = World()
    world.deployed()
    first, second = world.watcher(), world.watcher()
    world.look(first, 0)
    world.look(second)
    assert world.kinds() == ["watching"], "the second stands by"
    world.dies()
    world.look(first, 0)
    world.look(second)
    assert len(world.target.submissions) == 1, "one acted"
    assert first.leader.renew_once()
    for _ in range(4):  # the first dies: no more renewals; 30 s later the second leads
        world.look(second)
    assert world.kinds()[-1] == "watcher-took-over"
    world.dies()
    world.look(second)
    assert world.kinds()[-1] == "backing-off", "it goes on from the record the first kept"
    assert world.record().consecutive == 2
    world.look(second)
    assert len(world.target.submissions) == 2


def test_a_watcher_that_stands_by_says_so_in_its_metrics():
    """Its leader gauge is 0 and its jobs' series are gone: what it saw when it led would be
    read beside what the leader sees (examples/monitoring reads the leader's only)."""
    world = World()
    world.deployed()
    first, second = world.watcher(), world.watcher()
    first.metrics = Metrics()
    world.look(first, 0)
    world.look(second)
    for _ in range(4):  # the first stops renewing: the second takes over
        world.look(second)
    assert world.kinds()[-1] == "watcher-took-over"
    text = generate_latest(first.metrics.registry).decode()
    assert "flink_sql_runner_watch_leader 1.0" in text and 'job="orders"' in text
    world.look(first)
    assert world.kinds()[-1] == "standing-by"
    text = generate_latest(first.metrics.registry).decode()
    assert "flink_sql_runner_watch_leader 0.0" in text
    assert 'job="orders"' not in text


class Hook(BaseHTTPRequestHandler):
    received: list[dict] = []
    fail_first = 0

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if Hook.fail_first > 0:
            Hook.fail_first -= 1
            self.send_response(503)
        else:
            Hook.received.append(json.loads(body))
            self.send_response(204)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


def test_events_reach_the_webhook_in_order_through_failures_and_a_command_on_stdin(
    tmp_path: Path,
):
    Hook.received, Hook.fail_first = [], 2
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sink = tmp_path / "events.jsonl"
    script = tmp_path / "notify.py"
    script.write_text(f"import sys\nopen({str(sink)!r}, 'a').write(sys.stdin.read())\n")
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    notifier = Notifier(io.StringIO(), "text", url, [sys.executable, str(script)],
                        sleep=lambda _: None)  # fmt: skip
    try:
        for kind in ("restarted", "backing-off", "crash-looping"):
            notifier.emit(Event(kind, "orders", "connect to jdbc:pg://db?password=hunter2"))
        notifier.close()
    finally:
        server.shutdown()
    assert [e["event"] for e in Hook.received] == ["restarted", "backing-off", "crash-looping"]
    assert all("hunter2" not in json.dumps(e) for e in Hook.received), "no secret in events"
    lines = [json.loads(line) for line in sink.read_text().splitlines()]
    assert [e["event"] for e in lines] == ["restarted", "backing-off", "crash-looping"]


def test_the_metrics_endpoint_has_a_series_per_job():
    world = World()
    world.deployed()
    world.storage.files[STATUS] = json.dumps({
        "run-id": "run-0", "state": "active", "heartbeat": 3,
        "last-batch": {"id": 41, "timestamp": "2026-11-23T11:59:50.000Z",
                       "input-rows-per-second": 12.5, "processed-rows-per-second": 40.0,
                       "duration-ms": 1500, "offsets-behind-latest": 7.0},
    })  # fmt: skip
    metrics = Metrics()
    watcher = world.watcher()
    watcher.metrics = metrics
    world.look(watcher)
    text = metrics.exposition().decode()
    for line in (
        'flink_sql_runner_job_up{job="orders"} 1.0',
        'flink_sql_runner_job_state{job="orders",state="healthy"} 1.0',
        'flink_sql_runner_job_state{job="orders",state="down"} 0.0',
        'flink_sql_runner_job_last_batch_id{job="orders"} 41.0',
        'flink_sql_runner_job_input_rows_per_second{job="orders"} 12.5',
        'flink_sql_runner_job_batch_duration_seconds{job="orders"} 1.5',
        'flink_sql_runner_job_offsets_behind_latest{job="orders"} 7.0',
        'flink_sql_runner_job_restarts{job="orders"} 0.0',
        "flink_sql_runner_watch_leader 1.0",
    ):
        assert line in text, line


@pytest.mark.parametrize("consecutive, delay", [(1, 0), (2, 10), (3, 20), (4, 40), (9, 40)])
def test_the_delay_doubles_up_to_its_maximum(consecutive, delay):
    assert WatchSettings(backoff_first=10, backoff_max=40).delay(consecutive) == delay


def test_status_shows_health_restarts_the_last_failure_and_the_last_batch():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.outcome = "failed"
    world.dies(error=world.error)
    for _ in range(40):
        world.look(watcher, seconds=5)
    rows = status_rows(watcher.deployment, [], world.wall())
    (row,) = rows
    assert row["health"] == "crash-looping" and row["running"] is False
    # The last failure is the last restart's, with its cause.
    reason = f"restart failed: the job failed: {world.error}"
    assert (row["restarts"], row["last-failure"]["reason"]) == (3, reason)
    text = status_text(rows)
    assert f"last failure {row['last-failure']['at']}: {reason}" in text
    assert "not restarted until a deploy changes it or `flink-sql-runner resume orders`" in text
    # A person lifts the mark: the next look restarts it, and it runs.
    assert WatchLog(world.store).resume("orders")
    world.outcome = "active"
    world.look(watcher)
    world.storage.files[STATUS] = json.dumps({
        "run-id": world.target.submissions[-1].run_id, "state": "active", "heartbeat": 2,
        "last-batch": {"id": 5, "timestamp": "2026-11-23T12:03:20.000Z",
                       "input-rows-per-second": 3.0, "processed-rows-per-second": 9.5,
                       "duration-ms": 800, "offsets-behind-latest": 12.0},
    })  # fmt: skip
    (row,) = status_rows(watcher.deployment, [], world.wall())
    assert (row["health"], row["restarts"]) == ("healthy", 4)
    assert row["restarts-last-hour"] == 4
    assert "5 at 12:03:20, 3.0/9.5 rows/s, 0.8 s, lag 12" in status_text([row])


def test_a_deploy_that_changed_the_job_since_the_look_is_never_undone():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.dies()
    # Between the watcher's look and its taking the lock, a deploy recorded version 2 (its
    # run died at once): the watcher must not restart version 1's query.
    lock = world.store.data.lock
    create = lock.create

    def deployed_meanwhile(holder):
        world.store.put(stored_of(make_job(sql="SELECT id FROM src WHERE id > 1"), 2))
        world.storage.add_checkpoint(f"{ROOT}/orders/2", 0)
        lock.create = create
        return create(holder)

    lock.create = deployed_meanwhile
    world.look(watcher)
    assert world.target.submissions == [], "it waits for the next look"
    world.look(watcher)
    (submission,) = world.target.submissions
    assert submission.version == 2
    assert "id > 1" in world.storage.files[submission.runtime_manifest]


def test_a_status_the_storage_cannot_serve_is_no_stall_and_a_runner_without_heartbeat_never_is():
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.storage.fail = True  # checkpoint storage answers 503 for 2 minutes
    for _ in range(12):
        world.look(watcher)
    world.storage.fail = False
    world.storage.files[STATUS] = json.dumps({"run-id": "run-0", "state": "active",
                                              "heartbeat": 1})  # fmt: skip
    world.look(watcher)
    assert "stalled" not in world.kinds(), "the driver could not write either"
    for _ in range(6):
        world.look(watcher)
    assert world.kinds()[-2:] == ["stalled", "restarted"], "quiet for 60 s once readable"
    # A run started by a runner that reports no heartbeat is left alone.
    world.storage.files[STATUS] = json.dumps({"run-id": world.target.submissions[-1].run_id,
                                              "state": "active"})  # fmt: skip
    for _ in range(20):
        world.look(watcher)
    assert world.kinds().count("stalled") == 1


def test_a_look_that_fails_is_said_once_and_its_end_too():
    world = World()
    world.deployed()
    watcher = world.watcher(WatchSettings(interval=10, stall_timeout=600))
    world.look(watcher)
    world.target.fail_listing = True
    for _ in range(5):
        world.look(watcher)
    world.target.fail_listing = False
    world.look(watcher)
    warnings = [e["message"] for e in world.events() if e["event"] == "warning"]
    assert warnings == [
        "cannot look now: the cluster's API answered HTTP 503 to the listing (switch)"
    ]
    assert world.kinds()[-1] == "looking-again"


def test_a_restart_is_said_once_its_record_is_written():
    """What `status` reads agrees with the event that says a job was restarted (found by CI: the
    event came before the record was written, and `status` read on it counted 0 restarts)."""
    world = World()
    world.deployed()
    watcher = world.watcher()
    world.look(watcher)
    world.dies()
    counted = []
    emit = watcher.notifier.emit

    def emitted(event):
        if event.kind == "restarted":
            counted.append(world.record().restarts)
        emit(event)

    watcher.notifier.emit = emitted
    world.look(watcher)
    assert counted == [1]
