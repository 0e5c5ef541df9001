"""S3Store against moto's S3 server on 127.0.0.1 (real HTTP)."""

from __future__ import annotations

import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest
from botocore.config import Config

from flink_sql_runner.errors import FsrError, StoreError
from flink_sql_runner.model.stored import Stored, StoredManifest
from flink_sql_runner.stores import open_store
from flink_sql_runner.stores.base import StoreConflict
from flink_sql_runner.stores.s3 import S3Store, make_s3_client
from flink_sql_runner.stores.s3uri import parse_s3_uri
from tests.support.jobs import manifest


def calls_to(client: Any, operation: str) -> list[str]:
    """Record the URL of every `operation` request the client sends from now on."""
    urls: list[str] = []
    client.meta.events.register(
        f"before-send.s3.{operation}", lambda request, **_: urls.append(request.url)
    )
    return urls


def keys(client: Any, bucket: str) -> list[str]:
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


# -- URIs and the client --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        ("s3://bucket/prefix/", ("bucket", "prefix/")),
        ("s3a://bucket/a/b/c", ("bucket", "a/b/c")),
        ("s3://bucket", ("bucket", "")),
        ("s3://bucket/", ("bucket", "")),
    ],
)
def test_parse_s3_uri(uri: str, expected: tuple[str, str]) -> None:
    assert parse_s3_uri(uri) == expected


@pytest.mark.parametrize("uri", ["gs://bucket/x", "/tmp/x", "s3://", "s3:///key", "S3//b/k"])
def test_parse_s3_uri_refuses_other_uris(uri: str) -> None:
    with pytest.raises(FsrError, match="s3://"):
        parse_s3_uri(uri)


@pytest.mark.s3
def test_client_honours_standard_aws_settings(
    s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = make_s3_client()
    assert client.meta.endpoint_url == s3_env["AWS_ENDPOINT_URL"]
    assert client.meta.endpoint_url.startswith("http://127.0.0.1:")
    assert client.meta.region_name == "us-east-1"
    # 5 attempts in all (botocore's Config "max_attempts" would mean 5 retries = 6 attempts).
    assert client.meta.config.retries == {"mode": "standard", "total_max_attempts": 5}
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "9")
    monkeypatch.setenv("AWS_RETRY_MODE", "adaptive")
    client = make_s3_client()
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.retries == {"mode": "adaptive", "total_max_attempts": 9}


