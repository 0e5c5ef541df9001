"""The simulated world: an S3 endpoint (manifest store, intents, locks), checkpoint storage, a
cluster whose runs commit batches into a sink, and the record of what happened (the history and
the invariants' bookkeeping). Every call an actor makes into it is a yield point: the scheduler
chooses who acts next. Faults are drawn from the seed's random generator."""

from __future__ import annotations

import bisect
import functools
import hashlib
import io
import json
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

from botocore.exceptions import ClientError

from flink_sql_runner.decide.decisions import Plan
from flink_sql_runner.decide.steps import PrepareRun, StartRun
from flink_sql_runner.errors import FsrError
from flink_sql_runner.model.history import HistoryEntry, parse_history_key
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.stores.storage import StorageError
from flink_sql_runner.targets.base import (
    DriverLog,
    LogQuery,
    Started,
    StopNotConfirmed,
    Stopped,
    Submission,
    SubmitOutcomeUnknown,
)
from tests.simulation import kafka, windows
from tests.simulation.ledger import Ledger
from tests.simulation.sim_runtime import EPOCH as WALL_EPOCH
from tests.simulation.sim_runtime import Killed, Proc, SimRuntime
from tests.support.fakes import FakeStorage

BUCKET = "sim"
PREFIX = "store/"


#: The Spark the simulated cluster runs.
SIM_SPARK = "4.0.0"


@dataclass
class Faults:
    """Probabilities of each fault per call (all zero in the quiet phase)."""

    s3_503: float = 0.0
    s3_lost_answer: float = 0.0
    s3_stale_listing: float = 0.0
    lock_slow: float = 0.0
    storage_503: float = 0.0
    submit_refused: float = 0.0
    submit_lost: float = 0.0
    submit_slow: float = 0.0
    liveness_unknown: float = 0.0
    listing_503: float = 0.0
    stop_unconfirmed: float = 0.0
    run_dies: float = 0.0
    run_dies_after_commit: float = 0.0
    run_hangs: float = 0.0
    run_stalls: float = 0.0
    kill_per_step: float = 0.0
    manifest_put_503: float = 0.0  # a manifest's own put (the record after a healthy start)
    #: A batch that runs long (20-100 s, not 0.5-3 s): a first one keeps its run from being
    #: healthy within the start timeout; a stop drains it, or interrupts it.
    batch_slow: float = 0.0


#: How long a run's stop waits for the batch in flight to commit before it interrupts it
#: (runner/lifecycle.py's BATCH_DRAIN_SECONDS).
BATCH_DRAIN = 30.0


@dataclass
class Planned:
    """A batch planned on a checkpoint (its `offsets/N`): what its Kafka source reads, per
    partition [start, end) (None for any other source), and the offsets line written."""

    batch: int
    ranges: dict[str, tuple[int, int]] | None
    line: str


@dataclass
class Checkpoint:
    """What a checkpoint folder holds, as its runs left it: the batches planned and the last
    one committed; how its Kafka source began (its first batch's start) and whether declared."""

    planned: dict[int, Planned] = field(default_factory=dict)
    committed: int | None = None
    start_how: str = ""
    declared: bool = False
    #: How the state of a stateful job's version began on it (windows.py).
    began: windows.Began | None = None

    def pending(self) -> int | None:
        """The batch planned and not committed (Spark re-runs it first, with its offsets)."""
        last = max(self.planned, default=None)
        if last is not None and (self.committed is None or last > self.committed):
            return last
        return None


@dataclass
class SimRun:
    name: str
    version: int
    run_id: str
    submission_id: str
    stop_marker: str
    status_file: str
    runtime_manifest: str
    started_by: str
    step: int
    gone: bool = False
    how_gone: str = ""
    location: str = ""
    sink: str = ""
    query: str = ""
    next_batch: int | None = None
    #: The batch it planned and has not committed yet.
    in_flight: Planned | None = None
    #: The batches it committed.
    commits: int = 0
    #: A run that may write: any run but a prepared one before its go (a warm handover).
    writer: bool = True
    #: Its version's status beacon, from its runtime manifest (none before a prepared run's go).
    beacon: str = ""
    #: The beacon's heartbeat file, from its runtime manifest (none on S3, none before a go).
    beat: str = ""
    #: What it last wrote to its beacon (runner/status.py keeps it so, in memory).
    beacon_text: str = ""
    #: Its go word, once given (a prepared run): where its Kafka source starts, among others.
    go_word: dict[str, Any] | None = None
    #: Its Kafka source table (view, definition), when it reads the world's topic.
    kafka: tuple[str, dict[str, Any]] | None = None
    #: Where its Kafka source reads next, partition -> offset (None: not read yet).
    position: dict[str, int] | None = None
    #: Its beacon's text for a state and error, made once per change of them.
    beacon_made: tuple[str, str | None, str] = ("", None, "")
    #: Its query, when it is the stateful job's (windows.py), and its state in memory: read
    #: from its checkpoint as it plans its first batch, written there at every commit.
    stateful: windows.Query | None = None
    state: windows.State | None = None

    def describe(self) -> str:
        return f"{self.name} v{self.version} run {self.run_id[:8]} (by {self.started_by})"


def history_lines(events: list[tuple[int, float, str]]) -> list[str]:
    """The history as people read it: a line per event, its step and virtual time first."""
    return [f"{step:6d} {now:8.1f}s {text}" for step, now, text in events]


@dataclass
class Violation:
    step: int
    kind: str
    text: str

    def line(self) -> str:
        return f"step {self.step}: {self.kind}: {self.text}"


@dataclass
class Tracking:
    """What the invariants need to remember."""

    #: (name, version, query, sink) of every manifest a deploy (or stop) wrote or intended.
    deploy_wrote: set[tuple[str, int, str, str]] = field(default_factory=set)
    #: Every sink the store ever recorded for a job's version.
    recorded_sinks: dict[tuple[str, int], set[str]] = field(default_factory=dict)
    #: (name, version, SQL) of every manifest the store ever recorded: what a history record
    #: may tell of.
    recorded_queries: set[tuple[str, int, str | None]] = field(default_factory=set)
    #: Jobs stopped on purpose (stop returned ok, or a stop step of a deploy that wants it
    #: stopped confirmed its run gone): step and by whom; cleared when a deploy asks for it.
    stopped: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: Which query first used each checkpoint folder.
    checkpoint_query: dict[str, str] = field(default_factory=dict)
    #: (name, version, batch) -> sink it was committed to.
    committed: dict[tuple[str, int, int], str] = field(default_factory=dict)


