"""Asking again: a call a store or a storage failed (S3's 503 now and then) is made again after
a pause, a few times, before its failure counts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

#: The pauses (seconds) before each retry: four attempts over 3.5 s.
PAUSES = (0.5, 1.0, 2.0)


def retried(
    call: Callable[[], T],
    sleep: Callable[[float], None],
    check: Callable[[], None],
    transient: tuple[type[Exception], ...],
    final: tuple[type[Exception], ...] = (),
) -> T:
    """`call()`, made again after each pause of PAUSES where it raised one of `transient` (but
    not one of `final`, raised at once); `check()` before each retry (the lease: a command that
    lost it stops asking). The last failure is raised."""
    for pause in (*PAUSES, None):
        try:
            return call()
        except final:
            raise
        except transient:
            if pause is None:
                raise
        sleep(pause)
        check()
    raise AssertionError("unreachable")