@pytest.mark.s3
@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("AWS_PROFILE", "no-such-profile", r"profile \(no-such-profile\) could not be found"),
        ("AWS_ENDPOINT_URL", "not a url", "not a url"),
    ],
)
def test_bad_aws_settings_are_a_clear_error(
    s3_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(FsrError, match=rf"cannot set up the S3 client: .*{message}"):
        S3Store("bucket", "jobs/")


@pytest.mark.s3
def test_the_client_really_talks_http_to_127_0_0_1(
    s3_client: Any, s3_bucket: str, s3_endpoint: str
) -> None:
    puts = calls_to(s3_client, "PutObject")
    S3Store(s3_bucket, "jobs/", s3_client).write(manifest("over-http"), None)
    assert puts == [f"{s3_endpoint}/{s3_bucket}/jobs/over-http.yaml"]
    # Read back with plain urllib, no boto: the object is in the server behind that port.
    url = s3_client.generate_presigned_url(
        "get_object", Params={"Bucket": s3_bucket, "Key": "jobs/over-http.yaml"}
    )
    assert url.startswith(f"{s3_endpoint}/")
    with urllib.request.urlopen(url) as response:
        assert b"name: over-http" in response.read()


@pytest.mark.s3
def test_open_store_builds_an_s3_store_from_the_environment(
    s3_env: dict[str, str], s3_bucket: str, tmp_path: Any
) -> None:
    store = open_store(f"s3a://{s3_bucket}/team/jobs", tmp_path)
    assert isinstance(store, S3Store)
    assert store.location == f"s3://{s3_bucket}/team/jobs/"
    store.write(manifest("via-open-store"), None)
    assert store.list_names() == ["via-open-store"]


# -- reading and writing --------------------------------------------------------------------------


@pytest.mark.s3
def test_round_trip(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "prod/jobs", s3_client)
    assert store.location == f"s3://{s3_bucket}/prod/jobs/"
    original = manifest("orders", 3, description="quotes ' \" \\ -- /* ü 日本 */")
    token = store.write(original, None)
    assert store.read("orders") == Stored(original, token)
    assert token == s3_client.head_object(Bucket=s3_bucket, Key="prod/jobs/orders.yaml")["ETag"]
    head = s3_client.head_object(Bucket=s3_bucket, Key="prod/jobs/orders.yaml")
    assert head["ContentType"] == "text/yaml"
    assert keys(s3_client, s3_bucket) == ["prod/jobs/orders.yaml"]


@pytest.mark.s3
def test_store_at_the_bucket_root(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "", s3_client)
    assert store.location == f"s3://{s3_bucket}/"
    token = store.write(manifest("at-root"), None)
    assert store.list_names() == ["at-root"]
    assert store.read("at-root") == Stored(manifest("at-root"), token)
    archived = store.archive("at-root", token)
    assert archived.startswith(f"s3://{s3_bucket}/_archive/at-root/")
    assert store.list_names() == []


@pytest.mark.s3
def test_missing_manifest_reads_as_none(s3_client: Any, s3_bucket: str) -> None:
    assert S3Store(s3_bucket, "jobs/", s3_client).read("nobody") == Stored(None, None)


@pytest.mark.s3
def test_write_is_one_put_and_readers_never_see_a_part(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    token = store.write(manifest("busy", 1, "v1-" + "x" * 20_001), None)
    puts = calls_to(s3_client, "PutObject")
    seen: set[int] = set()
    done = threading.Event()

    def reader() -> None:
        readers_store = S3Store(s3_bucket, "jobs/", s3_client)  # another process's view
        while not done.is_set():
            got = readers_store.read("busy").manifest
            assert got is not None
            version = got.meta.query_version
            # The body carries its version twice, far apart: a torn read would not match.
            assert got.job["description"] == f"v{version}-" + "x" * (20_000 + version)
            seen.add(version)

    with ThreadPoolExecutor(max_workers=4) as pool:
        readers = [pool.submit(reader) for _ in range(3)]
        for version in range(2, 12):
            body = manifest("busy", version, f"v{version}-" + "x" * (20_000 + version))
            token = store.write(body, token)
        done.set()
        for future in readers:
            future.result()
    assert len(puts) == 10  # a single PutObject per write, no multipart, no temporary object
    assert len(seen) > 1
    assert keys(s3_client, s3_bucket) == ["jobs/busy.yaml"]
    assert store.read("busy").manifest.meta.query_version == 11


@pytest.mark.s3
def test_unsupported_schema_version_is_a_store_error(s3_client: Any, s3_bucket: str) -> None:
    text = manifest("future").to_yaml().replace("schema-version: 1", "schema-version: 99")
    assert "schema-version: 99" in text
    s3_client.put_object(Bucket=s3_bucket, Key="jobs/future.yaml", Body=text.encode())
    with pytest.raises(StoreError, match=r"schema-version 99 is not supported") as caught:
        S3Store(s3_bucket, "jobs/", s3_client).read("future")
    assert f"s3://{s3_bucket}/jobs/future.yaml" in str(caught.value)


@pytest.mark.s3
@pytest.mark.parametrize(
    ("body", "message"),
    [(b"name: [unclosed", "stored manifest"), (b"\xff\xfe not utf-8", "not UTF-8")],
)
def test_unreadable_manifest_is_a_store_error(
    s3_client: Any, s3_bucket: str, body: bytes, message: str
) -> None:
    s3_client.put_object(Bucket=s3_bucket, Key="jobs/broken.yaml", Body=body)
    with pytest.raises(StoreError, match=message):
        S3Store(s3_bucket, "jobs/", s3_client).read("broken")


@pytest.mark.s3
def test_missing_bucket_is_a_clear_store_error(s3_client: Any, s3_env: dict[str, str]) -> None:
    store = S3Store("no-such-bucket-here", "jobs/", s3_client)
    attempts = [
        store.list_names,
        lambda: store.read("a"),
        lambda: store.write(manifest("a"), None),
        lambda: store.archive("a", '"etag"'),
    ]
    for attempt in attempts:
        with pytest.raises(StoreError) as caught:
            attempt()
        message = str(caught.value)
        assert "bucket no-such-bucket-here does not exist" in message
        assert "\n" not in message
        assert s3_env["AWS_SECRET_ACCESS_KEY"] not in message
        assert s3_env["AWS_ACCESS_KEY_ID"] not in message


@pytest.mark.s3
def test_unreachable_endpoint_is_a_clear_store_error(s3_env: dict[str, str]) -> None:
    # A port nobody listens on (the server's port is taken by moto; this one was just freed).
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = boto3.session.Session().client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=2),
    )
    with pytest.raises(StoreError, match=rf"cannot list s3://b/jobs/: .*127\.0\.0\.1:{port}"):
        S3Store("b", "jobs/", client).list_names()


# -- listing --------------------------------------------------------------------------------------


