"""The light reading of S3 listings (stores/s3_listing.py) against botocore's own, on moto's S3
server's real answers: the same keys, ETags, sizes and modification times, page by page; keys
that XML escapes and URL encoding must carry; and errors raised as before."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.awsrequest import AWSResponse

from flink_sql_runner.errors import StoreError
from flink_sql_runner.stores import s3_listing
from flink_sql_runner.stores.s3 import S3Store
from flink_sql_runner.stores.s3_listing import Listed, modified_at, pages
from tests.support.jobs import manifest
from tests.support.s3_requests import parsed_pages

pytestmark = pytest.mark.s3

PREFIX = "jobs/_watch/"
#: Names that XML must escape, URL encoding must carry (EncodingType url), or both.
NAMES = [
    "plain.json",
    "with space.json",
    "a&b<c>d.json",
    "plus+sign.json",
    "percent%20not-a-space.json",
    "quotes\"'.json",
    "ünïcødé-日本.json",
    "tilde~equals=semi;.json",
]


def botocores(client: Any, bucket: str, page_size: int) -> list[list[tuple[Any, ...]]]:
    """Each page as botocore's paginator parses it: (key, ETag, size, LastModified)."""
    paginator = client.get_paginator("list_objects_v2")
    config = {"PageSize": page_size}
    return [
        [(i["Key"], i["ETag"], i["Size"], i["LastModified"]) for i in page.get("Contents", [])]
        for page in paginator.paginate(
            Bucket=bucket, Prefix=PREFIX, Delimiter="/", PaginationConfig=config
        )
    ]


def lights(client: Any, bucket: str, page_size: int) -> list[list[tuple[Any, ...]]]:
    return [
        [(k.key, k.etag, k.size, modified_at(k.modified)) for k in page.keys]
        for page in pages(client, bucket, PREFIX, max_keys=page_size)
    ]


@pytest.fixture
def listed(s3_client: Any, s3_bucket: str) -> str:
    for i, name in enumerate(NAMES):
        s3_client.put_object(Bucket=s3_bucket, Key=PREFIX + name, Body=b"x" * i)
    s3_client.put_object(Bucket=s3_bucket, Key=PREFIX + "deeper/not-listed.json", Body=b"{}")
    return s3_bucket


def test_pages_read_what_botocore_reads(
    s3_client: Any, listed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_light(answer: dict[str, Any]) -> Any:
        raise AssertionError(f"a page was parsed by botocore: {sorted(answer)}")

    monkeypatch.setattr(s3_listing, "_from_parsed", not_light)
    expected = botocores(s3_client, listed, 3)
    assert len(expected) == 3  # three pages, two continuation tokens (the common prefix counts)
    assert lights(s3_client, listed, 3) == expected
    assert sorted(k for page in expected for k, *_ in page) == sorted(PREFIX + n for n in NAMES)
    assert [size for page in expected for *_, size, _ in page] != [None] * len(NAMES)


def test_what_botocore_parses_itself_is_read_the_same(
    s3_client: Any, listed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_listing, "parse_listing", lambda body: None)
    assert lights(s3_client, listed, 5) == botocores(s3_client, listed, 5)


def test_other_listings_through_the_same_client_are_botocores(s3_client: Any, listed: str) -> None:
    list(pages(s3_client, listed, PREFIX))  # registers the handler on this client
    answer = s3_client.list_objects_v2(Bucket=listed, Prefix=PREFIX, Delimiter="/")
    assert "FsrLightListing" not in answer
    assert sorted(i["Key"] for i in answer["Contents"]) == sorted(PREFIX + n for n in NAMES)


def test_the_store_reads_its_listings_the_light_way(
    s3_client: Any, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = S3Store(s3_bucket, "jobs/", s3_client)
    for name in NAMES[:3]:
        store.write_side(f"_watch/{name}", "{}")
    store.write(manifest("job", 1), None)
    parsed = parsed_pages(monkeypatch)
    assert sorted(store.read_side_docs("_watch")) == sorted(NAMES[:3])
    assert store.snapshot().names == ("job",)
    assert parsed == [3, 1]


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


@pytest.mark.parametrize(
    "body",
    [
        b"<ListBucketResult><Contents><Key>cut short",
        b"not XML at all",
        b"<Error><Code>InternalError</Code><Message>in a 200</Message></Error>",
    ],
)
@pytest.mark.parametrize("light", [True, False])
def test_a_malformed_answer_fails_the_listing_as_before(
    body: bytes,
    light: bool,
    s3_session: Any,
    s3_endpoint: str,
    s3_bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An answer that is not a listing is botocore's to judge (a 500, retried): with the light
    reading or without it, the same StoreError, and nothing listed."""
    from botocore.config import Config
    from botocore.retries.standard import ExponentialBackoff

    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0)
    if not light:
        monkeypatch.setattr(s3_listing, "parse_listing", lambda body: None)
    config = Config(retries={"mode": "standard", "total_max_attempts": 2})
    client = s3_session.client("s3", endpoint_url=s3_endpoint, config=config)
    sent: list[str] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        return AWSResponse(request.url, 200, {}, _Raw(body))

    client.meta.events.register("before-send.s3.ListObjectsV2", answer)
    with pytest.raises(StoreError) as raised:
        S3Store(s3_bucket, "jobs/", client).snapshot()
    assert str(raised.value) == (
        f"cannot list s3://{s3_bucket}/jobs/: InternalError (HTTP 500); gave up after 2 attempts"
        if body.startswith(b"<Error>")
        else f"cannot list s3://{s3_bucket}/jobs/: HTTP 500 without an S3 error code (or an "
        "answer cut short); gave up after 2 attempts"
    )
    assert len(sent) == 2


def test_a_listing_key_without_its_key_is_left_to_botocore() -> None:
    body = (
        b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<IsTruncated>false</IsTruncated><Contents><ETag>&quot;e&quot;</ETag></Contents>"
        b"</ListBucketResult>"
    )
    assert s3_listing.parse_listing(body) is None
    good = body.replace(b"<ETag>", b"<Key>a%20b+c</Key><ETag>").replace(
        b"<IsTruncated>", b"<EncodingType>url</EncodingType><IsTruncated>"
    )
    page = s3_listing.parse_listing(good)
    assert page is not None
    assert page.keys == [Listed("a b c", '"e"', None, None)]


def test_a_page_read_the_light_way_is_not_parsed_again_by_botocores_200_check(
    s3_client: Any, listed: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """botocore checks every 200 answer of S3 for an <Error> by parsing it whole; a page the
    light parse read leaves it the empty listing to check, and every other call of the client
    (another listing, a GET) is checked on its own answer as before."""
    from botocore import handlers

    checked: list[int] = []
    real = handlers._looks_like_special_case_error

    def counted(status_code: int, body: bytes) -> bool:
        checked.append(len(body or b""))
        return bool(real(status_code, body))

    monkeypatch.setattr(handlers, "_looks_like_special_case_error", counted)
    assert len([key for page in pages(s3_client, listed, PREFIX) for key in page.keys]) == 8
    assert checked == [len(s3_listing._EMPTY)]
    checked.clear()
    s3_client.list_objects_v2(Bucket=listed, Prefix=PREFIX, Delimiter="/")
    assert len(checked) == 1 and checked[0] > 1000  # botocore's listing: its own answer