def query_of(doc: dict[str, Any]) -> str:
    text = json.dumps([doc.get("sql"), doc.get("code"), doc.get("source-tables")], sort_keys=True)
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def sink_of_tables(target: str, tables: dict[str, Any]) -> str:
    options = (tables.get(target) or {}).get("options") or {}
    return str(options.get("topic") or options.get("path") or target)


def key_of_manifest(job: dict[str, Any], tables: dict[str, Any], version: int) -> tuple:
    doc = {
        "sql": job.get("sql"),
        "code": job.get("code"),
        "source-tables": sorted(n for n in tables if n != job.get("target-table")),
    }
    return (
        str(job["name"]),
        int(version),
        query_of(doc),
        sink_of_tables(str(job["target-table"]), tables),
    )


class Files(dict):  # type: ignore[type-arg]
    """The checkpoint storage's files by location, their locations also kept in order: a folder's
    files are a slice of them, where a listing scanned every file of the seed (every offset and
    commit of every run: about 430 when `watch` lists its beacons, at every look)."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []

    def __setitem__(self, location: str, data: Any) -> None:
        if location not in self:
            bisect.insort(self.order, location)
        super().__setitem__(location, data)

    def setdefault(self, location: str, data: Any = None) -> Any:
        if location not in self:
            self[location] = data
        return self[location]

    def pop(self, location: str, *default: Any) -> Any:
        if location in self:
            del self.order[bisect.bisect_left(self.order, location)]
        return super().pop(location, *default)

    def __delitem__(self, location: str) -> None:
        super().__delitem__(location)
        del self.order[bisect.bisect_left(self.order, location)]

    def _refused(self, *_: Any, **__: Any) -> Any:
        raise TypeError("the simulation's files change one location at a time")

    update = clear = popitem = __ior__ = _refused  # type: ignore[assignment]

    def under(self, prefix: str) -> list[str]:
        """The locations that begin with `prefix`, in order."""
        order = self.order
        first = end = bisect.bisect_left(order, prefix)
        while end < len(order) and order[end].startswith(prefix):
            end += 1
        return order[first:end]


class World:
    def __init__(self, rt: SimRuntime, faults: Faults) -> None:
        self.rt, self.rng, self.faults = rt, rt.rng, faults
        self.objects: dict[str, tuple[bytes, str]] = {}  # key -> (body, etag)
        self.modified: dict[str, float] = {}  # key -> when it was last written (virtual s)
        self.object_log: list[tuple[float, str, str | None]] = []  # (time, key, etag or None)
        self._etag = 0
        self.files = Files()  # checkpoint storage
        #: Each file's modification token in listings: the count of writes when last written.
        self.stamps: dict[str, int] = {}
        self.writes = 0
        self.runs: list[SimRun] = []
        self.checkpoints: dict[str, Checkpoint] = {}  # by location
        self.ledger = Ledger()
        self.sink: list[tuple[str, int, int, str, str]] = []  # name, version, batch, sink, run
        #: What happened: (step, virtual time, text), made lines of when shown (Outcome.history).
        self.events: list[tuple[int, float, str]] = []
        self.violations: list[Violation] = []
        self.track = Tracking()
        self.cluster: Proc | None = None
        #: The topic a job reads (None: no job reads Kafka in this seed).
        self.topic: kafka.Topic | None = None
        #: Per checkpoint location: the end offsets of its last committed batch.
        self.kafka_at: dict[str, dict[str, int]] = {}
        #: Per job: the windows its stateful versions wrote (windows.py).
        self.windows: dict[str, windows.Windows] = {}
        #: Per (job, version): what each plan that starts it said of its state: (process,
        #: query, decision.state.how or "").
        self.state_plans: dict[tuple[str, int], list[tuple[str, str, str]]] = {}
        self.kinds: dict[str, str] = {}  # process name -> deploy / stop / watch / ...
        self.wants: dict[str, dict[str, str]] = {}  # process name -> job -> running/stopped/gone
        self.verbose = False
        self._manifests: dict[bytes, StoredManifest] = {}  # manifest_of's, by their bytes

    # -- the history ---------------------------------------------------------------------------
    def who(self) -> str:
        me = self.rt.me()
        return f"{me.proc.name}/{me.name}"

    def log(self, text: str) -> None:
        self.events.append((self.rt.step, self.rt.now, text))

    def violate(self, kind: str, text: str) -> None:
        self.violations.append(Violation(self.rt.step, kind, text))
        self.log(f"VIOLATION {kind}: {text}")

    def call(self, what: str) -> str:
        """A call into the world: a yield point; Killed for a dead process."""
        self.rt.yield_point()
        return self.who()

    def answer(self, who: str, what: str, answer: str) -> None:
        self.log(f"{who} {what} -> {answer}")

    def chance(self, p: float) -> bool:
        return p > 0 and self.rng.random() < p

    def proc_name(self) -> str:
        return self.rt.me().proc.name

    # -- S3 ------------------------------------------------------------------------------------
    def s3_error(self, code: str, status: int, op: str) -> ClientError:
        return ClientError(
            {
                "Error": {"Code": code, "Message": code},
                "ResponseMetadata": {"HTTPStatusCode": status},
            },
            op,
        )

    def s3_put(self, key: str, body: bytes) -> str:
        self._etag += 1
        etag = f'"{self._etag:08x}"'
        self.objects[key] = (body, etag)
        self.modified[key] = self.rt.now
        self.object_log.append((self.rt.now, key, etag))
        self.on_put(key, body)
        return etag

    def s3_delete(self, key: str) -> None:
        if self.objects.pop(key, None) is not None:
            self.object_log.append((self.rt.now, key, None))

    def listing_as_of(self, at: float) -> dict[str, str]:
        state: dict[str, str] = {}
        for when, key, etag in self.object_log:
            if when > at:
                break
            if etag is None:
                state.pop(key, None)
            else:
                state[key] = etag
        return state

    def on_put(self, key: str, body: bytes) -> None:
        """Bookkeeping of manifests and intents written."""
        proc = self.proc_name()
        kind = self.kinds.get(proc, "")
        rest = key[len(PREFIX) :]
        if rest == "_lock.json" and kind == "deploy":
            for job, want in self.wants.get(proc, {}).items():
                if want == "running":  # a deploy that asks for it holds the store now
                    self.track.stopped.pop(job, None)
            return
        if rest.startswith("_intents/"):
            try:
                intended = StoredManifest.from_dict(json.loads(body)["manifest"], key)
                if kind == "watch":
                    return  # what watch intends counts only once a deploy wrote it
                self.track.deploy_wrote.add(
                    key_of_manifest(intended.job, intended.tables, intended.meta.query_version)
                )
            except (ValueError, KeyError, TypeError, AttributeError, FsrError):
                self.violate("unreadable-intent", f"{proc} wrote an intent that is not JSON")
            return
        if rest.startswith("_history/"):
            self.history_written(proc, rest, body)
            return
        if "/" in rest or not rest.endswith(".yaml"):
            return
        manifest = self.manifest_of(body, key)
        sql = manifest.job.get("sql")
        self.track.recorded_queries.add((manifest.name, manifest.meta.query_version, sql))
        key_ = key_of_manifest(manifest.job, manifest.tables, manifest.meta.query_version)
        self.track.recorded_sinks.setdefault((manifest.name, key_[1]), set()).add(key_[3])
        if kind == "watch":
            if key_ not in self.track.deploy_wrote:
                self.violate(
                    "watch-recorded-unknown",
                    f"{proc} recorded {manifest.name} "
                    f"v{key_[1]} (query {key_[2]}, sink {key_[3]}), which no deploy "
                    "wrote or intended",
                )
        else:
            self.track.deploy_wrote.add(key_)

    def history_written(self, proc: str, key: str, body: bytes) -> None:
        """A history record (model/history.py) is written only after the manifest it tells of:
        it names a version of the job, with its SQL, that the store recorded before it."""
        parsed = parse_history_key(key)
        try:
            entry = HistoryEntry.from_json(body.decode(), key)
        except (UnicodeDecodeError, FsrError) as exc:
            self.violate("unreadable-history", f"{proc} wrote {key}: {exc}")
            return
        if parsed is None or parsed[:2] != (entry.name, entry.version):
            self.violate("unreadable-history", f"{proc} wrote {key}, which holds "
                         f"{entry.name} v{entry.version}")  # fmt: skip
            return
        if (entry.name, entry.version, entry.query) not in self.track.recorded_queries:
            self.violate(
                "history-without-record",
                f"{proc} wrote the history of {entry.name} v{entry.version} ({entry.action}), "
                "a version with that query the store never recorded before it",
            )

    def manifest_of(self, body: bytes, key: str) -> StoredManifest:
        """A stored manifest's bytes as the product reads them; the checks read each version
        once (after every deploy the store's manifests are read again, mostly unchanged)."""
        found = self._manifests.get(body)
        if found is None:
            found = self._manifests[body] = StoredManifest.from_yaml(body.decode(), key)
        return found

    def planned(self, proc: str, plan: Plan) -> None:
        """A deploy's plan: what it says of the state of each new version it starts (the
        stateful job's windows may be partial only where it said so)."""
        for decision in plan.decisions:
            state = decision.state
            for step in decision.steps:
                if isinstance(step, (StartRun, PrepareRun)):
                    m = step.manifest
                    key = key_of_manifest(m.job, m.tables, m.meta.query_version)
                    how = state.how if state is not None else ""
                    if isinstance(step, StartRun) and step.continues is not None:
                        how += f" from v{step.continues.meta.query_version}"
                    self.state_plans.setdefault((m.name, key[1]), []).append((proc, key[2], how))
            if state is None:
                continue
            verdicts = "; ".join(f"{o.operator}: {o.verdict}" for o in state.operators)
            refused = ", refused" if state.refused else ""
            self.log(f"{proc} plans {decision.name}: state {state.how}{refused} ({verdicts})")
            starts = [s for s in decision.steps if isinstance(s, (StartRun, PrepareRun))]
            asked = {str(s.manifest.job.get("on-state-change") or "refuse") for s in starts}
            if state.how == "partial" and not state.refused and asked != {"partial"}:
                self.violate(
                    "partial-unasked",
                    f"{proc} starts {decision.name} v{decision.version} with the windows open at "
                    f"the change partial, which the job does not accept (on-state-change: "
                    f"{', '.join(sorted(asked))}; the plan says {state.policy} from "
                    f"{state.policy_from})",
                )

    def copied_began(self, run: SimRun) -> windows.Began:
        """How the state of a version that began on a copied checkpoint began: as the
        state of the version it continues from (its windows declared partial stay so)."""
        how = self.state_plan(run)
        source = None
        if " from v" in how:
            root = run.location.rsplit("/", 1)[0]
            found = self.checkpoints.get(f"{root}/{how.rsplit(' from v', 1)[1]}")
            source = found.began if found is not None else None
        return windows.Began(how, before=source)

    def state_plan(self, run: SimRun) -> str:
        """What the plan that started `run`'s version said of its state: its own process's,
        else the last that started that version with its query."""
        said = [e for e in self.state_plans.get((run.name, run.version), []) if e[1] == run.query]
        mine = [how for proc, _, how in said if proc == run.started_by and how]
        others = [how for _, _, how in said if how]
        return (mine or others or [""])[-1]

    # -- the cluster ---------------------------------------------------------------------------
    def live_runs(self, name: str | None = None) -> list[SimRun]:
        return [r for r in self.runs if not r.gone and (name is None or r.name == name)]

    def start_run(self, submission: Submission, by: str) -> SimRun:
        run = SimRun(
            submission.name,
            submission.version,
            submission.run_id,
            f"sub-{len(self.runs) + 1}",
            submission.stop_marker,
            submission.status_file,
            submission.runtime_manifest,
            by,
            self.rt.step,
        )
        run.writer = not submission.prepared
        alive = [r for r in self.live_runs(run.name) if r.writer]
        if run.writer:
            self.check_prepared_ended(run, by)
        self.runs.append(run)
        self.log(f"cluster: run {run.describe()} starts" + (" prepared" if not run.writer else ""))
        if alive and run.writer:
            self.violate(
                "two-runs",
                f"{run.describe()} started while "
                + ", ".join(r.describe() for r in alive)
                + " may be alive",
            )
        if run.writer:
            self.check_not_stopped(run, "started")
        assert self.cluster is not None
        self.rt.spawn_steps(
            lambda: self.drive(run), f"driver-{run.name}-{len(self.runs)}", self.cluster
        )
        return run

    def check_prepared_ended(self, run: SimRun, by: str) -> None:
        """A deployer starts a writer of a job while a run it prepared for that job waits for a
        go it will never give, and it never told that run to end (an abort word, or its stop
        marker): the prepared run is left up beside the new one (issue 39, finding 4)."""
        for other in self.live_runs(run.name):
            if other.writer or other.started_by != by:
                continue
            word = json.loads(self.files.get(go_file(other)) or "{}")
            told = (word.get("run-id") == other.run_id and "abort" in word) or (
                self.files.get(other.stop_marker) is not None
            )
            if not told:
                self.violate(
                    "prepared-left-up",
                    f"{run.describe()} starts while {other.describe()}, prepared by the same "
                    "process, waits for a go and was never told to end",
                )

    def check_not_stopped(self, run: SimRun, what: str) -> None:
        """A run of a job stopped on purpose begins to write (it starts, or a prepared one is
        given its go) before a deploy asked for the job again. A prepared run waiting for a go
        writes nothing: one whose submission was still on its way when its deployer was killed
        may start after a stop, and must end by itself without its go."""
        stopped = self.track.stopped.get(run.name)
        if stopped is not None:
            self.violate(
                "runs-after-stop",
                f"{run.describe()} {what} although the job was "
                f"stopped on purpose at step {stopped[0]} by {stopped[1]} and no "
                "deploy asked for it since",
            )

    def end_run(self, run: SimRun, how: str, state: str | None, error: str = "") -> None:
        if run.gone:
            return
        run.gone, run.how_gone = True, how
        if state is not None:
            self.write_status(run, state, error=error)
        self.log(f"cluster: run {run.describe()} ends: {how}")

    def write_status(self, run: SimRun, state: str, **more: Any) -> None:
        doc = {"run-id": run.run_id, "state": state, "spark-version": SIM_SPARK, **more}
        self.files[run.status_file] = json.dumps(doc)
        self.stamp(run.status_file)
        if run.beacon and run.writer:  # as runner/status.py: the same bytes but for a change
            error = more.get("error")
            if run.beacon_made[:2] != (state, error):
                beacon = {"run-id": run.run_id, "state": state, "error": error,
                          "spark-version": SIM_SPARK, "long-batch-minutes": None}  # fmt: skip
                run.beacon_made = (state, error, json.dumps(beacon, sort_keys=True))
            text = run.beacon_made[2]
            if not run.beat or run.beacon_text != text:  # with a beat: only on a change
                self.files[run.beacon], run.beacon_text = text, text
                self.stamp(run.beacon)
            if run.beat:
                self.files[run.beat] = ""
                self.stamp(run.beat)

    def stamp(self, location: str) -> None:
        self.writes += 1
        self.stamps[location] = self.writes

    def drive(self, run: SimRun) -> Generator[float, None, None]:
        """One driver: reads its runtime manifest, then commits a batch every few seconds and
        reports it in its status file, until its stop marker appears or it is killed. A stepped
        thread of the cluster (it yields the seconds of each sleep)."""
        f = self.faults
        yield self.rng.uniform(2, 12)
        if run.gone:
            return
        doc = json.loads(self.files.get(run.runtime_manifest) or "{}")
        if not doc.get("prepare"):
            run.beacon = str(doc.get("beacon-file") or "")
            run.beat = str(doc.get("beat-file") or "")
        if doc.get("prepare") and not (yield from self.await_go(run, doc)):
            return
        if self.topic is not None:
            run.kafka = next(
                (
                    (view, table)
                    for view in doc.get("source-tables") or []
                    if (table := (doc.get("tables") or {}).get(view) or {}).get("format") == "kafka"
                ),
                None,
            )
        run.location = str(doc.get("checkpoint-location", ""))
        run.sink = sink_of_tables(str(doc.get("target-table")), doc.get("tables") or {})
        run.query = query_of(doc)
        if run.kafka is not None:
            run.stateful = windows.Query.of(doc.get("sql"), run.kafka[1])
        root = run.stop_marker.split("/_control/")[0]
        if run.location != f"{root}/{run.version}":
            self.violate("checkpoint-of-another-version", f"{run.describe()} uses {run.location}")
        first = self.track.checkpoint_query.setdefault(run.location, run.query)
        if first != run.query:
            self.violate(
                "checkpoint-reused",
                f"{run.describe()} runs query {run.query} on "
                f"{run.location}, first used by query {first}",
            )
        # Spark writes the checkpoint's `metadata` (its query id) as the query starts, before
        # it plans a batch: a run stopped now leaves a checkpoint that planned none.
        self.files.setdefault(f"{run.location}/metadata", '{"id": "sim"}')
        fate = self.rng.random()
        dies = fate < f.run_dies
        dies_after_commit = not dies and fate < f.run_dies + f.run_dies_after_commit
        hangs = self.chance(f.run_hangs)
        stalls = not hangs and self.chance(f.run_stalls)
        die_at = self.rt.now + self.rng.uniform(0, 120)
        hang_at = self.rt.now + self.rng.uniform(0, 120)
        # Half the runs that die do so with a batch in flight: planned, never committed.
        dies_mid_batch = dies and self.rng.random() < 0.5
        heartbeat = 0
        while not run.gone:
            if not any(vars(f).values()):  # the quiet phase: no run dies or hangs from now on
                dies = dies_after_commit = stalls = False
                hangs = hangs and self.rt.now >= hang_at  # a hung run stays hung
            if self.files.get(run.stop_marker) is not None and not hangs:
                self.end_run(run, "stopped through its stop marker", "stopped")
                return
            if (hangs or stalls) and self.rt.now >= hang_at:
                yield 5  # alive, no progress; a hung run ignores its stop marker
                continue
            try:
                batch = self.plan(run)
            except kafka.SparkRefuses as exc:
                self.end_run(run, "its query failed", "failed", error=str(exc))
                return
            slow = self.chance(f.batch_slow)
            seconds = self.rng.uniform(20, 100) if slow else self.rng.uniform(0.5, 3)
            if dies_mid_batch and dies and self.rt.now >= die_at:
                yield seconds / 2
                self.end_run(run, f"died with batch {batch} planned, not committed", "failed",
                             error="sim: the driver died")  # fmt: skip
                return
            if not (yield from self.batch_runs(run, batch, seconds, hangs)):
                return
            drained = self.files.get(run.stop_marker) is not None and not hangs
            self.commit(run, drained)
            heartbeat += 1
            if drained:
                # Stopped between two batches, the one in flight drained (runner/lifecycle.py):
                # its status goes from `starting` or `active` to `stopped`.
                self.end_run(run, f"stopped through its stop marker after batch {batch}",
                             "stopped")  # fmt: skip
                return
            if dies_after_commit:
                self.end_run(
                    run,
                    f"died after committing batch {batch}",
                    "failed",
                    error="sim: died right after a commit",
                )
                return
            self.write_status(
                run,
                "active",
                heartbeat=heartbeat,
                **{"last-batch": batch, "batch-running-seconds": 0},
            )
            if dies and not dies_mid_batch and self.rt.now >= die_at:
                self.end_run(run, "died", "failed", error="sim: the driver died")
                return
            yield self.rng.uniform(3, 8)

    def batch_runs(
        self, run: SimRun, batch: int, seconds: float, hangs: bool
    ) -> Generator[float, None, bool]:
        """A planned batch runs for `seconds`: True once it may commit; False when its run was
        killed meanwhile, or its stop marker interrupted it after BATCH_DRAIN (it stays planned,
        not committed). A batch shorter than that always drains (its marker is seen once it
        committed); a hung run ignores its marker."""
        if seconds <= BATCH_DRAIN:
            yield seconds
            return not run.gone
        left, seen = seconds, None
        while left > 0:
            yield min(left, 5.0)
            left -= 5.0
            if run.gone:
                return False
            if left > 0 and not hangs and self.files.get(run.stop_marker) is not None:
                seen = self.rt.now if seen is None else seen
                if self.rt.now - seen >= BATCH_DRAIN:
                    self.end_run(run, f"stopped through its stop marker, batch {batch} "
                                 f"interrupted after {BATCH_DRAIN:.0f} s (planned, not "
                                 "committed)", "stopped")  # fmt: skip
                    return False
        return True

    def await_go(self, run: SimRun, doc: dict[str, Any]) -> Generator[float, None, bool]:
        """A prepared run (runner/prepare.py): its pre-flight may fail; then it says `ready`
        and waits for the word naming it. True once given its go: from then on it writes, on
        the version's status file and stop marker; it ends on an abort, its own stop marker
        or its timeout, having written nothing."""
        section = doc["prepare"]
        deadline = self.rt.now + float(section.get("timeout-seconds", 300))
        if self.chance(self.faults.run_dies / 2):
            self.end_run(run, "pre-flight failed", "failed", error="sim: pre-flight failed")
            return False
        self.write_status(run, "ready")
        while not run.gone:
            word = json.loads(self.files.get(section["go-file"]) or "{}")
            mine = word.get("run-id") == run.run_id
            if mine and word.get("go") is True:
                run.go_word = word
                alive = [r for r in self.live_runs(run.name) if r.writer and r is not run]
                if alive:
                    self.violate(
                        "two-runs",
                        f"{run.describe()} was given its go while "
                        + ", ".join(r.describe() for r in alive)
                        + " may be alive",
                    )
                self.check_not_stopped(run, "was given its go")
                run.writer = True
                run.status_file, run.stop_marker = doc["status-file"], doc["stop-marker"]
                run.beacon = str(doc.get("beacon-file") or "")
                run.beat = str(doc.get("beat-file") or "")
                self.log(f"cluster: run {run.describe()} got its go")
                return True
            if (mine and "abort" in word) or self.files.get(section["stop-marker"]) is not None:
                self.end_run(run, "ended before its go", "aborted")
                return False
            if self.rt.now >= deadline:
                self.end_run(run, "no go within its timeout", "expired")
                return False
            yield 1
        return False

    def plan(self, run: SimRun) -> int:
        """The run plans its next batch (`offsets/N`, with its source's offsets line). A driver
        reads its checkpoint as it plans its first batch and goes on from there by itself (as
        Spark keeps its offsets in memory): two drivers on one checkpoint plan and commit the
        same batches. A batch planned and not committed is re-run first, with its offsets
        (Spark's rule: an offsets id past the last commit is run again as planned). A Kafka
        source reads from where its previous batch ended to the topic's end now, partitions
        found since from their earliest (Spark's rule); SparkRefuses before anything is
        planned."""
        checkpoint = self.checkpoint_of(run.location)
        if run.next_batch is None and run.stateful is not None:
            run.state = self.read_state(run, checkpoint)
        if run.next_batch is None:
            pending = checkpoint.pending()
            if pending is not None:
                planned = checkpoint.planned[pending]
                if planned.ranges is not None:
                    run.position = {p: end for p, (_, end) in planned.ranges.items()}
                run.next_batch, run.in_flight = pending + 1, planned
                self.log(f"cluster: {run.describe()} re-runs batch {pending}, planned and not "
                         f"committed, with its offsets {planned.line}")  # fmt: skip
                return pending
            batch = 0 if checkpoint.committed is None else checkpoint.committed + 1
        else:
            batch = run.next_batch
        ranges = None
        line = "{}"
        if run.kafka is not None and self.topic is not None:
            start = self.kafka_start(run, checkpoint, batch)
            ends = self.topic.ends(self.rt.now)
            ranges = {p: (start.get(p, 0), max(end, start.get(p, 0))) for p, end in ends.items()}
            run.position = {p: end for p, (_, end) in ranges.items()}
            line = kafka.offsets_line(run.position)
        planned = Planned(batch, ranges, line)
        run.next_batch, run.in_flight = batch + 1, planned
        checkpoint.planned[batch] = planned
        self.files[f"{run.location}/metadata"] = '{"id": "sim"}'
        self.files[f"{run.location}/offsets/{batch}"] = "v1\n{}\n" + line
        return batch

    def kafka_start(self, run: SimRun, checkpoint: Checkpoint, batch: int) -> dict[str, int]:
        """Where a run's next batch of its Kafka source begins: where its previous one ended
        (in memory), where its checkpoint's last committed batch ended, or, on a new checkpoint,
        where its deployer, its table or Spark says; the latter checked against where the
        version it replaces finished."""
        assert run.kafka is not None and self.topic is not None
        if run.position is not None:
            return dict(run.position)
        if batch > 0:
            before = checkpoint.planned[batch - 1].ranges or {}
            return {p: end for p, (_, end) in before.items()}
        view, table = run.kafka
        word = run.go_word or {}
        spec = (word.get("starting") or {}).get(view) or table.get("start")
        older = (word.get("starting-offsets") or {}).get(view)  # a go of an older deployer
        if spec is None and older is not None:
            spec = {"options": {"startingOffsets": older}}
        start = kafka.start_of(table, spec, self.topic, self.rt.now, WALL_EPOCH)
        replaced = self.stored_version(run.name)
        root = run.location.rsplit("/", 1)[0]
        finished = self.finished_at(f"{root}/{replaced}") if replaced is not None else None
        found = kafka.boundary_violation(run.name, run.version, start, replaced, finished)
        self.log(f"cluster: {run.describe()} reads {self.topic.name} from {start.offsets} "
                 f"({start.how})")  # fmt: skip
        if found is not None:
            self.violate(*found)
        checkpoint.start_how, checkpoint.declared = start.how, start.declared
        if run.stateful is not None:  # Spark's initial offsets; the state begins empty here
            self.files[f"{run.location}/{windows.SOURCES_FILE}"] = "v1\n" + kafka.offsets_line(
                start.offsets
            )
            unread = [self.topic.event_time(p, o - 1) for p, o in start.offsets.items() if o > 0]
            at = max(unread, default=None)  # the last record before its start
            checkpoint.began = windows.Began(self.state_plan(run), dict(start.offsets), at,
                                             start.declared)  # fmt: skip
        return start.offsets

    def checkpoint_of(self, location: str) -> Checkpoint:
        """What a run finds on its checkpoint as it starts: as the world's runs left it, or, on
        a folder no run of the world wrote (the product's copy of another version's checkpoint,
        act/state_copy.py), what its files say."""
        found = self.checkpoints.get(location)
        if found is None:
            found = self.checkpoints[location] = self.read_checkpoint(location) or Checkpoint()
        return found

    def finished_at(self, location: str) -> dict[str, int] | None:
        """The end offsets of the last batch committed on a checkpoint (None: none)."""
        if location not in self.checkpoints and location not in self.kafka_at:
            found = self.read_checkpoint(location)
            if found is not None:
                self.checkpoints[location] = found
        return self.kafka_at.get(location)

    def read_checkpoint(self, location: str) -> Checkpoint | None:
        """A checkpoint as its files say (None: no checkpoint, its `metadata` not there; a copy
        writes it last): its batches planned, with the ranges of its Kafka source (each from
        where the one before ended, the first from Spark's initial offsets), and committed."""
        if self.files.get(f"{location}/metadata") is None:
            return None

        def text(at: str) -> str:
            data = self.files.get(at)
            return data.decode() if isinstance(data, bytes) else str(data or "")

        def ends(line: str) -> dict[str, int] | None:
            topic = self.topic.name if self.topic is not None else None
            found = json.loads(line).get(topic) if topic is not None else None
            return {str(p): int(o) for p, o in found.items()} if found is not None else None

        found = Checkpoint()
        source = text(f"{location}/{windows.SOURCES_FILE}")
        before = (ends(source.splitlines()[-1]) if source else None) or {}
        prefix = f"{location}/offsets/"
        for batch in sorted(int(at[len(prefix) :]) for at in self.files.under(prefix)):
            line = text(f"{prefix}{batch}").splitlines()[-1]
            read, ranges = ends(line), None
            if read is not None:
                ranges = {p: (before.get(p, 0), max(o, before.get(p, 0))) for p, o in read.items()}
                before = read
            found.planned[batch] = Planned(batch, ranges, line)
        prefix = f"{location}/commits/"
        found.committed = max((int(at[len(prefix) :]) for at in self.files.under(prefix)),
                              default=None)  # fmt: skip
        last = found.planned.get(found.committed) if found.committed is not None else None
        if last is not None and last.ranges is not None:
            self.kafka_at[location] = {p: end for p, (_, end) in last.ranges.items()}
        return found

    def read_state(self, run: SimRun, checkpoint: Checkpoint) -> windows.State:
        """The state a stateful run starts with: its checkpoint's, as of its last committed
        batch; empty on a checkpoint that committed none. A state that is not there, or not of
        that batch, fails the query as Spark's state store does (SparkRefuses)."""
        data = self.files.get(f"{run.location}/{windows.STATE_FILE}")
        if checkpoint.began is None and checkpoint.committed is not None:
            checkpoint.began = self.copied_began(run)  # a copy: its state goes on
        if data is None:
            if checkpoint.committed is None:
                return windows.State()
            raise kafka.SparkRefuses(
                f"the state of batch {checkpoint.committed} is not in {run.location} (sim)"
            )
        batch, state = windows.State.read(data)
        if batch != checkpoint.committed:
            raise kafka.SparkRefuses(
                f"{run.location} holds the state of batch {batch}, its last commit is "
                f"{checkpoint.committed} (sim)"
            )
        self.log(f"cluster: {run.describe()} reads its state of batch {batch}: "
                 f"{len(state.open)} windows open, watermark {state.watermark}")  # fmt: skip
        return state

    def stored_version(self, name: str) -> int | None:
        """The version the store records of a job now."""
        found = self.objects.get(f"{PREFIX}{name}.yaml")
        if found is None:
            return None
        from flink_sql_runner.model.stored import StoredManifest

        return StoredManifest.from_yaml(found[0].decode(), name).meta.query_version

    def commit(self, run: SimRun, drained: bool = False) -> int:
        """The batch in flight commits: its rows into the sink and `commits/N`, in one step
        (the world's sinks keep no log of their own, so the last commit is where a version
        finished, as gather/offsets.py::finished_batch counts it here); the ledger checks.
        `drained`: the batch was in flight when its run's stop marker came."""
        planned = run.in_flight
        assert planned is not None
        run.in_flight = None
        batch = planned.batch
        checkpoint = self.checkpoints[run.location]
        before = checkpoint.committed
        checkpoint.committed = batch if before is None else max(before, batch)
        self.sink.append((run.name, run.version, batch, run.sink, run.run_id))
        key = (run.name, run.version, batch)
        if key in self.track.committed:
            self.violate(
                "batch-twice",
                f"{run.name} v{run.version} batch {batch} committed "
                f"again by {run.describe()} into {run.sink} (first into "
                f"{self.track.committed[key]})",
            )
        self.track.committed.setdefault(key, run.sink)
        self.files[f"{run.location}/commits/{batch}"] = "v1\n{}"
        run.commits += 1
        ranges = planned.ranges
        if ranges is not None:
            self.kafka_at[run.location] = {p: end for p, (_, end) in ranges.items()}
        if run.commits == 1 or drained:
            read = ""
            if ranges is not None and self.topic is not None:
                read = " reading " + ", ".join(f"{self.topic.name}/{p} [{lo}, {hi})" for p, (lo, hi)
                                               in sorted(ranges.items()))  # fmt: skip
            what = "the batch in flight at its stop" if drained else "its first batch"
            self.log(f"cluster: {run.describe()} commits {what}, {batch},{read} into {run.sink}")
        found, notes = self.ledger.commit(
            run.name,
            run.version,
            batch,
            f"run {run.run_id[:8]} by {run.started_by}",
            run.sink,
            self.rt.step,
            (self.topic.name, ranges) if ranges is not None and self.topic is not None else None,
            checkpoint.start_how if batch == 0 and checkpoint.declared else "",
        )
        for note in notes:
            self.log(note)
        for kind, text in found:
            self.violate(kind, text)
        if run.stateful is not None and run.state is not None and ranges is not None:
            self.count_windows(run, batch, ranges, checkpoint)
        return batch

    def count_windows(
        self, run: SimRun, batch: int, ranges: dict[str, tuple[int, int]], checkpoint: Checkpoint
    ) -> None:
        """A stateful run's batch commits: its records counted into its state, the windows
        the watermark passed written (and checked: windows.py), the state written with the
        commit."""
        topic, query, state = self.topic, run.stateful, run.state
        assert topic is not None and query is not None and state is not None
        records = (
            (windows.key_of(int(p), offset), topic.event_time(p, offset))
            for p, (lo, hi) in sorted(ranges.items(), key=lambda kv: int(kv[0]))
            for offset in range(lo, hi)
        )
        emitted, late = state.add(query, records)
        self.files[f"{run.location}/{windows.STATE_FILE}"] = state.text(batch)
        if late:
            self.log(f"cluster: {run.describe()} drops {late} late records in batch {batch}")
        if not emitted:
            return
        ledger = self.ledger.records.get(run.name)
        began = ledger.began if ledger is not None else None

        def truth(window: windows.Window) -> tuple[int, int]:
            full = windows.truth(topic.created, kafka.RATE, query, window)
            return full, windows.truth(topic.created, kafka.RATE, query, window, began)

        book = self.windows.setdefault(run.name, windows.Windows(run.name, topic.name))
        who = f"run {run.run_id[:8]} by {run.started_by}"
        found, notes = book.commit(run.version, batch, who, query, emitted, truth, checkpoint.began)
        for note in notes:
            self.log(note)
        for kind, text in found:
            self.violate(kind, text)


# -- the product's edges, simulated ------------------------------------------------------------
#: Where the virtual clock's 0 is on S3's calendar.
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)


