"""The checkpoint reader: hand-written checkpoints for each file it reads and each way one is
malformed (the error names the file), and checkpoints real Spark wrote (a stateless file source
into parquet, a windowed count with a watermark) across a restart, where the test knows what
was written. The reader is given a storage that fails on any write: it only reads."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather.checkpoint_reader import CheckpointUnreadable, read_checkpoint
from flink_sql_runner.gather.state_reader import bytes_on_disk, probe_conf, read_state
from flink_sql_runner.model.checkpoint_report import (
    CheckpointReport,
    Operator,
    SourceProgress,
    StateReport,
    StoreState,
)
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.storage import FileStorage

PINS = {"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.multipleWatermarkPolicy": "min"}


class ReadOnly(FileStorage):
    """A local storage whose writes fail the test, counting the reads."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read_bytes(self, location: str) -> bytes | None:
        self.reads += 1
        return super().read_bytes(location)

    def write_text(self, *args: Any, **kw: Any) -> None:
        raise AssertionError(f"the reader wrote {args[0]}")

    def write_bytes(self, *args: Any, **kw: Any) -> None:
        raise AssertionError(f"the reader wrote {args[0]}")

    def delete(self, location: str) -> None:
        raise AssertionError(f"the reader deleted {location}")

    def delete_tree(self, folder: str) -> None:
        raise AssertionError(f"the reader deleted {folder}")


def offsets(*sources: Any, watermark: int = 0, at: int = 1_700_000_000_000) -> str:
    meta = {"batchWatermarkMs": watermark, "batchTimestampMs": at, "conf": PINS}
    lines = ["v1", json.dumps(meta), *(s if s == "-" else json.dumps(s) for s in sources)]
    return "\n".join(lines)


def commit(watermark: int = 0) -> str:
    return "v1\n" + json.dumps({"nextBatchWatermarkMs": watermark})


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def read(root: Path) -> CheckpointReport | None:
    return read_checkpoint(ReadOnly(), str(root))


KAFKA_0 = {"events": {"0": 10, "1": 7}}
KAFKA_1 = {"events": {"0": 12, "1": 9}}


def test_nothing_there_is_no_report(tmp_path: Path) -> None:
    assert read(tmp_path / "absent") is None


def test_committed_batches_offsets_watermark_and_the_pending_batch(tmp_path: Path) -> None:
    write(tmp_path, {
        "metadata": '{"id":"q-1"}',
        "offsets/3": offsets(KAFKA_0, 5, at=1000),
        "offsets/4": offsets(KAFKA_1, 7, watermark=50, at=2000),
        "offsets/5": offsets({"events": {"0": 20, "1": 9}}, 9, watermark=60, at=3000),
        "offsets/.5.crc": b"\x00", "offsets/6.tmp": "junk",
        "commits/3": commit(40), "commits/4": commit(60), "commits/.4.crc": b"\x00",
    })  # fmt: skip
    report = read(tmp_path)
    assert report == CheckpointReport(
        location=str(tmp_path),
        query_id="q-1",
        committed=(3, 4),
        first_time_ms=1000,
        last_time_ms=2000,
        pending=5,
        watermark_ms=60,
        sources=(
            SourceProgress(0, "kafka", KAFKA_1, {"events": {"0": 20, "1": 9}}),
            SourceProgress(1, "rate", 7, 9),
        ),
        pinned=PINS,
    )
    assert report.to_dict()["batches"] == {"first": 3, "last": 4, "count": 2,
        "first-planned": "1970-01-01T00:00:01.000Z", "last-planned": "1970-01-01T00:00:02.000Z",
        "pending": 5}  # fmt: skip


def test_the_kind_of_each_source_by_its_offset(tmp_path: Path) -> None:
    micro = {"offset": 40, "timestamp": 1700000000000}
    other = {"shardId-0": "seq-1"}
    write(tmp_path, {"metadata": '{"id":"q"}', "commits/0": commit(),
                     "offsets/0": offsets(KAFKA_0, 5, micro, {"logOffset": 2}, other)})  # fmt: skip
    report = read(tmp_path)
    assert report is not None
    kinds = [(s.kind, s.committed) for s in report.sources]
    assert kinds == [("kafka", KAFKA_0), ("rate", 5), ("rate", micro),
                     ("file", {"logOffset": 2}), ("other", other)]  # fmt: skip


