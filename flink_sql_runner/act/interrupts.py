"""Ctrl-C and SIGTERM during a deploy.

Before the deploy acts (waiting for the lock, gathering facts) a signal unwinds at once: nothing
was done, the lock is released. While it acts, the first signal says at once what is in flight
and which jobs will not be begun; the jobs in flight finish their steps, their results are
printed, and the command exits 130. A second signal begins no other side effect: the calls in
flight (a submit, a stop) end first, the lock held until they have, and the jobs in flight keep
their intent records, which the next deploy settles. A third leaves at once: the lock is not
released but left to expire, for a call in flight may still start a run. Once the plan was
carried out, a signal only makes the exit code 130: the report is printed all the same.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from flink_sql_runner.act.deployment import Deployment
from flink_sql_runner.act.executor import Executor
from flink_sql_runner.stores.lock import StoreLock

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_INTERRUPTED = 130


def leave_now(lease: StoreLock | None, say: Callable[[str], None]) -> None:
    """Exit at once (a third Ctrl-C), leaving the lock to expire: a worker may still be inside
    a submit, so the next deploy must not begin before the lock's ttl has passed."""
    ttl = f" within {lease.ttl:.0f} s" if lease is not None else ""
    say(f"leaving now: the lock is left to expire{ttl}; the next deploy settles the jobs in "
        "flight from their intent records")  # fmt: skip
    if lease is not None:
        lease.keep_until_expiry()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def finishing_lines(in_flight: dict[str, str], not_begun: list[str]) -> list[str]:
    """What the first interrupt says: each job in flight and what it is doing, then the jobs
    that will not be begun."""
    lines = [
        "interrupted: finishing the jobs in flight, beginning no other "
        "(Ctrl-C again begins nothing more; the next deploy settles what is left)"
    ]
    lines += [f"  finishing {name}: {what}" for name, what in in_flight.items()]
    if not in_flight:
        lines.append("  nothing in flight")
    if not_begun:
        lines.append(f"  not beginning: {', '.join(not_begun)}")
    return lines


class DeployInterrupts:
    """Installed around one deploy (a context manager); `count` is how many signals came."""

    def __init__(self, deployment: Deployment, say: Callable[[str], None]):
        self.deployment, self.say = deployment, say
        self.count = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> DeployInterrupts:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _leave_now(self, executor: Executor) -> None:
        leave_now(executor.lease, self.say)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        executor = self.deployment.acting
        if executor is None and not self.deployment.acted:
            raise KeyboardInterrupt  # nothing done yet: unwind at once
        self.count += 1
        if executor is None:
            if self.count == 1:
                self.say("interrupted: the deploy is done; printing what it did")
            return
        if self.count == 2:
            self.say(
                "interrupted again: beginning nothing more; the calls in flight end first "
                "(Ctrl-C once more leaves at once, and the lock then expires by itself)"
            )
            raise KeyboardInterrupt  # the executor abandons what is in flight
        if self.count > 2:
            self._leave_now(executor)
        in_flight, not_begun = executor.interrupt()
        for line in finishing_lines(in_flight, not_begun):
            self.say(line)
