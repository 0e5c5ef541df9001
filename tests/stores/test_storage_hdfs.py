"""`hdfs://` files through WebHDFS: one contract run on a fake WebHDFS (tests/support/
fake_webhdfs.py) and on the real MiniDFSCluster (marker yarn, tests/support/hadoop_cluster.py);
the faults a real NameNode cannot show on cue (503, no answer) on the fake only."""

from __future__ import annotations

import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from flink_sql_runner.stores.storage import FileStorage, IsAFolder, StorageError
from flink_sql_runner.stores.webhdfs import namenode_urls
from tests.support.fake_webhdfs import FakeWebHdfs
from tests.support.hadoop_site import site


@pytest.fixture
def fake(tmp_path: Path):
    with FakeWebHdfs() as server:
        conf = tmp_path / "conf"
        site(conf, "core-site.xml", **{"fs.defaultFS": "hdfs://127.0.0.1:8020"})
        address = server.url.removeprefix("http://")
        site(conf, "hdfs-site.xml", **{"dfs.namenode.http-address": address})
        server.env = {"HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": "ci"}
        yield server


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.yarn)])
def hdfs(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileStorage, str]:
    """A storage and a fresh folder on a fake WebHDFS or on the real MiniDFSCluster."""
    if request.param == "fake":
        server = request.getfixturevalue("fake")
        return FileStorage(env=server.env, hdfs_timeout=5), "hdfs:///t"
    cluster = request.getfixturevalue("hadoop_cluster")
    storage = FileStorage(env={"HADOOP_CONF_DIR": str(cluster.conf_dir)})
    return storage, f"{cluster.default_fs}/contract-{uuid.uuid4().hex[:8]}"


def test_files_are_written_read_listed_and_deleted(hdfs) -> None:
    storage, root = hdfs
    assert storage.read_text(f"{root}/a/x.json") is None
    assert storage.is_empty(root)
    storage.write_text(f"{root}/a/x.json", '{"v": 1}', private=True)
    storage.write_text(f"{root}/a/x.json", '{"v": 2}')
    storage.write_bytes(f"{root}/a/b/c/y.bin", b"\x00\x01")
    assert storage.read_text(f"{root}/a/x.json") == '{"v": 2}'
    assert not storage.is_empty(root)
    assert storage.file_names(f"{root}/a") == ["x.json"]
    assert storage.dir_names(f"{root}/a") == ["b"]
    assert storage.file_names(f"{root}/a/x.json") == []
    assert storage.dir_names(f"{root}/nothing") == []
    assert storage.tree(root) == [(f"{root}/a/b/c/y.bin", 2), (f"{root}/a/x.json", 8)]
    with pytest.raises(IsAFolder):
        storage.read_bytes(f"{root}/a")
    storage.delete(f"{root}/a/x.json")
    storage.delete(f"{root}/a/x.json")  # a missing file is fine
    assert storage.tree(root) == [(f"{root}/a/b/c/y.bin", 2)]
    storage.delete_tree(root)
    storage.delete_tree(root)
    assert storage.is_empty(root)
    assert storage.tree(root) == []


def test_a_listing_gives_every_file_with_tokens_that_a_write_moves(hdfs) -> None:
    storage, root = hdfs
    assert storage.listing(f"{root}/_status") == []
    storage.write_text(f"{root}/_status/a.v1.json", '{"state": "active"}')
    storage.write_text(f"{root}/_status/b.v2.json", '{"state": "starting"}')
    storage.write_text(f"{root}/_status/deeper/c.json", "{}")
    first = storage.listing(f"{root}/_status")
    assert [listed.location for listed in first] == [
        f"{root}/_status/a.v1.json", f"{root}/_status/b.v2.json", f"{root}/_status/deeper/c.json"
    ]  # fmt: skip
    time.sleep(0.01)  # the real NameNode counts milliseconds
    storage.write_text(f"{root}/_status/a.v1.json", '{"state": "active"}')  # the same bytes
    again = {listed.location: listed for listed in storage.listing(f"{root}/_status")}
    assert again[first[0].location].modified != first[0].modified
    assert again[first[1].location] == first[1]


