"""The slice `preview` runs on (gather/preview.py, checkpoint_reader.batches_input): the files a
file source's last batches read, a Kafka source's offset ranges, and why there is none; the
request the preview probe is given. Hand-written checkpoints, the probe a fake: no Spark."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.gather.checkpoint_reader import batches_input
from flink_sql_runner.gather.preview import PreviewAsk, gather_preview
from flink_sql_runner.model.stored import Meta, StoredManifest
from flink_sql_runner.stores.storage import FileStorage


def offsets(*sources: Any) -> str:
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    return "\n".join(["v1", json.dumps(meta), *(json.dumps(s) for s in sources)])


def log(*entries: tuple[str, int]) -> str:
    lines = [json.dumps({"path": p, "timestamp": 1, "batchId": b}) for p, b in entries]
    return "\n".join(["v1", *lines])


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def file_checkpoint(root: Path, batches: int) -> None:
    """`batches` committed batches of a file source, one file each (f0.json ...); its log
    compacted at entry 2 (entries 0..2 in 2.compact), as Spark compacts it."""
    files: dict[str, str | bytes] = {"metadata": '{"id": "q"}'}
    for b in range(batches):
        files[f"offsets/{b}"] = offsets({"logOffset": b})
        files[f"commits/{b}"] = "v1\n{}"
    compacted = 3 if batches > 2 else 0
    if compacted:
        files["sources/0/2.compact"] = log(*((f"file:///in/f{b}.json", b) for b in range(3)))
    for b in range(compacted, batches):
        files[f"sources/0/{b}"] = log((f"file:///in/f{b}.json", b))
    write(root, files)


def test_the_files_the_last_batches_read(tmp_path: Path) -> None:
    file_checkpoint(tmp_path, 6)
    storage = FileStorage()
    found = batches_input(storage, str(tmp_path), 2)
    assert (found.first, found.last, found.missing) == (4, 5, None)
    assert found.sources == (("file", ("file:///in/f4.json", "file:///in/f5.json")),)
    every = batches_input(storage, str(tmp_path), 10)
    assert every.first == 0 and len(every.sources[0][1]) == 6, "through the compact file"
    for old in ("offsets/0", "commits/0", "offsets/1", "commits/1"):
        (tmp_path / old).unlink()  # Spark keeps the last 100 batches' files
    kept = batches_input(storage, str(tmp_path), 10)
    assert kept.first == 3, "only batches whose start is still known"
    assert kept.sources == (("file", tuple(f"file:///in/f{b}.json" for b in (3, 4, 5))),)


def test_kafka_ranges_from_the_offsets_and_the_initial_offsets(tmp_path: Path) -> None:
    write(tmp_path, {
        "metadata": '{"id": "q"}',
        "sources/0/0": b"\x00v1\n" + json.dumps({"t": {"0": 0, "1": 5}}).encode(),
        "offsets/0": offsets({"t": {"0": 10, "1": 7}}), "commits/0": "v1\n{}",
        "offsets/1": offsets({"t": {"0": 12, "1": 9}}), "commits/1": "v1\n{}",
        "offsets/2": offsets({"t": {"0": 15, "1": 9}}),  # planned, not committed
    })  # fmt: skip
    storage = FileStorage()
    assert batches_input(storage, str(tmp_path), 10).sources == (
        ("kafka", ({"t": {"0": 0, "1": 5}}, {"t": {"0": 12, "1": 9}})),
    )
    assert batches_input(storage, str(tmp_path), 1).sources == (
        ("kafka", ({"t": {"0": 10, "1": 7}}, {"t": {"0": 12, "1": 9}})),
    )


def test_no_committed_batch_and_no_checkpoint(tmp_path: Path) -> None:
    write(tmp_path / "a", {"metadata": '{"id": "q"}', "offsets/0": offsets({"logOffset": 0})})
    storage = FileStorage()
    assert batches_input(storage, str(tmp_path / "a"), 5).missing == (
        "the version committed no batch"
    )
    assert batches_input(storage, str(tmp_path / "b"), 5).missing == (
        "the version has no checkpoint"
    )


def manifest(root: Path, sql: str, version: int, **tables: dict[str, Any]) -> StoredManifest:
    job = {
        "name": "expensive",
        "target-table": "out",
        "sql": sql,
        "checkpoint-root": str(root),
        "metadata-columns": {"enabled": True, "create-timestamp-column": "__create_timestamp"},
        "sparkProperties": {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"},
    }
    defined = {
        "orders": {"format": "json", "options": {"path": "/in", "maxFilesPerTrigger": 1},
                   "schema": "order_id BIGINT, price DOUBLE",
                   "watermark": {"column": "order_time", "delay": "1 minute"}},
        "out": {"format": "parquet", "options": {"path": "/out"}},
        **tables,
    }  # fmt: skip
    return StoredManifest(
        job, copy.deepcopy(defined), Meta(version, f"id{version}", "2026-01-01T00:00:00Z")
    )


class Probe:
    def __init__(self, answer: dict[str, Any] | None = None, why: str | None = None):
        self.asked: list[dict[str, Any]] = []
        self.answer, self.why = answer or {"spark": "4.3.0"}, why

    def __call__(self, request: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        self.asked.append(json.loads(json.dumps(request)))
        return self.answer, self.why


def test_the_probe_is_asked_for_both_queries_on_the_files_of_the_slice(tmp_path: Path) -> None:
    file_checkpoint(tmp_path / "expensive" / "1", 4)
    old = manifest(tmp_path, "SELECT * FROM orders WHERE price > 9000", 1)
    new = manifest(tmp_path, "SELECT * FROM orders WHERE price > 5000", 2)
    probe = Probe()
    found = gather_preview(FileStorage(), old, new, PreviewAsk(batches=2, max_rows=50), probe)
    (request,) = probe.asked
    assert request["slice"] == {"orders": {"files": ["file:///in/f2.json", "file:///in/f3.json"]}}
    assert request["old"]["sql"].endswith("9000") and request["new"]["sql"].endswith("5000")
    assert request["new"]["meta"]["query-version"] == 2
    assert request["new"]["conf"] == {"spark.sql.shuffle.partitions": "2"}
    assert request["max-rows"] == 50 and request["session"] == {}
    assert (found.slice.first, found.slice.last, found.old_version, found.new_version) == (
        2, 3, 1, 2)  # fmt: skip
    assert found.watermarks == {"orders": ("order_time", "1 minute")}
    assert found.answer == {"spark": "4.3.0"} and found.skipped is None


def test_where_no_slice_can_be_had_it_says_which(tmp_path: Path) -> None:
    new = manifest(tmp_path, "SELECT * FROM orders", 1)
    probe = Probe()
    fresh = gather_preview(FileStorage(), None, new, PreviewAsk(), probe)
    assert "a new job" in (fresh.slice.missing or "")
    old = manifest(tmp_path, "SELECT * FROM orders", 1)
    nothing = gather_preview(FileStorage(), old, new, PreviewAsk(), probe)
    assert nothing.slice.missing == "version 1: the version has no checkpoint"
    rate = {"format": "rate", "options": {"rowsPerSecond": 1}}
    write(tmp_path / "expensive" / "1", {"metadata": '{"id": "q"}', "offsets/0": offsets(5),
                                         "commits/0": "v1\n{}"})  # fmt: skip
    ticking = manifest(tmp_path, "SELECT * FROM ticks", 1, ticks=rate)
    ticking.tables.pop("orders")
    made_up = gather_preview(FileStorage(), ticking, ticking, PreviewAsk(), probe)
    assert "a rate source makes its rows up" in (made_up.slice.missing or "")
    assert probe.asked == [], "nothing run without a slice"
    sample = tmp_path / "rows.json"
    sample.write_text('{"order_id": 1, "price": 6000}\n')
    given = gather_preview(FileStorage(), None, new, PreviewAsk(samples={"": str(sample)}), probe)
    assert given.slice.missing is None
    assert probe.asked[-1]["slice"] == {"orders": {"sample": str(sample)}}


def test_kafka_past_max_rows_starts_no_spark_and_retention_is_named(tmp_path: Path) -> None:
    write(tmp_path / "expensive" / "1", {
        "metadata": '{"id": "q"}',
        "sources/0/0": b"\x00v1\n" + json.dumps({"t": {"0": 0}}).encode(),
        "offsets/0": offsets({"t": {"0": 500}}), "commits/0": "v1\n{}",
    })  # fmt: skip
    kafka = {"format": "kafka", "options": {"kafka.bootstrap.servers": "b:9092",
                                            "subscribe": "t"}}  # fmt: skip
    job = manifest(tmp_path, "SELECT CAST(value AS STRING) AS v FROM src", 1, src=kafka)
    job.tables.pop("orders")
    probe = Probe({"spark": "4.3.0", "error": "OffsetOutOfRangeException: t-0 0"})
    over = gather_preview(FileStorage(), job, job, PreviewAsk(max_rows=100), probe)
    assert "500 Kafka records, more than 100" in (over.skipped or "") and probe.asked == []
    gone = gather_preview(FileStorage(), job, job, PreviewAsk(), probe)
    assert probe.asked[0]["slice"] == {"src": {"kafka": {"start": {"t": {"0": 0}},
                                                         "end": {"t": {"0": 500}}}}}  # fmt: skip
    assert "retention dropped them" in gone.answer["error"]
    assert gone.key == ("key",) or gone.sink_format == "parquet"


def test_a_kafka_partition_added_within_the_slice_is_read_from_its_earliest(
    tmp_path: Path,
) -> None:
    """Review of issue 54, P9: a partition the topic gained within the slice is in the end
    offsets and not the start; Spark's batch read refuses specific start offsets that leave a
    partition out, and the stream read it from its earliest, so its records count too."""
    write(tmp_path / "expensive" / "1", {
        "metadata": '{"id": "q"}',
        "sources/0/0": b"\x00v1\n" + json.dumps({"t": {"0": 0}}).encode(),
        "offsets/0": offsets({"t": {"0": 10}}), "commits/0": "v1\n{}",
        "offsets/1": offsets({"t": {"0": 20, "1": 7}}), "commits/1": "v1\n{}",
    })  # fmt: skip
    kafka = {"format": "kafka", "options": {"kafka.bootstrap.servers": "b:9092",
                                            "subscribe": "t"}}  # fmt: skip
    job = manifest(tmp_path, "SELECT CAST(value AS STRING) AS v FROM src", 1, src=kafka)
    job.tables.pop("orders")
    probe = Probe()
    found = gather_preview(FileStorage(), job, job, PreviewAsk(batches=1, max_rows=16), probe)
    assert "17 Kafka records, more than 16" in (found.skipped or ""), found.skipped
    found = gather_preview(FileStorage(), job, job, PreviewAsk(batches=1), probe)
    ranges = {"start": {"t": {"0": 10, "1": -2}}, "end": {"t": {"0": 20, "1": 7}}}
    assert probe.asked[0]["slice"] == {"src": {"kafka": ranges}}
    assert found.slice.parts[0].describe() == "src: t-0 [10, 20), t-1 [earliest, 7)"


@pytest.mark.parametrize("why", ["it took over 600 s"])
def test_a_probe_that_fails_is_said(tmp_path: Path, why: str) -> None:
    file_checkpoint(tmp_path / "expensive" / "1", 1)
    job = manifest(tmp_path, "SELECT * FROM orders", 1)
    found = gather_preview(FileStorage(), job, job, PreviewAsk(), Probe(why=why))
    assert found.skipped == f"the preview probe failed: {why}"


def test_a_converted_manifest_and_an_unset_variable_are_said(tmp_path: Path, monkeypatch) -> None:
    job = manifest(tmp_path, "SELECT * FROM orders", 1)
    converted = StoredManifest({k: v for k, v in job.job.items() if k != "checkpoint-root"},
                               job.tables, job.meta)  # fmt: skip
    probe = Probe()
    found = gather_preview(FileStorage(), converted, job, PreviewAsk(), probe)
    assert found.slice.missing == "the stored version has no checkpoint yet"
    monkeypatch.delenv("FSR_PREVIEW_UNSET", raising=False)
    sink = {"format": "parquet", "options": {"path": "${FSR_PREVIEW_UNSET}"}}
    secret = manifest(tmp_path, "SELECT * FROM orders", 2, out=sink)
    unset = gather_preview(FileStorage(), job, secret, PreviewAsk(), probe)
    assert "FSR_PREVIEW_UNSET is not set" in (unset.slice.missing or "")
    assert probe.asked == []


def join_slice(tmp_path: Path, buyers_file: str, buyers_folder: str) -> dict:
    """The slice a join of `buyers` (its file `buyers_file` in the checkpoint's log, its folder
    `buyers_folder`) and `orders` is previewed on."""
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1, "conf": {}}
    write(tmp_path / "expensive" / "1", {
        "metadata": '{"id": "q"}',
        "offsets/0": "\n".join(["v1", json.dumps(meta), '{"logOffset":0}', '{"logOffset":0}']),
        "commits/0": "v1\n{}",
        "sources/0/0": log((buyers_file, 0)),
        "sources/1/0": log(("file:///in/o.json", 0)),
    })  # fmt: skip
    buyers = {"format": "json", "options": {"path": buyers_folder}, "schema": "buyer_id STRING"}
    job = manifest(tmp_path, "SELECT * FROM orders JOIN buyers USING (buyer_id)", 1,
                   buyers=buyers)  # fmt: skip
    probe = Probe()
    gather_preview(FileStorage(), job, job, PreviewAsk(), probe)
    return probe.asked[0]["slice"]


def test_two_file_sources_are_told_apart_by_their_folders(tmp_path: Path) -> None:
    """A join of two file sources: the offsets' lines follow the query's plan, not the tables'
    order; each source's files are matched to the table whose folder holds them."""
    assert join_slice(tmp_path, "file:///buyers/b.json", "/buyers") == {
        "buyers": {"files": ["file:///buyers/b.json"]},
        "orders": {"files": ["file:///in/o.json"]},
    }