def test_only_a_planned_batch_and_a_source_without_an_offset(tmp_path: Path) -> None:
    write(tmp_path, {"metadata": '{"id":"q"}', "offsets/0": offsets("-", KAFKA_0, watermark=5)})
    report = read(tmp_path)
    assert report is not None
    assert (report.committed, report.pending, report.watermark_ms) == ((), 0, 5)
    assert report.sources == (
        SourceProgress(0, "none", None, None),
        SourceProgress(1, "kafka", None, KAFKA_0),
    )


def test_a_file_source_counts_its_log_from_the_newest_compact_file(tmp_path: Path) -> None:
    def entry(name: str, batch: int) -> str:
        return json.dumps({"path": f"file:///in/{name}", "timestamp": 1, "batchId": batch})

    write(tmp_path, {
        "metadata": '{"id":"q"}',
        "offsets/11": offsets({"logOffset": 11}), "commits/11": commit(),
        "sources/0/8": "v1\n" + entry("old", 8),  # before the compact file: not read again
        "sources/0/9.compact": "v1\n" + "\n".join(entry(f"f{i}", i) for i in range(10)),
        "sources/0/10": "v1\n" + entry("g", 10),
        "sources/0/11": "v1\n" + entry("h1", 11) + "\n" + entry("h2", 11),
        "sources/0/12": "v1\n" + entry("later", 12),  # beyond the committed entry
    })  # fmt: skip
    report = read(tmp_path)
    assert report is not None
    assert report.sources == (
        SourceProgress(0, "file", {"logOffset": 11}, None, 13, ("file:///in/h1", "file:///in/h2")),
    )


def test_stateful_operators_from_their_folders_and_metadata(tmp_path: Path) -> None:
    meta = {"operatorInfo": {"operatorId": 0, "operatorName": "stateStoreSave"},
            "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0,
                                "numPartitions": 2}]}  # fmt: skip
    write(tmp_path, {
        "metadata": '{"id":"q"}', "offsets/0": offsets(KAFKA_0), "commits/0": commit(),
        "state/0/_metadata/metadata": "v1\n" + json.dumps(meta),
        "state/0/0/1.delta": b"", "state/0/1/1.delta": b"",
        "state/0/0/_metadata/schema": b"\x00\x02v2\x00\x00\x00\x01\x01c{}",
        "state/1/0/1.delta": b"",  # Spark 3.5 writes no operator metadata
    })  # fmt: skip
    report = read(tmp_path)
    assert report is not None
    assert report.operators == (
        Operator(0, "stateStoreSave", 2, ("default",), "v2"),
        Operator(1, None, 1),
    )


@pytest.mark.parametrize(
    ("rel", "content", "why"),
    [
        ("metadata", "{", "not JSON"),
        ("metadata", '{"name": 1}', 'no query id (a JSON object with "id")'),
        ("offsets/1", "v1\n", "no metadata line after the version line"),
        ("offsets/1", "x\n{}", "the first line is not a log version (v1): 'x'"),
        ("offsets/1", "v1\n{not json", "line 2 (the batch's metadata) is not JSON"),
        ("offsets/1", 'v1\n{"batchWatermarkMs": ""}', "line 2: batchWatermarkMs is not a number"),
        ("offsets/1", 'v1\n{"conf": {"a": 1}}', "line 2: conf is not a map of settings to text"),
        ("offsets/1", 'v1\n{}\n{"t": {"0": 1}}\n{oops', "line 4 (source 1's offset) is not JSON"),
        ("offsets/1", b"v1\n\xff", "not UTF-8 text"),
        ("commits/1", "v1\n[1]", "line 2 is not a JSON object"),
        ("commits/1", 'v1\n{"nextBatchWatermarkMs": null}', "nextBatchWatermarkMs is not a number"),
        ("commits/1", "", "the first line is not a log version (v1)"),
        ("sources/0/0", 'v1\n{"batchId": 0}', "an entry without a file's path"),
        ("sources/0/0", "v1\n{", "line 2 is not JSON"),
        ("state/0/_metadata/metadata", 'v1\n{"stateStoreInfo": []}', "no operatorInfo"),
        ("state/0/0/_metadata/schema", b"\x00\x09v2", "does not start with a schema version (v2)"),
        ("state/0/0/_metadata/schema", b"{}", "does not start with a schema version (v2)"),
    ],
)  # fmt: skip
def test_a_malformed_file_is_an_error_naming_it_and_why(
    tmp_path: Path, rel: str, content: str | bytes, why: str
) -> None:
    write(tmp_path, {
        "metadata": '{"id":"q"}', "offsets/0": offsets({"logOffset": 0}),
        "offsets/1": offsets({"logOffset": 0}), "commits/0": commit(), "commits/1": commit(),
        "sources/0/0": 'v1\n{"path": "file:///in/a", "batchId": 0}', "state/0/0/1.delta": b"",
    })  # fmt: skip
    write(tmp_path, {rel: content})
    with pytest.raises(CheckpointUnreadable) as caught:
        read(tmp_path)
    assert str(caught.value) == f"{tmp_path}/{rel}: {why}"


