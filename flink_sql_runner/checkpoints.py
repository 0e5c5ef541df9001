"""Checkpoint inspection without Spark, and small file primitives on the same storage.

Locations are local folders (plain paths or `file:` URIs) or `s3://` / `s3a://` URIs. The layout
Spark writes: `metadata` (JSON with an "id"), `offsets/N`, `commits/N`; only numeric names count,
dot-files (`.0.crc`) and temporaries (`.1.tmp`) are ignored. S3 calls take an optional boto3
client; without one a client is made per call from the standard AWS settings.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import FsrError
from flink_sql_runner.files import replace_file
from flink_sql_runner.s3uri import is_s3_uri, parse_s3_uri

MAX_METADATA_BYTES = 1024 * 1024
_NUMERIC = re.compile(r"[0-9]+")
_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_CONTENT_TYPES = {".json": "application/json", ".yaml": "text/yaml", ".yml": "text/yaml"}


class StorageError(FsrError):
    """Checkpoint storage (a local folder or S3) could not be read or written."""


@dataclass(frozen=True)
class CheckpointInfo:
    """What a checkpoint folder holds, as far as the deployer needs to know."""

    location: str
    exists: bool  # the folder holds any object at all, junk included
    valid: bool  # `metadata` has an "id" and `offsets/` holds a numeric file
    last_committed: int | None  # largest numeric name in commits/
    last_offset: int | None  # largest numeric name in offsets/

    @property
    def pending(self) -> bool:
        """A planned batch without its commit: re-run with the same offsets on restart."""
        if self.last_offset is None:
            return False
        return self.last_committed is None or self.last_offset > self.last_committed


# -- public API -----------------------------------------------------------------------------------


def inspect_checkpoint(location: str, s3_client: Any = None) -> CheckpointInfo:
    folder = _folder(location, s3_client)
    offset_names = folder.file_names("offsets")
    commit_names = folder.file_names("commits")
    metadata = folder.read_bytes("metadata")
    exists = bool(metadata is not None or offset_names or commit_names) or folder.any_object()
    if not exists:
        return CheckpointInfo(location, False, False, None, None)
    offsets = _numbers(offset_names)
    commits = _numbers(commit_names)
    valid = _metadata_has_id(metadata) and bool(offsets)
    return CheckpointInfo(
        location, True, valid, max(commits, default=None), max(offsets, default=None)
    )


def is_empty_location(location: str, s3_client: Any = None) -> bool:
    """True when nothing (not even junk) is stored under `location`."""
    return not _folder(location, s3_client).any_object()


def highest_version(job_location: str, s3_client: Any = None) -> int:
    """The largest numeric sub-folder of `<root>/<name>`, 0 when there is none."""
    return max(_numbers(_folder(job_location, s3_client).dir_names()), default=0)


def read_text(uri: str, s3_client: Any = None) -> str | None:
    """The file's text, or None when it does not exist."""
    if is_s3_uri(uri):
        data = _S3Folder(uri, s3_client).read_bytes("")
    else:
        data = _read_local(local_path(uri))
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise StorageError(f"{uri}: not UTF-8 text") from None


def write_text(uri: str, text: str, s3_client: Any = None, *, mode: int = 0o644) -> None:
    """Replace the file atomically (local: temporary file + rename; S3: one PutObject).

    `mode` applies to local files from the first byte written (e.g. 0o600 for private files).
    """
    if is_s3_uri(uri):
        _S3Folder(uri, s3_client).put("", text.encode("utf-8"), _content_type(uri))
    else:
        _write_local(local_path(uri), text, mode)


def delete(uri: str, s3_client: Any = None) -> None:
    """Remove the file; a missing file is fine."""
    if is_s3_uri(uri):
        _S3Folder(uri, s3_client).delete("")
        return
    path = local_path(uri)
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise StorageError(f"cannot delete {path}: {exc.strerror}") from None


def local_path(uri: str) -> Path:
    """A plain path, or `file:/p`, `file:///p`, `file://localhost/p` -> Path("/p")."""
    if uri.startswith("file:"):
        rest = uri[len("file:") :]
        if rest.startswith("//"):
            host, _, path = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise StorageError(f"{uri}: file URIs on another host ({host}) are not readable")
            return Path("/" + path)
        return Path(rest)
    if _URI_SCHEME.match(uri):
        raise StorageError(
            f"{uri}: unsupported storage; use a local folder, a file: URI, s3:// or s3a://"
        )
    return Path(uri)


# -- helpers --------------------------------------------------------------------------------------


