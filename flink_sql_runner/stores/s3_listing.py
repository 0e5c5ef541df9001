"""Listing an S3 prefix (ListObjectsV2), every page, at a small cost per key.

botocore turns a listing's XML into a dict per key through its shape parser, which costs about
0.1 ms a key, most of it parsing each LastModified into a datetime (dateutil): at 10,000 jobs,
two listings of a `watch` look were two seconds of CPU. Here botocore still signs, sends,
retries and turns errors into exceptions exactly as for any call of the client; only a
successful (HTTP 200) answer's body is read by ElementTree's C parser instead, into one tuple
per key (`Listed`: the key, the ETag, the size and LastModified as text), and botocore is
handed an empty listing to parse. That happens in a `before-parse` handler, and only for the
calls made here (a context variable set around them): any other listing through the same
client is parsed by botocore as always. The handler takes the place of botocore's own first
`before-parse` handler of S3, its check of every 200 answer for an `<Error>` (which parses the
whole body: as much again as the light parse), and calls it after the light parse, on the empty
listing left, or on the answer itself when the light parse did not read it. An answer the
light parse cannot read (not XML, not a listing such as an `<Error>` in a 200, a key without
its `Key`) is left to botocore, which parses it or says what is wrong as before (an answer that
is not XML or an error is made a 500, and so retried, by botocore's check).

Keys come back as botocore gives them: URL-decoded when the answer says `EncodingType` `url`
(which botocore asks for on every listing that does not choose an encoding).
"""

from __future__ import annotations

import email.utils
import xml.etree.ElementTree as ETree
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any, NamedTuple
from urllib.parse import unquote_plus

from botocore.exceptions import PaginationError
from botocore.utils import parse_timestamp

try:  # botocore's check of a 200 answer for an <Error> body (it parses the whole body)
    from botocore.handlers import _handle_200_error as _botocore_200_check
except ImportError:  # pragma: no cover - a botocore without it
    _botocore_200_check = None


class Listed(NamedTuple):
    """One key of a listing. `modified` is S3's LastModified: its text as listed (ISO 8601),
    or a datetime where botocore parsed the answer; None when the answer had none."""

    key: str
    etag: str
    size: int | None
    modified: str | datetime | None


class Page(NamedTuple):
    """One page of a listing: its keys, and the answer's `Date` header (S3's clock)."""

    keys: list[Listed]
    date: str | None


class _Light(NamedTuple):
    keys: list[Listed]
    truncated: bool
    next_token: str | None


#: Set (in the calling thread's context) only around the calls `pages` makes.
_LIGHT: ContextVar[bool] = ContextVar("fsr_light_listing", default=False)
#: Where the light parse leaves its page in the answer botocore returns.
_RESULT = "FsrLightListing"
_HANDLER_ID = "flink-sql-runner-light-listing"
_EVENT = "before-parse.s3.ListObjectsV2"
_ALL_EVENT = "before-parse.s3.*"
_FIRST_ID = "flink-sql-runner-light-listing-first"
_EMPTY = b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"></ListBucketResult>'


