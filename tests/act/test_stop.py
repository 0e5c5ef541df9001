"""Stopping several jobs on fakes: one that cannot be stopped has its own result, the others
are stopped all the same; names are checked before anything is stopped."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import pytest

from flink_sql_runner.act.stop import StopResult, stop_jobs
from flink_sql_runner.errors import UnknownJob
from flink_sql_runner.host import runtime
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


class CtrlCWhileTheFirstStops:
    """A pool that begins only the first job submitted; the first wait for it is interrupted
    (Ctrl-C, or SIGTERM as the command line turns it into one), the next sees it end."""

    def __init__(self, *_: object) -> None:
        self.first: Future[StopResult] | None = None

    def __enter__(self) -> CtrlCWhileTheFirstStops:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def submit(self, fn: Callable[..., StopResult], *args: object) -> Future[StopResult]:
        future: Future[StopResult] = Future()
        if self.first is None:
            self.first = future
            future.set_running_or_notify_cancel()
            waits = iter([False, True])

            def result(timeout: float | None = None) -> StopResult:
                if not next(waits):
                    raise KeyboardInterrupt
                future.set_result(fn(*args))
                return Future.result(future)

            future.result = result  # type: ignore[method-assign]
        return future


def test_ctrl_c_finishes_the_stops_in_flight_begins_no_other_and_reports_every_job(
    monkeypatch: pytest.MonkeyPatch,
):
    """Ctrl-C (or SIGTERM) while `a` is being stopped: `a`'s stop ends and is reported, `b`
    and `c` are reported `not-begun` and their runs go on; then the interrupt goes on."""
    store, target, storage = world("a", "b", "c")
    monkeypatch.setattr(runtime, "pool", CtrlCWhileTheFirstStops)
    results: list[StopResult] = []
    with pytest.raises(KeyboardInterrupt):
        for result in stop_jobs(store, target, storage, None, timeout=5, parallelism=1):
            results.append(result)
    assert [(r.name, r.outcome) for r in results] == [
        ("a", "stopped"),
        ("b", "not-begun"),
        ("c", "not-begun"),
    ]
    assert target.stops == ["a"]
    assert target.list_runs().of("b") and target.list_runs().of("c")
