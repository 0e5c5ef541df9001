"""Intent records: what a deploy is about to do to a job, written before it acts.

A deploy writes `<store>/_intents/<name>.json` before the first side effect of a start (before
the stop that precedes it, too) and deletes it once the manifest is recorded or the start has
failed. A deployer killed in between leaves the record behind; the next deploy reads it with the
other facts and either adopts it (the new run is up, or got far enough to leave a valid
checkpoint: record the manifest it was starting) or discards it (the old manifest stands). Either
way the job ends up running once, at the right version, from the right state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flink_sql_runner.errors import StoreError
from flink_sql_runner.stored import StoredManifest, utc_now_iso
from flink_sql_runner.stores.base import ManifestStore

INTENTS_FOLDER = "_intents"
INTENT_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Intent:
    manifest: StoredManifest  # what is recorded once the new run is healthy
    action: str
    run_id: str
    written: str

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> int:
        return self.manifest.meta.query_version

    def to_json(self) -> str:
        return json.dumps(
            {
                "schema-version": INTENT_SCHEMA_VERSION,
                "action": self.action,
                "run-id": self.run_id,
                "written": self.written,
                "manifest": self.manifest.to_dict(),
            },
            indent=2,
        )

    @classmethod
    def from_json(cls, text: str, source: str) -> Intent:
        try:
            doc: Any = json.loads(text)
            if doc.get("schema-version") != INTENT_SCHEMA_VERSION:
                raise ValueError(f"schema-version {doc.get('schema-version')!r}")
            manifest = StoredManifest.from_dict(doc["manifest"], source)
            return cls(manifest, str(doc["action"]), str(doc["run-id"]), str(doc["written"]))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StoreError(f"intent record {source} is unreadable ({exc}); delete it") from None


def new_intent(manifest: StoredManifest, action: str, run_id: str) -> Intent:
    return Intent(manifest, action, run_id, utc_now_iso())


class IntentLog:
    """The intent records of one manifest store."""

    def __init__(self, store: ManifestStore):
        self.store = store

    def _key(self, name: str) -> str:
        return f"{INTENTS_FOLDER}/{name}.json"

    def write(self, intent: Intent) -> None:
        self.store.write_side(self._key(intent.name), intent.to_json())

    def delete(self, name: str) -> None:
        self.store.delete_side(self._key(name))

    def read_all(self) -> dict[str, Intent]:
        """Every pending intent, by job name: one listing (normally empty)."""
        found = {}
        for file_name, text in self.store.read_side_folder(INTENTS_FOLDER).items():
            if file_name.endswith(".json"):
                source = f"{self.store.location.rstrip('/')}/{INTENTS_FOLDER}/{file_name}"
                intent = Intent.from_json(text, source)
                found[intent.name] = intent
        return found