def test_file_names_spark_encodes_are_given_decoded(tmp_path: Path) -> None:
    """Issue 54, finding 12: the checkpoint's log holds URIs (a space as %20, `%` as %25,
    non-ASCII percent-encoded); the probe is given the files' names, matched to their table."""
    found = join_slice(tmp_path, "file:///my%20buyers/b%2550%20%C3%A9.json", "/my buyers")
    assert found["buyers"] == {"files": ["file:///my buyers/b%50 é.json"]}


def test_a_new_job_is_previewed_as_new_with_no_old_side(tmp_path: Path) -> None:
    """Finding 14 (a): a job never deployed, given rows, runs its query alone."""
    sample = tmp_path / "rows.json"
    sample.write_text('{"order_id": 1, "price": 6000}\n')
    new = manifest(tmp_path, "SELECT * FROM orders", 1)
    probe = Probe()
    gather_preview(FileStorage(), None, new, PreviewAsk(samples={"": str(sample)}), probe)
    assert probe.asked[0]["old"] is None and probe.asked[0]["new"]["sql"]


def test_the_probes_errors_are_shown_with_the_jobs_secrets_masked(tmp_path: Path) -> None:
    """Issue 54, finding 14 (d): Spark's reason may quote a setting or an option: a secret of
    the job (its spark properties, its tables' options) is masked in what is shown."""
    file_checkpoint(tmp_path / "expensive" / "1", 1)
    job = manifest(tmp_path, "SELECT * FROM orders", 1)
    job.job["sparkProperties"]["spark.hadoop.fs.s3a.secret.key"] = "S3CR3T-kEy"
    job.tables["orders"]["options"]["kafka.sasl.jaas.config"] = "x required pw=Hunter22;"
    said = "s3a://k:S3CR3T-kEy@b/ failed; config x required pw=Hunter22; password=abc123"
    answer = {"spark": "4.3.0", "old": {"error": said}, "new": {"error": said}, "error": said}
    found = gather_preview(FileStorage(), job, job, PreviewAsk(), Probe(answer))
    failed = gather_preview(FileStorage(), job, job, PreviewAsk(), Probe(why=said))
    shown = json.dumps([found.answer, failed.skipped])
    assert "S3CR3T" not in shown and "Hunter22" not in shown and "abc123" not in shown
    assert found.answer["old"]["error"].startswith("s3a://*****@b/ failed")
