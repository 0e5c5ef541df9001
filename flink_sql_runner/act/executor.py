"""Carrying out a plan: each decision's steps (job_steps.py), `parallelism` jobs at a time, each
job after the jobs its decision names.

The executor interprets steps (decide/steps.py); it does not re-derive why. Interrupted
(`interrupt()`, on the first Ctrl-C), it begins no other job but finishes the jobs in flight, each
to the end of its steps (a job whose stops are done still gets its starts), so none is left half
done; a job never begun writes nothing, not even an intent record. Interrupted again (a
KeyboardInterrupt while it waits), it begins no other side effect: each worker ends the call it
is in (a submit, a stop) and stops at its next lease check; the lock stays held until then.
`Abandoned`: the in-flight jobs' intent records are left for the next deploy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from flink_sql_runner.act.job_steps import JobSteps, Parts, first_start
from flink_sql_runner.act.progress import Progress
from flink_sql_runner.act.results import (
    Abandoned,
    JobResult,
    held_back,
    left_in_flight,
    not_begun,
    why_held,
)
from flink_sql_runner.act.runs import DEFAULT_TIMEOUTS, RunControl, Timeouts
from flink_sql_runner.decide.decisions import Decision, Plan
from flink_sql_runner.decide.steps import Step
from flink_sql_runner.host import runtime
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Target
from flink_sql_runner.targets.connectors import Connectors


class Executor:
    """Carries out a plan, `parallelism` jobs at a time, each job after the jobs its decision
    names in `after` (and its starts after the stops of those in `after_stops`); each job's
    result is reported as it completes."""

    def __init__(
        self,
        store: ManifestStore,
        target: Target,
        storage: Storage,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        clock: Callable[[], float] = runtime.monotonic,
        sleep: Callable[[float], None] = runtime.sleep,
        parallelism: int = 1,
        lease: StoreLock | None = None,
        debug: bool = False,
        connectors: Connectors | None = None,
        command: str = "deploy",
    ):
        """`command`: the one carrying plans out (deploy, watch), as the history tells it."""
        self.parallelism = max(1, parallelism)
        self.lease = lease
        self.runs = RunControl(
            target,
            storage,
            timeouts,
            clock,
            sleep,
            lease.check if lease else lambda: None,
            connectors,
        )
        self.job = JobSteps(store, self.runs, lease, self._doing_now, debug, command)
        #: Set by interrupt(): no job is begun from then on.
        self.stopping = runtime.event()
        #: The jobs in flight: what each is doing now and what it will still do.
        self._doing: dict[str, str] = {}
        #: The jobs with steps not begun yet.
        self._todo: list[str] = []
        self._begin = threading.Lock()  # one job begins, or the deploy stops beginning jobs

    # -- interrupting -------------------------------------------------------------------------
    def interrupt(self) -> tuple[dict[str, str], list[str]]:
        """Begin no other job; the jobs in flight finish their steps. What each job in flight
        is doing, and the jobs that will not be begun."""
        with self._begin:
            self.stopping.set()
            return dict(self._doing), list(self._todo)

    def in_flight(self) -> dict[str, str]:
        with self._begin:
            return dict(self._doing)

    def _doing_now(self, name: str, steps: tuple[Step, ...], index: int) -> None:
        now = steps[index].describe()
        then = ", ".join(step.describe() for step in steps[index + 1 :])
        with self._begin:
            if name in self._doing:
                self._doing[name] = now + (f" (then {then})" if then else "")

    def _begins(self, decision: Decision) -> bool:
        """Whether `decision` may begin (it is then in flight): not once interrupted."""
        with self._begin:
            if self.stopping.is_set():
                return False
            if decision.name in self._todo:
                self._todo.remove(decision.name)
            self._doing[decision.name] = "beginning"
            return True

    def _done(self, name: str) -> None:
        with self._begin:
            self._doing.pop(name, None)
            if name in self._todo:
                self._todo.remove(name)

    # -- scheduling ---------------------------------------------------------------------------
    def apply(self, plan: Plan, progress: Progress | None = None) -> dict[str, JobResult]:
        """Every decision's result, by job name in plan order.

        A decision runs in two parts: its stops (everything before its first start), once the
        jobs in its `stop_after` have stopped; then its starts, once every job in its `after`
        is done and every job in its `after_stops` has done its stops. When one of those failed,
        its starts are held back (`skipped`), and what its stops stopped is started again from
        its checkpoint (its rollback).

        Once interrupted, no decision begins (`not-begun`); one whose stops are done still gets
        its starts. A KeyboardInterrupt while it waits abandons the jobs in flight: Abandoned,
        with every result so far."""
        results: dict[str, JobResult] = {}
        names = {d.name for d in plan.decisions}
        with self._begin:
            self._todo = [d.name for d in plan.decisions if d.steps]
        waiting = list(plan.decisions)  # nothing done yet
        stopped: dict[str, tuple[Decision, Parts]] = {}  # stops done, starts waiting
        stops_done: set[str] = set()
        stops_ok: dict[str, bool] = {}  # whether a decision's stops were done (it let go)

        announced: set[str] = set()

        def announce(decision: Decision) -> None:
            """Progress says a job began when it acts, not while it waits for another."""
            if progress and decision.steps and decision.name not in announced:
                announced.add(decision.name)
                progress.started(decision.name, decision.action.value)

        def begin(decision: Decision) -> tuple[Parts | None, JobResult]:
            if decision.steps and not self._begins(decision):
                return None, not_begun(decision)
            result = JobResult(decision.name, True, "", outcome="unchanged")
            if first_start(decision.steps) > 0:
                announce(decision)
            parts = self.job.parts(decision, result)
            if parts is not None and not self.job.advance(parts, result, None):
                parts = None
            return parts, result

        def resume(parts: Parts, result: JobResult, held: list[str] | None) -> JobResult:
            if not held:
                announce(parts.decision)
            self.job.advance(parts, result, held)
            return result

        pool = runtime.pool(self.parallelism, "deploy")
        running: dict[Future[Any], tuple[str, Decision]] = {}

        def finish(decision: Decision, result: JobResult) -> None:
            results[decision.name] = result
            stops_done.add(decision.name)
            stops_ok.setdefault(decision.name, False)
            self._done(decision.name)
            if progress and decision.steps and result.outcome != "not-begun":
                progress.finished(decision.name, result.ok, skipped=result.outcome == "skipped")

        try:
            index = {d.name: i for i, d in enumerate(plan.decisions)}
            while waiting or stopped or running:
                ready: list[tuple[int, str, Decision]] = []
                for decision in waiting:
                    if not any(s in names and s not in stops_done for s in decision.stop_after):
                        ready.append((index[decision.name], "begin", decision))
                for decision, _parts in stopped.values():
                    if all(a in results for a in decision.after if a in names) and all(
                        s in stops_done for s in decision.after_stops if s in names
                    ):
                        ready.append((index[decision.name], "resume", decision))
                # Plan order within --parallelism: a job that began goes on before the next.
                for _, kind, decision in sorted(ready, key=lambda r: r[0]):
                    if len(running) >= self.parallelism:
                        break
                    if kind == "begin":
                        waiting.remove(decision)
                        running[pool.submit(begin, decision)] = ("begin", decision)
                        continue
                    _, parts = stopped.pop(decision.name)
                    before = [a for a in decision.after if a in names]
                    failed = [a for a in before if not results[a].ok]
                    held = [why_held(a, results[a], decision) for a in failed]
                    held += [
                        f"{s} ({decision.why_after.get(s, 'must stop first')}) did not stop"
                        for s in decision.after_stops
                        if s in names and not stops_ok[s]
                    ]
                    running[pool.submit(resume, parts, parts.result, held or None)] = (
                        "resume",
                        decision,
                    )
                if not running:  # a cycle of `after`/`after_stops`/`stop_after`: no plan makes one
                    for decision in waiting:
                        finish(decision, held_back(decision, ["in a cycle of jobs"]))
                    waiting.clear()
                    for decision, parts in stopped.values():
                        held = ["in a cycle of jobs"]
                        running[pool.submit(resume, parts, parts.result, held)] = (
                            "resume",
                            decision,
                        )
                    stopped.clear()
                    if not running:
                        break
                done = runtime.wait_first(running)
                for future in done:
                    kind, decision = running.pop(future)
                    if kind == "resume":
                        finish(decision, future.result())
                        continue
                    parts, result = future.result()
                    stops_done.add(decision.name)
                    stops_ok[decision.name] = parts is not None or result.ok
                    if parts is None:
                        finish(decision, result)
                    else:
                        stopped[decision.name] = (decision, parts)
        except KeyboardInterrupt:
            in_flight, _ = self.interrupt()
            if self.lease is not None:
                self.lease.abandon("the deploy was interrupted twice")
            finished = {future for future in running if future.done()}
            # The lock is held (and renewed) until no worker can act: a worker inside a submit
            # or a stop ends that call, then stops at its next lease check; what it was doing
            # is left in flight, its intent record kept.
            runtime.shutdown(pool, running, cancel_futures=True)  # a third Ctrl-C leaves
            for future, (kind, decision) in running.items():
                if kind == "resume" and future in finished and not future.cancelled():
                    results[decision.name] = future.result()
            left = {n: w for n, w in in_flight.items() if n not in results}
            for decision in plan.decisions:
                if decision.name in left:
                    results[decision.name] = left_in_flight(decision, left[decision.name])
                elif decision.steps and decision.name not in results:
                    results[decision.name] = not_begun(decision)
            raise Abandoned(
                {d.name: results[d.name] for d in plan.decisions if d.name in results}, left
            ) from None
        except BaseException:
            runtime.shutdown(pool, running)
            raise
        pool.shutdown(wait=True)
        return {d.name: results[d.name] for d in plan.decisions}

    def apply_one(self, decision: Decision) -> JobResult:
        """One decision, stops and starts in one go (no other job to wait for)."""
        result = JobResult(decision.name, True, "", outcome="unchanged")
        parts = self.job.parts(decision, result)
        if parts is not None and self.job.advance(parts, result, None):
            self.job.advance(parts, result, None)
        return result
