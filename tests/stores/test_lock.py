"""The store's lock as a lease: exclusive, waits and names the holder, expires on the waiter's
own clock, never on two machines' clocks, renews through failures, and makes a holder that lost
it stop before its next side effect."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import asdict

import pytest

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.runs import Timeouts
from flink_sql_runner.decide.plan import build_plan
from flink_sql_runner.errors import LockTimeout
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.host import processes as procs
from flink_sql_runner.model.runs import Run
from flink_sql_runner.stores.local_lock import FileLockBackend
from flink_sql_runner.stores.lock import (
    Holder,
    LeaseLost,
    StoreLock,
    locked,
    this_machine,
    waiting_line,
)
from tests.support.fakes import FakeClock, FakeStorage, FakeStore, FakeTarget, MemoryLockBackend
from tests.support.jobs import BASE, QUERY, ROOT, given_go, stored_of


def make(backend, clock, command="deploy", ttl=60.0):
    return StoreLock(backend, command, ttl=ttl, clock=clock, sleep=clock.sleep)


def file_lock(tmp_path, clock, **kw):
    return make(FileLockBackend(tmp_path / ".lock"), clock, **kw)


def test_second_lock_waits_then_times_out_naming_the_holder(tmp_path):
    clock = FakeClock()
    first, second = file_lock(tmp_path, clock), file_lock(tmp_path, clock, command="prune")
    first.acquire(timeout=0, heartbeat=False)
    seen = []
    second.on_wait = lambda holder, waited, left: seen.append((holder.command, waited, left))
    with pytest.raises(LockTimeout) as raised:
        second.acquire(timeout=25)
    message = str(raised.value)
    assert f"locked by deploy by pid {os.getpid()} on {socket.gethostname()} since 20" in message
    assert "waited 25 s" in message and raised.value.exit_code == 3
    # Who holds it, at once and then every 10 s of waiting (polled every second).
    assert seen == [("deploy", 0.0, 25.0), ("deploy", 10.0, 15.0), ("deploy", 20.0, 5.0)]
    first.release()
    second.acquire(timeout=0, heartbeat=False)
    second.release()
    assert not (tmp_path / ".lock").exists()


def test_a_lock_unchanged_for_its_ttl_on_the_waiters_clock_is_taken_over(tmp_path):
    crashed = file_lock(tmp_path, FakeClock(), ttl=30)
    assert crashed.try_acquire() is None  # and never renewed: its process died elsewhere
    clock = FakeClock(5_000.0)  # another machine: its own clock, its own epoch
    taker = file_lock(tmp_path, clock)
    assert taker.try_acquire() is not None, "first sight starts the waiter's count"
    clock.now += 29
    assert taker.try_acquire() is not None
    clock.now += 1
    assert taker.try_acquire() is None
    assert taker.took_over is not None and taker.took_over.owner == crashed.holder.owner
    holder, _ = FileLockBackend(tmp_path / ".lock").read()
    assert holder.owner == taker.holder.owner


def test_two_deployers_whose_clocks_differ_by_ten_minutes_never_both_hold_it():
    """The lock of the original code expired when the waiter's wall clock passed the holder's
    `expires`: a waiter ten minutes ahead took a live lock over at once."""
    backend = MemoryLockBackend()
    here, ahead = FakeClock(1_700_000_000.0), FakeClock(1_700_000_600.0)
    holder, waiter = make(backend, here, ttl=30), make(backend, ahead, ttl=30)
    assert holder.try_acquire() is None
    for _ in range(20):  # 200 s of a live holder renewing every 10 s
        here.now += 10
        ahead.now += 10
        assert holder.renew_once()
        assert waiter.try_acquire() is not None, "never taken from a live holder"
        holder.check()
    # The holder dies: no more renewals. The waiter takes over after 30 s of its own clock,
    # by which time the holder's lease had ended on the holder's clock (22.5 s).
    here.now += 29
    ahead.now += 29
    assert waiter.try_acquire() is not None
    with pytest.raises(LeaseLost):
        holder.check()
    ahead.now += 1
    assert waiter.try_acquire() is None


def test_failed_renewals_are_retried_and_the_lease_lost_only_when_none_succeeds():
    backend, clock = MemoryLockBackend(), FakeClock()
    lease = make(backend, clock, ttl=60)
    assert lease.try_acquire() is None
    backend.fail_replace = 3  # a 503 on three renewals in a row
    for _ in range(3):
        clock.now += 5
        assert not lease.renew_once()
        lease.check()  # still within 45 s of the last renewal sent
    clock.now += 5
    assert lease.renew_once(), "the fourth attempt gets through"
    backend.fail_replace = 100
    clock.now += 44
    assert not lease.renew_once()
    lease.check()
    clock.now += 1
    assert not lease.renew_once()
    with pytest.raises(LeaseLost, match="could not be renewed"):
        lease.check()


def test_a_lease_another_deploy_took_over_is_lost_at_once():
    backend, clock = MemoryLockBackend(), FakeClock()
    lease = make(backend, clock, ttl=60)
    assert lease.try_acquire() is None
    backend.steal(Holder.me("deploy", 60))
    assert not lease.renew_once()
    with pytest.raises(LeaseLost, match="another deploy took it over"):
        lease.check()
    lease.release()
    assert backend.holder is not None, "release leaves the new holder's lock alone"


def leased_world():
    """`orders` v1 recorded and running, and a deploy holding the store's lock (ttl 60 s)."""
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    store.put(stored_of(BASE, 1))
    target.add_run(Run("orders", 1, "old", "pid 1"))
    storage.add_checkpoint(f"{ROOT}/orders/1", 4)
    clock = FakeClock()
    lease = make(store.lock, clock, ttl=60)
    assert lease.try_acquire() is None
    return store, target, storage, clock, lease


