"""What `watch` remembers about each job, beside the manifests: `<store>/_watch/<name>.json`.

Failures (when, why), restarts, the backoff and the crash-loop mark live in the store, so that a
watcher that takes over from one that died goes on where it stopped, and `status` can show them.
Times are UTC wall-clock texts, for people and for the next watcher; a watcher measures its own
waits on its own clock.

A record belongs to one deployed manifest (its `manifest`: a digest of what the job runs, not of
the Spark version the store keeps beside it): a deploy that changes the job starts a new record,
which also lifts a crash-loop mark.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime, timedelta, timezone

from flink_sql_runner.model.stored import WATCH_FOLDER, SideDoc, StoredManifest
from flink_sql_runner.stores.base import ManifestStore

LEADER_LOCK = f"{WATCH_FOLDER}/_leader.json"
RECORD_SCHEMA_VERSION = 1
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
#: How far back a record keeps its restart times (`status` shows restarts in the last hour).
RECENT = timedelta(hours=1)


def utc_text(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime(TIME_FORMAT)


def parse_utc(text: str | None) -> datetime | None:
    try:
        return datetime.strptime(str(text), TIME_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def manifest_digest(manifest: StoredManifest) -> str:
    """What identifies the deployed job for the watcher: its spec, tables and query id."""
    doc = {"job": manifest.job, "tables": manifest.tables, "query-id": manifest.meta.query_id}
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _parsed(text: str) -> WatchRecord | None:
    try:
        return WatchRecord.from_json(text)
    except (ValueError, TypeError, KeyError):
        return None


@dataclass(frozen=True)
class Failure:
    at: str
    reason: str


@dataclass(frozen=True)
class WatchRecord:
    name: str
    manifest: str  # manifest_digest of the job this record is about
    failures: tuple[Failure, ...] = ()  # within the crash-loop window, oldest first
    restarts: int = 0  # in all, by watch
    restarted: tuple[str, ...] = ()  # when, within the last hour (RECENT)
    consecutive: int = 0  # failures since the job was last healthy for the stable period
    backoff_until: str | None = None
    crash_looping: bool = False
    state: str = "unknown"
    updated: str = ""

    @property
    def last_failure(self) -> Failure | None:
        return self.failures[-1] if self.failures else None

    def failures_since(self, since: datetime) -> int:
        return sum(1 for f in self.failures if (parse_utc(f.at) or since) >= since)

    def failed(self, reason: str, now: datetime, window: timedelta) -> WatchRecord:
        kept = tuple(f for f in self.failures if (parse_utc(f.at) or now) > now - window)
        return replace(
            self,
            failures=(*kept, Failure(utc_text(now), reason)),
            consecutive=self.consecutive + 1,
        )

    def restarted_at(self, now: datetime) -> WatchRecord:
        """One more restart, at `now`."""
        recent = tuple(t for t in self.restarted if (parse_utc(t) or now) > now - RECENT)
        return replace(self, restarts=self.restarts + 1, restarted=(*recent, utc_text(now)))

    def restarts_since(self, since: datetime) -> int:
        return sum(1 for t in self.restarted if (parse_utc(t) or since) >= since)

    def to_json(self) -> str:
        doc = asdict(self)
        doc["failures"] = [asdict(f) for f in self.failures]
        return json.dumps({"schema-version": RECORD_SCHEMA_VERSION, **doc}, indent=2)

    @classmethod
    def from_json(cls, text: str) -> WatchRecord:
        doc = json.loads(text)
        if doc.pop("schema-version", None) != RECORD_SCHEMA_VERSION:
            raise ValueError("schema-version")
        doc["failures"] = tuple(Failure(**f) for f in doc.get("failures", []))
        doc["restarted"] = tuple(str(t) for t in doc.get("restarted", []))
        return cls(**doc)


class WatchLog:
    """The watch records of one manifest store. One that `remembers` (the watcher's) keeps what
    it read, with each record's stamp, and hands it back to the store on the next read: only
    the records written since are read again (one listing for every thousand unchanged)."""

    def __init__(
        self, store: ManifestStore, remembers: bool = False, known: dict[str, SideDoc] | None = None
    ):
        """`known`: the documents an earlier read found (`seen`), kept elsewhere meanwhile
        (`status` keeps them in the state folder): it remembers from them on."""
        self.store = store
        self.remembers = remembers or known is not None
        #: What the last read found, by file name: the document, and its record (None:
        #: unreadable). Only ever handed back to the store, which checks each stamp.
        self._seen: dict[str, tuple[SideDoc, WatchRecord | None]] = {
            name: (doc, _parsed(doc.text)) for name, doc in (known or {}).items()
        }

    @property
    def seen(self) -> dict[str, SideDoc]:
        """The documents the last read found, by file name (what `known` takes)."""
        return {name: doc for name, (doc, _) in self._seen.items()}

    def read_all(self) -> dict[str, WatchRecord]:
        """Every readable record, by job name (one listing); unreadable ones are started anew."""
        known = {n: doc for n, (doc, _) in self._seen.items()} if self.remembers else None
        docs = self.store.read_side_docs(WATCH_FOLDER, known)
        seen: dict[str, tuple[SideDoc, WatchRecord | None]] = {}
        found = {}
        for file_name, doc in docs.items():
            if not file_name.endswith(".json") or file_name.startswith("_"):
                continue
            before = self._seen.get(file_name)
            if before is not None and before[0].stamp and before[0].stamp == doc.stamp:
                record = before[1]  # the very document parsed before
            else:
                record = _parsed(doc.text)
            seen[file_name] = (doc, record)
            if record is not None:
                found[record.name] = record
        if self.remembers:
            self._seen = seen
        return found

    def write(self, record: WatchRecord) -> None:
        self.store.write_side(f"{WATCH_FOLDER}/{record.name}.json", record.to_json())

    def delete(self, name: str) -> None:
        self.store.delete_side(f"{WATCH_FOLDER}/{name}.json")

    def resume(self, name: str) -> bool:
        """Lift `name`'s crash-loop mark and backoff (a person says so); False if it had none."""
        record = self.read_all().get(name)
        if record is None or not (record.crash_looping or record.backoff_until):
            return False
        lifted = replace(record, crash_looping=False, backoff_until=None, consecutive=0)
        self.write(replace(lifted, failures=(), state="resumed"))
        return True