def test_a_folder_where_a_file_belongs_is_named(tmp_path: Path) -> None:
    write(tmp_path, {"offsets/0": offsets(KAFKA_0), "metadata/x": "{}"})
    with pytest.raises(CheckpointUnreadable, match=f"^{tmp_path}/metadata: a folder where"):
        read(tmp_path)


@pytest.mark.s3
def test_a_checkpoint_on_s3_reads_as_a_local_one(tmp_path: Path, s3_client: Any, s3_bucket: str):
    files = {"metadata": '{"id":"q-1"}', "offsets/4": offsets(KAFKA_0, watermark=3, at=10),
             "offsets/5": offsets(KAFKA_1, watermark=3, at=20), "commits/4": commit(3),
             "state/0/_metadata/metadata": 'v1\n{"operatorInfo": {"operatorName": "dedupe"}}',
             "state/0/0/1.delta": b"", "state/0/1/1.delta": b""}  # fmt: skip
    write(tmp_path, files)
    for rel, data in files.items():
        s3_client.put_object(Bucket=s3_bucket, Key=f"ckpt/job/1/{rel}", Body=data)
    local = read(tmp_path)
    remote = read_checkpoint(FileStorage(s3_client), f"s3a://{s3_bucket}/ckpt/job/1")
    assert local is not None and remote is not None
    assert remote.to_dict() == {**local.to_dict(), "location": f"s3a://{s3_bucket}/ckpt/job/1"}
    assert (remote.committed, remote.pending, remote.operators) == ((4,), 5, local.operators)
    assert local.operators == (Operator(0, "dedupe", 2),)


# -- checkpoints real Spark wrote -------------------------------------------------------------

EVENTS = "k STRING, ts TIMESTAMP"
MINUTE0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def epoch_ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=timezone.utc).timestamp() * 1000)


def run_once(spark: Any, root: Path, stateful: bool) -> None:
    from pyspark.sql import functions as F

    frame = spark.readStream.schema(EVENTS).json(str(root / "in"))
    mode = "append"
    if stateful:
        frame = (
            frame.withWatermark("ts", "10 seconds")
            .groupBy("k", F.window("ts", "1 minute"))
            .count()
            .select("k", F.col("window.start").alias("start"), "count")
        )
    query = (
        frame.writeStream.format("parquet")
        .option("path", str(root / "out"))
        .option("checkpointLocation", str(root / "ckpt"))
        .outputMode(mode)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None


def add_input(root: Path, name: str, rows: list[tuple[str, str]]) -> None:
    folder = root / "in"
    folder.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"k": k, "ts": ts}) + "\n" for k, ts in rows)
    (folder / f"{name}.json").write_text(text)


#: First run: key a, 3 rows in minute 00:00 and key b, 2 rows in 00:01; the restart adds key a,
#: 4 rows in 00:05 (its watermark passes the first windows, which are written and dropped).
FIRST = [("a", "2026-01-01T00:00:01"), ("a", "2026-01-01T00:00:02"),
         ("a", "2026-01-01T00:00:30"), ("b", "2026-01-01T00:01:05"),
         ("b", "2026-01-01T00:01:10")]  # fmt: skip
