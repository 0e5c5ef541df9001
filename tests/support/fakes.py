"""In-memory fakes of every side effect, with failure switches, for the decision logic.

Each fake can fail the way its real part fails: the store answers 503, finds its object
changed under a conditional write, or stores a write and loses its answer; the lock's renewals
fail or another deployer takes it over; the target cannot tell whether a run is alive, answers a
submission with a timeout after it started the run, or cannot confirm a stop; checkpoint storage
answers 503.
"""

from __future__ import annotations

import hashlib
import json
import stat
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from flink_sql_runner.errors import FsrError, StoreError
from flink_sql_runner.model.runs import Listing, Liveness, Run
from flink_sql_runner.model.stored import (
    ABSENT,
    ANY,
    SideDoc,
    Stored,
    StoredManifest,
    Token,
    Unconditional,
)
from flink_sql_runner.stores.base import Reads, Snapshot, StoreConflict, reused
from flink_sql_runner.stores.storage import Listed, StorageError
from flink_sql_runner.targets.base import (
    DriverLog,
    LogQuery,
    Started,
    StopNotConfirmed,
    Stopped,
    Submission,
    SubmitOutcomeUnknown,
)


class StoreData:
    """What a manifest store holds, shared by every deployer (FakeStore) that uses it. Every
    manifest and side document has a token: a counter that moves on each write."""

    def __init__(self) -> None:
        self.manifests: dict[str, StoredManifest] = {}
        self.versions: dict[str, int] = {}
        self.archived: dict[str, StoredManifest] = {}  # the last archived copy of each
        self.archives: dict[str, list[StoredManifest]] = {}  # every one, oldest first
        self.side: dict[str, str] = {}
        self.side_versions: dict[str, int] = {}
        self.counter = 0
        self.lock = MemoryLockBackend()
        self.locks: dict[str, MemoryLockBackend] = {}
        #: The store's own clock (S3's, not the deployer's): side documents' ages follow it.
        self.clock: Callable[[], float] = FakeClock(1_000_000.0)
        self.side_written: dict[str, float] = {}

    def next(self) -> int:
        self.counter += 1
        return self.counter


def _token(versions: dict[str, int], key: str) -> Token:
    return f"t{versions[key]}" if key in versions else ABSENT


