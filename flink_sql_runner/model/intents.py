"""Intent records: what a deploy is doing to a job, written before its first side effect.

A deploy writes `<store>/_intents/<name>.json` before it stops or starts anything for a job, moves
its `phase` forward as it goes, and deletes it once the job's steps are done (recorded, or settled
with nothing new running). A deployer killed in between leaves the record behind; the next deploy
reads it with the other facts and settles it on evidence of the interrupted run itself: its run id
in the target's listing, or a phase at or past `submitting` with a run of its version up (only one
deployer acts at a time, and it starts a run only after the old one was confirmed gone), or its
status file reporting that run healthy. Nothing else counts: the old version's checkpoint says
nothing about whether the new run ever started.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any, Protocol

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.stored import StoredManifest, utc_now_iso

INTENTS_FOLDER = "_intents"
INTENT_SCHEMA_VERSION = 2


class Phase(str, Enum):
    """How far the interrupted deploy got, in order."""

    INTENDED = "intended"  # nothing done yet
    OLD_STOPPED = "old-stopped"  # the previous run is confirmed gone
    SUBMITTING = "submitting"  # the new run is being submitted: it may exist from here on
    SUBMITTED = "submitted"  # the target accepted the new run
    HEALTHY = "healthy"  # the new run completed a trigger; only the record is missing
    FAILED = "failed"  # the new run is confirmed gone without being healthy
    ROLLING_BACK = "rolling-back"  # the previous manifest is being started again

    @property
    def submitted(self) -> bool:
        """Whether the new run may exist."""
        return self in (Phase.SUBMITTING, Phase.SUBMITTED, Phase.HEALTHY)


@dataclass(frozen=True)
class Intent:
    manifest: StoredManifest  # what is recorded once the new run is healthy
    action: str
    run_id: str
    written: str
    phase: Phase = Phase.INTENDED
    submission_id: str | None = None

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> int:
        return self.manifest.meta.query_version

    def at(self, phase: Phase, submission_id: str | None = None) -> Intent:
        return replace(
            self,
            phase=phase,
            submission_id=submission_id or self.submission_id,
            written=utc_now_iso(),
        )

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema-version": INTENT_SCHEMA_VERSION,
                "action": self.action,
                "run-id": self.run_id,
                "phase": self.phase.value,
                "submission-id": self.submission_id,
                "written": self.written,
                "manifest": self.manifest.to_dict(),
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str, source: str) -> Intent:
        try:
            doc: Any = json.loads(text)
            version = doc.get("schema-version")
            if version not in (1, INTENT_SCHEMA_VERSION):
                raise ValueError(f"schema-version {version!r}")
            manifest = StoredManifest.from_dict(doc["manifest"], source)
            # Version 1 records (no phase) were written before anything was done and kept
            # until the record: the run may have been submitted.
            phase = Phase(doc.get("phase", Phase.SUBMITTING.value))
            return cls(
                manifest,
                str(doc["action"]),
                str(doc["run-id"]),
                str(doc["written"]),
                phase,
                doc.get("submission-id"),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"intent record {source} is unreadable ({exc}); delete it") from None


def new_intent(manifest: StoredManifest, action: str, run_id: str) -> Intent:
    return Intent(manifest, action, run_id, utc_now_iso())


@dataclass(frozen=True)
class IntentReads:
    """The store's intent records: readable ones by job name, unreadable ones with why."""

    intents: dict[str, Intent]
    problems: dict[str, str]


class SideFiles(Protocol):
    """What the intent records need of a manifest store (stores/base.py): documents beside
    the manifests."""

    location: str

    def write_side(self, key: str, text: str) -> None: ...

    def read_side_folder(self, folder: str) -> dict[str, str]: ...

    def delete_side(self, key: str) -> None: ...


class IntentLog:
    """The intent records of one manifest store."""

    def __init__(self, store: SideFiles):
        self.store = store

    def _key(self, name: str) -> str:
        return f"{INTENTS_FOLDER}/{name}.json"

    def write(self, intent: Intent) -> None:
        self.store.write_side(self._key(intent.name), intent.to_json())

    def delete(self, name: str) -> None:
        self.store.delete_side(self._key(name))

    def read_all(self) -> IntentReads:
        """Every pending intent, by job name: one listing (normally empty). A record that
        cannot be read is that job's problem, not every job's."""
        found: dict[str, Intent] = {}
        problems: dict[str, str] = {}
        for file_name, text in self.store.read_side_folder(INTENTS_FOLDER).items():
            if not file_name.endswith(".json"):
                continue
            source = f"{self.store.location.rstrip('/')}/{INTENTS_FOLDER}/{file_name}"
            try:
                intent = Intent.from_json(text, source)
            except StoreError as exc:
                problems[file_name.removesuffix(".json")] = str(exc)
                continue
            found[intent.name] = intent
        return IntentReads(found, problems)
