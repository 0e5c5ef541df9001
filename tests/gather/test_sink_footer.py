"""The plan's own read of what a file sink holds (gather/sink_footer.py) on a local folder, on
S3 (moto's server) and on a storage that fails: the runner's walk on the deployer's storage,
the newest file's footer read from its end, and None, never a guess, where Spark must read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather import sink_footer
from flink_sql_runner.gather.sink_footer import sink_history_here
from flink_sql_runner.stores.storage import FileStorage
from tests.support.fakes import FakeStorage
from tests.support.parquet_tail import struct_of, tail

WIDE = struct_of(*[(f"column_{i}", "string", True) for i in range(400)])
FIELDS = [{"name": f"column_{i}", "type": "string", "nullable": True} for i in range(400)]


def _sink(storage: Any, root: str, file: str = "part-0.parquet", data: bytes = b"") -> str:
    """A sink whose log committed `file` in batch 1 (batch 0 added nothing), and a claim of
    an older batch with another schema."""
    sink = f"{root}/out"
    entry = {"path": f"{sink}/{file}", "size": 1, "action": "add"}
    storage.write_text(f"{sink}/_spark_metadata/0", "v1\n")
    storage.write_text(f"{sink}/_spark_metadata/1", "v1\n" + json.dumps(entry) + "\n")
    storage.write_bytes(f"{sink}/{file}", data or tail(WIDE, b"PAR1" + b"r" * 5000))
    claim = {"job": "orders", "query-version": 1, "claimed": "2026-11-30T05:00:00Z",
             "schema": [{"name": "id", "type": "bigint", "nullable": True}]}  # fmt: skip
    storage.write_text(f"{sink}/_flink-sql-runner/claims/1-0.json", json.dumps(claim))
    return sink


def _expected(sink: str) -> dict[str, Any]:
    return {
        "history": [
            {"fields": [{"name": "id", "type": "bigint", "nullable": True}],
             "from": "v1 of job orders, claimed 2026-11-30T05:00:00Z"},
            {"fields": FIELDS, "from": f"footer of {sink}/part-0.parquet"},
        ],
        "unknown": None,
    }  # fmt: skip


def test_a_local_sink_is_read_from_the_end_of_its_newest_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = _sink(FileStorage(), f"file:{tmp_path}")
    monkeypatch.setattr(sink_footer, "FIRST_READ", 1024)  # the footer is longer: read again
    assert sink_history_here(FileStorage(), "parquet", sink) == _expected(sink)
    assert sink_history_here(FileStorage(), "parquet", sink.removeprefix("file:")) is not None
    assert sink_history_here(FileStorage(), "orc", sink) is None  # Spark reads orc's files
    assert sink_history_here(FileStorage(), "parquet", f"{tmp_path}/none") == {
        "history": [],
        "unknown": None,
    }
    (tmp_path / "out" / "part-0.parquet").unlink()  # the log names a file that is gone
    assert sink_history_here(FileStorage(), "parquet", sink) is None


def test_a_file_in_a_partition_or_elsewhere_is_read_by_spark(tmp_path: Path) -> None:
    storage = FileStorage()
    parted = _sink(storage, str(tmp_path / "a"), "day=1/part-0.parquet")
    assert sink_history_here(storage, "parquet", parted) is None
    sink = _sink(storage, str(tmp_path / "b"))
    entry = {"path": f"{tmp_path}/a/out/part-0.parquet", "size": 1, "action": "add"}
    storage.write_text(f"{sink}/_spark_metadata/1", "v1\n" + json.dumps(entry) + "\n")
    assert sink_history_here(storage, "parquet", sink) is None


def test_a_storage_that_fails_leaves_the_sink_to_spark() -> None:
    storage = FakeStorage()
    sink = _sink(storage, "s3://sinks")
    assert sink_history_here(storage, "parquet", sink) == _expected(sink)
    storage.read_fails.add(f"{sink}/part-0.parquet")
    assert sink_history_here(storage, "parquet", sink) is None
    storage.read_fails.clear()
    storage.files[f"{sink}/_flink-sql-runner/claims/1-0.json"] = "{not json"
    assert sink_history_here(storage, "parquet", sink) is None
    storage.fail = True
    assert sink_history_here(storage, "parquet", sink) is None


@pytest.mark.s3
def test_an_s3_sink_is_read_with_a_ranged_get(
    s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(s3_client)
    sink = _sink(storage, f"s3a://{s3_bucket}")
    monkeypatch.setattr(sink_footer, "FIRST_READ", 1024)
    assert sink_history_here(storage, "parquet", sink) == _expected(sink)
    assert storage.read_tail(f"{sink}/part-0.parquet", 8)[-4:] == b"PAR1"
    assert storage.read_tail(f"{sink}/_spark_metadata/0", 100) == b"v1\n"
    assert storage.read_tail(f"{sink}/missing", 100) is None
