"""The plan's own read of what a file sink holds (gather/sink_footer.py) on a local folder, on
S3 (moto's server) and on a storage that fails: the runner's walk on the deployer's storage,
the newest file's footer read from its end, and None, never a guess, where Spark must read."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather import sink_footer
from flink_sql_runner.gather.sink_footer import sink_history_here
from flink_sql_runner.stores.storage import FileStorage, StorageError
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


# From the hostile review of issue 57's third part: what the plan's own read must never do.
DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("where", ["log", "claim"])
def test_a_line_too_deep_for_python_leaves_the_sink_to_spark_and_the_plan_goes_on(
    tmp_path: Path, where: str
) -> None:
    from flink_sql_runner.gather.schemas import Check, gather_contracts
    from flink_sql_runner.model.stored import Meta, StoredManifest
    from tests.support.jobs import make_job, stored_of

    out = tmp_path / "out"
    (out / "_spark_metadata").mkdir(parents=True)
    (out / "part-0.parquet").write_bytes(tail(struct_of(("id", "long", True))))
    entry = json.dumps({"path": f"file:{out}/part-0.parquet", "action": "add"})
    (out / "_spark_metadata" / "0").write_text("v1\n" + (DEEP if where == "log" else entry) + "\n")
    if where == "claim":
        (out / "_flink-sql-runner" / "claims").mkdir(parents=True)
        (out / "_flink-sql-runner" / "claims" / "1-0.json").write_text(DEEP)
    assert sink_history_here(FileStorage(), "parquet", str(out)) is None
    asked: list[dict] = []

    def probe(request: dict) -> tuple[dict, None]:
        asked.append(request)
        return {"sinks": {s["key"]: {"history": []} for s in request["sinks"]}}, None

    job = make_job(tables={"out": {"format": "parquet", "options": {"path": str(out)}}})
    check = Check(StoredManifest(job.spec, job.tables, Meta(2, "q", "x")), stored_of(job))
    (found,) = gather_contracts([check], FileStorage(), None, probe)
    assert found is not None and [len(r["sinks"]) for r in asked] == [1]


def test_a_fifo_or_a_device_in_a_sink_is_refused_not_waited_on_or_read_whole(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    (out / "_spark_metadata").mkdir(parents=True)
    entry = json.dumps({"path": f"file:{out}/part-0.parquet", "action": "add"})
    (out / "_spark_metadata" / "0").write_text("v1\n" + entry + "\n")
    os.mkfifo(out / "part-0.parquet")
    found: list[Any] = []
    reader = threading.Thread(
        target=lambda: found.append(sink_history_here(FileStorage(), "parquet", str(out))),
        daemon=True,
    )
    reader.start()
    reader.join(20)
    if reader.is_alive():  # let the blocked open() go, so that the thread ends
        with open(out / "part-0.parquet", "wb"):
            pass
    assert found == [None], "a FIFO is no file the plan waits on"
    (out / "_spark_metadata" / "0").unlink()
    (out / "_spark_metadata" / "0").symlink_to("/dev/zero")
    assert sink_history_here(FileStorage(), "parquet", str(out)) is None
    with pytest.raises(StorageError, match="not a regular file"):
        FileStorage().read_tail("/dev/zero", 10)


def test_a_log_larger_than_the_plan_reads_is_left_to_spark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sink = _sink(FileStorage(), str(tmp_path))
    assert sink_history_here(FileStorage(), "parquet", sink) == _expected(sink)
    size = Path(sink, "_spark_metadata", "1").stat().st_size
    monkeypatch.setattr(sink_footer, "MAX_TEXT", size - 1)
    assert sink_history_here(FileStorage(), "parquet", sink) is None


def test_the_fake_storage_reads_a_tail_as_the_real_one(tmp_path: Path) -> None:
    real, fake = FileStorage(), FakeStorage()
    real.write_bytes(f"{tmp_path}/f", b"abcdef")
    fake.write_bytes("s3://b/f", b"abcdef")
    for size in (0, 2, 100):
        assert real.read_tail(f"{tmp_path}/f", size) == fake.read_tail("s3://b/f", size)
    assert real.read_tail(f"{tmp_path}/none", 2) is fake.read_tail("s3://b/none", 2) is None
    fake.write_bytes("hdfs://nn/d/f", b"x")
    for storage in (real, fake):
        with pytest.raises(StorageError, match="not on HDFS"):
            storage.read_tail("hdfs://nn:1/d/f", 10)
