"""The checkpoint storage's listing with tokens (`Storage.listing`) on a local folder and on S3
(moto's server, and behind the fault proxy); HDFS's is in test_storage_hdfs.py. A write moves
a file's modification token; on S3 a rewrite of the same bytes keeps its content token (the
ETag). A failure on any page fails the whole listing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from flink_sql_runner.stores import storage as storage_module
from flink_sql_runner.stores.storage import FileStorage, StorageError
from tests.support.faultproxy import FaultProxy
from tests.support.s3_requests import parsed_pages


def test_a_local_listing_gives_every_file_with_tokens(tmp_path: Path) -> None:
    storage = FileStorage()
    root = str(tmp_path / "ckpt")
    assert storage.listing(f"{root}/_status") == []
    storage.write_text(f"{root}/_status/a.v1.json", '{"state": "active"}')
    storage.write_text(f"{root}/_status/b.v2.json", "{}")
    storage.write_text(f"{root}/_status/deeper/c.json", "{}")
    first = storage.listing(f"{root}/_status")
    assert [listed.location for listed in first] == [
        f"{root}/_status/a.v1.json", f"{root}/_status/b.v2.json", f"{root}/_status/deeper/c.json"
    ]  # fmt: skip
    os.utime(f"{root}/_status/a.v1.json", ns=(1, 1))  # an earlier write, whatever the clock
    before = storage.listing(f"{root}/_status")[0]
    storage.write_text(f"{root}/_status/a.v1.json", '{"state": "active"}')
    after = storage.listing(f"{root}/_status")[0]
    assert after.modified != before.modified and after.content != before.content
    assert storage.listing(f"file:{root}/_status")[0].location == f"file:{root}/_status/a.v1.json"


def test_a_local_listing_that_cannot_read_a_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage()
    storage.write_text(f"{tmp_path}/_status/a.v1.json", "{}")

    def refused(self: Path) -> os.stat_result:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "lstat", refused)
    with pytest.raises(StorageError, match="cannot read .*a.v1.json: Permission denied"):
        storage.listing(f"{tmp_path}/_status")


@pytest.mark.s3
def test_an_s3_listing_keeps_the_etag_of_the_same_bytes_and_moves_last_modified(
    s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(s3_client)
    root = f"s3://{s3_bucket}/ckpt"
    for name in ("a", "b", "c"):
        storage.write_text(f"{root}/_status/{name}.v1.json", f'{{"name": "{name}"}}')
    s3_client.put_object(Bucket=s3_bucket, Key="ckpt/_status/marker/", Body=b"")  # S3A's
    monkeypatch.setattr(storage_module, "LIST_PAGE", 2)  # two pages
    first = storage.listing(f"{root}/_status")
    assert [listed.location for listed in first] == [
        f"{root}/_status/{name}.v1.json" for name in ("a", "b", "c")
    ]
    assert len({listed.content for listed in first}) == 3
    s3_client.put_object(  # the same bytes again
        Bucket=s3_bucket, Key="ckpt/_status/a.v1.json", Body=b'{"name": "a"}'
    )
    again = storage.listing(f"s3a://{s3_bucket}/ckpt/_status/")
    assert again[0].location == f"s3a://{s3_bucket}/ckpt/_status/a.v1.json"
    assert again[0].content == first[0].content
    storage.write_text(f"{root}/_status/b.v1.json", '{"name": "B"}')
    assert storage.listing(f"{root}/_status")[1].content != first[1].content
    assert storage.listing(f"{root}/nothing") == []


@pytest.mark.s3
def test_an_s3_listing_is_read_the_light_way_with_botocores_tokens_and_requests(
    s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = FileStorage(s3_client)
    for name in ("a", "b", "c", "d", "e"):
        storage.write_text(f"s3://{s3_bucket}/ckpt/_status/{name}.v1.json", "{}")
    storage.write_text(f"s3://{s3_bucket}/ckpt/_status/deeper/f.v1.beat", "")
    parsed = parsed_pages(monkeypatch)
    monkeypatch.setattr(storage_module, "LIST_PAGE", 4)
    sent: list[str] = []
    s3_client.meta.events.register("before-send.s3", lambda request, **_: sent.append(request.url))
    listed = storage.listing(f"s3://{s3_bucket}/ckpt/_status")
    assert parsed == [4, 2]  # every page read the light way, 4 keys a page, at any depth
    assert len(sent) == 2 and all("max-keys=4" in url and "delimiter" not in url for url in sent)
    paginator = s3_client.get_paginator("list_objects_v2")
    botocores = [  # the tokens as botocore's parse made them before
        (f"s3://{s3_bucket}/{item['Key']}", item["ETag"], item["LastModified"].isoformat())
        for page in paginator.paginate(Bucket=s3_bucket, Prefix="ckpt/_status/")
        for item in page["Contents"]
    ]
    assert [(x.location, x.content, x.modified) for x in listed] == botocores


@pytest.mark.s3
def test_an_s3_listing_that_fails_on_a_later_page_fails_whole(
    fault_proxy: FaultProxy, proxied_client: Any, s3_client: Any, s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)
    for name in ("a", "b", "c"):
        s3_client.put_object(Bucket=s3_bucket, Key=f"ckpt/_status/{name}.v1.json", Body=b"{}")
    monkeypatch.setattr(storage_module, "LIST_PAGE", 2)
    storage = FileStorage(proxied_client)
    assert len(storage.listing(f"s3://{s3_bucket}/ckpt/_status")) == 3
    fault_proxy.clear()
    calls = {"n": 0}

    def second_page_fails(event_name: str, request: Any, **_: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            fault_proxy.inject("slowdown", times=100)

    proxied_client.meta.events.register("before-send.s3", second_page_fails)
    with pytest.raises(StorageError, match="SlowDown"):
        storage.listing(f"s3://{s3_bucket}/ckpt/_status")
    assert len(fault_proxy.seen()) == 6  # the first page, then five attempts of the second