SECOND = [("a", f"2026-01-01T00:05:0{i}") for i in range(4)]


@pytest.fixture(scope="module")
def written(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Both jobs, each run to its end, then run again after more input (a restart): the
    reports after each run, read while the test knows what the runs read."""
    reports: dict[str, Any] = {}
    for stateful in (False, True):
        root = tmp_path_factory.mktemp("stateful" if stateful else "stateless")
        add_input(root, "first", FIRST)
        run_once(spark, root, stateful)
        before = read_checkpoint(ReadOnly(), str(root / "ckpt"))
        states = [read_state(ReadOnly(), str(root / "ckpt"), keys=5)] if stateful else []
        add_input(root, "second", SECOND)
        run_once(spark, root, stateful)
        after = read_checkpoint(ReadOnly(), str(root / "ckpt"))
        if stateful:
            states.append(read_state(ReadOnly(), str(root / "ckpt"), keys=5))
        reports["stateful" if stateful else "stateless"] = (root, before, after, states)
    return reports


@pytest.mark.spark
def test_a_stateless_file_job_across_a_restart(written: dict[str, Any]) -> None:
    root, before, after, _ = written["stateless"]
    assert before.committed == (0,) and before.pending is None
    assert [s.to_dict() for s in before.sources] == [{
        "index": 0, "kind": "file", "committed": {"logOffset": 0}, "next": None,
        "files-read": 1, "last-files": [f"file://{root}/in/first.json"],
    }]  # fmt: skip
    assert after.committed == (0, 1), "the restart planned one batch for the new file"
    assert after.query_id == before.query_id
    assert after.sources[0].committed == {"logOffset": 1}
    assert after.sources[0].files_read == 2
    assert after.sources[0].last_files == (f"file://{root}/in/second.json",)
    assert after.watermark_ms == 0, "no watermark in a stateless query"
    assert after.pinned is not None and after.pinned["spark.sql.shuffle.partitions"] == "2"
    assert after.operators == ()
    assert after.first_time_ms == before.last_time_ms < after.last_time_ms


@pytest.mark.spark
def test_a_windowed_count_with_a_watermark_across_a_restart(written: dict[str, Any]) -> None:
    root, before, after, _ = written["stateful"]
    # The first run reads the file (batch 0), then a batch with no data moves the watermark
    # to the latest event less 10 s, so that windows before it are emitted.
    first_watermark = epoch_ms("2026-01-01T00:01:10") - 10_000
    assert before.committed == (0, 1)
    assert before.watermark_ms == first_watermark
    assert before.sources[0].committed == {"logOffset": 0}
    assert after.committed == (0, 1, 2, 3)
    assert after.watermark_ms == epoch_ms("2026-01-01T00:05:03") - 10_000
    assert after.sources[0].committed == {"logOffset": 1}
    assert after.sources[0].files_read == 2
    assert after.operators[0].id == 0 and after.operators[0].partitions == 2
    # Spark 4.x writes each operator's metadata; 3.5 does not.
    assert after.operators[0].name in ("stateStoreSave", None)
    assert after.operators[0].schema_version == "v2"


def window(start: str) -> dict[str, str]:
    end = f"{start[:14]}{int(start[14:16]) + 1:02d}{start[16:]}"
    return {"start": f"{start}.000Z", "end": f"{end}.000Z"}


@pytest.mark.spark
def test_the_state_of_a_windowed_count_read_through_spark(written: dict[str, Any]) -> None:
    """After the first run the watermark (00:01:00) has closed key a's first window: only key
    b's window (2 rows) is kept. After the restart (watermark 00:04:53) only key a's window of
    00:05 (4 rows) is."""
    pyspark = pytest.importorskip("pyspark")
    _, _, _, (first, second) = written["stateful"]
    if int(pyspark.__version__.split(".")[0]) < 4:
        assert first.unavailable is not None and "Spark 4.0" in first.unavailable
        return
    assert first.unavailable is None, first.unavailable
    (store,) = first.stores
    assert (store.operator, store.name, store.store) == (0, "stateStoreSave", "default")
    assert (store.partitions, store.max_batch, sum(store.rows.values())) == (2, 1, 1)
    assert store.sample == (
        {"key": {"k": "b", "window": window("2026-01-01T00:01:00")}, "value": {"count": 2},
         "partition": store.sample[0]["partition"]},
    )  # fmt: skip
    (store,) = second.stores
    assert (store.max_batch, sum(store.rows.values())) == (3, 1)
    assert [(s["key"], s["value"]) for s in store.sample] == [
        ({"k": "a", "window": window("2026-01-01T00:05:00")}, {"count": 4})
    ]
    assert set(second.disk) == {0} and set(second.disk[0]) == {"0", "1"}
    assert all(size > 0 for size in second.disk[0].values())


# -- the state probe's answers, without Spark -------------------------------------------------


def test_state_answers_become_the_report_and_bytes_on_disk_are_listed(tmp_path: Path) -> None:
    files = {"state/0/0/1.delta": b"x" * 10, "state/0/0/_metadata/schema": b"y" * 5,
             "state/0/1/1.delta": b"z" * 3, "state/0/_metadata/metadata": "v1\n{}"}  # fmt: skip
    write(tmp_path, files)
    asked = []

    def ask(request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        asked.append(request)
        return {"spark": "4.3.0", "operators": [
            {"id": 0, "name": "stateStoreSave", "store": "default", "partitions": 2,
             "min-batch": 0, "max-batch": 3, "rows": {"1": 4, "0": 1},
             "sample": [{"key": {"k": "a"}, "value": {"count": 4}, "partition": 1}]},
            {"id": 1, "name": "symmetricHashJoin", "store": "left-keyToNumValues",
             "error": "no such store"},
        ]}, None  # fmt: skip

    report = read_state(ReadOnly(), str(tmp_path), keys=1, conf={"spark.hadoop.x": "1"}, ask=ask)
    assert asked == [{"checkpoint": str(tmp_path), "keys": 1, "conf": {"spark.hadoop.x": "1"}}]
    assert report == StateReport(
        "4.3.0",
        (
            StoreState(0, "stateStoreSave", "default", 2, 0, 3, {"0": 1, "1": 4},
                       ({"key": {"k": "a"}, "value": {"count": 4}, "partition": 1},)),
            StoreState(1, "symmetricHashJoin", "left-keyToNumValues", error="no such store"),
        ),
        disk={0: {"0": 15, "1": 3}},
    )  # fmt: skip
    assert bytes_on_disk(ReadOnly(), str(tmp_path / "absent")) == {}


@pytest.mark.parametrize(
    ("answer", "why", "unavailable"),
    [
        ({"spark": "3.5.8", "unavailable": "Spark 3.5.8 has no state sources"}, None,
         "Spark 3.5.8 has no state sources"),
        ({"spark": "4.3.0", "error": "not a checkpoint"}, None,
         "Spark could not read it: not a checkpoint"),
        ({}, "it exited 1: boom", "the state probe failed: it exited 1: boom"),
    ],
)  # fmt: skip
def test_state_not_read_says_why(
    tmp_path: Path, answer: dict[str, Any], why: str | None, unavailable: str
) -> None:
    report = read_state(ReadOnly(), str(tmp_path), ask=lambda _: (answer, why))
    assert (report.unavailable, report.stores) == (unavailable, ())


def test_the_probe_starts_with_the_jobs_storage_settings_and_for_s3_its_jars() -> None:
    props = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000", "spark.jars": "/j/a.jar",
             "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.5.0",
             "spark.sql.shuffle.partitions": 4}  # fmt: skip
    job = {"name": "job", "target-table": "t", "sql": "SELECT 1", "sparkProperties": props}
    manifest = StoredManifest(job, {}, Meta.new(1))
    storage_only = {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}
    assert probe_conf(manifest, "/ck/job/1") == storage_only
    assert probe_conf(manifest, "file:///ck/job/1") == storage_only
    assert probe_conf(manifest, "s3a://b/ck/job/1") == {
        **storage_only,
        "spark.jars": "/j/a.jar",
        "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.5.0",
    }
