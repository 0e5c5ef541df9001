"""The store lock on a local folder: exclusive, waits, reports the holder, expires, releases."""

from __future__ import annotations

import pytest

from flink_sql_runner.errors import LockTimeout
from flink_sql_runner.lock import FileLockBackend, Holder, StoreLock, locked
from tests.fakes import FakeClock


def make(tmp_path, clock, command="deploy", ttl=60.0):
    return StoreLock(
        FileLockBackend(tmp_path / ".lock"), command, ttl=ttl, clock=clock, sleep=clock.sleep
    )


def test_second_lock_waits_then_times_out_naming_the_holder(tmp_path):
    clock = FakeClock(1_700_000_000.0)
    first, second = make(tmp_path, clock), make(tmp_path, clock, command="prune")
    first.acquire(timeout=0)
    with pytest.raises(LockTimeout) as raised:
        second.acquire(timeout=5)
    message = str(raised.value)
    assert "locked by deploy by pid" in message and "since 2023-11-14T22:13:20Z" in message
    assert "waited 5 s" in message
    assert raised.value.exit_code == 3
    first.release()
    second.acquire(timeout=0)
    second.release()
    assert not (tmp_path / ".lock").exists()


def test_expired_lock_is_taken_over(tmp_path):
    clock = FakeClock(1_700_000_000.0)
    crashed = make(tmp_path, clock, ttl=30)
    assert crashed.try_acquire() is None  # and never released: its process died
    clock.now += 31
    taker = make(tmp_path, clock)
    assert taker.try_acquire() is None
    assert taker.took_over is not None and taker.took_over.owner == crashed.holder.owner
    holder, _ = FileLockBackend(tmp_path / ".lock").read()
    assert holder.owner == taker.holder.owner


def test_lock_is_released_when_the_body_raises(tmp_path):
    clock = FakeClock(1_700_000_000.0)
    with pytest.raises(KeyboardInterrupt):
        with locked(make(tmp_path, clock), timeout=0):
            assert (tmp_path / ".lock").exists()
            raise KeyboardInterrupt
    assert not (tmp_path / ".lock").exists()


def test_release_does_not_delete_a_lock_someone_else_took_over(tmp_path):
    clock = FakeClock(1_700_000_000.0)
    slow = make(tmp_path, clock, ttl=10)
    slow.try_acquire()
    clock.now += 11
    fast = make(tmp_path, clock)
    assert fast.try_acquire() is None
    slow.release()
    holder, _ = FileLockBackend(tmp_path / ".lock").read()
    assert holder is not None and holder.owner == fast.holder.owner


def test_unreadable_lock_counts_as_expired(tmp_path):
    (tmp_path / ".lock").write_text("garbage")
    lock = make(tmp_path, FakeClock(1_700_000_000.0))
    assert lock.try_acquire() is None


def test_holder_round_trip():
    holder = Holder.me("deploy", 60, 100.0)
    assert Holder.from_json(holder.to_json()) == holder
    assert Holder.from_json("{}") is None


def test_a_lock_of_a_dead_process_on_this_machine_is_taken_over_at_once(tmp_path):
    import socket
    import subprocess
    import sys

    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = Holder("owner-1", socket.gethostname(), int(gone.stdout), "deploy", 0.0, 9e18)
    FileLockBackend(tmp_path / ".lock").create(dead)
    lock = make(tmp_path, FakeClock(1_700_000_000.0))
    assert lock.try_acquire() is None
    assert lock.took_over == dead


def test_a_live_holder_on_another_machine_is_waited_for(tmp_path):
    other = Holder("owner-2", "another-host", 1, "deploy", 0.0, 9e18)
    FileLockBackend(tmp_path / ".lock").create(other)
    assert make(tmp_path, FakeClock(1_700_000_000.0)).try_acquire() == other
