"""`stop NAME...` and `stop --all`: every run of each job stopped with its checkpoint, and the job
recorded as stopped (desired-state: stopped), as a deploy that stops it records it.

Every name is checked before anything is stopped: a name that is neither stored nor running is
bad input, and then no job is stopped. A job whose first start failed (the record it kept) is
known: it is not running, and there is nothing to stop. One job failing to stop does not keep
the others from stopping; each has its own result. A job recorded as stopped gets its history
record (act/history.py): one that cannot be written is said in its result, never its failure."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from flink_sql_runner.act.history import HistoryWriter
from flink_sql_runner.act.tracker import Tracker
from flink_sql_runner.decide.changes import CONFIG, MISSING, Change
from flink_sql_runner.decide.tree import as_stopped
from flink_sql_runner.errors import FsrError, UnknownJob
from flink_sql_runner.gather.facts import intent_evidence
from flink_sql_runner.host import runtime
from flink_sql_runner.model.control import ControlFiles
from flink_sql_runner.model.intents import (
    DEFAULT_SUBMIT_TIMEOUT,
    Intent,
    IntentLog,
    Kind,
    Outcome,
    Phase,
)
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.stored import ANY, StoredManifest
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.lock import StoreLock
from flink_sql_runner.stores.storage import Storage
from flink_sql_runner.targets.base import Target


@dataclass(frozen=True)
class StopResult:
    """What stopping one job did: `stopped` (every run of it is gone now), `not-running` (there
    was nothing to stop) or `failed` (`message` says why; `exit_code` is its error's)."""

    name: str
    outcome: str
    message: str
    exit_code: int = 0

    def to_dict(self) -> dict[str, str]:
        key = "error" if self.outcome == "failed" else "result"
        return {"name": self.name, "outcome": self.outcome, key: self.message}


def unknown_names(names: list[str], stored: set[str], listing: Listing) -> list[str]:
    """The names that are neither stored nor running."""
    return [name for name in names if name not in stored and not listing.of(name)]


def stop_jobs(
    store: ManifestStore,
    target: Target,
    storage: Storage,
    names: list[str] | None,
    timeout: float,
    lease: StoreLock | None = None,
    parallelism: int = 1,
) -> Iterator[StopResult]:
    """Stop the jobs `names` (None: every job stored or running), `parallelism` at a time; each
    job's result in the order of the names, as soon as it is known. UnknownJob, before anything
    is stopped, when a name is neither stored nor running."""
    listing = target.list_runs()
    stored = set(store.list_names())
    pending = IntentLog(store).read_all()
    chosen = sorted(stored | set(listing.runs)) if names is None else list(dict.fromkeys(names))
    failed = {
        name: intent.failed_start
        for name, intent in pending.intents.items()
        if intent.failed_start is not None and name not in stored
    }
    unknown = unknown_names(chosen, stored | set(failed), listing)
    if unknown:
        quoted = ", ".join(repr(name) for name in unknown)
        them = "it" if len(unknown) == 1 else "them"
        raise UnknownJob(
            f"unknown job{'s' if len(unknown) > 1 else ''} {quoted}: no manifest of {them} in "
            f"{store.location} and no run of {them} on the {target.name} target"
        )

    def one(name: str) -> StopResult:
        first = failed.get(name)
        if first is not None and not listing.of(name):
            return StopResult(
                name, "not-running", f"{name}: not running ({first.describe()}); nothing to stop"
            )
        try:
            return stop_job(store, target, storage, name, timeout, lease, listing.of(name),
                            pending.intents.get(name))  # fmt: skip
        except FsrError as exc:
            return StopResult(name, "failed", str(exc), exc.exit_code)

    with runtime.pool(max(1, parallelism), "stop") as pool:
        futures = [(name, pool.submit(one, name)) for name in chosen]
        reported = 0
        try:
            for _, future in futures:
                yield runtime.result_of(future)  # wakes for a Ctrl-C handled on another thread
                reported += 1
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM: no stop not begun begins, the ones in flight end first, and
            # every job is reported before the interrupt goes on.
            rest = futures[reported:]
            cancelled = [future.cancel() for _, future in rest]  # all, before a worker is free
            for (name, future), not_begun in zip(rest, cancelled, strict=True):
                if not_begun:
                    yield StopResult(name, "not-begun", f"{name}: not begun (interrupted)")
                else:
                    yield future.result()
            raise
        finally:
            # The caller stopped asking (a Ctrl-C taken in its own code, while it printed a
            # result, closes this generator): no stop not begun begins after it.
            for _, future in futures:
                future.cancel()


def stop_job(
    store: ManifestStore,
    target: Target,
    storage: Storage,
    name: str,
    timeout: float,
    lease: StoreLock | None = None,
    runs: tuple[Run, ...] | None = None,
    intent: Intent | None = None,
) -> StopResult:
    """Stop every run of job `name` the target lists (`runs`, when the caller listed already),
    with its checkpoint, and record it as stopped (desired-state: stopped), as a deploy that
    stops it does: `watch` leaves it down, and a deploy whose manifest says running resumes it
    from its checkpoint."""
    runs = target.list_runs().of(name) if runs is None else runs
    read = store.read(name)
    stored = read.manifest
    if stored is None:
        if not runs:
            raise UnknownJob(
                f"unknown job {name!r}: no manifest of it in {store.location} and no "
                f"run of it on the {target.name} target"
            )
        raise FsrError(f"job {name!r} runs but has no stored manifest; cannot find its stop marker")
    if intent is not None:
        try:
            settled = intent_evidence(intent, runs, storage).settled
        except FsrError as exc:
            raise FsrError(
                f"{name}: {intent.describe()}: what its run did cannot be read ({exc}); not "
                "stopped yet (stop it again once it can)"
            ) from None
        if settled.outcome is Outcome.UNKNOWN:
            # A run an interrupted command submitted may still appear: a stop recorded now
            # could be undone by it. Stopped once it is known.
            raise FsrError(
                f"{name}: {intent.describe()}: {settled.why}; not stopped yet (stop it again "
                "once that is known)"
            )
        if settled.completes and intent.kind is Kind.START and not settled.waiting:
            # It took effect (or its run is up): the stop records what that command would have
            # recorded, stopped, so the manifest its run wrote with is not lost.
            stored = intent.manifest
    recorded = stored.job.get("desired-state") == "stopped"
    root = stored.checkpoint_root
    if root is None and runs:
        raise FsrError(
            f"{name}: runs ({', '.join(run.describe() for run in runs)}) but its stored manifest, "
            "converted by `migrate`, names no checkpoint root: its stop marker is unknown; stop "
            "it on the target"
        )
    if not runs and recorded:
        kept = "; checkpoint kept" if root else " (not deployed by this tool yet: no checkpoint)"
        return StopResult(name, "not-running", f"{name}: already stopped{kept}")
    check = lease.check if lease is not None else (lambda evidence=False: None)
    submit_timeout = float(getattr(target, "submit_timeout", DEFAULT_SUBMIT_TIMEOUT))
    # An intent first: a stop done but not yet recorded is recorded by whoever comes next,
    # never undone (model/intents.py).
    tracker = Tracker(IntentLog(store), check, as_stopped(stored), "stop", Kind.STOP,
                      submit_timeout, over=ANY)  # fmt: skip
    said = []
    for run in runs:
        if run.liveness is Liveness.UNKNOWN and run.version is None:
            raise FsrError(f"{name}: cannot stop {run.describe()}: {run.detail}")
        if lease is not None:
            lease.renewed_for_step(f"stop {name}")
        tracker.to(Phase.INTENDED)
        tracker.to(Phase.STOPPING)
        control = ControlFiles.of(f"{root}/{name}", run.version or stored.meta.query_version)
        stopped = target.stop(run, control.stop_marker, timeout)
        storage.delete(control.stop_marker)
        said.append(stopped.how if len(runs) == 1 else f"v{run.version}: {stopped.how}")
    if runs:
        tracker.to(Phase.OLD_STOPPED)
    unwritten = None
    if not recorded:
        check()
        store.write(as_stopped(stored), read.token)  # only over what was read here
        unwritten = _write_history(store, stored, read.manifest, bool(runs), check)
    if tracker.written:
        tracker.forget()
    said_too = f"; {unwritten}" if unwritten else ""
    if not runs and root is None:
        message = (f"{name}: not deployed by this tool yet (converted by `migrate`: no "
                   "checkpoint); nothing to stop; recorded as stopped")  # fmt: skip
        return StopResult(name, "not-running", message + said_too)
    if not runs:
        message = f"{name}: was not running; recorded as stopped (checkpoint kept)"
        return StopResult(name, "not-running", message + said_too)
    message = f"{name}: {'; '.join(said)}; checkpoint kept, recorded as stopped"
    return StopResult(name, "stopped", message + said_too)


def _write_history(
    store: ManifestStore,
    stored: StoredManifest,
    was: StoredManifest | None,
    ran: bool,
    check: Callable[[bool], None],
) -> str | None:
    """The history record of `stored`, just recorded as stopped (`was`: what the store held
    before, when it was another version: an interrupted start's manifest recorded instead);
    None when written, else the line that says it was not."""
    how = "every run stopped with its checkpoint" if ran else "it was not running"
    reason = f"`stop {stored.name}`: {how}; recorded as stopped"
    if was is not None and was.meta.query_version != stored.meta.query_version:
        reason += (
            f" (an interrupted start of v{stored.meta.query_version} took effect: its manifest "
            f"recorded, not v{was.meta.query_version}'s)"
        )
    old = stored.job.get("desired-state", MISSING)
    change = Change("desired-state", CONFIG, old, "stopped", "running or stopped")
    return HistoryWriter(store, "stop").write(
        as_stopped(stored), "stop", reason, check, [change.to_dict()]
    )
