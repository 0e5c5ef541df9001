"""Reading a job's history (gather/history.py): one listing, the records sorted by version then
time, what cannot be read reported beside them, and the versions that have no record."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

from flink_sql_runner.act.history import HistoryWriter
from flink_sql_runner.gather.history import History, read_history
from flink_sql_runner.host import runtime
from flink_sql_runner.model.history import history_key, new_entry
from flink_sql_runner.stores.local import LocalStore
from tests.support.fakes import FakeStore
from tests.support.jobs import manifest

AT = datetime(2026, 11, 29, 16, 0, 0, tzinfo=timezone.utc)


def put(store: FakeStore, name: str, version: int, minutes: int, action: str = "restart") -> str:
    """A record of `name` v`version` written `minutes` after AT; its key."""
    record = new_entry(name, version, action, f"v{version}, {minutes} min", release="0.1.0",
                       at=AT + timedelta(minutes=minutes), query=f"SELECT {version}")  # fmt: skip
    store.write_side(record.key, record.to_json())
    return record.key


def test_the_records_come_sorted_by_version_then_time_in_one_listing():
    store = FakeStore()
    put(store, "orders", 2, 30)
    put(store, "orders", 10, 5, "start-clean")  # written before v2's second: still after it
    put(store, "orders", 2, 10, "start-clean")
    put(store, "orders", 1, 50)
    put(store, "other", 1, 0)  # another job's folder

    found = read_history(store, "orders")

    assert [(e.version, e.reason) for e in found.entries] == [
        (1, "v1, 50 min"), (2, "v2, 10 min"), (2, "v2, 30 min"), (10, "v10, 5 min")]  # fmt: skip
    assert found.problems == []
    assert [e.action for e in found.of_version(2)] == ["start-clean", "restart"]
    assert found.entries[0].at == "2026-11-29T16:50:00.000Z"
    assert found.entries[0].query == "SELECT 1" and found.entries[0].release == "0.1.0"
    assert [g for g in store.gets if g.startswith("_history/")] == [
        k for k in sorted(store.history) if k.startswith("_history/orders/")
    ], "each of its records read once, no other job's"


def test_two_records_of_one_millisecond_keep_the_order_their_keys_give():
    store = FakeStore()
    for micro, reason in ((900, "second"), (100, "first")):
        record = new_entry("a", 1, "restart", reason, release="x",
                           at=AT.replace(microsecond=micro))  # fmt: skip
        store.write_side(record.key, record.to_json())
    assert [e.reason for e in read_history(store, "a").entries] == ["first", "second"]


def test_an_unreadable_record_is_reported_and_the_others_are_shown():
    store = FakeStore()
    put(store, "orders", 1, 0)
    put(store, "orders", 3, 0)
    broken = history_key("orders", 2, AT)
    store.write_side(broken, "{not json")
    newer = new_entry("orders", 4, "restart", "r", release="9.9", at=AT).to_dict()
    newer["schema-version"] = 2
    store.write_side(history_key("orders", 4, AT), json.dumps(newer))
    stranger = new_entry("other", 5, "restart", "r", release="x", at=AT)
    store.write_side(history_key("orders", 5, AT), stranger.to_json())
    store.write_side("_history/orders/notes.txt", "hello")

    found = read_history(store, "orders")

    assert [e.version for e in found.entries] == [1, 3]
    where = "memory://store/_history/orders"
    assert found.problems == [
        f"{where}/notes.txt: not a history record's name (v<version>-<time>.json)",
        f"history record {where}/{broken.rsplit('/', 1)[1]} is unreadable (not JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        f"history record {where}/{history_key('orders', 4, AT).rsplit('/', 1)[1]} is unreadable "
        "(schema-version 2 is not supported (this flink-sql-runner reads 1))",
        f"history record {where}/{history_key('orders', 5, AT).rsplit('/', 1)[1]} is of job "
        "'other', not 'orders'",
    ]
    assert found.missing_versions(5) == [2, 4, 5], "an unreadable record counts as none"


def test_the_versions_with_no_record_are_those_from_the_first_recorded_to_the_current():
    with_records = History("a", [new_entry("a", v, "restart", "r", release="x", at=AT)
                                 for v in (3, 4, 6, 6)])  # fmt: skip
    assert with_records.missing_versions(6) == [5], "before v3: kept before history was"
    assert with_records.missing_versions(8) == [5, 7, 8]
    assert with_records.missing_versions(4) == [], "what is recorded above is not missing"
    assert History("a").missing_versions(7) == [7], "no record at all: the current one's missing"
    assert History("a").versions() == [] and with_records.versions() == [3, 4, 6]


def test_a_job_without_history_has_none_and_no_problem():
    found = read_history(FakeStore(), "orders")
    assert found.entries == [] and found.problems == [] and found.name == "orders"


def test_a_folder_store_keeps_and_reads_the_records_in_a_folder_per_job(tmp_path):
    """The writer and the reader on the real local store: `_history/<name>/` made on the first
    write, a record never overwritten (a second one of the same microsecond is refused)."""
    store = LocalStore(tmp_path / "store")
    writer = HistoryWriter(store, "deploy", sleep=lambda s: None, release="0.1.0")
    for version in (1, 2):
        said = writer.write(
            manifest("orders", version), "start-clean", f"v{version}", lambda e: None
        )
        assert said is None

    found = read_history(store, "orders")

    assert [(e.version, e.reason, e.command) for e in found.entries] == [
        (1, "v1", "deploy"), (2, "v2", "deploy")]  # fmt: skip
    assert found.entries[0].query == manifest("orders").job["sql"]
    folder = tmp_path / "store" / "_history" / "orders"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        e.key.rsplit("/", 1)[1] for e in found.entries
    )
    assert store.list_names() == [], "no manifest listed for a history folder"


def test_a_record_is_never_written_over_another(tmp_path, monkeypatch):
    """Two records of one version at one microsecond (a clock that stands still): the second
    is not written, and says so; the first stands."""
    monkeypatch.setattr(runtime, "wall", lambda: AT.timestamp())
    store = LocalStore(tmp_path / "store")
    writer = HistoryWriter(store, "deploy", sleep=lambda s: None, release="0.1.0")
    assert writer.write(manifest("orders"), "restart", "first", lambda e: None) is None
    said = writer.write(manifest("orders"), "restart", "second", lambda e: None)
    assert said is not None and said.startswith("history not written: ")
    assert "changed since this deploy read it" in said
    assert [e.reason for e in read_history(store, "orders").entries] == ["first"]
