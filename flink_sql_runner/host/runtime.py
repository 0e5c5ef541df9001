"""Time and threads, through one seam: the real ones by default, a simulated world's in tests.

Every module of the deployer that reads a clock, sleeps, waits or starts a thread does it through
the functions here, which dispatch to the runtime installed now (`install`). The real runtime is
the standard library's; `tests/simulation/` installs one with a virtual clock that runs one thread
at a time and chooses, seeded, which one goes on at every wait. The functions look the runtime up
when called, so a default argument such as `clock=runtime.monotonic` follows an `install` made
after the module was imported.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Event(Protocol):
    def set(self) -> None: ...
    def clear(self) -> None: ...
    def is_set(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> bool: ...


class Thread(Protocol):
    def start(self) -> None: ...
    def join(self, timeout: float | None = None) -> None: ...


#: How often a wait on futures or on an event wakes. A Ctrl-C is sent to the process, and the
#: kernel may run its handler on any thread; Python raises the KeyboardInterrupt in the main
#: thread only when that thread runs again, so a wait with no timeout would take it in only once
#: a worker is done.
_WAKE_EVERY = 0.2


class _WakingEvent(threading.Event):
    """A threading.Event whose wait wakes every `_WAKE_EVERY` seconds: `watch`'s main thread
    waits on one between its looks."""

    def wait(self, timeout: float | None = None) -> bool:
        ends = None if timeout is None else time.monotonic() + timeout
        while True:
            left = _WAKE_EVERY if ends is None else min(_WAKE_EVERY, ends - time.monotonic())
            if super().wait(max(0.0, left)):
                return True
            if ends is not None and time.monotonic() >= ends:
                return False


class Runtime:
    """The real machine: the standard library's clocks, sleeps, threads and pools."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def pool(self, workers: int, name: str = "") -> Executor:
        return ThreadPoolExecutor(workers, thread_name_prefix=name)

    def wait_first(self, futures: Iterable[Future[Any]]) -> list[Future[Any]]:
        futures = list(futures)
        while futures and not any(future.done() for future in futures):
            wait(futures, timeout=_WAKE_EVERY, return_when=FIRST_COMPLETED)
        return [future for future in futures if future.done()]

    def wait_all(self, futures: Iterable[Future[Any]]) -> None:
        futures = list(futures)
        # done(), not wait()'s answer: a future cancelled before a worker took it is done, and
        # wait() would count it as not done until a worker had seen it.
        while not all(future.done() for future in futures):
            wait(futures, timeout=_WAKE_EVERY)

    def shutdown(
        self, pool: Executor, futures: Iterable[Future[Any]], cancel_futures: bool = False
    ) -> None:
        pool.shutdown(wait=False, cancel_futures=cancel_futures)
        self.wait_all(futures)  # its workers' calls, woken as every wait is
        pool.shutdown(wait=True)

    def thread(self, fn: Callable[[], None], name: str) -> Thread:
        return threading.Thread(target=fn, name=name, daemon=True)

    def event(self) -> Event:
        return _WakingEvent()

    def lock(self) -> Any:
        return threading.Lock()


_installed: list[Runtime] = [Runtime()]


def current() -> Runtime:
    return _installed[-1]


@contextmanager
def install(runtime: Runtime) -> Iterator[Runtime]:
    """Use `runtime` for every call made while this is open."""
    _installed.append(runtime)
    try:
        yield runtime
    finally:
        _installed.remove(runtime)


def monotonic() -> float:
    return _installed[-1].monotonic()


def wall() -> float:
    """Seconds since the epoch (time.time)."""
    return _installed[-1].wall()


def sleep(seconds: float) -> None:
    _installed[-1].sleep(seconds)


def pool(workers: int, name: str = "") -> Executor:
    """A pool of `workers` threads (a ThreadPoolExecutor)."""
    return _installed[-1].pool(workers, name)


def wait_first(futures: Iterable[Future[Any]]) -> list[Future[Any]]:
    """Wait until one of `futures` is done; the done ones, in the order given (never a set's
    order, which differs from run to run)."""
    return _installed[-1].wait_first(futures)


def wait_all(futures: Iterable[Future[Any]]) -> None:
    _installed[-1].wait_all(futures)


def shutdown(pool: Executor, futures: Iterable[Future[Any]], cancel_futures: bool = False) -> None:
    """`pool` shut down once its workers are done with `futures` (every future it was given
    that may still run), the wait woken as `wait_all`'s: a third Ctrl-C is taken in while a
    worker's call hangs. `cancel_futures`: the ones no worker has begun are cancelled first."""
    _installed[-1].shutdown(pool, futures, cancel_futures)


def result_of(future: Future[T]) -> T:
    """`future.result()`, its wait woken as `wait_all`'s (a Ctrl-C is taken in meanwhile)."""
    if not future.done():
        _installed[-1].wait_all([future])
    return future.result()


def results_of(futures: Iterable[Future[T]]) -> list[T]:
    """Each future's result, in their order (as `Executor.map` gives them), each waited for as
    `result_of` waits."""
    return [result_of(future) for future in list(futures)]


def thread(fn: Callable[[], None], name: str) -> Thread:
    """A daemon thread running `fn`, not started yet."""
    return _installed[-1].thread(fn, name)


def event() -> Event:
    return _installed[-1].event()


def lock() -> Any:
    """A mutual-exclusion lock (threading.Lock) for state that threads share."""
    return _installed[-1].lock()
