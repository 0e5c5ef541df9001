"""The runtime manifest the deployer writes for each run (docs/reference/runtime-manifest.md),
checked."""

from __future__ import annotations

import json
from typing import Any

from .failures import BadManifest

SCHEMA_VERSION = 1
#: What a run does when its output changes what its sink's readers read
#: (docs/concepts/schema-contracts.md):
#: `additive` refuses breaking changes, `fail` refuses any change, `allow` refuses none.
ON_SCHEMA_CHANGE = ("additive", "fail", "allow")


def load_manifest(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise BadManifest(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema-version") != SCHEMA_VERSION:
        raise BadManifest(f"schema-version must be {SCHEMA_VERSION}")
    required = ("name", "target-table", "tables", "checkpoint-location", "meta", "run-id")
    missing = [key for key in required if key not in doc]
    if missing:
        raise BadManifest(f"missing fields: {', '.join(missing)}")
    if (doc.get("sql") is None) == (doc.get("code") is None):
        raise BadManifest("exactly one of sql / code must be set")
    policy = doc.get("on-schema-change", "additive")
    if policy not in ON_SCHEMA_CHANGE:
        raise BadManifest(f"on-schema-change must be one of {', '.join(ON_SCHEMA_CHANGE)}")
    for name in [*doc.get("source-tables", []), doc["target-table"]]:
        if name not in doc["tables"]:
            raise BadManifest(f"table {name!r} has no definition")
    check_prepare(doc.get("prepare"))
    return doc


def check_prepare(section: Any) -> None:
    """A prepared run's section (runner/prepare.py): its own status file, the go file, and a
    positive timeout; absent for a run that starts at once."""
    if section is None:
        return
    if not isinstance(section, dict):
        raise BadManifest("prepare must be an object")
    for key in ("status-file", "go-file"):
        if not isinstance(section.get(key), str) or not section[key]:
            raise BadManifest(f"prepare.{key} must be a file or URI")
    if not isinstance(section.get("stop-marker", ""), str):
        raise BadManifest("prepare.stop-marker must be a file or URI")
    timeout = section.get("timeout-seconds", 300)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise BadManifest("prepare.timeout-seconds must be a positive number")
    warm_up = section.get("warm-up-seconds", 0)
    number = isinstance(warm_up, (int, float)) and not isinstance(warm_up, bool)
    if not number or not 0 <= warm_up <= 3600:
        raise BadManifest("prepare.warm-up-seconds must be a number of seconds, 0 to 3600")
    pinned = section.get("pinned-settings", [])
    if not isinstance(pinned, list) or not all(isinstance(k, str) for k in pinned):
        raise BadManifest("prepare.pinned-settings must be a list of setting names")


def option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def options_of(table: dict[str, Any]) -> dict[str, str]:
    return {str(k): option_text(v) for k, v in (table.get("options") or {}).items()}


def trigger_args(trigger: dict[str, Any]) -> dict[str, Any]:
    allowed = ("processingTime", "availableNow", "once", "continuous")
    if len(trigger) != 1 or next(iter(trigger)) not in allowed:
        raise BadManifest(f"trigger must be one of {', '.join(allowed)}")
    return dict(trigger)
