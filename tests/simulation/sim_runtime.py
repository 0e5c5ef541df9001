"""The simulated runtime (installed through flink_sql_runner/host/runtime.py).

Every actor is a set of real OS threads of one simulated process, but only one thread runs at a
time: each waits on its own semaphore and exactly one is released, which runs until its next yield
point (a call into the simulated world, a sleep, a wait on a future, an event or a contended
lock). There the scheduler (`_next`, run by the thread that yields) picks the next thread with
the seed's random generator among the runnable ones (sorted by creation), and when none is
runnable moves the virtual clock to the earliest deadline; it releases the chosen thread's
semaphore, or goes on at once when the chosen thread is itself (one switch between OS threads
per step at most, none when the thread that yields is picked again). A killed process's threads
never run again; at the end of the seed they are released with `Killed`, which every yield point
raises for them, so their `finally:` blocks change nothing in the world.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import os
import random
import sys
import threading
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from flink_sql_runner.host.runtime import Runtime

EPOCH = 1_800_000_000.0  # the virtual wall clock at virtual time 0
FIRST_PID = 4242  # the simulated processes' pids, in the order they begin


@contextmanager
def one_core(slot: int | None = None) -> Iterator[None]:
    """The threads started meanwhile by this one (a seed's) on one CPU: only one of them runs at
    a time, and a hand-over on one core is one context switch, where on two the thread woken
    up waits once more, for the GIL of the one that woke it (a fifth of a seed's CPU). The CPU:
    the `slot`-th of the process's (`run_many` numbers its workers, which so spread over
    them), else the one it runs on now; as it was after (the process may start Spark next).
    As it is where affinity cannot be set."""
    try:
        allowed = os.sched_getaffinity(0)
        cpus = sorted(allowed)
        cpu = cpus[slot % len(cpus)] if slot is not None else _cpu_now(cpus)
        os.sched_setaffinity(0, {cpu})
    except (AttributeError, OSError):  # not Linux
        yield
        return
    try:
        yield
    finally:
        os.sched_setaffinity(0, allowed)


def _cpu_now(cpus: list[int]) -> int:
    """The CPU this thread runs on (the 39th field of its stat); the first one allowed if that
    cannot be read."""
    try:
        with open("/proc/thread-self/stat") as stat:
            cpu = int(stat.read().rpartition(")")[2].split()[36])
    except (OSError, ValueError, IndexError):
        return cpus[0]
    return cpu if cpu in cpus else cpus[0]


class Killed(BaseException):
    """Raised in the threads of a killed process (and of every process once the seed ends)."""


def _unraisable(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    def quiet(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, Killed):
            hook(unraisable)

    return quiet


sys.unraisablehook = _unraisable(sys.unraisablehook)  # Killed in a collected generator is no news


def _closed() -> Any:
    """A binary semaphore at 0 (a raw lock, held): the fastest hand-over between threads."""
    found = threading.Lock()
    found.acquire()
    return found


class Proc:
    def __init__(self, name: str, pid: int) -> None:
        self.name = name
        self.pid = pid  # its own, as each deployer on one machine has (the lock's holder names it)
        self.dead = False  # killed, or exited
        self.killed = False
        self.main: SimThread | None = None
        self.threads: list[SimThread] = []

    def __repr__(self) -> str:
        return self.name


class _Carrier:
    """An OS thread that runs simulated threads, one after another: a seed starts about sixty,
    about fourteen of them at once at most, and an OS thread's start waits for it to run once
    (two context switches besides its creation). A simulated thread is handed its carrier as it is
    spawned and given it to run when first chosen. Each runs in a context of its own, as a new
    thread's; nothing else of a simulated thread outlives it (its thread-local `me` is set as
    it begins)."""

    def __init__(self, rt: SimRuntime) -> None:
        self.rt = rt
        self.job = _closed()  # released with `thread` set: run it; with None: end
        self.thread: SimThread | None = None
        self.os = threading.Thread(target=self._loop, name="sim-carrier", daemon=True)
        self.os.start()

    def carry(self, thread: SimThread) -> None:
        self.thread = thread
        self.os.name = f"sim-{thread.proc.name}-{thread.name}"
        self.job.release()

    def _loop(self) -> None:
        while True:
            self.job.acquire()
            thread = self.thread
            if thread is None:
                return
            contextvars.Context().run(thread._main)


class SimThread:
    def __init__(self, rt: SimRuntime, proc: Proc, name: str, fn: Callable[[], Any], daemon: bool):
        self.rt, self.proc, self.name, self.fn, self.daemon = rt, proc, name, fn, daemon
        self.id = rt._next_id = rt._next_id + 1
        self.go = _closed()
        self.done = False
        self.until: Callable[[], bool] | None = None
        self.deadline: float | None = None
        self.blocked = False
        self.signal: Callable[[], None] | None = None
        self.error: BaseException | None = None
        self.carrier: _Carrier | None = None  # the OS thread that runs it
        self.started = False  # chosen once: its carrier runs it
        #: A stepped thread's steps (`SimRuntime.spawn_steps`); None for one on an OS thread.
        self.steps: Generator[float, None, None] | None = None

    def _main(self) -> None:
        self.rt._local.me = self
        try:
            if self.proc.dead or self.rt.cleaning:
                raise Killed
            self.fn()
        except Killed:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported in the history
            self.error = exc
            self.rt.on_crash(self, exc)
        finally:
            self.done = True
            self.rt._ended = True
            assert self.carrier is not None
            self.rt._idle.append(self.carrier)  # its carrier may take the next thread now
            if self.rt.cleaning:
                self.rt._baton.release()
            else:
                self.rt._hand_over(self.rt._next())


class SimRuntime(Runtime):
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.now = 0.0
        self.step = 0
        self.cleaning = False
        self._next_id = 0
        self._baton = _closed()
        self._local = threading.local()
        self.threads: list[SimThread] = []
        self._carriers: list[_Carrier] = []  # every one started
        self._idle: list[_Carrier] = []  # those whose thread ended
        #: The threads that may run (not ended, their process alive), in the order they were
        #: created: the scheduler's candidates, pruned once a thread ended or a process died.
        self._live: list[SimThread] = []
        self._prune = False
        self.procs: list[Proc] = []
        self.after_step: Callable[[], None] = lambda: None
        self.on_crash: Callable[[SimThread, BaseException], None] = lambda t, e: None
        self.on_exit: Callable[[Proc], None] = lambda p: None
        self.running: SimThread | None = None
        self._ended = False  # a thread ended since the last _reap
        self._director: Proc | None = None
        self._max_steps = 0
        self._note = ""  # why the run ended ('' when the director is done)
        self._error: BaseException | None = None  # raised by the scheduler in a thread

    # -- threads and processes ----------------------------------------------------------------
    def me(self) -> SimThread:
        me = getattr(self._local, "me", None)
        if me is None:
            if self.cleaning:  # a generator of a dead thread, closed by the garbage collector
                raise Killed
            raise RuntimeError("a simulated call from outside the simulation")
        return me

    def current(self) -> Proc | None:
        """The simulated process whose thread runs now; None outside the simulation's threads."""
        me = getattr(self._local, "me", None)
        return me.proc if me is not None else None

    def process(self, name: str, fn: Callable[[], Any]) -> Proc:
        proc = Proc(name, FIRST_PID + len(self.procs))
        self.procs.append(proc)
        proc.main = self.spawn(fn, "main", daemon=False, proc=proc)
        return proc

    def proc_of(self, pid: int) -> Proc | None:
        """The simulated process with this pid (they are given in order), if any."""
        index = pid - FIRST_PID
        return self.procs[index] if 0 <= index < len(self.procs) else None

    def spawn(
        self, fn: Callable[[], Any], name: str, daemon: bool, proc: Proc | None = None
    ) -> SimThread:
        proc = proc or self.me().proc
        thread = SimThread(self, proc, name, fn, daemon)
        proc.threads.append(thread)
        self.threads.append(thread)
        if not proc.dead:
            self._live.append(thread)
        if self._idle:
            thread.carrier = self._idle.pop()
        else:
            thread.carrier = _Carrier(self)
            self._carriers.append(thread.carrier)
        return thread

    def spawn_steps(
        self, steps: Callable[[], Generator[float, None, None]], name: str, proc: Proc
    ) -> SimThread:
        """A daemon thread of `proc` whose code only ever sleeps (the cluster's drivers): a
        generator that yields the seconds of each sleep. The scheduler runs each of its steps
        in the OS thread that chose it, as a step of its own, where a thread of its own would
        cost two switches between OS threads per sleep. Chosen, woken and ordered as any."""
        thread = SimThread(self, proc, name, lambda: None, daemon=True)
        thread.steps = steps()
        proc.threads.append(thread)
        self.threads.append(thread)
        if not proc.dead:
            self._live.append(thread)
        return thread

    def kill(self, proc: Proc) -> None:
        proc.dead = proc.killed = True
        self._prune = True

    # -- yield points --------------------------------------------------------------------------
    def block(self, until: Callable[[], bool] | None = None, deadline: float | None = None) -> bool:
        """Hand the baton back; go on once `until()` holds or `deadline` passed (either: at
        once). True when `until` held (or there was none), False on the deadline."""
        me = self.me()
        while True:
            if me.proc.dead or self.cleaning:
                raise Killed
            me.until, me.deadline = until, deadline
            me.blocked = until is not None or deadline is not None
            chosen = self._next()
            if chosen is not me:
                self._hand_over(chosen)
                me.go.acquire()
            me.blocked = False
            if me.proc.dead or self.cleaning:
                raise Killed
            signal, me.signal = me.signal, None
            if signal is not None:
                signal()  # may raise KeyboardInterrupt, as a signal handler does
            if until is None and deadline is None:
                return True
            if until is not None and until():
                return True
            if deadline is not None and self.now >= deadline:
                return False

    def yield_point(self) -> None:
        self.block()

    # -- the scheduler -------------------------------------------------------------------------
    def run(self, director: Proc, max_steps: int) -> str:
        """Step until the director process is done: '' or why the run was cut short."""
        self._director, self._max_steps = director, max_steps
        try:
            self._hand_over(self._stepped(self._choose()))
            self._baton.acquire()  # released once the run is over (_hand_over(None))
            if self._error is not None:
                raise self._error
            return self._note
        finally:
            self.cleanup()

    def _next(self) -> SimThread | None:
        """A step ended (the thread that ran yields, or ended): the next thread to run, or None
        when the run is over. Runs in the thread whose step ended; an error of the scheduler
        itself ends the run and is raised by `run`, never in the thread."""
        self.running = None
        try:
            self.after_step()
            return self._stepped(self._choose())
        except BaseException as exc:  # noqa: BLE001 - the simulation's own bug: raised by run()
            self._error = exc
            return None

    def _stepped(self, chosen: SimThread | None) -> SimThread | None:
        """While the thread chosen is a stepped one: its step, then the next choice (after the
        step, as after any); the first thread chosen that runs on an OS thread, or None."""
        while chosen is not None and chosen.steps is not None:
            self._step(chosen)
            self.running = None
            self.after_step()
            chosen = self._choose()
        return chosen

    def _step(self, thread: SimThread) -> None:
        """A stepped thread runs until its next sleep, or its end (as `_main` ends a thread)."""
        assert thread.steps is not None
        outer = getattr(self._local, "me", None)
        self._local.me = thread
        thread.blocked = False
        try:
            seconds = next(thread.steps)
        except StopIteration:
            thread.done = self._ended = True
        except BaseException as exc:  # noqa: BLE001 - reported in the history
            thread.error = exc
            self.on_crash(thread, exc)
            thread.done = self._ended = True
        else:
            thread.until, thread.deadline = None, self.now + max(0.0, seconds)
            thread.blocked = True
        finally:
            self._local.me = outer

    def _hand_over(self, chosen: SimThread | None) -> None:
        """Let `chosen` run (its carrier begins it, the first time), or `run` return when there
        is none."""
        if chosen is None:
            self._baton.release()
        elif chosen.started:
            chosen.go.release()
        else:
            chosen.started = True
            assert chosen.carrier is not None
            chosen.carrier.carry(chosen)

    def _choose(self) -> SimThread | None:
        """The next thread to run (chosen by the seed among the runnable ones, in the order
        they were created), moving the clock to the earliest deadline while none is runnable;
        None, with `_note` set, when the run is over."""
        director = self._director
        while director is not None and director.main is not None and not director.main.done:
            if self._ended:
                self._reap()
            if self._prune:
                self._live = [t for t in self._live if not t.done and not t.proc.dead]
                self._prune = False
            now = self.now
            ready: list[SimThread] = []
            earliest: float | None = None
            for t in self._live:
                # Runnable: not blocked, a signal to take, its condition holds or its deadline
                # passed.
                if (
                    not t.blocked
                    or t.signal is not None
                    or (t.until is not None and t.until())
                    or (t.deadline is not None and t.deadline <= now)
                ):
                    ready.append(t)
                elif t.deadline is not None and (earliest is None or t.deadline < earliest):
                    earliest = t.deadline
            if not ready:
                if earliest is None:
                    live = ", ".join(f"{t.proc.name}/{t.name}" for t in self._live)
                    self._note = "deadlock: " + live
                    return None
                self.now = max(now, earliest)
                continue
            chosen = ready[self.rng.randrange(len(ready))] if len(ready) > 1 else ready[0]
            self.step += 1
            if self.step > self._max_steps:
                self._note = f"stopped after {self._max_steps} steps"
                return None
            self.running = chosen
            return chosen
        self._note = ""
        return None

    def _reap(self) -> None:
        """A process whose main thread and other non-daemon threads ended has exited: its
        daemon threads end with it."""
        self._ended, self._prune = False, True
        for proc in self.procs:
            if proc.dead or proc.main is None or not proc.main.done:
                continue
            if all(t.done for t in proc.threads if not t.daemon):
                proc.dead = True
                self.on_exit(proc)
        if len(self.threads) > 64:
            self.threads = [t for t in self.threads if not t.done]

    def cleanup(self) -> None:
        """Every thread left ends with Killed (nothing it does reaches the world)."""
        self.cleaning = True
        for proc in self.procs:
            proc.dead = True
        while True:
            left = [t for t in self.threads if not t.done]
            if not left:
                break
            for thread in left:
                if thread.steps is not None:  # it ends where it sleeps
                    thread.steps.close()
                    thread.done = True
                elif thread.started:
                    thread.go.release()
                    self._baton.acquire()
                else:  # never ran: it would end at once, with Killed
                    thread.done = True
        for carrier in self._carriers:
            carrier.thread = None
            carrier.job.release()
        for carrier in self._carriers:
            carrier.os.join()

    # -- the Runtime interface -----------------------------------------------------------------
    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return EPOCH + self.now

    def sleep(self, seconds: float) -> None:
        self.block(deadline=self.now + max(0.0, seconds))

    def pool(self, workers: int, name: str = "") -> concurrent.futures.Executor:
        return SimPool(self, max(1, workers), name or "pool")

    def wait_first(self, futures: Iterable[Future[Any]]) -> list[Future[Any]]:
        futures = list(futures)
        self.block(until=lambda: any(f.done() for f in futures))
        return [f for f in futures if f.done()]

    def wait_all(self, futures: Iterable[Future[Any]]) -> None:
        futures = list(futures)
        self.block(until=lambda: all(f.done() for f in futures))

    def shutdown(
        self,
        pool: concurrent.futures.Executor,
        futures: Iterable[Future[Any]],
        cancel_futures: bool = False,
    ) -> None:
        pool.shutdown(wait=True, cancel_futures=cancel_futures)  # one wait: SimPool's

    def thread(self, fn: Callable[[], None], name: str) -> Any:
        return SimThreadHandle(self, fn, name)

    def event(self) -> Any:
        return SimEvent(self)

    def lock(self) -> Any:
        return SimLock(self)