class FakeStore:
    """One deployer's view of a store: writes are conditional on the token the caller passes.

    Switches: `fail_reads` / `fail_writes` (a 503 / 500), `unreadable` (names whose manifest is
    not a mapping), `lose_answers` (that many writes store their object, then raise as if the
    answer was lost on the way back), `before_write` (called before each manifest write),
    `before_side_write` (before each side document's), `failing_side` (key prefixes whose side
    documents' writes answer 503, e.g. `_history/`), `fail_clock` (the store's clock)."""

    location = "memory://store/"

    def __init__(self, data: StoreData | None = None) -> None:
        self.data = data or StoreData()
        #: Called before each manifest write, e.g. to simulate a deployer killed right there.
        self.before_write: Callable[[StoredManifest], None] | None = None
        self.before_archive: Callable[[str], None] | None = None
        #: Called before each side document's write with its key and text, e.g. to answer
        #: one intent record's phase with a 503.
        self.before_side_write: Callable[[str, str], None] | None = None
        self.fail_reads = False
        self.fail_writes = False
        self.fail_clock = False
        #: Side documents under these key prefixes cannot be written (a 503 each time).
        self.failing_side: set[str] = set()
        self.lose_answers = 0
        self.unreadable: set[str] = set()
        self.writes: list[str] = []
        #: Every manifest and side document read (its name or key), in order, as S3 GETs them.
        self.gets: list[str] = []

    def other(self) -> FakeStore:
        """Another deployer's view of the same store."""
        return FakeStore(self.data)

    # shortcuts for tests
    @property
    def manifests(self) -> dict[str, StoredManifest]:
        return self.data.manifests

    @property
    def side(self) -> dict[str, str]:
        return self.data.side

    @property
    def archived(self) -> dict[str, StoredManifest]:
        return self.data.archived

    @property
    def history(self) -> dict[str, str]:
        """The history records (`_history/<name>/<file>`: model/history.py), by key."""
        return {k: v for k, v in self.data.side.items() if k.startswith("_history/")}

    @property
    def side_but_history(self) -> dict[str, str]:
        """The side documents but the history records: the intent and watch records a
        command leaves for the next one."""
        return {k: v for k, v in self.data.side.items() if not k.startswith("_history/")}

    @property
    def lock(self) -> MemoryLockBackend:
        return self.data.lock

    def put(self, manifest: StoredManifest) -> Token:
        """Seed the store (what an earlier deploy recorded), unconditionally."""
        self.data.manifests[manifest.name] = manifest
        self.data.versions[manifest.name] = self.data.next()
        return self.token(manifest.name)

    def token(self, name: str) -> Token:
        """The token of `name`'s stored manifest now (ABSENT if none)."""
        return _token(self.data.versions, name)

    def _fail(self) -> None:
        if self.fail_reads:
            raise StoreError("cannot read memory://store/: SlowDown (HTTP 503) (switch)")

    def _fail_write(self) -> None:
        if self.fail_writes:
            raise StoreError("cannot write memory://store/: InternalError (HTTP 500) (switch)")

    def _answer_lost(self) -> None:
        """After a write stored its object: raise if its answer is to be lost."""
        if self.lose_answers > 0:
            self.lose_answers -= 1
            raise StoreError("cannot write memory://store/: the connection broke (switch)")

    def snapshot(self) -> Snapshot:
        self._fail()
        names = tuple(sorted(self.data.manifests))
        tokens = {n: str(self.token(n)) for n in names}
        return Snapshot(names, tokens, tokens)

    def index_snapshot(self) -> Snapshot | None:
        return None

    def list_names(self) -> list[str]:
        return list(self.snapshot().names)

    def read(self, name: str) -> Stored:
        self._fail()
        if name in self.unreadable:
            raise StoreError(f"stored manifest memory://store/{name}.yaml: not a mapping")
        self.gets.append(name)
        return Stored(self.data.manifests.get(name), self.token(name))

    def read_text(self, name: str) -> tuple[str | None, Token]:
        stored = self.read(name)
        return (stored.manifest.to_yaml() if stored.manifest else None), stored.token

    def read_many(
        self,
        names,
        max_workers: int,
        snapshot: Snapshot | None = None,
        known: Reads | None = None,
    ) -> Reads:
        names = list(names)
        kept = reused(names, snapshot, known) if snapshot is not None else Reads({})
        found, tokens, problems = dict(kept.manifests), dict(kept.tokens), {}
        for name in names:
            if name in kept.manifests:
                continue
            if snapshot is not None and name not in snapshot.names:
                found[name], tokens[name] = None, ABSENT
                continue
            try:
                stored = self.read(name)
                found[name], tokens[name] = stored.manifest, stored.token
            except StoreError as exc:
                problems[name] = str(exc)
        listed = snapshot.stamps if snapshot is not None else {}
        stamps = {n: t for n, t in tokens.items() if listed.get(n) == t}
        return Reads(found, problems, tokens, stamps)

    def refresh_index(self, known: Reads | None = None) -> bool:
        return False

    def _expect(self, name: str, expected: Token) -> None:
        if self.token(name) != expected:
            raise StoreConflict(f"memory://store/{name}.yaml changed since this deploy read it")

    def write(self, manifest: StoredManifest, expected: Token) -> Token:
        if self.before_write is not None:
            self.before_write(manifest)
        self._fail_write()
        self._expect(manifest.name, expected)
        token = self.put(manifest)
        self.writes.append(manifest.name)
        self._answer_lost()
        return token

    def archive(self, name: str, expected: Token) -> str:
        if self.before_archive is not None:
            self.before_archive(name)
        self._fail_write()
        if name not in self.data.manifests and expected is not ABSENT:
            raise StoreError(f"cannot archive {name}: it does not exist")
        self._expect(name, expected)
        if expected is ABSENT:
            raise StoreError(f"cannot archive {name}: it does not exist")
        self.data.archived[name] = self.data.manifests.pop(name)
        self.data.archives.setdefault(name, []).append(self.data.archived[name])
        del self.data.versions[name]
        self._answer_lost()
        return f"memory://archive/{name}"

    def read_archived(self, name: str) -> list[StoredManifest]:
        self._fail()
        return list(self.data.archives.get(name, []))

    # side documents (intent records) and the lock
    def _expect_side(self, key: str, expected: Token | Unconditional) -> None:
        if expected is not ANY and _token(self.data.side_versions, key) != expected:
            raise StoreConflict(f"memory://store/{key} changed since it was read")

    def write_side(self, key: str, text: str, *, expected: Token | Unconditional = ANY) -> Token:
        if self.before_side_write is not None:
            self.before_side_write(key, text)
        self._fail_write()
        if any(key.startswith(prefix) for prefix in self.failing_side):
            raise StoreError(f"cannot write memory://store/{key}: SlowDown (HTTP 503) (switch)")
        if expected is not ANY and self.data.side.get(key) == text:
            # A retried write whose first attempt landed (its answer lost) finds its own
            # document there: success, as S3Store's conditional put finds it (stores/s3.py).
            return _token(self.data.side_versions, key)
        self._expect_side(key, expected)
        self.data.side[key] = text
        self.data.side_versions[key] = self.data.next()
        self.data.side_written[key] = self.data.clock()
        self._answer_lost()
        return _token(self.data.side_versions, key)

    def read_side_folder(self, folder: str) -> dict[str, str]:
        return {name: doc.text for name, doc in self.read_side_docs(folder).items()}

    def read_side_docs(
        self, folder: str, known: dict[str, SideDoc] | None = None
    ) -> dict[str, SideDoc]:
        """Each document directly in `folder` (not in a folder of it, as S3's listing with its
        delimiter and a folder's show them) with its token and its age on the store's clock
        (`data.clock`); one `known` holds under its token now is given back unread, as S3 does
        by ETag."""
        self._fail()
        prefix = folder + "/"
        now = self.data.clock()
        found = {}
        for key, text in sorted(self.data.side.items()):
            if not key.startswith(prefix) or "/" in key[len(prefix) :]:
                continue
            token = _token(self.data.side_versions, key)
            age = max(0.0, now - self.data.side_written.get(key, now))
            before = (known or {}).get(key[len(prefix) :])
            if before is not None and before.stamp == token:
                found[key[len(prefix) :]] = SideDoc(before.text, token, age, token)
                continue
            self.gets.append(key)
            found[key[len(prefix) :]] = SideDoc(text, token, age, str(token))
        return found

    def clear_side_folder(self, folder: str) -> None:
        """Nothing: the fake keeps no temporary files or folders (as S3)."""

    def delete_side(self, key: str, *, expected: Token | Unconditional = ANY) -> None:
        if expected is not ANY and key in self.data.side:
            self._expect_side(key, expected)
        self.data.side.pop(key, None)
        self.data.side_versions.pop(key, None)

    def clock(self) -> float:
        """The store's own clock (`data.clock`), not the deployer's; `fail_clock`: a 503."""
        self._fail()
        if self.fail_clock:
            raise StoreError("cannot read memory://store/: SlowDown (HTTP 503) (switch)")
        return self.data.clock()

    def lock_backend(self, name: str | None = None) -> MemoryLockBackend:
        if name is None:
            return self.data.lock
        return self.data.locks.setdefault(name, MemoryLockBackend())