@pytest.mark.s3
def test_listing_more_than_1000_manifests_pages(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "many/", s3_client)
    names = [f"job-{i:04d}" for i in range(1050)]
    with ThreadPoolExecutor(max_workers=32) as pool:
        list(pool.map(lambda n: store.write(manifest(n), None), names))
    listings = calls_to(s3_client, "ListObjectsV2")
    assert store.list_names() == names
    assert len(listings) == 2  # S3 answers at most 1,000 keys per page


@pytest.mark.s3
def test_listing_skips_sub_folders_other_files_and_other_prefixes(
    s3_client: Any, s3_bucket: str
) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    store.write(manifest("b-job"), None)
    store.write(manifest("a-job"), None)
    for key in [
        "jobs/_archive/old/2024-01-01T000000Z.yaml",
        "jobs/team/nested.yaml",
        "jobs/notes.txt",
        "jobs/a-job.yaml.bak",
        "jobs/.yaml",
        "jobs-old/stale.yaml",
        "top.yaml",
    ]:
        s3_client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    assert store.list_names() == ["a-job", "b-job"]


@pytest.mark.s3
def test_empty_store_lists_nothing(s3_client: Any, s3_bucket: str) -> None:
    assert S3Store(s3_bucket, "nothing-here/", s3_client).list_names() == []


# -- archive --------------------------------------------------------------------------------------