def pages(
    client: Any, bucket: str, prefix: str, delimiter: str | None = "/", max_keys: int | None = None
) -> Iterator[Page]:
    """Every page of the listing of `prefix` (keys directly under it with the delimiter "/";
    every key under it, at any depth, with None),
    as botocore's paginator would fetch them (up to `max_keys` keys a page, S3's default 1,000;
    each next page asked with the token the last one gave; the same token twice is botocore's
    `PaginationError`). Errors are botocore's, as from any call of the client."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is not None and _botocore_200_check is not None:
        # In botocore's check's place, first: the light parse, then the check itself (of the
        # empty listing left, when the light parse read the answer; else of the answer). Ours
        # in before botocore's is out: another thread's call is never left unchecked meanwhile.
        events.register_first(_ALL_EVENT, _light_then_check, unique_id=_FIRST_ID)
        events.unregister(_ALL_EVENT, _botocore_200_check)
    elif events is not None:
        events.register(_EVENT, _light_parse, unique_id=_HANDLER_ID)
    params: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    if delimiter:
        params["Delimiter"] = delimiter
    if max_keys is not None:
        params["MaxKeys"] = max_keys
    previous: str | None = None
    while True:
        light = _LIGHT.set(True)
        try:
            answer = client.list_objects_v2(**params)
        finally:
            _LIGHT.reset(light)
        page = answer.pop(_RESULT, None)
        if page is None:  # parsed by botocore (an answer the light parse left, or a fake)
            page = _from_parsed(answer)
        date = answer.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
        yield Page(page.keys, date)
        token = page.next_token if page.truncated else None
        if not token:
            return
        if token == previous:
            raise PaginationError(message=f"The same next token was received twice: {token}")
        previous = params["ContinuationToken"] = token


def _from_parsed(answer: dict[str, Any]) -> _Light:
    keys = [
        Listed(item["Key"], str(item.get("ETag", "")), item.get("Size"), item.get("LastModified"))
        for item in answer.get("Contents", [])
    ]
    return _Light(keys, bool(answer.get("IsTruncated")), answer.get("NextContinuationToken"))


def _light_then_check(
    response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **kwargs: Any
) -> None:
    """botocore's `before-parse` of every S3 call, in place of its `_handle_200_error`: a
    successful answer of a listing `pages` makes is read first, then botocore's check runs as
    before on what is left (so a page is parsed once, not twice)."""
    operation = kwargs.get("operation_model")
    if getattr(operation, "name", None) == "ListObjectsV2":
        _light_parse(response_dict, customized_response_dict)
    assert _botocore_200_check is not None
    _botocore_200_check(
        response_dict=response_dict, customized_response_dict=customized_response_dict, **kwargs
    )


def _light_parse(
    response_dict: dict[str, Any], customized_response_dict: dict[str, Any], **_: Any
) -> None:
    """botocore's `before-parse` event of ListObjectsV2: read a successful answer of a call
    made by `pages`, and give botocore an empty listing to parse instead."""
    if not _LIGHT.get() or response_dict.get("status_code") != 200:
        return
    if _RESULT in customized_response_dict:
        return  # read already (the handler registered twice)
    page = parse_listing(response_dict.get("body") or b"")
    if page is not None:
        customized_response_dict[_RESULT] = page
        response_dict["body"] = _EMPTY


def parse_listing(body: bytes) -> _Light | None:
    """A ListObjectsV2 answer's body as botocore reads it (a missing ETag ""), or None when it
    is not XML, a key lacks its `Key` or has a size that is not a number, or its keys are in
    another XML namespace than the answer (botocore reads any; S3 and the S3-compatible stores
    write one)."""
    try:
        parser = ETree.XMLParser(target=ETree.TreeBuilder(), encoding="utf-8")
        parser.feed(body)
        root = parser.close()
    except ETree.ParseError:
        return None
    tag = root.tag
    ns = tag[: tag.index("}") + 1] if tag[:1] == "{" else ""
    if tag[len(ns) :] != "ListBucketResult":
        return None  # an <Error> in a 200, or no listing: botocore's to judge
    contents, key_tag, etag_tag = ns + "Contents", ns + "Key", ns + "ETag"
    size_tag, modified_tag = ns + "Size", ns + "LastModified"
    top: dict[str, str] = {}
    for child in root:
        tag = child.tag
        if tag != contents:
            top[tag[tag.index("}") + 1 :] if tag[:1] == "{" else tag] = child.text or ""
    if "Contents" in top:
        return None
    decode = top.get("EncodingType") == "url"
    keys: list[Listed] = []
    for item in root.findall(contents):
        key, size = item.findtext(key_tag), item.findtext(size_tag)
        if key is None or (size and not (size.isascii() and size.isdigit())):
            return None
        if decode and ("%" in key or "+" in key):
            key = unquote_plus(key)
        etag = item.findtext(etag_tag) or ""
        keys.append(Listed(key, etag, int(size) if size else None, item.findtext(modified_tag)))
    return _Light(keys, top.get("IsTruncated") == "true", top.get("NextContinuationToken"))


def clock_of(date: str | None) -> datetime | None:
    """An answer's `Date` header as a datetime; None when missing or not a date."""
    if not date:
        return None
    try:
        return email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return None


def modified_at(modified: str | datetime | None) -> datetime | None:
    """A listed LastModified as a datetime (ISO 8601 text read without dateutil where it can)."""
    if modified is None or isinstance(modified, datetime):
        return modified
    text = modified[:-1] + "+00:00" if modified.endswith("Z") else modified
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        try:
            return parse_timestamp(modified)
        except (ValueError, TypeError):
            return None
    return found if found.tzinfo is not None else found.replace(tzinfo=timezone.utc)


def age(now: datetime | None, modified: str | datetime | None) -> float:
    """Seconds from `modified` to `now` (S3's clock), 0 when either is unknown, as `age_of`."""
    at = modified_at(modified)
    if now is None or at is None:
        return 0.0
    return max(0.0, (now - at).total_seconds())
