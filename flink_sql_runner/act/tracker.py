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
        self.intent: Intent | None = None

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
        self.token = self._retried(lambda: self.log.write(new, self.token), phase)
        self.intent = new

    def _retried(self, write: Callable[[], T], phase: Phase | None) -> T:
        """`write()`, asked again after a pause where the store failed (S3's 503; an answer
        lost after the write landed finds its own record there: stores/s3.py), the lease
        checked before each retry; the last failure raised. A conflict is not retried: the
        record is not the one this command wrote."""
        for pause in (*WRITE_PAUSES, None):
            try:
                return write()
            except StoreConflict:
                raise
            except StoreError:
                if pause is None:
                    raise
            self.sleep(pause)
            self.check(phase in AFTER_EFFECTS if phase is not None else True)
        raise AssertionError("unreachable")

    def fresh_run(self) -> None:
        """A new run id, for a start the cold way after a prepared run (never ready, or gone
        before its go) used the one before: a cluster may still list that run under its id
        (YARN finds runs by a tag made of it), and a start is judged only by the run it
        started. The record, written at its next phase, no longer names the prepared run."""
        self.run_id = str(uuid.uuid4())
        self.prepared = False
        if self.intent is not None:
            self.intent = replace(
                self.intent, run_id=self.run_id, submission_id=None, prepared=False
            )

    def forget(self) -> None:
        """Delete the record, if it is still the one this command wrote last."""
        if self.intent is not None:
            name, token = self.intent.name, self.token
            self._retried(lambda: self.log.delete(name, token), None)


#: The pauses (seconds) before each retry of a write of the record the store failed: a 503 now
#: and then (S3's SlowDown) does not leave a job half done.
WRITE_PAUSES = (0.5, 1.0, 2.0)

#: Phases that record what already happened: written even by a command that was told to begin
#: nothing more, as long as it holds the lock.
AFTER_EFFECTS = (Phase.OLD_STOPPED, Phase.SUBMITTED, Phase.HEALTHY, Phase.FAILED)

#: The kind of intent each action writes; any other writes a start's.
KIND_OF_ACTION = {Action.STOP: Kind.STOP, Action.PRUNE: Kind.PRUNE}
