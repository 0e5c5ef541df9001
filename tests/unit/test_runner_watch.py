"""The runner's watch loop on fake queries: it returns as soon as the query ends, not at its
next poll, and reports a failed query."""

from __future__ import annotations

import time
from typing import Any

from runner import job_runner


class FakeQuery:
    """A streaming query that ends (or fails) during its first awaitTermination."""

    def __init__(self, failure: Exception | None = None):
        self.isActive = True
        self.lastProgress: dict[str, Any] | None = {"batchId": 3}
        self.failure = failure
        self.waits: list[float] = []

    def awaitTermination(self, timeout: float) -> bool:  # noqa: N802 - PySpark's name
        self.waits.append(timeout)
        self.isActive = False
        if self.failure is not None:
            raise self.failure
        return True

    def exception(self) -> Exception | None:
        return self.failure


def watch(query: FakeQuery) -> tuple[int, job_runner.Status]:
    status = job_runner.Status(storage=None, location=None, run_id="run-1")  # type: ignore[arg-type]
    code = job_runner.watch(query, None, {}, status, job_runner.StopRequest())  # type: ignore[arg-type]
    return code, status


def test_an_ended_query_is_seen_at_once_not_at_the_next_poll() -> None:
    query = FakeQuery()
    begun = time.monotonic()
    code, status = watch(query)
    assert (code, status.state) == (job_runner.EXIT_OK, "finished")
    assert query.waits == [job_runner.POLL_SECONDS]
    assert time.monotonic() - begun < job_runner.POLL_SECONDS / 2


def test_a_failed_query_is_reported_with_its_error() -> None:
    code, status = watch(FakeQuery(RuntimeError("the sink is gone")))
    assert (code, status.state) == (job_runner.EXIT_FAILED, "failed")
