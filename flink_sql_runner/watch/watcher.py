"""`flink-sql-runner watch`: keep what the store records running.

The desired state is what `deploy` recorded (the store); `watch` never applies git. Every
interval the leading watcher lists what runs (one listing), lists the store's manifests and its
own records (`records.py`), reading again only those the listings show changed since the last
look, lists the runs' status beacons once per checkpoint root and reads again only those that
changed (`beacons.py`), and judges each job (`health.py`, `stalls.py`). Jobs that are
down or stalled are acted on through the same decisions and executor steps as `deploy`, in the
background (`restarts.py`: the looks go on meanwhile), holding the store's lock only while
restarts are under way: a deploy that holds it is waited out, never joined.

- A job that should run and does not is restarted from its checkpoint at its stored version.
  The first failure in a row restarts at once, then the delays double from `backoff_first` up
  to `backoff_max`; they reset once the job has been healthy for `stable_after`. A job that
  finished on purpose (`availableNow`, `once`) is finished, not failed. After `max_failures`
  failures within `failure_window` it is crash-looping: left down, with its last error, until a
  deploy changes it or `flink-sql-runner resume NAME`.
- A run whose heartbeat (its beacon's modification time in the listing, or the counter of the
  status file of a run without a beacon) does not move for `stall_timeout` on this watcher's
  clock, or whose micro-batch has run for longer than `batch_timeout`, is
  stalled: stopped (killed if it does not stop) and restarted, as a failure.
- Two watchers on one store: one leads (a lease, `_watch/_leader.json`), the other stands by
  and takes over once the lease is not renewed for `leader_ttl` (at once when the leader's
  process on this machine is gone).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from flink_sql_runner.act.results import JobResult
from flink_sql_runner.decide.decisions import Action, Decision
from flink_sql_runner.decide.tree import decide, replace_stalled
from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.facts import gather
from flink_sql_runner.host import runtime
from flink_sql_runner.host.collector import Frozen
from flink_sql_runner.host.timing import mark
from flink_sql_runner.model.facts import JobFacts
from flink_sql_runner.model.json_values import json_time
from flink_sql_runner.model.runs import Run
from flink_sql_runner.model.stored import Stored, StoredManifest
from flink_sql_runner.stores.base import Reads
from flink_sql_runner.stores.lock import LeaseLost, StoreLock
from flink_sql_runner.watch.beacons import Beacons
from flink_sql_runner.watch.events import Event, Notifier
from flink_sql_runner.watch.health import Health, State, assess, failure_reason
from flink_sql_runner.watch.limits import Recorded, job_of, refusal_of, wanted
from flink_sql_runner.watch.metrics import Metrics
from flink_sql_runner.watch.records import (
    LEADER_LOCK,
    WatchLog,
    WatchRecord,
    manifest_digest,
    parse_utc,
    utc_text,
)
from flink_sql_runner.watch.restarts import Actions
from flink_sql_runner.watch.stalls import Stalls, Unreadable

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment


def restart_cause(result: JobResult) -> str:
    """One line of why a restart failed (the result's summary: the start's own words)."""
    lines = [line.strip() for line in f"{result.summary}\n{result.detail}".splitlines()]
    cause = next((line for line in lines if line), "no cause given")
    return cause if len(cause) <= 300 else cause[:297] + "..."


def failures(count: int) -> str:
    return "1 failure" if count == 1 else f"{count} failures"


@dataclass(frozen=True)
class WatchSettings:
    interval: float = 15.0
    stable_after: float = 600.0
    backoff_first: float = 10.0
    backoff_max: float = 600.0
    max_failures: int = 5
    failure_window: float = 3600.0
    stall_timeout: float = 180.0
    batch_timeout: float = 3600.0
    leader_ttl: float = 60.0
    #: Seconds between two reads of a job's full status file for its metrics (served only).
    metrics_refresh: float = 60.0

    def delay(self, consecutive: int) -> float:
        """The wait before restarting after the `consecutive`-th failure in a row."""
        if consecutive <= 1:
            return 0.0
        return min(self.backoff_first * 2 ** (consecutive - 2), self.backoff_max)


class Watcher:
    def __init__(
        self,
        deployment: Deployment,
        settings: WatchSettings,
        notifier: Notifier,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = runtime.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.fromtimestamp(runtime.wall(), timezone.utc),
        collector: Frozen | None = None,
    ):
        self.deployment, self.settings = deployment, settings
        self.notifier, self.metrics = notifier, metrics
        self.clock, self.wall = clock, wall
        self.store, self.storage = deployment.store, deployment.storage
        self.watch_log = WatchLog(self.store, remembers=True)
        self.leader = StoreLock(
            self.store.lock_backend(LEADER_LOCK), "watch", ttl=settings.leader_ttl, clock=clock
        )
        self.leading = False
        self.stopping = runtime.event()
        self.stalls = Stalls(settings.stall_timeout, settings.batch_timeout, clock)
        refresh = settings.metrics_refresh if metrics is not None else None
        self.beacons = Beacons(self.storage, clock, refresh)
        self._healthy_since: dict[str, float] = {}
        self._waiting_for: str | None = None  # who held the store's lock when we wanted it
        self._written: dict[str, WatchRecord] = {}  # what this watcher last wrote, by job
        #: The very record object (by job) that the last look found it need not write: handed
        #: the same object again, it need not compare (records are frozen).
        self._kept: dict[str, WatchRecord] = {}
        #: Each job's manifest digest, with the very manifest object it was computed from (the
        #: store hands back unchanged manifests as the same objects): computed once per version.
        self._digests: dict[str, tuple[StoredManifest, str]] = {}
        self._problem: str | None = None  # why the last look failed, said once
        #: The manifests the last look read, with the stamps it read them under: handed back
        #: to the store, which gives back unread only those its new listing shows unchanged.
        self._reads: Reads | None = None
        self.actions = Actions(deployment, self.stopping, clock)
        #: Jobs whose last restart by this watcher failed, with its cause (cleared when a
        #: restart succeeds or the job is seen healthy): `watch` then exits 1.
        self.failed_restarts: dict[str, str] = {}
        #: The collector kept out of the way between looks (the `watch` command's; none: as is).
        self.collector = collector

    # -- the loop ------------------------------------------------------------------------------
    def run(self, once: bool = False) -> None:
        """Until `stopping` is set (SIGTERM): the step in progress always ends first."""
        try:
            while not self.stopping.is_set():
                self.step()
                if once:
                    return
                self.between_looks()
                self.stopping.wait(self.settings.interval)
        finally:
            self.settle()
            self.actions.close()
            self.leader.release()
            if self.metrics is not None:
                self.metrics.leader.set(0)
            if self.collector is not None:
                self.collector.end()

    def between_looks(self) -> None:
        """What a look left is kept out of the collector's way until the next (host/
        collector.py)."""
        if self.collector is not None:
            self.collector.between(self.clock())

    def step(self) -> None:
        """One interval's work: keep or take the lead, and look (and act) when leading."""
        self.lead()
        if self.leading:
            self.tick()

    def settle(self) -> None:
        """Wait for the restarts under way to end, and take note of how they went."""
        self.actions.wait()
        self._collect()

    def lead(self) -> None:
        """Take the lead when it is free or its holder stopped renewing it; keep it."""
        if self.leading:
            try:
                self.leader.renew_once()  # besides its heartbeat: a renewal per look
                self.leader.check()
                return
            except LeaseLost as exc:
                self.leading = False
                self.notifier.emit(Event("standing-by", message=str(exc)))
                if self.metrics is not None:  # it no longer looks: nor says what it last saw
                    self.metrics.leader.set(0)
                    self.metrics.forget(set())
        try:
            holder = self.leader.try_acquire()
        except FsrError as exc:
            self.notifier.warn(f"cannot reach the store's watch lease: {exc}")
            return
        if holder is not None:
            return
        self.leading = True
        self.leader.start_heartbeat()
        taken = self.leader.took_over
        if taken is not None:
            self.notifier.emit(
                Event("watcher-took-over", message=f"from {taken.describe()}, which stopped")
            )
        else:
            self.notifier.emit(Event("watching", message=f"the store {self.store.location}"))
        if self.metrics is not None:
            self.metrics.leader.set(1)

    # -- one look --------------------------------------------------------------------------
    def tick(self) -> None:
        mark("look")
        self._collect()
        try:
            listing = self.deployment.target.list_runs()
            stored, records = self._stored(), self.watch_log.read_all()
        except FsrError as exc:
            self._trouble(f"cannot look now: {str(exc).splitlines()[0]}")
            return
        self._trouble(None)
        self.beacons.look(read.manifest for read in stored.values() if read.manifest)
        wanted = []
        for name, read in sorted(stored.items()):
            manifest = read.manifest
            assert manifest is not None
            if self.actions.busy(name):
                continue  # its restart is under way
            record = self._record(name, manifest, records)
            health = self._assess(name, manifest, listing.of(name), record)
            self._follow(name, health, record)
            if health.state in (State.DOWN, State.STALLED):
                mark("wanted", job=name, state=health.state.value)
                wanted.append(name)
        for memo in (self._digests, self._kept):
            for gone in [n for n in memo if n not in stored]:
                del memo[gone]
        self.beacons.forget(set(stored))
        if self.metrics is not None:
            self.metrics.forget(set(stored))
        if wanted:
            self.act(wanted, stored)

    def _trouble(self, problem: str | None) -> None:
        """Say a problem with looking once, not on every look, and say when it is over."""
        if problem is not None and problem != self._problem:
            self.notifier.warn(problem)
        elif problem is None and self._problem is not None:
            self.notifier.emit(Event("looking-again", message=f"after: {self._problem}"))
        self._problem = problem

    def _stored(self) -> dict[str, Stored]:
        """What the store records now: one listing, and the manifests as of it (those the last
        look read and the listing shows unchanged are not read again)."""
        snapshot = self.store.snapshot()
        reads = self.store.read_many(snapshot.names, 16, snapshot=snapshot, known=self._reads)
        self._reads = reads
        for name, problem in sorted(reads.problems.items()):
            self.notifier.warn(f"{name}: {problem}")
        return {n: reads.stored(n) for n, m in reads.manifests.items() if m is not None}

    def _record(
        self, name: str, manifest: StoredManifest, records: dict[str, WatchRecord]
    ) -> WatchRecord:
        """The job's record; a new one when a deploy changed the job since (which also lifts a
        crash-loop mark)."""
        cached = self._digests.get(name)
        if cached is not None and cached[0] is manifest:
            digest = cached[1]
        else:
            digest = manifest_digest(manifest)
            self._digests[name] = (manifest, digest)
        record = records.get(name)
        return (
            record
            if record is not None and record.manifest == digest
            else (WatchRecord(name, digest))
        )

    def _assess(
        self, name: str, manifest: StoredManifest, runs: tuple[Run, ...], record: WatchRecord
    ) -> Health:
        status = self.beacons.status(manifest)
        readable = None if isinstance(status, Unreadable) else status
        stalled = self.stalls.judge(name, runs, status)
        return assess(manifest, runs, readable, record, self.wall(), stalled)

    def _follow(self, name: str, health: Health, record: WatchRecord) -> None:
        """Keep the record, the metrics and the log up to date with what is seen. A job healthy
        for `stable_after` after failures has recovered: its backoff starts over."""
        now = self.clock()
        if health.state is State.HEALTHY:
            self.failed_restarts.pop(name, None)
            since = self._healthy_since.setdefault(name, now)
            if record.consecutive and now - since >= self.settings.stable_after:
                self.notifier.emit(Event(
                    "recovered", name,
                    f"healthy for {now - since:.0f} s after {failures(record.consecutive)} in a "
                    "row; its backoff starts over",
                    {"failures-in-a-row": record.consecutive},
                ))  # fmt: skip
                record = replace(record, consecutive=0)
        else:
            self._healthy_since.pop(name, None)
        shown = health.state.value
        if health.state is State.DOWN and record.state == State.BACKING_OFF.value:
            shown = record.state  # its delay is over: restarted in this tick
        self._write(record if record.state == shown else replace(record, state=shown))
        if self.metrics is not None:
            self.metrics.observe(name, health, record.restarts)

    def _write(self, record: WatchRecord) -> None:
        """Keep the record in the store when it changed since this watcher last wrote it."""
        if self._kept.get(record.name) is record:
            return  # the very record found unchanged last time
        same = replace(record, updated="")
        if self._written.get(record.name) == same:
            self._kept[record.name] = record
            return
        self._kept.pop(record.name, None)
        try:
            self.watch_log.write(replace(record, updated=utc_text(self.wall())))
            self._written[record.name] = same
        except FsrError as exc:
            self.notifier.warn(f"{record.name}: cannot keep its watch record: {exc}")

    # -- acting ------------------------------------------------------------------------------
    def act(self, names: list[str], stored: dict[str, Stored]) -> None:
        """Under the store's lock, from facts read again under it: restart what is down (after
        its backoff), replace what is stalled, in the background (restarts.py). A deploy
        holding the lock is waited out; a job the store records differently than the look
        judged (a deploy or a `stop` since) is left to the next look."""
        if self.actions.draining():
            self.notifier.warn(
                "restarts wait until those under way have ended: the store's lock is released "
                "in between, for a deploy that may be waiting for it"
            )
            return
        try:
            holder = self.actions.hold()
        except FsrError as exc:
            self.notifier.warn(f"cannot take the store's lock: {exc}")
            return
        if holder is not None:
            who = holder.describe()
            if who != self._waiting_for:
                self.notifier.warn(f"the store is locked by {who}: acting once it is done")
            self._waiting_for = who
            return
        self._waiting_for = None
        try:
            # A deploy or a stop may have changed a job since the look: act on what the store
            # records now (read under the lock, nothing reused from the look), and only where
            # it is the very version that was judged (the next look judges the rest).
            judged = {n: stored[n].token for n in names}
            recorded = Recorded(
                {n: s.manifest for n, s in stored.items() if s.manifest is not None}
            )
            jobs = [
                job_of(m, f"{self.store.location}{n}.yaml")
                for n in names
                if (m := stored[n].manifest) is not None
            ]
            facts = gather(jobs, self.store, self.deployment.target, self.storage,
                           include_orphans=False, workers=4)  # fmt: skip
            # The beacons of the jobs to act on listed again: judged as they are now.
            self.beacons.look(f.stored for f in facts if f.stored is not None)
            records = self.watch_log.read_all()
            for job_facts in facts:
                now = job_facts.stored
                if now is None or job_facts.token != judged.get(job_facts.name):
                    continue
                job_facts = wanted(job_facts, f"{self.store.location}{job_facts.name}.yaml")
                chosen = self._choose(job_facts, now, records, recorded)
                if chosen is not None:
                    decision, record = chosen
                    decision = replace(decision, token=job_facts.token)
                    self._write(replace(record, state=State.RESTARTING.value, backoff_until=None))
                    self.actions.begin(decision, record)
        except FsrError as exc:
            self.notifier.warn(f"cannot act now: {str(exc).splitlines()[0]}")
        finally:
            self._collect()  # releases the lock when nothing was begun

    def _choose(
        self,
        facts: JobFacts,
        manifest: StoredManifest,
        records: dict[str, WatchRecord],
        stored: dict[str, StoredManifest] | None = None,
    ) -> tuple[Decision, WatchRecord] | None:
        """What to do about one job now (None: nothing, yet), its failure counted."""
        name = facts.name
        record = self._record(name, manifest, records)
        health = self._assess(name, manifest, facts.writers, record)
        now = self.wall()
        if health.state is State.STALLED:
            record = self._failed(record, f"stalled: {health.detail}", now)
            self.notifier.emit(Event("stalled", name, health.detail, {"query-version":
                                     manifest.meta.query_version}))  # fmt: skip
            if record.crash_looping:
                return None
            spark = self.deployment.target.spark_version()
            decision = replace_stalled(facts, f"stalled ({health.detail})", spark)
            return self._allowed(decision, facts, record, stored or {})
        if health.state is not State.DOWN:
            return None  # it came up, or a deploy changed it, since the look without the lock
        if record.state != State.BACKING_OFF.value:
            reason = failure_reason(health.status)
            if (health.status or {}).get("state") != "stopped":
                record = self._failed(record, reason, now)
                if record.crash_looping:
                    return None
                if self._back_off(record, reason, now):
                    return None
        until = parse_utc(record.backoff_until)
        if until is not None and until > now:
            return None
        decision = decide(facts, spark=self.deployment.target.spark_version())
        return self._allowed(decision, facts, record, stored or {})

    def _allowed(
        self,
        decision: Decision,
        facts: JobFacts,
        record: WatchRecord,
        stored: dict[str, StoredManifest],
    ) -> tuple[Decision, WatchRecord] | None:
        """`decision` to carry out, or None with a `cannot-act` event saying why not."""
        refusal = refusal_of(decision, facts, stored)
        if decision.action is Action.ERROR or refusal is not None:
            why = decision.reason if refusal is None else f"{decision.reason}; but {refusal}"
            self.notifier.emit(Event("cannot-act", facts.name, why))
            self._write(replace(record, state="cannot-act"))
            return None
        return (decision, record) if decision.steps else None

    def _back_off(self, record: WatchRecord, reason: str, now: datetime) -> bool:
        """Hold the job's next restart back for the delay its failures in a row earn (False:
        none, it restarts at once; its record is left as it is)."""
        delay = self.settings.delay(record.consecutive)
        if delay <= 0:
            return False
        until = now + timedelta(seconds=delay)
        self._write(replace(record, backoff_until=utc_text(until), state=State.BACKING_OFF.value))
        self.notifier.emit(Event(
            "backing-off", record.name, f"{reason}; restarting in {delay:.0f} s",
            {"until": json_time(until), "delay-seconds": delay,
             "failures-in-a-row": record.consecutive, "reason": reason},
        ))  # fmt: skip
        return True

    def _failed(
        self, record: WatchRecord, reason: str, now: datetime, said: Event | None = None
    ) -> WatchRecord:
        """The failure counted and written; then `said` (the event of the failed restart, when
        it is one) and `crash-looping` when it is the one too many: whoever reads `status` on
        an event finds it counted (a write that fails is warned of before them)."""
        window = timedelta(seconds=self.settings.failure_window)
        record = record.failed(reason, now, window)
        looping = None
        if record.failures_since(now - window) >= self.settings.max_failures:
            record = replace(record, crash_looping=True, backoff_until=None,
                             state=State.CRASH_LOOPING.value)  # fmt: skip
            looping = Event(
                "crash-looping", record.name,
                f"{len(record.failures)} failures within {self.settings.failure_window:.0f} s, "
                f"the last: {reason}; not restarted again until a deploy changes it or "
                f"`flink-sql-runner resume {record.name}`",
                {"failures": len(record.failures), "reason": reason},
            )  # fmt: skip
        self._write(record)
        for event in (said, looping):
            if event is not None:
                self.notifier.emit(event)
        return record

    def _collect(self) -> None:
        """Take note of the restarts that ended."""
        for done in self.actions.finished():
            if done.problem:
                self.notifier.warn(done.problem)
            if done.result is None:  # not begun: its failure is counted, its restart is due
                self._write(replace(done.record, state=State.BACKING_OFF.value))
            else:
                self._restarted(done.decision, done.record, done.result)

    def _restarted(self, decision: Decision, record: WatchRecord, result: JobResult) -> None:
        """Take note of a restart that ended. One that failed is a failure of its own, with
        its cause: counted now (the next look does not count the job's being down again),
        and its restart waits out the backoff."""
        name, now = decision.name, self.wall()
        record = replace(record.restarted_at(now), backoff_until=None,
                         state=State.HEALTHY.value if result.ok else State.DOWN.value)  # fmt: skip
        # A restart is said once written: whoever reads `status` on the event finds it counted.
        said = Event(
            "restarted" if result.ok else "restart-failed", name,
            f"{decision.reason}: {result.summary}",
            {"query-version": decision.version, "ok": result.ok, "restarts": record.restarts,
             "failures-in-a-row": record.consecutive + (0 if result.ok else 1)},
        )  # fmt: skip
        if result.ok:
            self._write(record)
            self.failed_restarts.pop(name, None)
            self.notifier.emit(said)
        else:
            reason = f"restart failed: {restart_cause(result)}"
            self.failed_restarts[name] = restart_cause(result)
            record = self._failed(record, reason, now, said)
            if not record.crash_looping and not self._back_off(record, reason, now):
                # No delay: restarted at the next look, which must not count this failure again.
                self._write(replace(record, backoff_until=utc_text(now),
                                    state=State.BACKING_OFF.value))  # fmt: skip
        if self.metrics is not None:
            self.metrics.restarts.labels(name).set(record.restarts)
