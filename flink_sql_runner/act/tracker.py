"""One command's intent record for one job, as it acts: written before the job's first side
effect, moved forward phase by phase (model/intents.py says what each phase means and how the
next command settles a record left behind)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

from flink_sql_runner.decide.decisions import Action
from flink_sql_runner.errors import StoreError
from flink_sql_runner.host import runtime
from flink_sql_runner.host.retries import retried as asked_again
from flink_sql_runner.model.intents import Intent, IntentLog, Kind, Phase, new_intent
from flink_sql_runner.model.offsets import StartPlan, Starts
from flink_sql_runner.model.stored import ABSENT, StoredManifest, Token, Unconditional
from flink_sql_runner.stores.base import StoreConflict

T = TypeVar("T")


class Tracker:
    """One command's intent record for one job: written before the job's first side effect
    (an interrupted command's own record, if any, stays until its DropIntent step), then moved
    forward phase by phase, each write after a lease check."""

    def __init__(
        self,
        log: IntentLog,
        check: Callable[[bool], None],
        manifest: StoredManifest | None,
        action: str,
        kind: Kind,
        submit_timeout: float,
        over: Token | Unconditional = ABSENT,
        prepared: bool = False,
        starting: StartPlan | None = None,
        committed_before: int | None = None,
        sleep: Callable[[float], None] = runtime.sleep,
    ):
        """`over`: the record its first write replaces (ABSENT: none may exist; a rollback
        replaces the record of the start it undoes). `prepared`: its new run is prepared
        beside the old one (a warm handover). `starting`: where the new version's Kafka
        sources start, as planned; in the record from its first write, before anything
        stops. `committed_before`: what a clean start's record says was committed before it
        (NONE_COMMITTED), from its first write on; a restart's is read once the old run
        stopped."""
        self.log, self.check = log, check
        self.token: Token | Unconditional = over
        self.manifest, self.action, self.kind = manifest, action, kind
        self.submit_timeout = submit_timeout
        self.run_id = str(uuid.uuid4())
        self.prepared = prepared
        self.starting = starting
        self.committed_before = committed_before
        self.sleep = sleep  # between the retries of a write the store failed
        #: What the store holds of the record, as far as this command knows (None: nothing).
        self.intent: Intent | None = None
        #: A run this command started (submitted, or a prepared one whose go may have been
        #: given) may be up: nothing may be started beside it. False again once it is
        #: confirmed gone.
        self.new_run = False
        #: That run reported a completed trigger: the job runs, whatever its record says.
        self.healthy = False

    @property
    def written(self) -> bool:
        return self.intent is not None

    def to(
        self,
        phase: Phase,
        submission_id: str | None = None,
        committed_before: int | None = None,
        error: str | None = None,
        starts: Starts | None = None,
    ) -> None:
        """Move the record to `phase`; at FAILED, `error` says why (one line). `starts`: what
        the new run's Kafka sources start at, once resolved."""
        self.check(phase in AFTER_EFFECTS)
        if self.intent is None:
            if self.manifest is None:
                return
            if phase is not Phase.INTENDED:
                return  # awaiting an interrupted command's run: its own record stays
            new = new_intent(self.manifest, self.action, self.run_id, self.kind,
                             self.submit_timeout, self.committed_before,
                             prepared=self.prepared, starting=self.starting)  # fmt: skip
        elif phase is Phase.INTENDED:
            return
        else:
            new = self.intent.at(phase, submission_id)
        if committed_before is not None:
            new = replace(new, committed_before=committed_before)
        if error is not None:
            new = replace(new, error=error)
        if starts is not None:
            new = replace(new, starts=starts)
        # `intent` is what the store holds (as far as this command knows): moved on only once
        # the write landed, so that a failed write leaves the phase it reached in words.
        if new.run_id != self.run_id:  # a start the cold way after a prepared run
            new = replace(new, run_id=self.run_id, submission_id=submission_id,
                          prepared=self.prepared)  # fmt: skip
        evidence = phase in AFTER_EFFECTS
        write = lambda: self.log.write(new, self.token)  # noqa: E731
        self.token = retried(write, self.sleep, lambda: self.check(evidence))
        self.intent = new

    def fresh_run(self) -> None:
        """A new run id, for a start the cold way after a prepared run (never ready, or gone
        before its go) used the one before: a cluster may still list that run under its id
        (YARN finds runs by a tag made of it), and a start is judged only by the run it
        started. The record, written at its next phase, no longer names the prepared run;
        until then it is what the store holds."""
        self.run_id = str(uuid.uuid4())
        self.prepared = False
        self.new_run = False

    def forget(self) -> None:
        """Delete the record, if it is still the one this command wrote last."""
        if self.intent is not None:
            name, token = self.intent.name, self.token
            retried(lambda: self.log.delete(name, token), self.sleep, lambda: self.check(True))


def retried(write: Callable[[], T], sleep: Callable[[float], None], check: Callable[[], None]) -> T:
    """`write()` of the store, asked again after a pause where the store failed (an answer lost
    after the write landed finds its own object there: stores/s3.py), `check()` (the lease)
    before each retry. A conflict is not retried: what the store holds is not what this
    command wrote last."""
    return asked_again(write, sleep, check, (StoreError,), (StoreConflict,))


#: Phases that record what already happened: written even by a command that was told to begin
#: nothing more, as long as it holds the lock.
AFTER_EFFECTS = (Phase.OLD_STOPPED, Phase.SUBMITTED, Phase.HEALTHY, Phase.FAILED)

#: The kind of intent each action writes; any other writes a start's.
KIND_OF_ACTION = {Action.STOP: Kind.STOP, Action.PRUNE: Kind.PRUNE}