@functools.cache
def _s3_time(seconds: int) -> datetime:
    """The virtual clock's whole second `seconds` on S3's calendar."""
    return EPOCH + timedelta(seconds=seconds)


@functools.cache
def _s3_date(seconds: int) -> str:
    """An answer's Date header at the virtual clock's whole second `seconds`."""
    return format_datetime(_s3_time(seconds), usegmt=True)


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


class _Paginator:
    def __init__(self, client: SimS3) -> None:
        self.client = client

    def paginate(self, Bucket: str, Prefix: str, Delimiter: str = "") -> list[dict]:  # noqa: N803
        return [self.client.list_objects_v2(Bucket=Bucket, Prefix=Prefix, Delimiter=Delimiter)]


class _Meta:
    class config:  # noqa: N801
        retries = {"total_max_attempts": 1}


class SimS3:
    """The few calls of boto3's S3 client the store and its lock make, on the world's objects:
    conditional puts and deletes, 503s, answers lost after the change was made, stale
    listings, slow lock writes."""

    meta = _Meta

    def __init__(self, world: World) -> None:
        self.world = world

    def get_paginator(self, name: str) -> _Paginator:
        return _Paginator(self)

    def _enter(self, op: str, key: str) -> str:
        w = self.world
        who = w.call(f"s3.{op} {key}")
        if key.endswith("_lock.json") and w.chance(w.faults.lock_slow):
            w.rt.sleep(w.rng.uniform(5, 60))
        if w.chance(w.faults.s3_503):
            w.answer(who, f"s3.{op} {key}", "503")
            raise w.s3_error("SlowDown", 503, op)
        return who

    def _lost(self, who: str, op: str, key: str) -> None:
        w = self.world
        if w.chance(w.faults.s3_lost_answer):
            w.answer(who, f"s3.{op} {key}", "done, answer lost (503)")
            raise w.s3_error("InternalError", 500, op)

    def list_objects_v2(self, Bucket: str, Prefix: str, Delimiter: str = "") -> dict:  # noqa: N803
        w = self.world
        who = self._enter("list", Prefix)
        state = {k: e for k, (_, e) in w.objects.items()}
        stale = ""
        if w.chance(w.faults.s3_stale_listing):
            lag = w.rng.uniform(1, 20)
            state, stale = w.listing_as_of(w.rt.now - lag), f" (stale by {lag:.0f} s)"
        found = []
        for key in sorted(state):
            if key.startswith(Prefix) and not (Delimiter and Delimiter in key[len(Prefix) :]):
                found.append({"Key": key, "ETag": state[key]})
        w.answer(who, f"s3.list {Prefix}", f"{len(found)} objects{stale}")
        date = {"HTTPHeaders": {"date": _s3_date(int(w.rt.now))}}  # S3's own clock
        return {"Contents": found, "ResponseMetadata": date}

    def get_object(self, Bucket: str, Key: str, IfMatch: str | None = None) -> dict:  # noqa: N803
        w = self.world
        who = self._enter("get", Key)
        found = w.objects.get(Key)
        if found is None:
            w.answer(who, f"s3.get {Key}", "404")
            raise w.s3_error("NoSuchKey", 404, "GetObject")
        if IfMatch is not None and IfMatch != found[1]:
            w.answer(who, f"s3.get {Key}", "412")
            raise w.s3_error("PreconditionFailed", 412, "GetObject")
        w.answer(who, f"s3.get {Key}", found[1])
        # S3's own clock: the object's LastModified and the answer's Date header, whole seconds.
        return {
            "Body": _Body(found[0]),
            "ETag": found[1],
            "LastModified": _s3_time(int(w.modified.get(Key, w.rt.now))),
            "ResponseMetadata": {"HTTPHeaders": {"date": _s3_date(int(w.rt.now))}},
        }

    def put_object(
        self,
        Bucket: str,
        Key: str,
        Body: Any,
        IfMatch: str | None = None,  # noqa: N803
        IfNoneMatch: str | None = None,
        **_: Any,
    ) -> dict:  # noqa: N803
        w = self.world
        who = self._enter("put", Key)
        body = Body.encode() if isinstance(Body, str) else bytes(Body)
        rest = Key[len(PREFIX) :]
        if "/" not in rest and rest.endswith(".yaml") and w.chance(w.faults.manifest_put_503):
            w.answer(who, f"s3.put {Key}", "503")
            raise w.s3_error("SlowDown", 503, "PutObject")
        current = w.objects.get(Key)
        if (IfNoneMatch == "*" and current is not None) or (
            IfMatch is not None and (current is None or current[1] != IfMatch)
        ):
            w.answer(who, f"s3.put {Key}", "412")
            raise w.s3_error("PreconditionFailed", 412, "PutObject")
        etag = w.s3_put(Key, body)
        self._lost(who, "put", Key)
        w.answer(who, f"s3.put {Key}", etag)
        return {"ETag": etag}

    def delete_object(self, Bucket: str, Key: str, IfMatch: str | None = None) -> dict:  # noqa: N803
        w = self.world
        who = self._enter("delete", Key)
        current = w.objects.get(Key)
        if IfMatch is not None and current is not None and current[1] != IfMatch:
            w.answer(who, f"s3.delete {Key}", "412")
            raise w.s3_error("PreconditionFailed", 412, "DeleteObject")
        w.s3_delete(Key)
        self._lost(who, "delete", Key)
        w.answer(who, f"s3.delete {Key}", "done")
        return {}


