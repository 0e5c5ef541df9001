"""Stopping several jobs on fakes: one that cannot be stopped has its own result, the others
are stopped all the same; names are checked before anything is stopped."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from flink_sql_runner.act.stop import StopResult, stop_jobs
from flink_sql_runner.errors import UnknownJob
from flink_sql_runner.host import runtime
from flink_sql_runner.model.runs import Run
from tests.support.fakes import FakeStorage, FakeStore, FakeTarget
from tests.support.interrupts import ctrl_c_here_once_the_main_thread_waits
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
    """A pool that begins only the first job submitted, when its result is asked for; the first
    wait for it is interrupted (Ctrl-C, or SIGTERM as the command line turns it into one)."""

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

            def result(timeout: float | None = None) -> StopResult:
                future.set_result(fn(*args))
                return Future.result(future)

            future.result = result  # type: ignore[method-assign]
        return future


def interrupted_once(future: Future[StopResult]) -> StopResult:
    """runtime.result_of, its first call interrupted."""
    interrupted_once.calls += 1  # type: ignore[attr-defined]
    if interrupted_once.calls == 1:  # type: ignore[attr-defined]
        raise KeyboardInterrupt
    return future.result()


def test_ctrl_c_finishes_the_stops_in_flight_begins_no_other_and_reports_every_job(
    monkeypatch: pytest.MonkeyPatch,
):
    """Ctrl-C (or SIGTERM) while `a` is being stopped: `a`'s stop ends and is reported, `b`
    and `c` are reported `not-begun` and their runs go on; then the interrupt goes on."""
    store, target, storage = world("a", "b", "c")
    monkeypatch.setattr(runtime, "pool", CtrlCWhileTheFirstStops)
    interrupted_once.calls = 0  # type: ignore[attr-defined]
    monkeypatch.setattr(runtime, "result_of", interrupted_once)
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


class RecordedPool(ThreadPoolExecutor):
    """The real pool, its futures kept for the test to look at."""

    futures: list[Future[StopResult]] = []

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def, override]
        future = super().submit(fn, *args, **kwargs)
        self.futures.append(future)
        return future


def test_a_ctrl_c_the_kernel_hands_to_another_thread_still_interrupts_the_stops(
    monkeypatch: pytest.MonkeyPatch,
):
    """The kernel may run a Ctrl-C's handler on any thread. Before, the command waited for the
    first stop's result with no timeout, so the interrupt was taken in only once `a` had
    stopped, and by then the pool had begun stopping `b`."""
    store, target, storage = world("a", "b", "c")
    RecordedPool.futures = []
    monkeypatch.setattr(runtime, "pool", lambda workers, name="": RecordedPool(workers))
    entered, release = threading.Event(), threading.Event()

    def slow_stop(run: Run) -> None:
        if run.name == "a":
            entered.set()
            assert release.wait(60)

    target.before_stop = slow_stop
    b_cancelled: list[bool] = []

    def ctrl_c_on_this_thread_then_release() -> None:
        assert entered.wait(30)
        for _ in range(3000):  # every stop submitted
            if len(RecordedPool.futures) == 3:
                break
            threading.Event().wait(0.01)
        ctrl_c_here_once_the_main_thread_waits("result_of")  # handled on this thread
        for _ in range(3000):
            if RecordedPool.futures[1].cancelled():
                break
            threading.Event().wait(0.01)
        b_cancelled.append(RecordedPool.futures[1].cancelled())
        release.set()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    helper = threading.Thread(target=ctrl_c_on_this_thread_then_release)
    helper.start()
    results: list[StopResult] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            for result in stop_jobs(store, target, storage, None, timeout=5, parallelism=1):
                results.append(result)
    finally:
        signal.signal(signal.SIGINT, previous)
        release.set()
        helper.join()
    assert b_cancelled == [True], "interrupted while a's stop was in flight"
    assert [(r.name, r.outcome) for r in results] == [
        ("a", "stopped"),
        ("b", "not-begun"),
        ("c", "not-begun"),
    ]
    assert target.stops == ["a"]
