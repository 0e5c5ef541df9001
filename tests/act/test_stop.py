"""Stopping several jobs on fakes: one that cannot be stopped has its own result, the others
are stopped all the same; names are checked before anything is stopped."""

from __future__ import annotations

import pytest

from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.errors import UnknownJob
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.jobs import make_job, stored_of


def world(*names: str) -> tuple[FakeStore, FakeTarget, FakeStorage]:
    store, target, storage = FakeStore(), FakeTarget(), FakeStorage()
    for name in names:
        store.put(stored_of(make_job(name=name)))
        target.add_run(Run(name, 1, f"run-{name}", f"pid of {name}"))
    return store, target, storage


def test_a_job_that_cannot_be_stopped_fails_alone_and_the_others_stop():
    store, target, storage = world("a", "b", "c")
    target.unknown.add("b")  # the cluster cannot say whether b's run stopped
    results = list(stop_jobs(store, target, storage, None, timeout=5, parallelism=2))
    assert [(r.name, r.outcome) for r in results] == [
        ("a", "stopped"),
        ("b", "failed"),
        ("c", "stopped"),
    ]
    failed = results[1]
    assert failed.exit_code == 1
    assert failed.message == "pid of b: the cluster cannot say it stopped (switch)"
    assert target.list_runs().of("a") == () and target.list_runs().of("c") == ()
    assert store.read("a").manifest.job["desired-state"] == "stopped"
    assert store.read("b").manifest.job["desired-state"] == "running", (
        "not recorded: it may still run"
    )


def test_an_unknown_name_stops_nothing():
    store, target, storage = world("a")
    with pytest.raises(UnknownJob, match="unknown job 'nope'"):
        list(stop_jobs(store, target, storage, ["a", "nope"], timeout=5))
    assert target.list_runs().of("a"), "a still runs"
