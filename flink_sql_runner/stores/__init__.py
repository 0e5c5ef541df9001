"""Manifest stores: where deployed manifests live (S3 or a local folder)."""

from __future__ import annotations

from pathlib import Path

from flink_sql_runner.errors import FsrError
from flink_sql_runner.stores.base import ManifestStore
from flink_sql_runner.stores.local import LocalStore
from flink_sql_runner.stores.s3uri import is_s3_uri, parse_s3_uri


def open_store(uri: str | None, state_dir: Path) -> ManifestStore:
    """`s3://bucket/prefix/`, a local folder, or (None) `<state-dir>/manifests`."""
    if not uri:
        return LocalStore(state_dir / "manifests")
    if is_s3_uri(uri):
        from flink_sql_runner.stores.s3 import S3Store

        bucket, prefix = parse_s3_uri(uri)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        return S3Store(bucket, prefix)
    if "://" in uri:
        raise FsrError(f"--manifest-store {uri!r}: use s3://bucket/prefix/ or a local folder")
    return LocalStore(Path(uri))


def store_uri_from_legacy(bucket: str | None, prefix: str | None) -> str | None:
    """The original tool's --external-job-config-bucket/-prefix pair as an s3:// URI."""
    if not bucket:
        return None
    prefix = (prefix or "").strip("/")
    return f"s3://{bucket}/{prefix}/" if prefix else f"s3://{bucket}/"
