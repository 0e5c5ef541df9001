"""A job's deploy history: one record per manifest a command recorded, kept in the store beside
the manifests (`<store>/_history/<name>/v<version>-<UTC time>.json`), so that a page can show a
job's versions with each decision and its reasons as the plan gave them, and the SQL between
them.

A record is written right after the manifest it tells of (act/history.py): by a deploy's Record
step (and `watch`'s, which goes through the same steps), by a start that wrote and then failed
and is recorded all the same, and by `stop`. A decision that records nothing (an unchanged job,
a start rolled back, a prune: its manifest is archived, its history kept) writes none; `forget`
deletes a job's records with the rest of it. A record that could not be written (the
store failed, the lease was gone, the deployer was killed between the two writes) leaves a gap:
the manifest stands, the history lacks it, and `gather/history.py` tells which versions have no
record. Nothing decides from the history: it is for people.

The changes are kept as `Change.to_dict` gives them, unmasked, as the stored manifest holds its
values: whoever shows them masks the secrets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.json_values import json_time

HISTORY_FOLDER = "_history"
#: Version 1: the first.
HISTORY_SCHEMA_VERSION = 1

#: `v000003-20261129T163617.123456Z.json`: the version, then when it was written to the
#: microsecond, so that a folder's names sort by (version, time).
_FILE_NAME = re.compile(r"v(?P<version>[0-9]{6,})-(?P<at>[0-9]{8}T[0-9]{6}\.[0-9]{6}Z)\.json")
_COMPACT = "%Y%m%dT%H%M%S.%fZ"


@dataclass(frozen=True)
class HistoryEntry:
    """One manifest a command recorded, with the decision that recorded it."""

    name: str
    version: int  # the recorded manifest's query version
    #: The decision's action (`start-clean`, `restart-from-checkpoint`, `stop`, `prune`...);
    #: `stop` for the `stop` command.
    action: str
    reason: str  # the decision's reason, as the plan gave it
    #: `Change.to_dict` of each change the decision was made on: field, kind, old, new, why.
    changes: tuple[dict[str, Any], ...] = ()
    query: str | None = None  # the job's SQL as the recorded manifest holds it
    at: str = ""  # when it was written, UTC, RFC 3339 with milliseconds (model/json_values.py)
    release: str = ""  # the flink-sql-runner that wrote it
    command: str = "deploy"  # deploy, watch or stop
    #: What else people need to know of this record, in words (a start recorded though it
    #: failed, having written); None mostly.
    note: str | None = None
    #: When it was written to the microsecond (its key's time): set by `written_at`.
    stamp: datetime | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> str:
        """Its side document's key: `_history/<name>/v<version:06d>-<UTC compact time>.json`."""
        return history_key(self.name, self.version, self._stamp())

    def _stamp(self) -> datetime:
        if self.stamp is not None:
            return self.stamp
        return datetime.fromisoformat(self.at.replace("Z", "+00:00"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema-version": HISTORY_SCHEMA_VERSION,
            "name": self.name,
            "query-version": self.version,
            "action": self.action,
            "reason": self.reason,
            "changes": [dict(c) for c in self.changes],
            "query": self.query,
            "at": self.at,
            "release": self.release,
            "command": self.command,
            "note": self.note,
        }

    def to_json(self) -> str:
        """The record's text; a value JSON cannot hold (a YAML date in a change) as its text."""
        return json.dumps(self.to_dict(), indent=2, default=str)

    @classmethod
    def from_dict(cls, doc: Any, source: str, stamp: datetime | None = None) -> HistoryEntry:
        """StoreError (saying `source`) when it is not a history record this release reads.
        `stamp`: when it was written to the microsecond, as its key tells (default: `at`)."""
        try:
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            schema = doc.get("schema-version")
            if schema != HISTORY_SCHEMA_VERSION:
                raise ValueError(
                    f"schema-version {schema!r} is not supported (this flink-sql-runner reads "
                    f"{HISTORY_SCHEMA_VERSION})"
                )
            version = doc["query-version"]
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise ValueError(f"query-version {version!r} is not a version")
            changes = doc.get("changes") or []
            if not isinstance(changes, list) or not all(isinstance(c, dict) for c in changes):
                raise ValueError("changes is not a list of objects")
            query, note = doc.get("query"), doc.get("note")
            for key, value in (("query", query), ("note", note)):
                if value is not None and not isinstance(value, str):
                    raise ValueError(f"{key} is not a string")
            texts = {k: doc[k] for k in ("name", "action", "reason", "at")}
            for key, value in texts.items():
                if not isinstance(value, str):
                    raise ValueError(f"{key} {value!r} is not a string")
            at = parse_time(texts["at"])
            return cls(
                name=texts["name"],
                version=version,
                action=texts["action"],
                reason=texts["reason"],
                changes=tuple(changes),
                query=query,
                at=texts["at"],
                release=str(doc.get("release") or ""),
                command=str(doc.get("command") or "deploy"),
                note=note,
                stamp=stamp or at,
            )
        except (KeyError, ValueError, TypeError, OverflowError) as exc:
            what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise StoreError(f"history record {source} is unreadable ({what})") from None

    @classmethod
    def from_json(cls, text: str, source: str, stamp: datetime | None = None) -> HistoryEntry:
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise StoreError(f"history record {source} is unreadable (not JSON: {exc})") from None
        except RecursionError:
            raise StoreError(f"history record {source} is unreadable (nested too deep)") from None
        return cls.from_dict(doc, source, stamp)


def new_entry(
    name: str,
    version: int,
    action: str,
    reason: str,
    *,
    at: datetime,
    release: str,
    changes: tuple[dict[str, Any], ...] | list[dict[str, Any]] = (),
    query: str | None = None,
    command: str = "deploy",
    note: str | None = None,
) -> HistoryEntry:
    """A record written at `at` (UTC; naive: UTC)."""
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    at = at.astimezone(timezone.utc)
    shown = json_time(at)
    assert shown is not None
    return HistoryEntry(name, version, action, reason, tuple(changes), query, shown, release,
                        command, note, at)  # fmt: skip


def history_folder(name: str) -> str:
    """`_history/<name>`: the side folder of one job's records."""
    return f"{HISTORY_FOLDER}/{name}"


def history_key(name: str, version: int, at: datetime) -> str:
    """`_history/<name>/v000003-20261129T163617.123456Z.json`."""
    return f"{history_folder(name)}/{history_file_name(version, at)}"


def history_file_name(version: int, at: datetime) -> str:
    if at.tzinfo is not None:
        at = at.astimezone(timezone.utc)
    return f"v{version:06d}-{at.strftime(_COMPACT)}.json"


def parse_history_file_name(file_name: str) -> tuple[int, datetime] | None:
    """(version, when) of a record's file name; None for any other name."""
    found = _FILE_NAME.fullmatch(file_name)
    if found is None:
        return None
    try:
        at = datetime.strptime(found["at"], _COMPACT).replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return int(found["version"]), at


def parse_history_key(key: str) -> tuple[str, int, datetime] | None:
    """(job name, version, when) of a record's key `_history/<name>/<file>`; None otherwise."""
    head, _, rest = key.partition("/")
    name, _, file_name = rest.partition("/")
    if head != HISTORY_FOLDER or not name or "/" in file_name:
        return None
    parsed = parse_history_file_name(file_name)
    return None if parsed is None else (name, *parsed)


def parse_time(text: str) -> datetime:
    """An RFC 3339 time (`...Z` or an offset) as a UTC time; ValueError otherwise."""
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if at.tzinfo is None:
        raise ValueError(f"at {text!r} has no time zone")
    return at.astimezone(timezone.utc)
