"""A job's deploy history as the store keeps it (model/history.py): its records in order, the
ones that cannot be read reported beside them, and the versions that have none.

One listing of `_history/<name>/` (on S3, a GET per record besides: a page reads a job's history
when it is asked for it, never for the fleet)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.history import (
    HistoryEntry,
    history_folder,
    parse_history_file_name,
)
from flink_sql_runner.model.stored import SideDoc
from flink_sql_runner.stores.base import ManifestStore

_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class History:
    """A job's history records, sorted by (version, when written), and what could not be read
    of it (one line each, saying which record and why): an unreadable record is reported, the
    others are shown all the same."""

    name: str
    entries: list[HistoryEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def versions(self) -> list[int]:
        """The versions that have a record, ascending."""
        return sorted({entry.version for entry in self.entries})

    def missing_versions(self, current: int) -> list[int]:
        """The versions from the first one recorded up to `current` (the stored manifest's)
        that have no record, ascending; with no record at all, `current` alone.

        A version missing here is one whose manifest was recorded without its history record
        (a store that would not take it, a lease lost in between, a deployer killed between
        the two writes; or recorded by a release before history was kept), or one that was
        never recorded at all: a new version whose start failed and was rolled back leaves
        its number behind (the next one starts above its checkpoint folder). The page says
        "no record of vN", not why."""
        have = set(self.versions())
        if not have:
            return [current] if current >= 1 else []
        return [v for v in range(min(have), current + 1) if v not in have]

    def of_version(self, version: int) -> list[HistoryEntry]:
        """The records of `version`, oldest first."""
        return [entry for entry in self.entries if entry.version == version]


def read_history(store: ManifestStore, name: str) -> History:
    """`name`'s history: one listing of `_history/<name>/`. A record that cannot be read
    (not JSON, another schema version, a field missing, another job's name) is a problem of
    the history, not an error; a store that cannot be listed is (StoreError)."""
    folder = history_folder(name)
    docs = store.read_side_docs(folder)
    return history_of(store.location, name, docs)


def history_of(location: str, name: str, docs: dict[str, SideDoc]) -> History:
    """The history of `name` from the documents of its folder (`{file name: document}`)."""
    where = f"{location.rstrip('/')}/{history_folder(name)}"
    entries: list[tuple[tuple[int, datetime, str], HistoryEntry]] = []
    problems = []
    for file_name, doc in sorted(docs.items()):
        source = f"{where}/{file_name}"
        parsed = parse_history_file_name(file_name)
        if parsed is None:
            if not file_name.startswith("."):
                problems.append(f"{source}: not a history record's name (v<version>-<time>.json)")
            continue
        try:
            entry = HistoryEntry.from_json(doc.text, source, parsed[1])
        except StoreError as exc:
            problems.append(str(exc))
            continue
        if entry.name != name:
            problems.append(f"history record {source} is of job {entry.name!r}, not {name!r}")
            continue
        if entry.version != parsed[0]:
            problems.append(
                f"history record {source} says v{entry.version}, its name v{parsed[0]}: "
                f"shown as v{entry.version}"
            )
        entries.append(((entry.version, entry.stamp or _EARLIEST, file_name), entry))
    entries.sort(key=lambda pair: pair[0])
    return History(name, [e for _, e in entries], problems)
