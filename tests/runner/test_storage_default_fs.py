"""The runner's storage resolves a path without a scheme as Spark does: on Hadoop's default file
system (`fs.defaultFS`). On YARN with HDFS, a sink at `/data/out` is on HDFS: the runner's claims
and its reading of the sink's `_spark_metadata` must look there too, not on the driver's disk."""

from __future__ import annotations

import os
from types import SimpleNamespace

from runner.storage import Storage


class FakeHadoopFs:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def exists(self, path) -> bool:
        self.asked.append(str(path))
        return False


def spark_on(default_fs: str | None, fs: FakeHadoopFs):
    conf = SimpleNamespace(get=lambda key: default_fs if key == "fs.defaultFS" else None)
    jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(hadoop=SimpleNamespace(
        fs=SimpleNamespace(Path=lambda location: SimpleNamespace(
            location=location, getFileSystem=lambda _conf: fs))))))  # fmt: skip
    return SimpleNamespace(_jvm=jvm, _jsc=SimpleNamespace(hadoopConfiguration=lambda: conf))


def test_a_path_without_a_scheme_is_on_hdfs_when_hdfs_is_the_default(tmp_path) -> None:
    fs = FakeHadoopFs()
    storage = Storage(spark_on("hdfs://127.0.0.1:8020", fs))
    (tmp_path / "_spark_metadata").mkdir()
    (tmp_path / "_spark_metadata" / "0").write_text("v1")
    # the driver's own disk has a log here, HDFS has none: HDFS is the one Spark writes
    assert storage.names(f"{tmp_path}/_spark_metadata") == []
    assert len(fs.asked) == 1
    assert storage.read(str(tmp_path / "nothing.json")) is None
    assert len(fs.asked) == 2


def test_a_path_without_a_scheme_is_local_when_the_default_is_local(tmp_path) -> None:
    fs = FakeHadoopFs()
    for default in ("file:///", None):
        storage = Storage(spark_on(default, fs))
        (tmp_path / "a").mkdir(exist_ok=True)
        assert storage.names(str(tmp_path)) == ["a"]
        assert storage.names(f"file:{tmp_path}") == ["a"]
    assert fs.asked == []


class FakeStream:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.closed = False

    def close(self) -> None:
        self.closed = True


def driver_on(default_fs: str | None, files: dict[str, bytes], opened: list[str]):
    """A SparkSession as `job_runner.fetch` sees it: a Hadoop file system that serves `files`
    by path as given (Hadoop resolves a path without a scheme on the default file system)."""

    def path(location: str):
        def open_(_path):
            opened.append(location)
            return FakeStream(files[location])

        return SimpleNamespace(getFileSystem=lambda _conf: SimpleNamespace(open=open_))

    conf = SimpleNamespace(get=lambda key: default_fs if key == "fs.defaultFS" else None)
    io = SimpleNamespace(IOUtils=SimpleNamespace(toByteArray=lambda stream: stream.data))
    jvm = SimpleNamespace(org=SimpleNamespace(apache=SimpleNamespace(
        hadoop=SimpleNamespace(fs=SimpleNamespace(Path=path)),
        commons=SimpleNamespace(io=io))))  # fmt: skip
    return SimpleNamespace(_jvm=jvm, _jsc=SimpleNamespace(hadoopConfiguration=lambda: conf))


def test_the_runners_package_without_a_scheme_is_fetched_from_the_default_file_system(
    tmp_path, monkeypatch
) -> None:
    """The deployer writes the package beside the runtime manifest, on HDFS when HDFS is the
    default file system: the driver reads it there, not from its own disk (where, on the
    MiniYARNCluster, it was not)."""
    from pyspark.sql import SparkSession

    from runner import job_runner

    opened: list[str] = []
    at_exit: list[tuple] = []
    monkeypatch.setattr(
        job_runner, "atexit", SimpleNamespace(register=lambda *c: at_exit.append(c))
    )
    monkeypatch.setattr(job_runner.tempfile, "tempdir", str(tmp_path))  # its copies here
    zip_at = f"{tmp_path}/ckpt/_control/runner-1.zip"
    full = "hdfs://127.0.0.1:8020/p/runner-1.zip"
    driver = driver_on("hdfs://127.0.0.1:8020", {zip_at: b"PK-hdfs", full: b"PK"}, opened)
    monkeypatch.setattr(SparkSession, "builder", SimpleNamespace(getOrCreate=lambda: driver))
    copy = job_runner.fetch(zip_at)
    assert opened == [zip_at] and copy != zip_at
    with open(copy, "rb") as handle:
        assert handle.read() == b"PK-hdfs"
    assert job_runner.fetch(full) != full and opened == [zip_at, full]
    # each copy's folder is removed when the driver's Python exits (they were left in /tmp)
    assert len(at_exit) == 2 and os.path.exists(copy)
    for function, folder, _owner in at_exit:  # in a child forked by the job's code: kept
        function(folder, os.getpid() + 1)
    assert os.path.exists(copy)
    for function, *args in at_exit:
        function(*args)
    assert not os.path.exists(os.path.dirname(copy))
    # in a YARN container, in its working folder, which YARN removes however the driver ends
    container = tmp_path / "container_1_0001_01_000001"
    container.mkdir()
    monkeypatch.chdir(container)
    monkeypatch.setenv("CONTAINER_ID", "container_1_0001_01_000001")
    monkeypatch.setenv("NM_HOST", "127.0.0.1")
    driver = driver_on("hdfs://127.0.0.1:8020", {zip_at: b"PK-hdfs"}, opened)
    monkeypatch.setattr(SparkSession, "builder", SimpleNamespace(getOrCreate=lambda: driver))
    assert os.path.dirname(os.path.dirname(job_runner.fetch(zip_at))) == str(container)
    # on a local default file system, and for file: URIs, the path itself, read from nothing
    opened.clear()
    driver = driver_on("file:///", {}, opened)
    monkeypatch.setattr(SparkSession, "builder", SimpleNamespace(getOrCreate=lambda: driver))
    assert job_runner.fetch(zip_at) == zip_at
    assert job_runner.fetch(f"file:{zip_at}") == zip_at
    assert opened == []
