"""Times and durations as every command's JSON output gives them (docs/reference/json.md): a
time is an RFC 3339 UTC string with milliseconds and a `Z` (`2026-11-29T16:36:17.123Z`), a
duration a number of seconds under a key ending `-seconds`. Stored files keep their own forms;
this is for output."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

#: The first instant of 1970, UTC: what Spark's milliseconds count from.
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The key beside a time that RFC 3339 cannot write (a year past 9999 or before 1), which holds
#: the number as the file has it (`"watermark": null, "watermark-as-written": 1767225600000000`).
AS_WRITTEN = "-as-written"


def json_time(at: datetime | None) -> str | None:
    """`at` (naive: UTC) as output gives a time: always four digits of year."""
    if at is None:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    at = at.astimezone(timezone.utc)
    return f"{at.year:04d}-{at:%m-%dT%H:%M:%S}.{at.microsecond // 1000:03d}Z"


def datetime_of_ms(ms: float) -> datetime | None:
    """Milliseconds since 1970 as a UTC time; None outside years 1 to 9999 (Spark's times go
    to year 294247, and an event time in microseconds read as seconds lands near 58000)."""
    try:
        return EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def json_time_of_ms(ms: float | None) -> str | None:
    """Milliseconds since the epoch (Spark's `batchTimestampMs`) as output gives a time; None
    when RFC 3339 cannot write it (outside years 1 to 9999): `json_time_field` says why."""
    return None if ms is None else json_time(datetime_of_ms(ms))


def json_time_field(key: str, ms: float | None) -> dict[str, Any]:
    """`{key: the time}`; for a time RFC 3339 cannot write, `{key: null, key-as-written: ms}`."""
    shown = json_time_of_ms(ms)
    if ms is not None and shown is None:
        return {key: None, key + AS_WRITTEN: ms}
    return {key: shown}


def json_time_of_text(text: Any) -> Any:
    """A time written as ISO 8601 (`...Z`, with or without fractions, or an offset), as output
    gives it; anything else (None, a word) as it is."""
    if not isinstance(text, str):
        return text
    try:
        return json_time(datetime.fromisoformat(text.replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # OverflowError: out of range once made UTC
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
    if "timestamp" in batch:  # what the runner wrote, no more: an older runner's has fewer keys
        shown["timestamp"] = json_time_of_text(batch["timestamp"])
    if "duration-ms" in batch:
        shown["duration-seconds"] = seconds_of_ms(batch["duration-ms"])
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
