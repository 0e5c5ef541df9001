"""Whether a running job is stalled, judged by `watch` from what its runner reports.

The runner rewrites its status beacon every few seconds (`beacons.py`): the listing's
modification token of the beacon moving is its heartbeat, and the beacon says for how many
whole minutes a micro-batch has run once it ran for one. A run without a beacon (an older
runner's) is judged from its status file: a heartbeat counter and the batch's age in seconds.
Either way a heartbeat is a token compared with the same run's earlier one only: a run is
stalled when it has not moved for `stall_timeout` on the watcher's own monotonic clock (never a
comparison of the storage's or the driver's clock with the watcher's), or when its micro-batch
has run for longer than `batch_timeout`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flink_sql_runner.model.runs import Liveness, Run


class Unreadable:
    """A status file the storage did not answer for: it says nothing about the run."""


UNREADABLE = Unreadable()


class Stalls:
    def __init__(self, stall_timeout: float, batch_timeout: float, clock: Callable[[], float]):
        self.stall_timeout, self.batch_timeout, self.clock = stall_timeout, batch_timeout, clock
        #: Per job: (the run's identity, its last heartbeat, when this watcher saw it change).
        self._heartbeats: dict[str, tuple[str, Any, float]] = {}

    def judge(
        self, name: str, runs: tuple[Run, ...], status: dict[str, Any] | None | Unreadable
    ) -> str | None:
        """Why the job's one run is stalled, or None. Judged from its own status only: a
        heartbeat that has not moved for `stall_timeout` on this watcher's clock, or a batch
        running for longer than `batch_timeout`. A status that cannot be read starts the quiet
        time over (the driver could not write either); a runner that reports no heartbeat is
        never judged stalled."""
        alive = [r for r in runs if r.liveness is Liveness.ALIVE]
        if len(alive) != 1:
            self._heartbeats.pop(name, None)
            return None
        run = alive[0]
        identity, now = run.run_id or run.detail, self.clock()
        seen = self._heartbeats.get(name)
        if isinstance(status, Unreadable):
            if seen is not None:
                self._heartbeats[name] = (seen[0], seen[1], now)
            return None
        own = (
            status
            if status and (run.run_id is None or status.get("run-id") == run.run_id)
            else None
        )
        beat = (own or {}).get("heartbeat")
        if beat is None:
            return None
        running = own.get("batch-running-seconds") if own else None
        if isinstance(running, (int, float)) and running > self.batch_timeout:
            return f"its micro-batch has run for {running:.0f} s"
        if seen is None or seen[0] != identity or seen[1] != beat:
            self._heartbeats[name] = (identity, beat, now)
            return None
        quiet = now - seen[2]
        if quiet < self.stall_timeout:
            return None
        return f"no heartbeat from its driver for {quiet:.0f} s"