@pytest.mark.parametrize("handover", ["cold", "warm"])
def test_a_holder_that_lost_its_lease_stops_before_its_next_write(handover):
    store, target, storage, clock, lease = leased_world()

    def slow_stop(run):  # the stop takes long, the renewals meanwhile all fail
        store.lock.fail_replace = 100
        clock.now += 50
        assert not lease.renew_once()

    target.before_stop = slow_stop
    executor = Executor(
        store, target, storage, Timeouts(start=30, stop=5, poll=1), clock, clock.sleep, lease=lease
    )
    plan = build_plan(gather([QUERY], store, target, storage, workers=1), handover=handover)
    result = executor.apply(plan)["orders"]
    assert not result.ok and "lost the manifest store's lock" in result.summary
    # Warm, the new run was prepared before the stop, while the lease held; it writes nothing
    # without a go, and none is given.
    assert len([s for s in target.submissions if s.prepared]) == (handover == "warm")
    assert [s for s in target.submissions if not s.prepared] == []
    assert given_go(storage) == [], "nothing started after the lease was lost"
    assert store.writes == [] and store.manifests["orders"].meta.query_version == 1


@pytest.mark.parametrize("handover, first", [("cold", "stop"), ("warm", "prepare")])
def test_a_long_step_is_not_begun_on_a_lease_that_cannot_be_renewed(handover, first):
    """Finding 1: the lease is trusted for 45 s here, a stop or a submit may take minutes. Before,
    the stop was begun on a lease whose renewals failed, and it could lapse mid-way, letting
    another deployer act on the same job; now the lease is renewed first, or the step is not
    begun."""
    store, target, storage, clock, lease = leased_world()
    store.lock.fail_replace = 100  # S3 answers 503 to every renewal from now on
    executor = Executor(
        store, target, storage, Timeouts(start=30, stop=5, poll=1), clock, clock.sleep, lease=lease
    )
    facts = gather([QUERY], store, target, storage, workers=1)
    result = executor.apply(build_plan(facts, handover=handover))
    assert not result["orders"].ok
    assert f"not beginning to {first} orders" in result["orders"].summary
    assert target.stops == [] and target.submissions == [], "nothing begun"
    assert store.side == {}, "nothing was done: no intent left"


