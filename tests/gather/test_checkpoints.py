"""Checkpoint inspection without Spark, on local folders, file: URIs and S3 (moto's server)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.errors import FsrError
from flink_sql_runner.gather.checkpoint_reader import (
    MAX_OFFSETS_BYTES,
    CheckpointInfo,
    highest_version,
    inspect_checkpoint,
    pinned_settings,
)
from flink_sql_runner.stores.storage import FileStorage, StorageError, local_path

METADATA = json.dumps({"id": "5c1b8b55-2f2e-4f4e-9b55-6f7d2e0a4d11"}) + "\n"
OFFSET = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1700000000000}\n{"0":42}\n'
COMMIT = 'v1\n{"nextBatchWatermarkMs":0}\n'


@dataclass
class Storage:
    """One kind of storage: a root URI, and a way to put files (or empty folders) under it."""

    root: str
    put: Callable[[str, str | bytes], None]
    mkdir: Callable[[str], None]
    client: Any = None

    def uri(self, rel: str) -> str:
        return f"{self.root}/{rel}"

    def put_files(self, rel: str, files: dict[str, str | bytes]) -> None:
        for name, data in files.items():
            self.put(f"{rel}/{name}", data)


def local_storage(root: Path, as_uri: bool) -> Storage:
    def put(rel: str, data: str | bytes) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)

    def mkdir(rel: str) -> None:
        (root / rel).mkdir(parents=True, exist_ok=True)

    return Storage(f"file://{root}" if as_uri else str(root), put, mkdir)


def s3_storage(client: Any, bucket: str, scheme: str) -> Storage:
    def put(rel: str, data: str | bytes) -> None:
        client.put_object(Bucket=bucket, Key=f"ckpt/{rel}", Body=data)

    def mkdir(rel: str) -> None:
        # What Hadoop's S3A leaves for an empty directory: a marker object ending in "/".
        client.put_object(Bucket=bucket, Key=f"ckpt/{rel}/", Body=b"")

    return Storage(f"{scheme}://{bucket}/ckpt", put, mkdir, client)


@pytest.fixture(
    params=[
        "local",
        "file-uri",
        pytest.param("s3", marks=pytest.mark.s3),
        pytest.param("s3a", marks=pytest.mark.s3),
    ]
)
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    if request.param in ("local", "file-uri"):
        return local_storage(tmp_path / "ckpt", as_uri=request.param == "file-uri")
    client = request.getfixturevalue("s3_client")
    bucket = request.getfixturevalue("s3_bucket")
    return s3_storage(client, bucket, request.param)


def write_checkpoint(storage: Storage, rel: str, offsets: range, commits: range) -> None:
    storage.put(f"{rel}/metadata", METADATA)
    for n in offsets:
        storage.put(f"{rel}/offsets/{n}", OFFSET)
    for n in commits:
        storage.put(f"{rel}/commits/{n}", COMMIT)


def files(storage: Storage) -> FileStorage:
    return FileStorage(storage.client)


def inspect(storage: Storage, rel: str) -> CheckpointInfo:
    return inspect_checkpoint(files(storage), storage.uri(rel))


def empty(storage: Storage, rel: str) -> bool:
    return files(storage).is_empty(storage.uri(rel))


# -- inspect_checkpoint ---------------------------------------------------------------------------


def test_missing_checkpoint(storage: Storage) -> None:
    info = inspect(storage, "job/1")
    assert info == CheckpointInfo(storage.uri("job/1"), False, False, None, None)
    assert not info.pending
    assert empty(storage, "job/1")


def test_empty_folder_is_not_a_checkpoint(storage: Storage) -> None:
    storage.mkdir("job/1")
    storage.mkdir("job/1/offsets")
    info = inspect(storage, "job/1")
    assert (info.exists, info.valid) == (False, False)
    assert empty(storage, "job/1")


def test_junk_only(storage: Storage) -> None:
    storage.put_files(
        "job/1", {".metadata.crc": b"\x00", "offsets/.1.tmp": OFFSET, "commits/.0.crc": b"\x01"}
    )
    info = inspect(storage, "job/1")
    assert info == CheckpointInfo(storage.uri("job/1"), True, False, None, None)
    assert not empty(storage, "job/1")


def test_junk_anywhere_makes_the_folder_non_empty(storage: Storage) -> None:
    storage.put("job/1/sources/0/0", "v1\n")
    assert not empty(storage, "job/1")
    assert inspect(storage, "job/1").exists
    assert empty(storage, "job/2")


def test_metadata_without_offsets_is_not_valid(storage: Storage) -> None:
    storage.put("job/1/metadata", METADATA)
    info = inspect(storage, "job/1")
    assert (info.exists, info.valid, info.last_offset, info.last_committed) == (
        True,
        False,
        None,
        None,
    )


def test_offsets_without_metadata_are_not_valid(storage: Storage) -> None:
    storage.put_files("job/1", {"offsets/0": OFFSET, "commits/0": COMMIT})
    info = inspect(storage, "job/1")
    assert (info.exists, info.valid, info.last_offset, info.last_committed) == (True, False, 0, 0)


@pytest.mark.parametrize(
    "metadata", [b"", b"not json", b"[1, 2]", b'{"other": 1}', b"\xff\xfe", b'{"id": '], ids=repr
)
def test_unusable_metadata_is_not_valid(storage: Storage, metadata: bytes) -> None:
    storage.put_files("job/1", {"metadata": metadata, "offsets/0": OFFSET})
    assert not inspect(storage, "job/1").valid


def test_metadata_that_is_a_folder_is_not_valid(storage: Storage) -> None:
    storage.put_files("job/1", {"metadata/part": METADATA, "offsets/0": OFFSET})
    assert not inspect(storage, "job/1").valid


def test_valid_with_commits_and_a_pending_batch(storage: Storage) -> None:
    write_checkpoint(storage, "job/3", offsets=range(6), commits=range(5))
    info = inspect(storage, "job/3")
    assert info == CheckpointInfo(storage.uri("job/3"), True, True, 4, 5)
    assert info.pending


def test_valid_and_fully_committed(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(3), commits=range(3))
    info = inspect(storage, "job/1")
    assert (info.valid, info.last_committed, info.last_offset, info.pending) == (True, 2, 2, False)


def test_offsets_without_any_commit_are_pending(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(1), commits=range(0))
    info = inspect(storage, "job/1")
    assert (info.valid, info.last_committed, info.last_offset, info.pending) == (
        True,
        None,
        0,
        True,
    )


def test_dot_files_and_non_numeric_names_are_ignored(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(3), commits=range(3))
    storage.put_files(
        "job/1",
        {
            ".metadata.crc": b"\x00",
            "offsets/.0.crc": b"\x00",
            "offsets/.3.tmp": OFFSET,
            "offsets/.7.crc": b"\x00",
            "offsets/8.tmp": OFFSET,
            "offsets/x9": OFFSET,
            "offsets/-1": OFFSET,
            "offsets/٣": OFFSET,  # a non-ASCII digit is not a batch id
            "commits/.5.crc": b"\x00",
            "commits/12/nested": COMMIT,  # a folder, not a commit file
        },
    )
    info = inspect(storage, "job/1")
    assert (info.valid, info.last_committed, info.last_offset, info.pending) == (True, 2, 2, False)


def test_batch_ids_sort_as_numbers(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(12), commits=range(11))
    info = inspect(storage, "job/1")
    assert (info.last_committed, info.last_offset) == (10, 11)  # not "9" as text would sort


def test_a_spark_like_checkpoint(storage: Storage) -> None:
    write_checkpoint(storage, "job/2", offsets=range(2), commits=range(2))
    storage.put_files(
        "job/2",
        {
            ".metadata.crc": b"\x00",
            "offsets/.0.crc": b"\x00",
            "offsets/.1.crc": b"\x00",
            "commits/.0.crc": b"\x00",
            "commits/.1.crc": b"\x00",
            "sources/0/0": "v1\n0\n",
            "state/0/0/1.delta": b"\x00",
        },
    )
    assert inspect(storage, "job/2") == CheckpointInfo(storage.uri("job/2"), True, True, 1, 1)


def test_trailing_slash_is_the_same_folder(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(2), commits=range(1))
    info = inspect_checkpoint(files(storage), storage.uri("job/1") + "/")
    assert (info.valid, info.last_committed, info.last_offset) == (True, 0, 1)


# -- pinned_settings ------------------------------------------------------------------------------

PINNED = {
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion": "2",
    "spark.sql.streaming.stateStore.rowChecksum.enabled": "false",
}


def offsets_file(conf: Any, **more: Any) -> str:
    line = {"batchWatermarkMs": 0, "batchTimestampMs": 1700000000000, "conf": conf, **more}
    return "v1\n" + json.dumps(line) + '\n{"0":42}\n'


def pinned(storage: Storage, rel: str) -> dict[str, str] | None:
    return pinned_settings(files(storage), storage.uri(rel))


def test_pinned_settings_are_the_conf_map_of_the_latest_offsets_file(storage: Storage) -> None:
    write_checkpoint(storage, "job/1", offsets=range(0), commits=range(0))
    storage.put("job/1/offsets/9", offsets_file({"spark.sql.shuffle.partitions": "200"}))
    storage.put("job/1/offsets/10", offsets_file(PINNED))  # 10 > 9, not "10" < "9"
    storage.put("job/1/offsets/.10.crc", b"\x00")
    storage.put("job/1/offsets/11.tmp", offsets_file({}))
    assert pinned(storage, "job/1") == PINNED


@pytest.mark.parametrize(
    "text",
    [
        OFFSET,  # a metadata line without `conf` (Spark 2.1): what it pins is not written down
        "v1\n",
        "v1\nnot json\n",
        "v1\n[1, 2]\n",
        offsets_file(["spark.sql.shuffle.partitions"]),
        offsets_file({"spark.sql.shuffle.partitions": 4}),
        b"v1\n\xff\xfe\n",
    ],
    ids=["no-conf", "no-metadata-line", "not-json", "not-an-object", "conf-not-a-map",
         "value-not-text", "not-utf8"],
)  # fmt: skip
def test_an_offsets_file_without_a_readable_conf_map_pins_nothing_known(
    storage: Storage, text: str | bytes
) -> None:
    """None: not readable, so the plan falls back to the list kept by hand."""
    write_checkpoint(storage, "job/1", offsets=range(0), commits=range(0))
    storage.put("job/1/offsets/0", text)
    assert pinned(storage, "job/1") is None


def test_no_offsets_file_pins_nothing_known(storage: Storage) -> None:
    assert pinned(storage, "job/1") is None
    write_checkpoint(storage, "job/1", offsets=range(0), commits=range(0))
    assert pinned(storage, "job/1") is None


def test_an_oversized_offsets_file_is_not_read_as_pins(tmp_path: Path) -> None:
    folder = tmp_path / "job" / "offsets"
    folder.mkdir(parents=True)
    (folder / "0").write_text(offsets_file(PINNED) + "x" * MAX_OFFSETS_BYTES)
    assert pinned_settings(FileStorage(), str(tmp_path / "job")) is None


@pytest.mark.spark
def test_the_pins_of_a_checkpoint_spark_wrote(spark: Any, tmp_path: Path) -> None:
    """A real micro-batch query on the shared session (its own SQL settings, in a new session):
    what its checkpoint pins, as Spark wrote it."""
    session = spark.newSession()
    session.conf.set("spark.sql.shuffle.partitions", "3")
    session.conf.set("spark.sql.streaming.stateStore.rowChecksum.enabled", "true")
    checkpoint = tmp_path / "ckpt" / "1"
    frame = session.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load()
    query = (
        frame.writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    assert query.exception() is None
    found = pinned_settings(FileStorage(), f"file://{checkpoint}")
    assert found is not None
    assert found["spark.sql.shuffle.partitions"] == "3"
    assert found["spark.sql.streaming.stateStore.rowChecksum.enabled"] == "true"
    # Settings Spark 4.x pins beyond the list kept by hand before the checkpoint was read:
    assert {
        "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
        "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled",
    } <= set(found)
    assert "spark.sql.session.timeZone" not in found  # only what Spark pins


# -- highest_version ------------------------------------------------------------------------------


def test_highest_version(storage: Storage) -> None:
    assert highest_version(files(storage), storage.uri("job")) == 0
    for version in (1, 2, 10, 9):
        storage.put(f"job/{version}/metadata", METADATA)
    storage.put_files("job", {"_control/v10.stop": "x", "11": "a file, not a version", "x/y": ""})
    storage.put("job-other/12/metadata", METADATA)
    assert highest_version(files(storage), storage.uri("job")) == 10


def test_a_job_folder_deleted_whole_counts_no_version_and_leaves_its_neighbours(
    storage: Storage,
) -> None:
    """What `forget` deletes: every file under `<root>/<name>`, listed with its size first, and
    the folders (and S3A's folder markers) they leave, so that the job's versions start at 1."""
    write_checkpoint(storage, "job/1", range(3), range(3))
    storage.put("job/_control/v2.stop", "x")
    storage.mkdir("job/2")  # an empty version folder still counts a version
    storage.put("job-other/1/metadata", METADATA)
    listed = files(storage).tree(storage.uri("job"))
    assert [(loc.removeprefix(storage.root), size) for loc, size in listed
            ] == [("/job/1/commits/0", len(COMMIT)), ("/job/1/commits/1", len(COMMIT)),
                  ("/job/1/commits/2", len(COMMIT)), ("/job/1/metadata", len(METADATA)),
                  ("/job/1/offsets/0", len(OFFSET)), ("/job/1/offsets/1", len(OFFSET)),
                  ("/job/1/offsets/2", len(OFFSET)), ("/job/_control/v2.stop", 1)]  # fmt: skip
    assert highest_version(files(storage), storage.uri("job")) == 2

    files(storage).delete_tree(storage.uri("job"))

    assert files(storage).tree(storage.uri("job")) == []
    assert highest_version(files(storage), storage.uri("job")) == 0
    assert files(storage).dir_names(storage.root) == ["job-other"]
    files(storage).delete_tree(storage.uri("job"))  # already gone: fine
    assert highest_version(files(storage), storage.uri("job-other")) == 1


# -- read_text / write_text / delete --------------------------------------------------------------


def test_text_files(storage: Storage) -> None:
    uri = storage.uri("job/_control/v1.status.json")
    assert files(storage).read_text(uri) is None
    files(storage).write_text(uri, '{"state": "running", "note": "ü"}')
    assert files(storage).read_text(uri) == '{"state": "running", "note": "ü"}'
    files(storage).write_text(uri, "second")
    assert files(storage).read_text(uri) == "second"
    files(storage).delete(uri)
    assert files(storage).read_text(uri) is None
    files(storage).delete(uri)  # missing is fine


def test_local_write_is_atomic_and_private_on_request(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "v1.stop"
    FileStorage().write_text(str(target), "first")
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    FileStorage().write_text(f"file:{target}", "secret-free but private", private=True)
    assert target.read_text() == "secret-free but private"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["v1.stop"]  # no temporary left


def test_local_write_keeps_the_old_file_when_it_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "v1.status.json"
    FileStorage().write_text(str(target), "old")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(StorageError, match=r"cannot write .*v1.status.json: No space left"):
        FileStorage().write_text(str(target), "new")
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["v1.status.json"]  # temporary removed


def test_local_read_of_a_folder_is_a_storage_error(tmp_path: Path) -> None:
    with pytest.raises(StorageError, match="cannot read"):
        FileStorage().read_text(str(tmp_path))


@pytest.mark.s3
def test_s3_text_files_get_a_content_type(s3_client: Any, s3_bucket: str) -> None:
    FileStorage(s3_client).write_text(f"s3a://{s3_bucket}/ck/job/run.json", "{}")
    head = s3_client.head_object(Bucket=s3_bucket, Key="ck/job/run.json")
    assert head["ContentType"] == "application/json; charset=utf-8"


@pytest.mark.s3
def test_s3_missing_bucket_is_a_clear_error(s3_client: Any, s3_env: dict[str, str]) -> None:
    for attempt in (
        lambda: inspect_checkpoint(FileStorage(s3_client), "s3a://no-such-bucket/ck/job/1"),
        lambda: FileStorage(s3_client).read_text("s3://no-such-bucket/ck/x"),
        lambda: FileStorage(s3_client).write_text("s3://no-such-bucket/ck/x", "x"),
    ):
        with pytest.raises(StorageError, match="bucket no-such-bucket does not exist") as caught:
            attempt()
        assert s3_env["AWS_SECRET_ACCESS_KEY"] not in str(caught.value)


@pytest.mark.s3
def test_s3_without_a_client_uses_the_standard_settings(
    s3_env: dict[str, str], s3_client: Any, s3_bucket: str
) -> None:
    FileStorage().write_text(f"s3://{s3_bucket}/ck/job/1/metadata", METADATA)
    FileStorage().write_text(f"s3://{s3_bucket}/ck/job/1/offsets/0", OFFSET)
    assert inspect_checkpoint(FileStorage(), f"s3a://{s3_bucket}/ck/job/1").valid
    assert highest_version(FileStorage(), f"s3a://{s3_bucket}/ck/job") == 1


@pytest.mark.s3
def test_s3_listing_follows_continuation_pages(s3_client: Any, s3_bucket: str) -> None:
    storage = s3_storage(s3_client, s3_bucket, "s3a")
    storage.put("job/1/metadata", METADATA)
    storage.put("job/1/offsets/0", OFFSET)
    # ".N.crc" sorts before digits: the checksums fill the first pages, the commits come last.
    storage.put_files("job/1", {f"commits/.{n}.crc": b"\x00" for n in range(25)})
    storage.put_files("job/1", {f"commits/{n}": COMMIT for n in range(5)})
    pages: list[str] = []

    def small_pages(params: dict[str, Any], **_: Any) -> None:
        params["MaxKeys"] = 10  # as S3 does at 1,000 keys, at a size a test can afford
        pages.append(params["Prefix"])

    s3_client.meta.events.register("before-parameter-build.s3.ListObjectsV2", small_pages)
    assert inspect(storage, "job/1").last_committed == 4
    assert pages.count("ckpt/job/1/commits/") == 3


@pytest.mark.s3
def test_s3_deletes_a_folder_in_batches_and_says_when_objects_stay(
    s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flink_sql_runner.stores import storage as storage_module

    monkeypatch.setattr(storage_module, "DELETE_BATCH", 3)  # as S3 does at 1,000
    storage = s3_storage(s3_client, s3_bucket, "s3a")
    storage.put_files("job", {f"1/offsets/{n}": OFFSET for n in range(7)})
    requests: list[int] = []

    def refuse_one(parsed: dict[str, Any], **_: Any) -> None:
        requests.append(len(requests))
        if len(requests) == 2:  # S3 answers 200 and lists the objects it kept
            parsed["Errors"] = [{"Key": "ckpt/job/1/offsets/4", "Code": "SlowDown"}]

    s3_client.meta.events.register("after-call.s3.DeleteObjects", refuse_one)
    with pytest.raises(StorageError, match=r"offsets/4: SlowDown \(1 of 3 objects not deleted\)"):
        files(storage).delete_tree(storage.uri("job"))
    assert len(requests) == 2, "no batch after one that failed"
    s3_client.meta.events.unregister("after-call.s3.DeleteObjects", refuse_one)
    files(storage).delete_tree(storage.uri("job"))
    assert files(storage).tree(storage.uri("job")) == []


# -- locations ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("/tmp/ck/job/1", "/tmp/ck/job/1"),
        ("relative/ck", "relative/ck"),
        ("file:/tmp/ck", "/tmp/ck"),
        ("file:///tmp/ck", "/tmp/ck"),
        ("file://localhost/tmp/ck", "/tmp/ck"),
    ],
)
def test_local_path(uri: str, path: str) -> None:
    assert local_path(uri) == Path(path)


@pytest.mark.parametrize("uri", ["abfs://c@a/ck/job/1", "gs://b/ck", "file://otherhost/tmp/ck"])
def test_unsupported_locations_are_clear_errors(uri: str) -> None:
    with pytest.raises(FsrError, match="unsupported storage|another host"):
        inspect_checkpoint(FileStorage(), uri)


def test_a_file_where_the_folder_should_be(tmp_path: Path) -> None:
    (tmp_path / "1").write_text("not a folder")
    info = inspect_checkpoint(FileStorage(), str(tmp_path / "1"))
    assert (info.exists, info.valid) == (True, False)
    assert not FileStorage().is_empty(str(tmp_path / "1"))
