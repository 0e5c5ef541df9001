"""Times and durations as every command's JSON output gives them (docs/reference/json.md): a
time is an RFC 3339 UTC string with milliseconds and a `Z` (`2026-11-29T16:36:17.123Z`), a
duration a number of seconds under a key ending `-seconds`. Stored files keep their own forms;
this is for output."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any


def json_time(at: datetime | None) -> str | None:
    """`at` (naive: UTC) as output gives a time."""
    if at is None:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    at = at.astimezone(timezone.utc)
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def json_time_of_ms(ms: float | None) -> str | None:
    """Milliseconds since the epoch (Spark's `batchTimestampMs`) as output gives a time."""
    return None if ms is None else json_time(datetime.fromtimestamp(ms / 1000, timezone.utc))


def json_time_of_text(text: Any) -> Any:
    """A time written as ISO 8601 (`...Z`, with or without fractions, or an offset), as output
    gives it; anything else (None, a word) as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json_time(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return text


def seconds_of_ms(ms: Any) -> float | None:
    """A duration in milliseconds as output gives it: seconds."""
    return ms / 1000 if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None


def json_batch(batch: dict[str, Any] | None) -> dict[str, Any] | None:
    """The last batch as the runner's status file has it (Spark's `timestamp`, `duration-ms`),
    as output gives it: `timestamp` a time, `duration-seconds`."""
    if batch is None:
        return None
    shown = {k: v for k, v in batch.items() if k != "duration-ms"}
    shown["timestamp"] = json_time_of_text(batch.get("timestamp"))
    shown["duration-seconds"] = seconds_of_ms(batch.get("duration-ms"))
    return shown


def json_status(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A run's status file as output gives it: its `updated` a time, its last batch's too."""
    if not isinstance(doc, dict):
        return doc
    shown = dict(doc)
    if "updated" in shown:
        shown["updated"] = json_time_of_text(shown["updated"])
    if isinstance(shown.get("last-batch"), dict):
        shown["last-batch"] = json_batch(shown["last-batch"])
    return shown
