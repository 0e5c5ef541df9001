"""The fleet as the page shows it: one look at every job, the rows `status --output json` gives,
shared by the requests that come while it is fresh.

A look costs what a `status` on this machine costs (watch/status_reads.py), kept in memory
from one look to the next: the store's listing and index, one listing each of the intent and
watch records and of each checkpoint root's beacons, and per job whose run is alive its status
file and its checkpoint's last commit, read again at most every `fresh_for` seconds (a runner
rewrites its status file every heartbeat, 10 s). Those are read in the look the first time
only: once `fresh_for` has passed, a look shows what was read last and they are read again
behind it, on a thread of their own (one such pass at a time), for the looks after it; they
are read in the look again when they are older than `keep_for` (half the quiet time after
which `status` shows a running job stalled, so that what is shown never makes one look
stalled) or the job's beacon lists another content (a new run, another state). So a look at
1,000 running jobs costs its listings, not 2,000 requests (docs/developers/benchmarks.md,
"What the fleet page costs"). Requests within `reuse_for` seconds of a look are answered from
it; one look runs at a time, and a request that comes during one waits for it rather than
beginning another.

A look that fails (the store does not answer, a listing fails) is never shown as a fleet with
no jobs, nor are the rows before it shown as now: the page shows the last look's rows with its
time and says that the look after it failed, and why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host import runtime
from flink_sql_runner.model.stored import StoredManifest
from flink_sql_runner.read.secrets import redact_text
from flink_sql_runner.watch.status import QUIET_SECONDS, status_rows
from flink_sql_runner.watch.status_reads import StatusReads

if TYPE_CHECKING:
    from flink_sql_runner.act.deployment import Deployment
    from flink_sql_runner.model.facts import JobFacts

#: Health of a job that should run and has no run up (`restarting` has one: watch restarted it
#: and waits for it to be healthy).
DOWN = ("down", "backing-off", "crash-looping", "failed")
#: Health of a job that failed, or that cannot be judged now.
FAILING = ("crash-looping", "backing-off", "failed", "unknown")
#: Kafka offsets behind the latest past which a running job is shown lagging.
DEFAULT_LAG = 1000
#: Seconds after they were made that a running job's reads may still be shown while they are
#: read again behind the looks: a status file that old, and a heartbeat (10 s) older than it,
#: are still well within the quiet time after which a running job is shown stalled.
KEEP_FOR = QUIET_SECONDS / 2


@dataclass(frozen=True)
class Filter:
    name: str
    label: str
    #: What it shows, in words (the page says it beside the filter).
    means: str
    test: Callable[[dict[str, Any], int], bool]


def lag_of(row: dict[str, Any]) -> float | None:
    lag = (row.get("last-batch") or {}).get("offsets-behind-latest")
    return lag if isinstance(lag, (int, float)) else None


FILTERS = (
    Filter(
        "all",
        "All",
        "every job the store records, or that runs or failed to start",
        lambda r, _: True,
    ),
    Filter(
        "down",
        "Down",
        "should run, and no run is up: down, backing off, crash-looping, or its first start failed",
        lambda r, _: r["health"] in DOWN,
    ),
    Filter(
        "lagging",
        "Lagging",
        "stalled, or running and more Kafka offsets behind the latest than the lag threshold",
        lambda r, lag: r["health"] == "stalled" or (r["running"] and (lag_of(r) or 0) > lag),
    ),
    Filter(
        "failing",
        "Failing",
        "restarted by watch in the last hour, crash-looping, backing off, failed to start, "
        "unknown, or something of it could not be read",
        lambda r, _: r["health"] in FAILING or bool(r["restarts-last-hour"]) or bool(r["problem"]),
    ),
)
FILTER_NAMES = tuple(f.name for f in FILTERS)


@dataclass(frozen=True)
class Look:
    """One look at the fleet: `rows` as `status --output json` gives them, the stored manifests
    they were made from, when it ended (UTC) and how long it took."""

    rows: list[dict[str, Any]]
    manifests: dict[str, StoredManifest]
    at: datetime
    seconds: float
    by_name: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Seen:
    """What a page shows of the fleet: the last look that worked (None: none yet), and why the
    last look failed if it did (then `look` is older than that failure)."""

    look: Look | None
    failed: str | None = None
    failed_at: datetime | None = None


class Fleet:
    """The looks of one page server (or one `watch`)."""

    def __init__(
        self,
        deployment: Deployment,
        reuse_for: float = 2.0,
        fresh_for: float = 10.0,
        keep_for: float | None = KEEP_FOR,
    ) -> None:
        """`keep_for` None: running jobs are read again in the look once `fresh_for` passed."""
        self.deployment = deployment
        self.reuse_for = reuse_for
        self._reads = StatusReads(
            None, deployment.store.location, fresh_for=fresh_for, keep_for=keep_for
        )
        self._lock = runtime.lock()
        self._last: Look | None = None
        self._last_tried: float | None = None
        self._failed: tuple[str, datetime] | None = None
        #: Set while no reads run behind the looks.
        self._behind_done = runtime.event()
        self._behind_done.set()
        #: Looks made so far (the benchmark and the tests count them).
        self.looks = 0
        #: How long the last reads behind a look took, and how many jobs they read.
        self.behind_seconds = 0.0
        self.behind_jobs = 0

    def seen(self) -> Seen:
        """The fleet now: a look made for this request, or one made less than `reuse_for`
        seconds ago (another request's), or the last that worked with why the next failed."""
        with self._lock:
            now = runtime.monotonic()
            if self._last_tried is None or now - self._last_tried >= self.reuse_for:
                self._look()
            failed = self._failed
            return Seen(self._last, failed[0] if failed else None, failed[1] if failed else None)

    def _look(self) -> None:
        began = runtime.monotonic()
        facts: list[JobFacts] = []
        try:
            rows = status_rows(self.deployment, [], reads=self._reads, seen=facts)
        except Exception as exc:  # noqa: BLE001 (whatever it was, the look failed: said, not shown as no jobs)
            said = str(exc).splitlines()[0] if str(exc) else ""
            if not isinstance(exc, FsrError):
                said = f"{type(exc).__name__}: {said}".rstrip(": ")
            self._failed = (redact_text(said), _utc_now())
            self._last_tried = runtime.monotonic()
            return
        finally:
            self.looks += 1
        ended = runtime.monotonic()
        manifests = {f.name: f.stored for f in facts if f.stored is not None}
        self._last = Look(rows, manifests, _utc_now(), ended - began, {r["name"]: r for r in rows})
        self._last_tried = ended
        self._failed = None
        self._read_behind()

    def _read_behind(self) -> None:
        """Read again, on a thread of its own, the running jobs whose reads this look showed
        past `fresh_for`; not while such reads still run (the next look starts the next)."""
        if not self._behind_done.is_set() or not self._reads.any_due():
            return
        self._behind_done.clear()

        def read() -> None:
            began = runtime.monotonic()
            try:
                storage, workers = self.deployment.storage, self.deployment.settings.parallelism
                self.behind_jobs = self._reads.read_due(storage, workers)
            finally:
                self.behind_seconds = runtime.monotonic() - began
                self._behind_done.set()

        runtime.thread(read, "behind").start()

    def reading_behind(self) -> bool:
        """Whether running jobs are being read again behind the last look now."""
        return not self._behind_done.is_set()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no reads run behind the looks (False: still running after `timeout`)."""
        return self._behind_done.wait(timeout)


def shown_rows(
    rows: list[dict[str, Any]], which: str, search: str, lag: int = DEFAULT_LAG
) -> list[dict[str, Any]]:
    """The rows a filter (FILTER_NAMES) and a search (part of a job's name, any case) show."""
    test = next(f.test for f in FILTERS if f.name == which)
    words = search.strip().lower()
    return [r for r in rows if test(r, lag) and (not words or words in r["name"].lower())]


def counts(rows: list[dict[str, Any]], lag: int = DEFAULT_LAG) -> dict[str, int]:
    """How many jobs each filter shows."""
    return {f.name: sum(1 for r in rows if f.test(r, lag)) for f in FILTERS}


def _utc_now() -> datetime:
    return datetime.fromtimestamp(runtime.wall(), timezone.utc)