class SimFuture(Future):  # type: ignore[type-arg]
    def __init__(self, rt: SimRuntime) -> None:
        super().__init__()
        self.rt = rt

    def _await(self, timeout: float | None) -> None:
        if not self.done():
            deadline = None if timeout is None else self.rt.now + timeout
            self.rt.block(until=self.done, deadline=deadline)

    def result(self, timeout: float | None = None) -> Any:
        self._await(timeout)
        return super().result(timeout=0)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._await(timeout)
        return super().exception(timeout=0)


class SimPool(concurrent.futures.Executor):
    """`workers` simulated threads of the calling process, as ThreadPoolExecutor's (not
    daemons: a process waits for them before it exits)."""

    def __init__(self, rt: SimRuntime, workers: int, name: str) -> None:
        self.rt, self.workers, self.name = rt, workers, name
        self.queue: list[tuple[SimFuture, Callable[..., Any], tuple, dict]] = []
        self.active = 0
        self.closed = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        if self.closed:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future = SimFuture(self.rt)
        self.queue.append((future, fn, args, kwargs))
        if self.active < self.workers:
            self.active += 1
            self.rt.spawn(self._work, f"{self.name}-{self.active}", daemon=False)
        return future

    def _work(self) -> None:
        try:
            while self.queue:
                future, fn, args, kwargs = self.queue.pop(0)
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    answer = fn(*args, **kwargs)
                except Killed:
                    raise
                except BaseException as exc:  # noqa: BLE001 - as ThreadPoolExecutor does
                    future.set_exception(exc)
                else:
                    future.set_result(answer)
        finally:
            self.active -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self.closed = True
        if cancel_futures:
            for future, *_ in self.queue:
                future.cancel()
            self.queue.clear()
        if wait:
            self.rt.block(until=lambda: self.active == 0)


