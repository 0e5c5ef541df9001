"""The restarts `watch` has under way: carried out in the background, `parallelism` at a time,
through the deploy's executor, under the store's lock.

The watcher's loop never waits for a restart (one can take `--start-timeout`): it goes on
looking, and a job that dies meanwhile is restarted beside the ones under way. The lock is taken
when the first restart begins and released once none is under way; once it has been held for
`HOLD_LIMIT` seconds, no other restart begins until those under way have ended and the lock was
released, so a deploy waiting for it is not starved by restarts that keep overlapping. When the
watcher stops, the restarts in progress end (a stop is always followed by its start); those not
begun yet are not begun.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from flink_sql_runner.act.executor import Executor
from flink_sql_runner.act.results import JobResult
from flink_sql_runner.decide.decisions import Decision
from flink_sql_runner.host import runtime
from flink_sql_runner.stores.lock import Holder, LeaseLost, StoreLock
from flink_sql_runner.watch.records import WatchRecord

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment


@dataclass(frozen=True)
class Finished:
    decision: Decision
    record: WatchRecord  # the job's record when its restart began
    result: JobResult | None  # None: never begun (the watcher stopped, or lost the lock)
    problem: str = ""


#: Seconds the watcher holds the store's lock before it lets restarts drain (see above).
HOLD_LIMIT = 60.0


class Actions:
    def __init__(
        self,
        deployment: Deployment,
        stopping: runtime.Event,
        clock: Callable[[], float] = runtime.monotonic,
    ):
        self.deployment, self.stopping, self.clock = deployment, stopping, clock
        self._held_since = 0.0
        self._lock: StoreLock | None = None
        self._executor: Executor | None = None
        self._pool: concurrent.futures.Executor | None = None
        self._under_way: dict[str, tuple[Future[JobResult | None], Decision, WatchRecord]] = {}

    def busy(self, name: str) -> bool:
        return name in self._under_way

    def draining(self) -> bool:
        """Whether the lock was held for `HOLD_LIMIT`: no restart begins until it is released."""
        return self._lock is not None and self.clock() - self._held_since >= HOLD_LIMIT

    def hold(self) -> Holder | None:
        """Hold the store's lock, taking it if needed: None once held, else who holds it.
        LeaseLost if it was held and lost."""
        if self._lock is not None:
            self._lock.check()
            return None
        lock = self.deployment.lock("watch")
        holder = lock.try_acquire()
        if holder is not None:
            return holder
        lock.start_heartbeat()
        self._lock, self._executor = lock, self.deployment.executor(lock, "watch")
        self._held_since = self.clock()
        return None

    def begin(self, decision: Decision, record: WatchRecord) -> None:
        """Carry `decision` out in the background (the lock must be held)."""
        if self._pool is None:
            workers = max(1, self.deployment.settings.parallelism)
            self._pool = runtime.pool(workers, "watch")
        future = self._pool.submit(self._one, decision)
        self._under_way[decision.name] = (future, decision, record)

    def _one(self, decision: Decision) -> JobResult | None:
        if self.stopping.is_set() or self._lock is None or self._executor is None:
            return None
        self._lock.check()
        return self._executor.apply_one(decision)

    def finished(self) -> list[Finished]:
        """The restarts that ended since the last call; the lock is released once none is
        under way."""
        done = []
        for name, (future, decision, record) in list(self._under_way.items()):
            if not future.done():
                continue
            del self._under_way[name]
            try:
                done.append(Finished(decision, record, future.result()))
            except LeaseLost as exc:
                done.append(Finished(decision, record, None, str(exc)))
        if not self._under_way and self._lock is not None:
            self._lock.release()
            self._lock = self._executor = None
        return done

    def wait(self) -> None:
        """Until every restart under way has ended."""
        runtime.wait_all(future for future, _, _ in self._under_way.values())

    def close(self) -> None:
        self.wait()
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