def test_lock_is_released_when_the_body_raises(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with locked(file_lock(tmp_path, FakeClock()), timeout=0):
            assert (tmp_path / ".lock").exists()
            raise KeyboardInterrupt
    assert not (tmp_path / ".lock").exists()


def test_release_does_not_delete_a_lock_someone_else_took_over(tmp_path):
    slow = file_lock(tmp_path, FakeClock(), ttl=10)
    slow.try_acquire()
    clock = FakeClock()
    fast = file_lock(tmp_path, clock)
    fast.try_acquire()
    clock.now += 10
    assert fast.try_acquire() is None
    slow.release()
    holder, _ = FileLockBackend(tmp_path / ".lock").read()
    assert holder is not None and holder.owner == fast.holder.owner


def test_unreadable_lock_is_taken_over(tmp_path):
    (tmp_path / ".lock").write_text("garbage")
    assert file_lock(tmp_path, FakeClock()).try_acquire() is None


def test_holder_round_trip_and_the_first_version_of_the_lock():
    holder = Holder.me("deploy", 60)
    assert Holder.from_json(holder.to_json()) == holder
    assert holder.to_json() == json.dumps(asdict(holder))  # every field, in their order
    assert Holder.from_json("{}") is None
    old = {"owner": "o", "host": "h", "pid": 1, "command": "deploy", "acquired": 0.0,
           "expires": 120.0}  # fmt: skip
    read = Holder.from_json(json.dumps(old))
    assert read is not None and read.since == "1970-01-01T00:00:00Z" and read.ttl == 120


def dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_a_lock_of_a_dead_process_on_this_machine_is_taken_over_at_once(tmp_path):
    pid = dead_pid()
    assert this_machine() is not None, "Linux: boot id and pid namespace"
    dead = Holder("owner-1", socket.gethostname(), pid, "deploy", "then", 9e9, this_machine(),
                  "linux:1")  # fmt: skip
    FileLockBackend(tmp_path / ".lock").create(dead)
    lock = file_lock(tmp_path, FakeClock())
    assert lock.try_acquire() is None
    assert lock.took_over == dead


def test_the_same_hostname_and_a_free_pid_in_another_container_are_waited_for(tmp_path):
    """Containers share hostnames and reuse pids: without the same boot and pid namespace,
    a pid that is free here says nothing about the holder."""
    other = Holder("owner-2", socket.gethostname(), dead_pid(), "deploy", "then", 9e9,
                   "another-boot/4026531836", "linux:1")  # fmt: skip
    FileLockBackend(tmp_path / ".lock").create(other)
    assert file_lock(tmp_path, FakeClock()).try_acquire() == other


def test_a_live_pid_with_another_start_time_is_not_the_holder(tmp_path):
    """A pid reused by a new process: the holder's process start time tells them apart."""
    me = procs.start_marker(os.getpid())
    assert me is not None
    reused = Holder("owner-3", socket.gethostname(), os.getpid(), "deploy", "then", 9e9,
                    this_machine(), "linux:1")  # fmt: skip
    FileLockBackend(tmp_path / ".lock").create(reused)
    assert file_lock(tmp_path, FakeClock()).try_acquire() is None


def test_the_waiting_line_names_the_holder_and_the_time_left(tmp_path):
    clock = FakeClock()
    first = file_lock(tmp_path, clock, command="stop")
    first.acquire(timeout=0, heartbeat=False)
    line = waiting_line(first.holder, str(tmp_path / ".lock"), 10.4, 289.6)
    assert line == (
        f"waiting for the manifest store's lock ({tmp_path / '.lock'}): held by stop by pid "
        f"{os.getpid()} on {socket.gethostname()} since {first.holder.since}; waited 10 s, "
        "giving up in 290 s (--lock-timeout)"
    )
    first.release()
