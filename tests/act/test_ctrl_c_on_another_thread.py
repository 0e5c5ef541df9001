"""A Ctrl-C is sent to the process, and the kernel may run its handler on any thread; Python raises
the KeyboardInterrupt (or runs the command's own handler) in the main thread only when that thread
runs again. Every wait of a command's main thread wakes every so often (host/runtime.py), so the
interrupt is taken in while a call is in flight. Each test sends SIGINT to a helper thread
(`signal.pthread_kill`: the kernel has no choice), once the main thread is waiting, and failed
before its fix (a hostile review's findings, issue 57's thirteenth part).
"""

from __future__ import annotations

import signal
import threading
import time
from types import SimpleNamespace

import pytest

from flink_sql_runner.act.interrupts import DeployInterrupts
from flink_sql_runner.act.results import Abandoned
from flink_sql_runner.act.stop import stop_jobs
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.host import runtime
from flink_sql_runner.model.runs import Run
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.watch.watcher import Watcher
from tests.act.test_no_interleaving import executor, plan_of, world
from tests.act.test_stop import world as stop_world
from tests.support.interrupts import ctrl_c_here_once_the_main_thread_waits
from tests.support.jobs import CONFIG

#: Seconds an interrupt may take to be taken in: far above the 0.2 s wake, far below the 60 s a
#: call in flight is held for.
PROMPT = 10.0


def test_a_third_ctrl_c_leaves_at_once_while_the_submit_in_flight_hangs():
    """interrupts.py: a third Ctrl-C leaves at once (the lock left to expire). Before, after the
    second the executor joined its workers with no timeout, so a third handled on another thread
    was taken in only once the hanging submit had returned: never, for the user who pressed it."""
    store, target, storage = world()
    lease = StoreLock(store.lock, "deploy", ttl=600)
    lease.acquire(timeout=0)
    entered, release, left = threading.Event(), threading.Event(), threading.Event()

    def hanging_submit(submission):
        entered.set()
        assert release.wait(60)

    target.before_submit = hanging_submit
    acting = executor(store, target, storage, lease)

    class Recorded(DeployInterrupts):
        def _leave_now(self, executor):  # the real one calls os._exit(130)
            left.set()

    left_during_submit: list[bool] = []

    def three_ctrl_cs():
        assert entered.wait(30)
        ctrl_c_here_once_the_main_thread_waits("wait_first")  # 1: the jobs in flight finish
        deadline = time.monotonic() + 30
        while not acting.stopping.is_set() and time.monotonic() < deadline:
            time.sleep(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # 2: the lease abandoned
        while not lease.abandoned and time.monotonic() < deadline:
            time.sleep(0.01)
        ctrl_c_here_once_the_main_thread_waits("wait_all")  # 3: leave at once
        left_during_submit.append(left.wait(PROMPT))
        release.set()

    helper = threading.Thread(target=three_ctrl_cs)
    previous = signal.getsignal(signal.SIGINT)
    plan = plan_of(store, target, storage, [CONFIG])
    try:
        with Recorded(SimpleNamespace(acting=acting, acted=False), lambda line: None):
            helper.start()
            with pytest.raises(Abandoned):
                acting.apply(plan)
    finally:
        signal.signal(signal.SIGINT, previous)
        release.set()
        helper.join()
    assert left_during_submit == [True], "the third Ctrl-C waited for the submit to return"


def test_a_ctrl_c_while_gathering_is_taken_in_while_the_listing_hangs():
    """Before anything is done a Ctrl-C unwinds at once (interrupts.py). Gathering waited for
    the target's listing with `future.result()`, no timeout: a Ctrl-C handled on another thread
    was taken in only once the listing (a YARN or Kubernetes API, S3) had answered."""
    store, target, storage = world()
    entered, release, handled = threading.Event(), threading.Event(), threading.Event()
    listed = target.list_runs

    def hanging_listing():
        entered.set()
        assert release.wait(60)
        return listed()

    target.list_runs = hanging_listing

    def handler(signum, frame):
        handled.set()
        raise KeyboardInterrupt

    taken_in: list[bool] = []

    def ctrl_c():
        assert entered.wait(30)
        ctrl_c_here_once_the_main_thread_waits("result_of")
        taken_in.append(handled.wait(PROMPT))
        release.set()

    previous = signal.signal(signal.SIGINT, handler)
    helper = threading.Thread(target=ctrl_c)
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            gather([CONFIG], store, target, storage, workers=1)
    finally:
        signal.signal(signal.SIGINT, previous)
        release.set()
        helper.join()
    assert taken_in == [True], "the Ctrl-C waited for the listing to return"


def test_a_ctrl_c_between_watchs_looks_is_taken_in_before_the_interval_ends():
    """`watch` waits its interval (15 s by default) on the main thread between looks. Its
    SIGINT handler sets `stopping`; handled on another thread, it ran only once the interval
    had ended."""
    watcher = Watcher.__new__(Watcher)  # its loop only: run()'s collaborators stand in
    watcher.stopping = runtime.event()
    watcher.settings = SimpleNamespace(interval=60.0)
    looked = threading.Event()
    watcher.step = looked.set
    watcher.between_looks = lambda: None
    watcher.settle = lambda: None
    watcher.actions = SimpleNamespace(close=lambda: None)
    watcher.leader = SimpleNamespace(release=lambda: None)
    watcher.metrics = None
    watcher.collector = None

    def stop(signum, frame):  # cli/watch.py's handler
        watcher.stopping.set()

    taken_in: list[bool] = []

    def ctrl_c():
        assert looked.wait(30)
        ctrl_c_here_once_the_main_thread_waits("wait")
        taken_in.append(watcher.stopping.wait(PROMPT))

    previous = signal.signal(signal.SIGINT, stop)
    helper = threading.Thread(target=ctrl_c)
    helper.start()
    began = time.monotonic()
    try:
        watcher.run()
    finally:
        signal.signal(signal.SIGINT, previous)
        helper.join()
    assert taken_in == [True], "the Ctrl-C waited for the interval to end"
    assert time.monotonic() - began < 60


def test_a_ctrl_c_taken_in_while_stop_prints_begins_no_other_stop():
    """`stop_jobs` is a generator: a Ctrl-C taken in while the command prints a result is
    raised in the command's code, which closes the generator. Before, the pool's end then ran
    every stop not begun: `c` was stopped after the Ctrl-C, and reported nowhere."""
    store, target, storage = stop_world("a", "b", "c")

    interrupted = threading.Event()
    waited: list[bool] = []  # asserted here: an assert in the worker would fail b's stop only

    def slow_b(run: Run) -> None:
        if run.name == "b":  # in flight when the Ctrl-C comes; `c` waits for a worker
            waited.append(interrupted.wait(30))
            time.sleep(0.3)  # the generator's close, which follows the raise at once

    target.before_stop = slow_b
    reported = []
    with pytest.raises(KeyboardInterrupt):
        for result in stop_jobs(store, target, storage, None, timeout=5, parallelism=1):
            reported.append((result.name, result.outcome))
            interrupted.set()
            raise KeyboardInterrupt  # the Ctrl-C, taken in while the command prints
    assert reported == [("a", "stopped")]
    assert False not in waited, "b began, and never saw the Ctrl-C"  # b may not have begun
    assert "c" not in target.stops, "c's stop began after the Ctrl-C"
    assert target.list_runs().of("c"), "c still runs"