def test_a_listing_that_fails_is_an_error_never_a_part(fake) -> None:
    storage = FileStorage(env=fake.env, hdfs_timeout=5)
    fake.files["/t/_status/a.v1.json"] = b"{}"
    fake.fail("LISTSTATUS", 503)
    with pytest.raises(StorageError, match="HTTP 503"):
        storage.listing("hdfs:///t/_status")


def test_a_write_leaves_no_temporary_file(hdfs) -> None:
    storage, root = hdfs
    storage.write_text(f"{root}/status.json", "one")
    storage.write_text(f"{root}/status.json", "two")
    assert storage.tree(root) == [(f"{root}/status.json", 3)]


@pytest.mark.parametrize("op", ["OPEN", "LISTSTATUS", "GETCONTENTSUMMARY"])
def test_a_namenode_that_fails_a_read_is_an_error_never_absent(fake, op: str) -> None:
    storage = FileStorage(env=fake.env, hdfs_timeout=5)
    fake.files["/t/x.json"] = b"{}"
    fake.fail(op, 503)
    with pytest.raises(StorageError, match="HTTP 503"):
        {
            "OPEN": lambda: storage.read_text("hdfs:///t/x.json"),
            "LISTSTATUS": lambda: storage.file_names("hdfs:///t"),
            "GETCONTENTSUMMARY": lambda: storage.is_empty("hdfs:///t"),
        }[op]()


def test_a_datanode_that_fails_a_read_is_an_error(fake) -> None:
    fake.files["/t/x.json"] = b"{}"
    fake.fail("OPEN", 503, where="datanode")
    with pytest.raises(StorageError, match="HTTP 503"):
        FileStorage(env=fake.env).read_text("hdfs:///t/x.json")


def test_a_read_without_an_answer_times_out_as_an_error(fake) -> None:
    fake.files["/t/x.json"] = b"{}"
    fake.hang("OPEN")
    with pytest.raises(StorageError, match="no answer from WebHDFS"):
        FileStorage(env=fake.env, hdfs_timeout=0.5).read_text("hdfs:///t/x.json")


@pytest.mark.parametrize(
    "op,where", [("CREATE", "namenode"), ("CREATE", "datanode"), ("RENAME", "namenode")]
)
def test_a_failed_write_leaves_the_old_file_whole(fake, op: str, where: str) -> None:
    storage = FileStorage(env=fake.env, hdfs_timeout=5)
    storage.write_text("hdfs:///t/status.json", "old")
    fake.fail(op, 503, where=where)
    with pytest.raises(StorageError, match="cannot write hdfs:///t/status.json: HTTP 503"):
        storage.write_text("hdfs:///t/status.json", "new")
    assert storage.read_text("hdfs:///t/status.json") == "old"
    assert [name for name in fake.files if name != "/t/status.json"] == []


def test_a_write_goes_to_a_temporary_file_renamed_over_the_target(fake) -> None:
    storage = FileStorage(env=fake.env)
    storage.write_text("hdfs:///t/manifest.json", "{}", private=True)
    ops = [(method, op) for method, op, _ in fake.requests]
    assert ops == [("PUT", "CREATE"), ("PUT", "CREATE"), ("PUT", "RENAME")]
    created = fake.requests[0][2]
    assert created.startswith("/t/.manifest.json.") and created.endswith(".tmp")
    assert fake.modes["/t/manifest.json"] == "600"


def test_a_refused_user_says_what_to_check(fake) -> None:
    fake.fail("OPEN", 403)
    with pytest.raises(StorageError, match="HADOOP_USER_NAME"):
        FileStorage(env=fake.env).read_text("hdfs:///t/x.json")


def test_the_namenode_is_found_in_the_hadoop_configuration(tmp_path: Path) -> None:
    env = {"HADOOP_CONF_DIR": str(tmp_path)}
    site(tmp_path, "core-site.xml", **{"fs.defaultFS": "hdfs://nn.internal:8020"})
    site(tmp_path, "hdfs-site.xml", **{"dfs.namenode.http-address": "0.0.0.0:9870"})
    assert namenode_urls("hdfs:///a", env) == ["http://nn.internal:9870/webhdfs/v1"]
    assert namenode_urls("hdfs://other:8020/a", env) == ["http://other:9870/webhdfs/v1"]
    site(tmp_path, "hdfs-site.xml")
    assert namenode_urls("hdfs://other:8020/a", env) == ["http://other:9870/webhdfs/v1"]
    site(
        tmp_path,
        "hdfs-site.xml",
        **{
            "dfs.http.policy": "HTTPS_ONLY",
            "dfs.ha.namenodes.prod": "nn1,nn2",
            "dfs.namenode.https-address.prod.nn1": "a.internal:9871",
            "dfs.namenode.https-address.prod.nn2": "b.internal:9871",
        },
    )
    assert namenode_urls("hdfs://prod/a", env) == [
        "https://a.internal:9871/webhdfs/v1",
        "https://b.internal:9871/webhdfs/v1",
    ]
    with pytest.raises(ValueError, match="fs.defaultFS"):
        namenode_urls("hdfs:///a", {})