class SimThreadHandle:
    def __init__(self, rt: SimRuntime, fn: Callable[[], None], name: str) -> None:
        self.rt, self.fn, self.name = rt, fn, name
        self.thread: SimThread | None = None

    def start(self) -> None:
        self.thread = self.rt.spawn(self.fn, self.name, daemon=True)

    def join(self, timeout: float | None = None) -> None:
        thread = self.thread
        if thread is None or thread.done:
            return
        deadline = None if timeout is None else self.rt.now + timeout
        self.rt.block(until=lambda: thread.done or thread.proc.dead, deadline=deadline)


class SimEvent:
    def __init__(self, rt: SimRuntime) -> None:
        self.rt = rt
        self.flag = False

    def set(self) -> None:
        self.flag = True

    def clear(self) -> None:
        self.flag = False

    def is_set(self) -> bool:
        return self.flag

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else self.rt.now + timeout
        self.rt.block(until=lambda: self.flag, deadline=deadline)
        return self.flag


class SimLock:
    def __init__(self, rt: SimRuntime) -> None:
        self.rt = rt
        self.held = False

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self.held:
            if not blocking:
                return False
            deadline = None if timeout < 0 else self.rt.now + timeout
            if not self.rt.block(until=lambda: not self.held, deadline=deadline):
                return False
        self.held = True
        return True

    def release(self) -> None:
        self.held = False

    def __enter__(self) -> SimLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
