"""What `watch` writes of its events and warnings: in JSON, every line has the events' shape."""

from __future__ import annotations

import io
import json
import re

from flink_sql_runner.watch.events import Event, Notifier

#: A time as every JSON output gives it (docs/reference/json.md).
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def test_a_warning_in_json_has_a_time_like_every_event() -> None:
    """`watch --output json`'s warnings (the store unreachable, the lock taken, a webhook
    failed, notifications dropped) are lines of the events' shape, `{"event": "warning", "at",
    "message"}`, `at` an RFC 3339 UTC time with milliseconds."""
    stream = io.StringIO()
    notifier = Notifier(stream, "json")
    notifier.warn("cannot take the store's lock: boom")
    notifier.emit(Event("watching", message="the store"))
    warning, event = (json.loads(line) for line in stream.getvalue().splitlines())
    assert list(warning) == ["event", "at", "message"]
    assert warning["event"] == "warning"
    assert warning["message"] == "cannot take the store's lock: boom"
    assert TIME.match(warning["at"]) and TIME.match(event["at"]), (warning, event)


def test_a_warning_in_text_is_one_line_for_people() -> None:
    stream = io.StringIO()
    Notifier(stream, "text").warn("boom")
    assert stream.getvalue() == "warning: boom\n"
