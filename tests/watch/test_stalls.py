"""A healthy run is never judged stalled: the stall timeout `watch` accepts and the heartbeat
the runner writes agree, whatever the look interval and however late the writes come."""

from __future__ import annotations

import random

import pytest

from flink_sql_runner.model.control import HEARTBEAT_SECONDS, MIN_STALL_TIMEOUT
from flink_sql_runner.model.runs import Run
from flink_sql_runner.watch.stalls import Stalls
from runner import status as runner_status

RUN = (Run("idle", 1, run_id="r1", detail="pid 7"),)


def test_the_runner_beats_as_often_as_the_deployer_counts_on():
    assert runner_status.HEARTBEAT_SECONDS == HEARTBEAT_SECONDS
    assert MIN_STALL_TIMEOUT >= 3 * HEARTBEAT_SECONDS


@pytest.mark.parametrize("seed", range(40))
def test_an_idle_healthy_run_is_never_stalled_at_the_shortest_timeout(seed: int):
    rng = random.Random(seed)
    interval = rng.choice([0.5, 1.0, 2.0, 7.5, 9.9, 10.0, 15.0, rng.uniform(0.5, 120.0)])
    lateness = rng.uniform(0.0, HEARTBEAT_SECONDS * 0.9)  # a loaded driver writes late
    now = [0.0]
    stalls = Stalls(MIN_STALL_TIMEOUT, 3600.0, lambda: now[0])
    beats, beat, next_beat = [], 0, 0.0
    while next_beat < 3600.0:  # an hour of an idle query: no batch, heartbeats only
        beats.append(next_beat)
        next_beat += HEARTBEAT_SECONDS + rng.uniform(0.0, lateness)
    look = rng.uniform(0.0, interval)
    while look < 3600.0:
        now[0] = look
        beat = sum(1 for at in beats if at <= look)
        status = {"run-id": "r1", "heartbeat": beat, "batch-running-seconds": None}
        why = stalls.judge("idle", RUN, status)
        assert why is None, f"seed {seed}: interval {interval:.1f} s, at {look:.1f} s: {why}"
        look += interval


def test_a_frozen_run_is_stalled_after_the_timeout():
    now = [0.0]
    stalls = Stalls(MIN_STALL_TIMEOUT, 3600.0, lambda: now[0])
    status = {"run-id": "r1", "heartbeat": 4}
    assert stalls.judge("frozen", RUN, status) is None
    now[0] = MIN_STALL_TIMEOUT - 1
    assert stalls.judge("frozen", RUN, status) is None
    now[0] = MIN_STALL_TIMEOUT
    assert stalls.judge("frozen", RUN, status) == "no heartbeat from its driver for 30 s"