class MemoryLockBackend:
    """The lock of FakeStore: the same contract as the file and S3 backends, with switches:
    `fail_replace` makes that many renewals fail (a 503), `steal` has another deployer take
    the lock over."""

    location = "memory://store/_lock"

    def __init__(self) -> None:
        self.holder = None
        self.version = 0
        self.fail_replace = 0

    def create(self, holder):
        if self.holder is not None:
            return None
        self.holder, self.version = holder, self.version + 1
        return self.version

    def read(self):
        return self.holder, (self.version if self.holder is not None else None)

    def replace(self, holder, token):
        if self.fail_replace:
            self.fail_replace -= 1
            raise StoreError("cannot renew lock memory://store/_lock: SlowDown (switch)")
        if token != self.version or self.holder is None:
            return None
        self.holder, self.version = holder, self.version + 1
        return self.version

    def delete(self, token) -> None:
        if token == self.version:
            self.holder = None

    def steal(self, holder) -> None:
        self.holder, self.version = holder, self.version + 1


@dataclass
class FakeTarget:
    """A cluster in memory. Switches: `unknown` (runs of these jobs answer "cannot tell" and
    show so in the listing), `fail_listing`, `fail_submit` (refused), `lose_submit_answer`
    (the run starts but the submission answers with a timeout), `die_after_submit`,
    `stop_unconfirmed` (a stop that cannot confirm the run is gone), `graceful`."""

    name: str = "fake"
    submit_timeout: float = 300.0
    runs: dict[str, list[Run]] = field(default_factory=dict)
    submissions: list[Submission] = field(default_factory=list)
    stops: list[str] = field(default_factory=list)
    stop_timeouts: list[float] = field(default_factory=list)  # each stop's, in order
    unknown: set[str] = field(default_factory=set)
    fail_listing: bool = False
    fail_submit: bool = False
    lose_submit_answer: bool = False
    die_after_submit: bool = False
    stop_unconfirmed: bool = False
    graceful: bool = True
    on_submit: object = None  # callable(submission) -> None, e.g. to write a status file
    #: Called first in submit / stop, e.g. to simulate a deployer killed right there.
    before_submit: object = None
    before_stop: object = None
    #: Every submit made while a run of the same job may still be up: must stay empty.
    double_starts: list[str] = field(default_factory=list)
    launched_runs: list[str] = field(default_factory=list)
    #: The Spark the next run uses; each run reports it in its status file (tests' hooks).
    spark: str | None = None
    #: The driver log of every run submitted (its run id, version), newest last; `fail_logs`:
    #: where logs are cannot be read now (a cluster's storage that refuses).
    logs: list[DriverLog] = field(default_factory=list)
    fail_logs: bool = False

    def spark_version(self) -> str | None:
        return self.spark

    @property
    def running(self) -> dict[str, Run]:
        """The one run of each job (tests that set up a single run)."""
        return {name: runs[0] for name, runs in self.runs.items() if runs}

    def add_run(self, run: Run) -> None:
        self.runs.setdefault(run.name, []).append(run)

    def _shown(self, run: Run) -> Run:
        if run.name in self.unknown:
            return Run(run.name, run.version, run.run_id, run.detail, run.submission_id,
                       Liveness.UNKNOWN)  # fmt: skip
        return run

    def list_runs(self) -> Listing:
        if self.fail_listing:
            raise FsrError("the cluster's API answered HTTP 503 to the listing (switch)")
        return Listing.of_runs([self._shown(r) for runs in self.runs.values() for r in runs])

    def submit(self, submission: Submission) -> Started:
        if callable(self.before_submit):
            self.before_submit(submission)
        # A prepared run writes nothing until its go (tests/support/jobs.py::FakeRunner
        # checks the go instead); any other run submitted beside one of its job is a second.
        beside = self.runs.get(submission.name) or submission.name in self.unknown
        if beside and not submission.prepared:
            self.double_starts.append(submission.name)
        if self.fail_submit:
            raise FsrError("cluster refused the submission (switch)")
        self.submissions.append(submission)
        where = f"fake log of {submission.name} run {submission.run_id}"
        self.logs.append(DriverLog(where, "", submission.run_id, submission.version))
        run = Run(submission.name, submission.version, submission.run_id, "fake 1", "sub-1")
        if not self.die_after_submit:
            self.add_run(run)
        if callable(self.on_submit):
            self.on_submit(submission)
        if self.lose_submit_answer:
            lost = Run(submission.name, submission.version, submission.run_id, "unknown")
            raise SubmitOutcomeUnknown("the submission timed out (switch)", lost)
        return Started(run)

    def liveness(self, run: Run) -> Liveness:
        if run.name in self.unknown:
            return Liveness.UNKNOWN
        alive = any(r.run_id == run.run_id for r in self.runs.get(run.name, []))
        return Liveness.ALIVE if alive else Liveness.GONE

    def launched(self, run: Run) -> None:
        self.launched_runs.append(str(run.run_id))

    def failure_detail(self, run: Run) -> str:
        return "fake log tail"

    def logged_runs(self, name: str, version: int) -> list:
        return []  # its logs are not files

    def driver_log(self, query: LogQuery) -> DriverLog | None:
        if self.fail_logs:
            raise FsrError("the cluster's log storage answered HTTP 503 (switch)")
        mine = [log for log in self.logs if log.where.startswith(f"fake log of {query.name} ")]
        for log in reversed(mine):
            if query.run_id in (None, log.run_id) and query.version in (None, log.version):
                return log
        return None

    def stop(self, run: Run, stop_marker: str, timeout: float) -> Stopped:
        if callable(self.before_stop):
            self.before_stop(run)
        self.stops.append(run.name)
        self.stop_timeouts.append(timeout)
        if self.stop_unconfirmed or run.name in self.unknown:
            raise StopNotConfirmed(f"{run.detail}: the cluster cannot say it stopped (switch)")
        remaining = [r for r in self.runs.get(run.name, []) if r.run_id != run.run_id]
        if remaining:
            self.runs[run.name] = remaining
        else:
            self.runs.pop(run.name, None)
        return Stopped(self.graceful, 0.1, "stopped gracefully" if self.graceful else "killed")