def _numbers(names: list[str]) -> list[int]:
    return [int(n) for n in names if _NUMERIC.fullmatch(n)]


def _metadata_has_id(data: bytes | None) -> bool:
    if data is None or len(data) > MAX_METADATA_BYTES:
        return False
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(doc, dict) and "id" in doc


def _content_type(uri: str) -> str:
    return _CONTENT_TYPES.get(Path(uri).suffix, "text/plain") + "; charset=utf-8"


class _Folder(Protocol):
    def any_object(self) -> bool: ...

    def file_names(self, sub: str) -> list[str]: ...

    def dir_names(self) -> list[str]: ...

    def read_bytes(self, sub: str) -> bytes | None: ...


def _folder(location: str, s3_client: Any) -> _Folder:
    if is_s3_uri(location):
        return _S3Folder(location, s3_client)
    return _LocalFolder(local_path(location))


class _LocalFolder:
    def __init__(self, path: Path):
        self.path = path

    def any_object(self) -> bool:
        if not self.path.is_dir():
            return self.path.exists() or self.path.is_symlink()

        def fail(exc: OSError) -> None:
            raise StorageError(f"cannot list {exc.filename}: {exc.strerror}")

        return any(files for _, _, files in os.walk(self.path, onerror=fail))

    def _entries(self, folder: Path) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(folder) as entries:
                yield from entries
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise StorageError(f"cannot list {folder}: {exc.strerror}") from None

    def file_names(self, sub: str) -> list[str]:
        return [e.name for e in self._entries(self.path / sub) if not e.is_dir()]

    def dir_names(self) -> list[str]:
        return [e.name for e in self._entries(self.path) if e.is_dir()]

    def read_bytes(self, sub: str) -> bytes | None:
        path = self.path / sub
        if path.is_dir():
            return None
        return _read_local(path)


def _read_local(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror}") from None


def _write_local(path: Path, text: str, mode: int) -> None:
    try:
        replace_file(path, text, mode)
    except OSError as exc:
        raise StorageError(f"cannot write {path}: {exc.strerror}") from None


class _S3Folder:
    """A folder (or, with sub="", a single object) at an s3:// or s3a:// URI."""

    def __init__(self, uri: str, client: Any):
        from flink_sql_runner.stores.s3 import make_s3_client

        self.bucket, self.key = parse_s3_uri(uri)
        self.client = client if client is not None else make_s3_client()

    def _prefix(self, sub: str = "") -> str:
        path = "/".join(p for p in (self.key.rstrip("/"), sub) if p)
        return f"{path}/" if path else ""

    def _object_key(self, sub: str) -> str:
        return "/".join(p for p in (self.key.rstrip("/"), sub) if p) if sub else self.key

    def _errors(self, key: str, action: str) -> Any:
        from flink_sql_runner.stores.s3 import translated_errors

        return translated_errors(self.bucket, key, action, StorageError)

    def _pages(self, prefix: str, delimiter: str | None) -> Iterator[dict[str, Any]]:
        extra = {"Delimiter": delimiter} if delimiter else {}
        paginator = self.client.get_paginator("list_objects_v2")
        with self._errors(prefix, "list"):
            yield from paginator.paginate(Bucket=self.bucket, Prefix=prefix, **extra)

    def any_object(self) -> bool:
        # Keys ending in "/" are directory markers (e.g. made by Hadoop's S3A on mkdirs).
        return any(
            not item["Key"].endswith("/")
            for page in self._pages(self._prefix(), None)
            for item in page.get("Contents", [])
        )

    def file_names(self, sub: str) -> list[str]:
        prefix = self._prefix(sub)
        names = [
            item["Key"][len(prefix) :]
            for page in self._pages(prefix, "/")
            for item in page.get("Contents", [])
        ]
        return [n for n in names if n]

    def dir_names(self) -> list[str]:
        prefix = self._prefix()
        return [
            common["Prefix"][len(prefix) :].rstrip("/")
            for page in self._pages(prefix, "/")
            for common in page.get("CommonPrefixes", [])
        ]

    def read_bytes(self, sub: str) -> bytes | None:
        from flink_sql_runner.stores.s3 import get_bytes

        key = self._object_key(sub)
        with self._errors(key, "read"):
            return get_bytes(self.client, self.bucket, key)

    def put(self, sub: str, data: bytes, content_type: str) -> None:
        key = self._object_key(sub)
        with self._errors(key, "write"):
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)

    def delete(self, sub: str) -> None:
        key = self._object_key(sub)
        with self._errors(key, "delete"):
            self.client.delete_object(Bucket=self.bucket, Key=key)