class SimStorage(FakeStorage):
    """Checkpoint storage on the world's files, each call a yield point that may answer 503."""

    def __init__(self, world: World) -> None:
        super().__init__()
        self.world = world
        self.files = world.files
        self.stamps = world.stamps

    def _stamp(self, location: str) -> None:
        self.world.stamp(location)

    def _under(self, prefix: str) -> list[str]:
        return self.world.files.under(prefix)

    def _check(self) -> None:
        w = self.world
        caller = sys._getframe(1)  # which FakeStorage method, on which location (history only)
        what = f"storage.{caller.f_code.co_name} {caller.f_locals.get('location', '')}"
        who = w.call(what)
        if w.chance(w.faults.storage_503):
            w.answer(who, what, "503")
            raise StorageError("cannot read s3://ckpt/: SlowDown (HTTP 503) (sim)")
        w.answer(who, what, "ok")


class SimTarget:
    """A cluster: submits take virtual time and may be refused, lost (the run starts, the
    answer is a timeout) or slow; liveness may be unknown; listings may fail; stops go through
    the stop marker, then kill, and may not be confirmed."""

    name = "sim"
    #: A submission's run starts within half its latency (at most 150 s of 300).
    submit_timeout = 300.0

    def __init__(self, world: World) -> None:
        self.world = world

    def spark_version(self) -> str | None:
        """The Spark its drivers report (`write_status`): a job with Kafka tables gets the
        connector for it (targets/connectors.py)."""
        return SIM_SPARK

    def _run(self, run: SimRun) -> Run:
        return Run(run.name, run.version, run.run_id, run.submission_id, run.submission_id)

    def list_runs(self) -> Listing:
        w = self.world
        who = w.call("target.list")
        if w.chance(w.faults.listing_503):
            w.answer(who, "target.list", "503")
            raise FsrError("the cluster's API answered HTTP 503 to the listing (sim)")
        runs = [self._run(r) for r in w.live_runs()]
        w.answer(who, "target.list", ", ".join(f"{r.name} v{r.version}" for r in runs) or "-")
        return Listing.of_runs(runs)

    def submit(self, submission: Submission) -> Started:
        w = self.world
        what = f"target.submit {submission.name} v{submission.version}"
        who = w.call(what)
        w.log(f"{who} {what} ...")
        if w.chance(w.faults.submit_refused):
            w.answer(who, what, "refused")
            raise FsrError("the cluster refused the submission (sim)")
        slow = w.chance(w.faults.submit_slow)
        latency = w.rng.uniform(60, 300) if slow else w.rng.uniform(0.5, 5)
        # The request is on its way: the cluster starts the run even if this deployer dies.
        by, started = w.proc_name(), []

        def arrive() -> Generator[float, None, None]:
            yield latency / 2
            started.append(w.start_run(submission, by))

        run_began = w.rt.now
        assert w.cluster is not None
        w.rt.spawn_steps(arrive, f"submit-{submission.name}", w.cluster)
        w.rt.block(until=lambda: bool(started), deadline=w.rt.now + latency)
        run = started[0]
        w.rt.sleep(max(0.0, latency - (w.rt.now - run_began)))
        if w.chance(w.faults.submit_lost):
            w.answer(who, what, "timed out (the run started)")
            raise SubmitOutcomeUnknown(
                "the submission timed out (sim)", Run(run.name, run.version, run.run_id, "unknown")
            )
        w.answer(who, what, f"started {run.submission_id}")
        return Started(self._run(run))

    def _find(self, run: Run) -> list[SimRun]:
        return [
            r
            for r in self.world.live_runs(run.name)
            if r.run_id == run.run_id or (run.run_id is None and r.version == run.version)
        ]

    def liveness(self, run: Run) -> Liveness:
        w = self.world
        who = w.call(f"target.liveness {run.name}")
        if w.chance(w.faults.liveness_unknown):
            w.answer(who, f"target.liveness {run.name}", "unknown")
            return Liveness.UNKNOWN
        alive = Liveness.ALIVE if self._find(run) else Liveness.GONE
        w.answer(who, f"target.liveness {run.name} {(run.run_id or '')[:8]}", alive.value)
        return alive

    def launched(self, run: Run) -> None:
        return None

    def failure_detail(self, run: Run) -> str:
        return "sim: log tail"

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        return None  # the simulated world keeps no logs

    def logged_runs(self, name: str, version: int) -> list:
        return []

    def stop(self, run: Run, stop_marker: str, timeout: float) -> Stopped:
        w = self.world
        what = f"target.stop {run.name} v{run.version}"
        who = w.call(what)
        w.log(f"{who} {what} ...")
        w.files[stop_marker] = "stop requested"
        begun = w.rt.now
        while w.rt.now - begun < timeout:
            if not self._find(run):
                w.answer(who, what, "stopped gracefully")
                self.stopped(run)
                return Stopped(True, w.rt.now - begun, "stopped gracefully (sim)")
            w.rt.sleep(1)
        if w.chance(w.faults.stop_unconfirmed):
            w.answer(who, what, "kill not confirmed")
            raise StopNotConfirmed(f"{run.describe()}: the kill was not confirmed (sim)")
        for found in self._find(run):
            w.end_run(found, f"killed by {w.proc_name()}", None)
        w.answer(who, what, "killed")
        self.stopped(run)
        return Stopped(False, w.rt.now - begun, "killed (sim)")

    def stopped(self, run: Run) -> None:
        """A stop took effect: on purpose when the process wants the job stopped or gone."""
        w = self.world
        proc = w.proc_name()
        if w.wants.get(proc, {}).get(run.name) in ("stopped", "gone"):
            w.track.stopped.setdefault(run.name, (w.rt.step, proc))


class Stream(io.StringIO):
    """Where a watcher's notifier writes: into the history."""

    def __init__(self, world: World, name: str) -> None:
        super().__init__()
        self.world, self.name = world, name

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.world.log(f"{self.name} says: {line.strip()}")
        return len(text)


def go_file(run: SimRun) -> str:
    """Where a prepared run's deployer gives its word (beside its own stop marker)."""
    return run.stop_marker.removesuffix(".stop") + ".go.json"


def noop(*_: Any) -> Callable[..., None]:
    return lambda *a, **k: None


__all__ = ["Killed", "World", "Faults", "SimS3", "SimStorage", "SimTarget", "Stream"]
