"""`s3://` and `s3a://` URIs: recognised and split here, used by stores and checkpoints alike
(without importing boto3)."""

from __future__ import annotations

from flink_sql_runner.errors import FsrError

S3_SCHEMES = ("s3://", "s3a://")


def is_s3_uri(uri: str) -> bool:
    return uri.startswith(S3_SCHEMES)


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """`s3://bucket/some/key` or `s3a://...` -> ("bucket", "some/key"); the key may be ""."""
    scheme = next((s for s in S3_SCHEMES if uri.startswith(s)), None)
    if scheme is None:
        raise FsrError(f"{uri!r} is not an S3 URI: use s3://bucket/key or s3a://bucket/key")
    bucket, _, key = uri[len(scheme) :].partition("/")
    if not bucket or any(c.isspace() for c in bucket):
        raise FsrError(f"{uri!r}: no valid bucket name after {scheme}")
    return bucket, key
