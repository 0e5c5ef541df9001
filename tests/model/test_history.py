"""A history record (model/history.py): its document, its schema version checked when read, and
its key, which sorts a job's records by version, then by when they were written."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone

import pytest

from flink_sql_runner.errors import StoreError
from flink_sql_runner.model.history import (
    HISTORY_SCHEMA_VERSION,
    HistoryEntry,
    history_key,
    new_entry,
    parse_history_file_name,
    parse_history_key,
)

AT = datetime(2026, 11, 29, 16, 36, 17, 123456, tzinfo=timezone.utc)
CHANGE = {"field": "sql", "kind": "query", "old": "SELECT 1", "new": "SELECT 2",
          "why": "the query changed"}  # fmt: skip


def entry(**overrides) -> HistoryEntry:
    fields = {
        "name": "orders",
        "version": 3,
        "action": "stop-and-start-clean",
        "reason": "query changed: start a new version",
        "at": AT,
        "release": "0.1.0",
        "changes": [CHANGE],
        "query": "SELECT id FROM src",
    }
    fields.update(overrides)
    return new_entry(**fields)


def test_a_record_reads_back_as_it_was_written():
    written = entry(note="v3 committed batch 8, then failed: recorded, the job down")
    doc = json.loads(written.to_json())
    assert doc["schema-version"] == HISTORY_SCHEMA_VERSION
    assert doc["at"] == "2026-11-29T16:36:17.123Z", "RFC 3339 with milliseconds, as JSON output"
    assert doc["changes"] == [CHANGE]
    read = HistoryEntry.from_json(written.to_json(), "memory://x")
    assert read == written
    assert (read.version, read.action, read.query, read.release, read.command) == (
        3, "stop-and-start-clean", "SELECT id FROM src", "0.1.0", "deploy")  # fmt: skip


def test_a_change_value_json_cannot_hold_is_kept_as_its_text():
    """A YAML date in a table option (PyYAML reads `2026-01-01` as a date) must not keep the
    record from being written."""
    written = entry(changes=[{**CHANGE, "old": date(2026, 1, 1)}])
    assert HistoryEntry.from_json(written.to_json(), "x").changes[0]["old"] == "2026-01-01"


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"schema-version": 2}, "schema-version 2 is not supported"),
        ({"schema-version": None}, "schema-version None is not supported"),
        ({"query-version": "3"}, "query-version '3' is not a version"),
        ({"query-version": True}, "query-version True is not a version"),
        ({"query-version": 0}, "query-version 0 is not a version"),
        ({"changes": {"field": "sql"}}, "changes is not a list of objects"),
        ({"query": 7}, "query is not a string"),
        ({"reason": None}, "reason None is not a string"),
        ({"at": "yesterday"}, "Invalid isoformat string"),
        ({"at": "2026-11-29T16:36:17"}, "has no time zone"),
    ],
)
def test_a_record_this_release_cannot_read_is_refused_saying_where_and_why(change, said):
    doc = {**entry().to_dict(), **change}
    with pytest.raises(StoreError, match="history record memory://h/v1.json is unreadable") as e:
        HistoryEntry.from_dict(doc, "memory://h/v1.json")
    assert said in str(e.value)


def test_a_record_missing_a_field_or_not_json_is_refused():
    doc = entry().to_dict()
    del doc["action"]
    with pytest.raises(StoreError, match=r"unreadable \(no 'action'\)"):
        HistoryEntry.from_dict(doc, "x")
    with pytest.raises(StoreError, match=r"unreadable \(not JSON"):
        HistoryEntry.from_json("{not json", "x")
    with pytest.raises(StoreError, match=r"unreadable \(not a JSON object\)"):
        HistoryEntry.from_json("[1]", "x")


def test_the_key_names_the_job_the_version_and_the_microsecond_and_parses_back():
    record = entry()
    assert record.key == "_history/orders/v000003-20261129T163617.123456Z.json"
    assert parse_history_key(record.key) == ("orders", 3, AT)
    assert parse_history_file_name("v000003-20261129T163617.123456Z.json") == (3, AT)
    # A version past six digits still parses (and sorts after, being longer).
    assert parse_history_key(history_key("a", 1234567, AT)) == ("a", 1234567, AT)


@pytest.mark.parametrize(
    "key",
    [
        "_intents/orders.json",
        "_history/orders/v3-20261129T163617.123456Z.json",  # not six digits
        "_history/orders/v000003-20261129T163617Z.json",  # no microseconds
        "_history/orders/v000003-20261399T163617.123456Z.json",  # no such day
        "_history/orders/deep/v000003-20261129T163617.123456Z.json",
        "_history//v000003-20261129T163617.123456Z.json",
        "_history/orders/v000003-20261129T163617.123456Z.json.tmp",
    ],
)
def test_any_other_key_does_not_parse(key):
    assert parse_history_key(key) is None


def test_keys_sort_by_version_then_time_and_two_records_of_one_second_do_not_collide():
    later = AT.replace(microsecond=123457)
    keys = [
        history_key("a", 10, AT),
        history_key("a", 2, later),
        history_key("a", 2, AT),
        history_key("a", 9, datetime(2030, 1, 1, tzinfo=timezone.utc)),
    ]
    assert len(set(keys)) == 4
    assert [parse_history_key(k)[1:] for k in sorted(keys)] == [
        (2, AT), (2, later), (9, datetime(2030, 1, 1, tzinfo=timezone.utc)), (10, AT)]  # fmt: skip


def test_a_naive_time_is_taken_as_utc():
    naive = entry(at=AT.replace(tzinfo=None))
    assert naive.at == "2026-11-29T16:36:17.123Z" and naive.key == entry().key