class FakeStorage:
    """Checkpoint storage in memory: files by location. `fail` makes every call a 503;
    `deletes_left` lets that many more files be deleted, then every delete answers 503 (a
    storage that fails halfway through a folder, as S3 can); a location in `delete_fails_once`
    answers its next delete with a 503, once. A listing gives each file's digest
    as its content token and the count of writes when it was last written as its modification
    token; `listing_fails` makes listings answer 503, and a location in `unlisted` is left out
    of listings (a listing that lags a write); a location in `read_fails` answers its reads
    with a 503. `calls` counts the calls by method."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}  # write_bytes keeps bytes
        self.fail = False
        #: Called after each write_text with (location, text), e.g. a runner that waits for
        #: its go (tests/support/jobs.py::FakeRunner).
        self.on_write: object = None
        self.deletes_left: int | None = None
        self.delete_fails_once: set[str] = set()
        #: Every file deleted, in order.
        self.deleted: list[str] = []
        self.listing_fails = False
        self.unlisted: set[str] = set()
        #: Locations whose reads answer 503 (while they are in it).
        self.read_fails: set[str] = set()
        self.calls: Counter[str] = Counter()
        #: Per file, the count of writes when it was last written (its modification token).
        self.stamps: dict[str, int] = {}
        self._writes = 0

    def _check(self) -> None:
        self.calls[sys._getframe(1).f_code.co_name] += 1
        if self.fail:
            raise StorageError("cannot list s3://ckpt/: SlowDown (HTTP 503) (switch)")

    def _stamp(self, location: str) -> None:
        self._writes += 1
        self.stamps[location] = self._writes

    def add_checkpoint(self, location: str, last_committed: int | None = 3) -> None:
        """A valid checkpoint, as Spark leaves it, up to batch `last_committed`."""
        self.files[f"{location}/metadata"] = json.dumps({"id": "fake"})
        last = last_committed if last_committed is not None else 0
        for batch in range(last + 1):
            self.files[f"{location}/offsets/{batch}"] = "v1\n{}\n{}"
        for batch in range(last_committed + 1 if last_committed is not None else 0):
            self.files[f"{location}/commits/{batch}"] = "v1\n{}"

    def read_bytes(self, location: str) -> bytes | None:
        self._check()
        found = self.files.get(location)
        return found.encode() if isinstance(found, str) else found

    def read_tail(self, location: str, size: int) -> bytes | None:
        self._check()
        if location in self.read_fails:
            raise StorageError(f"cannot read {location}: SlowDown (HTTP 503) (switch)")
        if location.startswith("hdfs://"):
            raise StorageError(f"cannot read a part of {location}: not on HDFS, here")
        found = self.files.get(location)
        data = found.encode() if isinstance(found, str) else found
        return None if data is None else data[len(data) - min(size, len(data)) :]

    def read_text(self, location: str) -> str | None:
        self._check()
        if location in self.read_fails:
            raise StorageError(f"cannot read {location}: SlowDown (HTTP 503) (switch)")
        return self.files.get(location)

    def write_text(self, location: str, text: str, *, private: bool = False) -> None:
        self._check()
        self.files[location] = text
        self._stamp(location)
        if callable(self.on_write):
            self.on_write(location, text)

    def write_bytes(self, location: str, data: bytes) -> None:
        self._check()
        self.files[location] = data  # type: ignore[assignment]
        self._stamp(location)

    def delete(self, location: str) -> None:
        self._check()
        if self.deletes_left is not None:
            if self.deletes_left <= 0:
                raise StorageError(f"cannot delete {location}: SlowDown (HTTP 503) (switch)")
            self.deletes_left -= 1
        if location in self.delete_fails_once:
            self.delete_fails_once.discard(location)
            raise StorageError(f"cannot delete {location}: SlowDown (HTTP 503) (switch)")
        if self.files.pop(location, None) is not None:
            self.deleted.append(location)

    def _under(self, prefix: str) -> list[str]:
        """The locations that begin with `prefix`, in order."""
        return sorted(location for location in self.files if location.startswith(prefix))

    def tree(self, folder: str) -> list[tuple[str, int]]:
        self._check()
        sizes = []
        for location in self._under(folder.rstrip("/") + "/"):
            data = self.files[location]
            sizes.append((location, len(data.encode() if isinstance(data, str) else data)))
        return sizes

    def delete_tree(self, folder: str) -> None:
        for location, _ in self.tree(folder):
            self.delete(location)

    def listing(self, folder: str) -> list[Listed]:
        self._check()
        if self.listing_fails:
            raise StorageError(f"cannot list {folder}: SlowDown (HTTP 503) (switch)")
        found = []
        for location in self._under(folder.rstrip("/") + "/"):
            if location not in self.unlisted:
                data = self.files[location]
                raw = data.encode() if isinstance(data, str) else data
                stamp = str(self.stamps.get(location, 0))
                found.append(Listed(location, hashlib.md5(raw).hexdigest(), stamp))  # noqa: S324
        return found

    def is_empty(self, location: str) -> bool:
        self._check()
        return not self._under(location.rstrip("/") + "/")

    def _children(self, folder: str) -> list[tuple[str, bool]]:
        prefix = folder.rstrip("/") + "/"
        found = {}
        for location in self._under(prefix):
            head, _, rest = location[len(prefix) :].partition("/")
            found[head] = found.get(head, False) or bool(rest)
        return sorted(found.items())

    def file_names(self, folder: str) -> list[str]:
        self._check()
        return [name for name, is_dir in self._children(folder) if not is_dir]

    def dir_names(self, folder: str) -> list[str]:
        self._check()
        return [name for name, is_dir in self._children(folder) if is_dir]


class FakeClock:
    """Time that passes only when the code under test sleeps."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def stand_in(path: Path, source: str) -> Path:
    """An executable script at `path` (a stand-in for spark-submit); `{python}` in `source`
    becomes this interpreter."""
    import sys

    path.write_text(source.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def write_beacon(
    storage: object,
    root: str,
    name: str,
    version: int,
    run_id: str,
    state: str = "active",
    error: str | None = None,
    running: float | None = None,
    spark: str = "4.3.0",
) -> str:
    """Write a run's status beacon as runner/status.py writes it (`running`: the seconds its
    micro-batch has run); its location."""
    from flink_sql_runner.model.control import beacon_location
    from runner.status import Status

    location = beacon_location(root, name, version)
    status = Status(None, None, run_id, spark, beacon=location)  # type: ignore[arg-type]
    status.state, status.error = state, error
    text = json.dumps(status.beacon_doc(running), sort_keys=True)
    storage.write_text(location, text)  # type: ignore[attr-defined]
    return location


def write_beat(storage: object, root: str, name: str, version: int) -> str:
    """A heartbeat of a run's status beacon, as runner/status.py writes it on a local folder or
    HDFS (an empty file beside the beacon); its location."""
    from flink_sql_runner.model.control import beat_location

    location = beat_location(root, name, version)
    storage.write_text(location, "")  # type: ignore[attr-defined]
    return location