@pytest.mark.s3
def test_archive_moves_the_manifest_out_of_the_live_set(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    store.write(manifest("keep"), None)
    token = store.write(manifest("gone", 4), None)
    first = store.archive("gone", token)
    assert first.startswith(f"s3://{s3_bucket}/jobs/_archive/gone/") and first.endswith(".yaml")
    assert store.read("gone") == Stored(None, None)
    assert store.list_names() == ["keep"]
    bucket, key = parse_s3_uri(first)
    body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
    assert StoredManifest.from_yaml(body, first) == manifest("gone", 4)
    # Archiving the same name again keeps both copies.
    token = store.write(manifest("gone", 5), None)
    second = store.archive("gone", token)
    assert second != first
    assert [k for k in keys(s3_client, s3_bucket) if "_archive" in k] == sorted(
        [parse_s3_uri(first)[1], parse_s3_uri(second)[1]]
    )


@pytest.mark.s3
def test_archiving_a_missing_manifest_is_a_store_error(s3_client: Any, s3_bucket: str) -> None:
    with pytest.raises(StoreError, match=r"cannot archive .*jobs/ghost\.yaml: it does not exist"):
        S3Store(s3_bucket, "jobs/", s3_client).archive("ghost", '"some-etag"')


# -- read_many ------------------------------------------------------------------------------------


@pytest.mark.s3
@pytest.mark.parametrize("workers", [1, 16])
def test_read_many(s3_client: Any, s3_bucket: str, workers: int) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    for i in range(40):
        store.write(manifest(f"job-{i}", i + 1), None)
    wanted = [f"job-{i}" for i in range(40)] + ["missing"]
    got = store.read_many(wanted, max_workers=workers).manifests
    assert list(got) == wanted
    assert got["missing"] is None
    assert all(got[f"job-{i}"] == manifest(f"job-{i}", i + 1) for i in range(40))


@pytest.mark.s3
def test_read_many_reports_a_broken_manifest(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    for i in range(10):
        store.write(manifest(f"job-{i}"), None)
    s3_client.put_object(Bucket=s3_bucket, Key="jobs/job-5.yaml", Body=b"schema-version: 7\n")
    reads = S3Store(s3_bucket, "jobs/", s3_client).read_many(
        [f"job-{i}" for i in range(10)], max_workers=8
    )
    assert list(reads.problems) == ["job-5"], "one broken manifest is that job's problem"
    assert "job-5.yaml: schema-version 7" in reads.problems["job-5"]
    assert sorted(reads.manifests) == [f"job-{i}" for i in range(10) if i != 5]


def test_read_many_works_for_the_local_store_too(tmp_path: Any) -> None:
    from flink_sql_runner.stores.local import LocalStore

    store = LocalStore(tmp_path / "manifests")
    for i in range(5):
        store.write(manifest(f"job-{i}", i + 1), None)
    got = store.read_many(["job-3", "nope", "job-0", "job-3"], max_workers=4).manifests
    assert got == {"job-3": manifest("job-3", 4), "nope": None, "job-0": manifest("job-0", 1)}


# -- the index: one object instead of a GET per manifest -------------------------------------------


@pytest.mark.s3
def test_a_refreshed_index_answers_reads_without_a_get_per_manifest(
    s3_client: Any, s3_bucket: str
) -> None:
    writer = S3Store(s3_bucket, "jobs/", s3_client)
    for i in range(30):
        writer.write(manifest(f"job-{i}", i + 1), None)
    assert writer.refresh_index()
    assert not writer.refresh_index(), "nothing changed since"

    reader = S3Store(s3_bucket, "jobs/", s3_client)
    snapshot = reader.snapshot()
    gets = calls_to(s3_client, "GetObject")
    names = [f"job-{i}" for i in range(30)] + ["nope"]
    got = reader.read_many(names, max_workers=8, snapshot=snapshot).manifests
    assert got["nope"] is None
    assert all(got[f"job-{i}"] == manifest(f"job-{i}", i + 1) for i in range(30))
    assert [url.rsplit("/", 1)[1] for url in gets] == ["_index.json"]


@pytest.mark.s3
def test_an_index_entry_is_used_only_while_its_etag_matches(s3_client: Any, s3_bucket: str) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    for i in range(3):
        store.write(manifest(f"job-{i}"), None)
    assert store.refresh_index()
    # Changed behind the index's back (another deploy, or a hand edit): the GET wins.
    s3_client.put_object(
        Bucket=s3_bucket, Key="jobs/job-1.yaml", Body=manifest("job-1", 9).to_yaml().encode()
    )
    s3_client.delete_object(Bucket=s3_bucket, Key="jobs/job-2.yaml")
    reader = S3Store(s3_bucket, "jobs/", s3_client)
    snapshot = reader.snapshot()
    gets = calls_to(s3_client, "GetObject")
    got = reader.read_many(["job-0", "job-1", "job-2"], 2, snapshot=snapshot).manifests
    assert got == {"job-0": manifest("job-0"), "job-1": manifest("job-1", 9), "job-2": None}
    assert sorted(url.rsplit("/", 1)[1] for url in gets) == ["_index.json", "job-1.yaml"]


@pytest.mark.s3
@pytest.mark.parametrize("body", [b"not json", b'{"schema-version": 99}', b'{"entries": 1}'])
def test_an_unusable_index_is_ignored(s3_client: Any, s3_bucket: str, body: bytes) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    store.write(manifest("job-0"), None)
    s3_client.put_object(Bucket=s3_bucket, Key="jobs/_index.json", Body=body)
    reader = S3Store(s3_bucket, "jobs/", s3_client)
    assert reader.read_many(["job-0"], 1, snapshot=reader.snapshot()).manifests == {
        "job-0": manifest("job-0")
    }


@pytest.mark.s3
def test_a_deployer_cannot_overwrite_what_another_recorded_since_it_read(
    s3_client: Any, s3_bucket: str
) -> None:
    """Fencing: the one that lost the lock read v1, the next holder recorded v2 meanwhile."""
    S3Store(s3_bucket, "jobs/", s3_client).write(manifest("job", 1), None)
    stale, current = S3Store(s3_bucket, "jobs/", s3_client), S3Store(s3_bucket, "jobs/", s3_client)
    stale_read = stale.read("job")
    current_token = current.write(manifest("job", 2), current.read("job").token)
    with pytest.raises(StoreConflict, match="changed since this deploy read it"):
        stale.write(manifest("job", 3), stale_read.token)
    with pytest.raises(StoreConflict):
        stale.archive("job", stale_read.token)
    assert current.read("job") == Stored(manifest("job", 2), current_token)
    fresh = S3Store(s3_bucket, "jobs/", s3_client)
    with pytest.raises(StoreConflict):
        fresh.write(manifest("job", 4), None), "a write of a new manifest finds one there"


def test_the_local_store_fences_its_writes_the_same_way(tmp_path: Any) -> None:
    from flink_sql_runner.stores.local import LocalStore

    LocalStore(tmp_path).write(manifest("job", 1), None)
    stale, current = LocalStore(tmp_path), LocalStore(tmp_path)
    stale_read = stale.read("job")
    current_token = current.write(manifest("job", 2), current.read("job").token)
    with pytest.raises(StoreConflict):
        stale.write(manifest("job", 3), stale_read.token)
    with pytest.raises(StoreConflict):
        stale.archive("job", stale_read.token)
    with pytest.raises(StoreConflict):
        stale.write(manifest("job", 4), None), "a write of a new manifest finds one there"
    assert current.read("job") == Stored(manifest("job", 2), current_token)


@pytest.mark.s3
def test_the_store_s_clock_is_s3_s_date(s3_client: Any, s3_bucket: str) -> None:
    """Issue 52, finding 6: `now - 2 hours` is made a time on the store's clock, read from the
    `Date` of a one-key listing of the intent records (moto's server answers with this
    machine's clock, to the second)."""
    store = S3Store(s3_bucket, "jobs/", s3_client)
    urls = calls_to(s3_client, "ListObjectsV2")
    before = time.time()
    found = store.clock()
    assert int(before) - 1 <= found <= time.time() + 1
    assert len(urls) == 1 and "max-keys=1" in urls[0] and "jobs%2F_intents%2F" in urls[0]
