"""Ctrl-C and SIGTERM during a deploy.

Before the deploy acts (waiting for the lock, gathering facts) a signal unwinds at once: nothing
was done, the lock is released. While it acts, the first signal says at once what is in flight
and which jobs will not be begun; the jobs in flight finish their steps, their results are
printed, and the command exits 130. A second signal leaves at once: the jobs still in flight keep
their intent records, which the next deploy settles. Once the plan was carried out, a signal only
makes the exit code 130: the report is printed all the same.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from flink_sql_runner.act.deployment import Deployment

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_INTERRUPTED = 130


def finishing_lines(in_flight: dict[str, str], not_begun: list[str]) -> list[str]:
    """What the first interrupt says: each job in flight and what it is doing, then the jobs
    that will not be begun."""
    lines = [
        "interrupted: finishing the jobs in flight, beginning no other "
        "(Ctrl-C again leaves at once; the next deploy settles what is left)"
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

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        executor = self.deployment.acting
        if executor is None and not self.deployment.acted:
            raise KeyboardInterrupt  # nothing done yet: unwind at once
        self.count += 1
        if executor is None:
            if self.count == 1:
                self.say("interrupted: the deploy is done; printing what it did")
            return
        if self.count > 1:
            raise KeyboardInterrupt  # the executor abandons what is in flight
        in_flight, not_begun = executor.interrupt()
        for line in finishing_lines(in_flight, not_begun):
            self.say(line)