def test_a_standby_namenode_is_passed_over(fake, tmp_path: Path) -> None:
    with FakeWebHdfs() as standby:
        standby.standby = True
        conf = tmp_path / "ha"
        site(conf, "core-site.xml", **{"fs.defaultFS": "hdfs://prod"})
        nodes = {"nn1": standby.url, "nn2": fake.url}
        site(
            conf,
            "hdfs-site.xml",
            **{"dfs.ha.namenodes.prod": "nn1,nn2"},
            **{
                f"dfs.namenode.http-address.prod.{node}": url.removeprefix("http://")
                for node, url in nodes.items()
            },
        )
        fake.files["/t/x.json"] = b"active"
        storage = FileStorage(env={"HADOOP_CONF_DIR": str(conf), "HADOOP_USER_NAME": "ci"})
        assert storage.read_text("hdfs:///t/x.json") == "active"
        assert [op for _, op, _ in standby.requests] == ["OPEN"]


def test_a_path_without_a_scheme_is_on_the_default_file_system(hdfs) -> None:
    """As Spark puts it: with HDFS as `fs.defaultFS` in HADOOP_CONF_DIR's core-site.xml, a
    checkpoint root `/ckpt` is on HDFS, where the driver writes it (found on the MiniYARNCluster:
    the deployer wrote the runtime manifest on its own disk, the driver looked on HDFS)."""
    storage, root = hdfs
    root = f"{root}/{uuid.uuid4().hex[:8]}"
    path = urllib.parse.urlsplit(root).path  # root without its scheme and NameNode
    storage.write_text(f"{path}/a/x.json", "{}")
    assert storage.read_text(f"{root}/a/x.json") == "{}"
    assert not Path(f"{path}/a/x.json").exists(), "nothing on the local disk"
    assert storage.read_text(f"{path}/a/x.json") == "{}"
    assert storage.file_names(f"{path}/a") == ["x.json"]
    assert storage.tree(path) == [(f"{path}/a/x.json", 2)], "named as the caller names them"
    assert not storage.is_empty(path)
    storage.delete_tree(path)
    assert storage.tree(root) == []


def test_the_default_file_system_comes_from_core_site(fake, tmp_path: Path) -> None:
    storage = FileStorage(env=fake.env)
    assert storage.located("/a/b") == "hdfs://127.0.0.1:8020/a/b"
    assert storage.located("a/b") == "hdfs://127.0.0.1:8020/user/ci/a/b", "the user's home"
    for written in ("file:/a/b", "s3a://bucket/a", "hdfs://other:8020/a"):
        assert storage.located(written) == written
    local = tmp_path / "local"
    for conf in ({}, {"fs.defaultFS": "file:///"}):
        site(local, "core-site.xml", **conf)
        storage = FileStorage(env={"HADOOP_CONF_DIR": str(local)})
        storage.write_text(f"{tmp_path}/x.json", "{}")
        assert (tmp_path / "x.json").read_text() == "{}"
    assert FileStorage(env={}).located("/a/b") == "/a/b", "no Hadoop configuration: local"
    site(local, "core-site.xml", **{"fs.default.name": "hdfs://old:8020"})
    assert FileStorage(env={"HADOOP_CONF_DIR": str(local)}).located("/a") == "hdfs://old:8020/a"
    site(local, "core-site.xml", **{"fs.defaultFS": "viewfs://cluster"})
    with pytest.raises(StorageError, match="viewfs://cluster; the deployer reads only local"):
        FileStorage(env={"HADOOP_CONF_DIR": str(local)}).read_text("/a/x.json")
