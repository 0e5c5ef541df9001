"""Files on the storage that checkpoints live on: local folders (plain paths or `file:` URIs),
`s3://` / `s3a://` URIs and `hdfs://` URIs (through WebHDFS, `stores/webhdfs.py`), behind one
small interface.

A path without a scheme is where Spark puts it, on Hadoop's default file system: the driver
(and the runner, `runner/storage.py`) finds it there, so the deployer looks for it there too.
That is the local disk unless the Hadoop configuration the deployer and spark-submit read
(HADOOP_CONF_DIR / YARN_CONF_DIR, whose files spark-submit gives the driver on YARN) names
another `fs.defaultFS`: with `hdfs://nn:8020` there, `/checkpoints` is `hdfs://nn:8020/checkpoints`.

The deployer reads and writes the runner's control files here (runtime manifest, stop marker,
status file, submission records) and reads checkpoints through it
(`gather/checkpoint_reader.py`).
Tests use the in-memory fake of the same interface (`tests/support/fakes.py`).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from flink_sql_runner.errors import FsrError
from flink_sql_runner.host.atomic import replace_file
from flink_sql_runner.stores import hadoop_conf
from flink_sql_runner.stores.s3uri import is_s3_uri, parse_s3_uri
from flink_sql_runner.stores.webhdfs import is_hdfs_uri

_URI_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_CONTENT_TYPES = {
    ".json": "application/json",
    ".yaml": "text/yaml",
    ".yml": "text/yaml",
    ".zip": "application/zip",
}


#: Objects one S3 DeleteObjects request removes (S3's limit).
DELETE_BATCH = 1000
#: Keys one S3 ListObjectsV2 request asks for (S3's most).
LIST_PAGE = 1000


class StorageError(FsrError):
    """A local folder, S3 or HDFS could not be read or written: nothing is known of the file."""


class IsAFolder(StorageError):
    """A folder stands where a file was expected."""


@dataclass(frozen=True)
class Listed:
    """One file a listing found: where, a token of its content (S3's ETag; elsewhere its size
    and modification time, which a rewrite of the same bytes moves too) and a token of its last
    write (S3's LastModified, a file's mtime, HDFS's modificationTime), which every write moves.
    Tokens are compared with the same file's earlier tokens only, never with a clock."""

    location: str
    content: str
    modified: str


class Storage(Protocol):
    """Small file operations on one location scheme or several."""

    def read_bytes(self, location: str) -> bytes | None:
        """The file's bytes, or None when there is no such file."""
        ...

    def read_text(self, location: str) -> str | None: ...

    def read_tail(self, location: str, size: int) -> bytes | None:
        """The file's last `size` bytes (all of it when it is shorter); None when there is no
        such file. StorageError for what is no regular file, and on HDFS, where no part of a
        file is read here."""
        ...

    def write_text(self, location: str, text: str, *, private: bool = False) -> None:
        """Replace the file atomically; `private` files are readable by their owner only."""
        ...

    def write_bytes(self, location: str, data: bytes) -> None:
        """Replace the file atomically."""
        ...

    def delete(self, location: str) -> None:
        """Remove the file; a missing file is fine."""
        ...

    def is_empty(self, location: str) -> bool:
        """True when nothing (not even junk) is stored under the folder `location`."""
        ...

    def file_names(self, folder: str) -> list[str]:
        """Names of the files directly in `folder`; [] when it does not exist."""
        ...

    def dir_names(self, folder: str) -> list[str]:
        """Names of the folders directly in `folder`; [] when it does not exist."""
        ...

    def tree(self, folder: str) -> list[tuple[str, int]]:
        """Every file under `folder`, at any depth, with its size in bytes, sorted by location;
        [] when it does not exist."""
        ...

    def delete_tree(self, folder: str) -> None:
        """Remove `folder` and everything under it; a missing folder is fine. Files go one by
        one (or in batches): a failure leaves part of it, and a second call removes the rest."""
        ...

    def listing(self, folder: str) -> list[Listed]:
        """Every file under `folder`, at any depth, with its tokens, sorted by location: one
        paginated listing on S3 (1,000 keys a request), one LISTSTATUS a folder on HDFS; []
        when the folder does not exist. A failure raises StorageError: never a part."""
        ...


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
            f"{uri}: unsupported storage; use a local folder, a file: URI, s3://, s3a:// or hdfs://"
        )
    return Path(uri)


class FileStorage:
    """The real storage: local files directly, S3 through one lazily made boto3 client, HDFS
    through WebHDFS (one client per NameNode, made when first used)."""

    def __init__(
        self, s3_client: Any = None, env: dict[str, str] | None = None, hdfs_timeout: float = 30.0
    ) -> None:
        self._client = s3_client
        self._env = env
        self._hdfs_timeout = hdfs_timeout
        self._hdfs: dict[str, Any] = {}
        self._default_fs: str | None = None

    def located(self, location: str) -> str:
        """`location` as Spark finds it: a path without a scheme on Hadoop's default file
        system (see the module's doc); any other location as it is."""
        if location.startswith("file:") or _URI_SCHEME.match(location):
            return location
        if self._default_fs is None:
            self._default_fs = hadoop_conf.default_fs(self._env)
        default = self._default_fs
        if default.startswith("file:"):
            return location
        if is_hdfs_uri(default):
            authority = default[len("hdfs://") :].split("/", 1)[0]
            if not location.startswith("/"):  # Hadoop's working folder: the user's home
                location = f"/user/{hadoop_conf.hadoop_user(self._env)}/{location}"
            return f"hdfs://{authority}{location}"
        raise StorageError(
            f"{location}: a path without a scheme is on Hadoop's default file system, which "
            f"HADOOP_CONF_DIR names {default}; the deployer reads only local folders, s3:// "
            f"and hdfs://: write the location in full (s3a://..., hdfs://..., file:/...)"
        )

    def _webhdfs(self, location: str) -> _Hdfs:
        from flink_sql_runner.stores.webhdfs import WebHdfs

        authority = location[len("hdfs://") :].split("/", 1)[0]
        if authority not in self._hdfs:
            try:
                self._hdfs[authority] = WebHdfs.for_uri(location, self._env, self._hdfs_timeout)
            except ValueError as exc:
                raise StorageError(str(exc)) from None
        return _Hdfs(location, self._hdfs[authority])

    def _s3(self, location: str) -> _S3:
        if self._client is None:
            from flink_sql_runner.stores.s3_client import make_s3_client

            self._client = make_s3_client()
        return _S3(location, self._client)

    def read_bytes(self, location: str) -> bytes | None:
        location = self.located(location)
        if is_s3_uri(location):
            return self._s3(location).read_bytes()
        if is_hdfs_uri(location):
            return self._webhdfs(location).read_bytes()
        path = _local_text(location)
        try:
            with open(path, "rb") as file:
                return file.read()
        except IsADirectoryError:
            raise IsAFolder(f"cannot read {Path(path)}: it is a folder") from None
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {Path(path)}: {exc.strerror}") from None

    def read_tail(self, location: str, size: int) -> bytes | None:
        location = self.located(location)
        if size <= 0:
            return b"" if self.read_tail(location, 1) is not None else None
        if is_s3_uri(location):
            return self._s3(location).read_tail(size)
        if is_hdfs_uri(location):
            raise StorageError(f"cannot read a part of {location}: not on HDFS, here")
        path = _local_text(location)
        try:
            # Not blocking: a FIFO planted where a file was is refused, not waited on.
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageError(f"cannot read {Path(path)}: {exc.strerror}") from None
        with os.fdopen(descriptor, "rb") as file:
            found = os.fstat(descriptor)
            if stat.S_ISDIR(found.st_mode):
                raise IsAFolder(f"cannot read {Path(path)}: it is a folder")
            if not stat.S_ISREG(found.st_mode):
                raise StorageError(f"cannot read {Path(path)}: not a regular file")
            try:
                file.seek(max(0, found.st_size - size))
                return file.read(size)
            except OSError as exc:
                raise StorageError(f"cannot read {Path(path)}: {exc.strerror}") from None

    def read_text(self, location: str) -> str | None:
        data = self.read_bytes(location)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise StorageError(f"{location}: not UTF-8 text") from None

    def write_text(self, location: str, text: str, *, private: bool = False) -> None:
        self._write(location, text.encode("utf-8"), 0o600 if private else 0o644)

    def write_bytes(self, location: str, data: bytes) -> None:
        self._write(location, data, 0o644)

    def _write(self, location: str, data: bytes, mode: int) -> None:
        location = self.located(location)
        if is_s3_uri(location):
            self._s3(location).put(data, _content_type(location))
            return
        if is_hdfs_uri(location):
            self._webhdfs(location).put(data, mode)
            return
        path = local_path(location)
        try:
            replace_file(path, data, mode)
        except OSError as exc:
            raise StorageError(f"cannot write {path}: {exc.strerror}") from None

    def delete(self, location: str) -> None:
        location = self.located(location)
        if is_s3_uri(location):
            self._s3(location).delete()
            return
        if is_hdfs_uri(location):
            self._webhdfs(location).delete(recursive=False)
            return
        path = local_path(location)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"cannot delete {path}: {exc.strerror}") from None

    def is_empty(self, location: str) -> bool:
        location = self.located(location)
        if is_s3_uri(location):
            return not self._s3(location).any_object()
        if is_hdfs_uri(location):
            return self._webhdfs(location).file_count() == 0
        path = local_path(location)
        if not path.is_dir():
            return not (path.exists() or path.is_symlink())

        def fail(exc: OSError) -> None:
            raise StorageError(f"cannot list {exc.filename}: {exc.strerror}")

        return not any(files for _, _, files in os.walk(path, onerror=fail))

    def file_names(self, folder: str) -> list[str]:
        folder = self.located(folder)
        if is_s3_uri(folder):
            return self._s3(folder).names(files=True)
        if is_hdfs_uri(folder):
            return self._webhdfs(folder).names(files=True)
        return [e.name for e in _entries(_local_text(folder)) if not e.is_dir()]

    def dir_names(self, folder: str) -> list[str]:
        folder = self.located(folder)
        if is_s3_uri(folder):
            return self._s3(folder).names(files=False)
        if is_hdfs_uri(folder):
            return self._webhdfs(folder).names(files=False)
        return [e.name for e in _entries(_local_text(folder)) if e.is_dir()]

    def tree(self, folder: str) -> list[tuple[str, int]]:
        where = self.located(folder)
        if is_s3_uri(where):
            return self._s3(where).tree(where)
        if is_hdfs_uri(where):
            return self._webhdfs(where).tree(folder)  # named as the caller names the folder
        # A symbolic link is refused, not followed: a checkpoint holds only what Spark wrote,
        # and a link planted in one would have a copy of it read whatever it points at.
        found = list(_walk_local(folder, links=True))
        for location, info in found:
            if stat.S_ISLNK(info.st_mode):
                raise StorageError(f"{location} is a symbolic link: not read through")
        return sorted((location, info.st_size) for location, info in found)

    def listing(self, folder: str) -> list[Listed]:
        where = self.located(folder)
        if is_s3_uri(where):
            return self._s3(where).listing(where)
        if is_hdfs_uri(where):
            return self._webhdfs(where).listing(folder)  # named as the caller names the folder
        found = []
        for location, info in _walk_local(folder):
            mtime = str(info.st_mtime_ns)
            found.append(Listed(location, f"{info.st_size}:{mtime}", mtime))
        return sorted(found, key=lambda listed: listed.location)

    def delete_tree(self, folder: str) -> None:
        folder = self.located(folder)
        if is_s3_uri(folder):
            self._s3(folder).delete_tree()
            return
        if is_hdfs_uri(folder):
            self._webhdfs(folder).delete(recursive=True)
            return
        root = local_path(folder)
        if root.is_symlink() or root.is_file():
            self.delete(folder)
            return

        def fail(exc: OSError) -> None:
            if not isinstance(exc, FileNotFoundError):
                raise StorageError(f"cannot list {exc.filename}: {exc.strerror}")

        # Deepest first: files, then the folders they leave empty.
        for where, folders, files in os.walk(root, topdown=False, onerror=fail):
            for name in files:
                self.delete(str(Path(where) / name))
            for name in folders:
                _remove_folder(Path(where) / name)
        _remove_folder(root)


def _local_text(uri: str) -> str:
    """`local_path(uri)` as text, without building a Path where `uri` is a plain path: the
    listings and reads of thousands of checkpoints take this way."""
    if uri.startswith("file:") or _URI_SCHEME.match(uri):
        return str(local_path(uri))
    return uri or "."


def _walk_local(folder: str, links: bool = False) -> Iterator[tuple[str, os.stat_result]]:
    """Every file under a local folder, named as the caller names the folder (a plain path or
    a file: URI), with its stat (`lstat`: a link's own): a file gone since its folder was read
    is left out, and a folder that does not exist holds nothing. `links`: a link to a folder is
    given too, never followed."""
    root = local_path(folder)

    def fail(exc: OSError) -> None:
        if not isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            raise StorageError(f"cannot list {exc.filename}: {exc.strerror}")

    for where, folders, files in os.walk(root, onerror=fail):
        if links:
            files = [*files, *(f for f in folders if (Path(where) / f).is_symlink())]
        for name in files:
            path = Path(where) / name
            try:
                info = path.lstat()
            except FileNotFoundError:
                continue  # gone since the folder was read
            except OSError as exc:
                raise StorageError(f"cannot read {path}: {exc.strerror}") from None
            yield f"{folder.rstrip('/')}/{path.relative_to(root).as_posix()}", info


def _entries(folder: Path | str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise StorageError(f"cannot list {Path(folder)}: {exc.strerror}") from None


def _remove_folder(path: Path) -> None:
    """An empty folder (or a link to one) removed; a missing one is fine."""
    try:
        if path.is_symlink():
            path.unlink()
        else:
            path.rmdir()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StorageError(f"cannot delete {path}: {exc.strerror}") from None


def _content_type(uri: str) -> str:
    return _CONTENT_TYPES.get(Path(uri).suffix, "text/plain") + "; charset=utf-8"


class _S3:
    """One object, or one folder, at an s3:// or s3a:// URI."""

    def __init__(self, uri: str, client: Any):
        self.bucket, self.key = parse_s3_uri(uri)
        self.client = client

    def _errors(self, key: str, action: str) -> Any:
        from flink_sql_runner.stores.s3_client import translated_errors

        return translated_errors(self.bucket, key, action, StorageError)

    def _prefix(self) -> str:
        key = self.key.rstrip("/")
        return f"{key}/" if key else ""

    def _pages(self, prefix: str, delimiter: str | None) -> Iterator[dict[str, Any]]:
        extra = {"Delimiter": delimiter} if delimiter else {}
        paginator = self.client.get_paginator("list_objects_v2")
        with self._errors(prefix, "list"):
            yield from paginator.paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": LIST_PAGE}, **extra
            )

    def any_object(self) -> bool:
        # Keys ending in "/" are directory markers (e.g. made by Hadoop's S3A on mkdirs).
        return any(
            not item["Key"].endswith("/")
            for page in self._pages(self._prefix(), None)
            for item in page.get("Contents", [])
        )

    def names(self, files: bool) -> list[str]:
        prefix = self._prefix()
        found = []
        for page in self._pages(prefix, "/"):
            if files:
                found += [item["Key"][len(prefix) :] for item in page.get("Contents", [])]
            else:
                found += [
                    c["Prefix"][len(prefix) :].rstrip("/") for c in page.get("CommonPrefixes", [])
                ]
        return [name for name in found if name]

    def read_bytes(self) -> bytes | None:
        from flink_sql_runner.stores.s3_client import get_bytes

        with self._errors(self.key, "read"):
            return get_bytes(self.client, self.bucket, self.key)

    def read_tail(self, size: int) -> bytes | None:
        from flink_sql_runner.stores.s3_client import get_answer

        with self._errors(self.key, "read"):
            found = get_answer(self.client, self.bucket, self.key, Range=f"bytes=-{size}")
        return found[0] if found is not None else None

    def put(self, data: bytes, content_type: str) -> None:
        with self._errors(self.key, "write"):
            self.client.put_object(
                Bucket=self.bucket, Key=self.key, Body=data, ContentType=content_type
            )

    def delete(self) -> None:
        with self._errors(self.key, "delete"):
            self.client.delete_object(Bucket=self.bucket, Key=self.key)

    def _keys(self) -> Iterator[dict[str, Any]]:
        """Every object under the folder, at any depth (directory markers included)."""
        for page in self._pages(self._prefix(), None):
            yield from page.get("Contents", [])

    def tree(self, uri: str) -> list[tuple[str, int]]:
        scheme = uri.split("://", 1)[0]
        return sorted(
            (f"{scheme}://{self.bucket}/{item['Key']}", int(item.get("Size", 0)))
            for item in self._keys()
            if not item["Key"].endswith("/")
        )

    def listing(self, uri: str) -> list[Listed]:
        """Through `s3_listing.pages` (the answers' XML read at a small cost per key, not by
        botocore's shape parser: `watch` lists every beacon on each look), the same requests as
        botocore's paginator (`LIST_PAGE` keys each) and the same tokens."""
        from flink_sql_runner.stores.s3_listing import pages

        scheme = uri.split("://", 1)[0]
        prefix = self._prefix()
        found = []
        with self._errors(prefix, "list"):
            for page in pages(self.client, self.bucket, prefix, None, LIST_PAGE):
                for key, etag, _, modified in page.keys:
                    if not key.endswith("/"):
                        where = f"{scheme}://{self.bucket}/{key}"
                        found.append(Listed(where, etag, _modified(modified)))
        return sorted(found, key=lambda listed: listed.location)

    def delete_tree(self) -> None:
        """Every object under the folder, `DELETE_BATCH` to a request."""
        keys = [item["Key"] for item in self._keys()]
        for start in range(0, len(keys), DELETE_BATCH):
            batch = [{"Key": key} for key in keys[start : start + DELETE_BATCH]]
            with self._errors(self._prefix(), "delete"):
                answer = self.client.delete_objects(
                    Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True}
                )
            errors = answer.get("Errors") or []
            if errors:
                first = errors[0]
                raise StorageError(
                    f"cannot delete s3://{self.bucket}/{first.get('Key')}: "
                    f"{first.get('Code')} ({len(errors)} of {len(batch)} objects not deleted)"
                )


def _modified(when: Any) -> str:
    """S3's LastModified as a token: a datetime's ISO text, as botocore parses it (a listing's
    text is read so first; text that does not read as a time is the token as it is)."""
    if isinstance(when, str):
        from flink_sql_runner.stores.s3_listing import modified_at

        when = modified_at(when) or when
    return when.isoformat() if hasattr(when, "isoformat") else str(when)


class _Hdfs:
    """One file, or one folder, at an hdfs:// URI; every failure a StorageError."""

    def __init__(self, uri: str, client: Any):
        from flink_sql_runner.stores.webhdfs import hdfs_path

        self.uri = uri
        self.path = hdfs_path(uri)
        self.client = client

    def _call(self, action: str, do: Any) -> Any:
        from flink_sql_runner.stores.webhdfs import Unanswered

        try:
            return do()
        except Unanswered as exc:
            raise StorageError(
                f"cannot {action} {self.uri}: no answer from WebHDFS ({exc})"
            ) from None

    def _fail(self, action: str, answer: Any) -> StorageError:
        exception, message = answer.remote()
        said = f"{exception}: {message}" if exception else message
        hint = ""
        if answer.status in (401, 403) and exception != "StandbyException":
            hint = " (check HADOOP_USER_NAME and the folder's permissions)"
        return StorageError(f"cannot {action} {self.uri}: HTTP {answer.status}, {said}{hint}")

    def read_bytes(self) -> bytes | None:
        answer = self._call("read", lambda: self.client.read(self.path))
        if answer.status == 200:
            return answer.body
        exception, message = answer.remote()
        if answer.status == 404 and exception == "FileNotFoundException":
            if message.startswith("Path is not a file"):
                raise IsAFolder(f"cannot read {self.uri}: it is a folder")
            return None
        raise self._fail("read", answer)

    def put(self, data: bytes, mode: int) -> None:
        """Written to a temporary file beside it, then renamed over it: readers see the old
        bytes or the new ones, never a part."""
        temp = self.client.temp_name(self.path)
        permission = f"{mode:o}"
        answer = self._call("write", lambda: self.client.create(temp, data, permission))
        if answer.status not in (200, 201):
            raise self._fail("write", answer)
        answer = self._call(
            "write",
            lambda: self.client.call(
                "PUT", temp, "RENAME", destination=self.path, renameoptions="OVERWRITE"
            ),
        )
        if answer.status != 200:
            failure = self._fail("write", answer)
            try:
                self.client.call("DELETE", temp, "DELETE", recursive="false")
            except Exception:  # noqa: BLE001, S110 - the write failed anyway; a stray temp file stays
                pass
            raise failure

    def delete(self, recursive: bool) -> None:
        answer = self._call(
            "delete",
            lambda: self.client.call(
                "DELETE", self.path, "DELETE", recursive="true" if recursive else "false"
            ),
        )
        if answer.status != 200:  # a missing file answers 200 {"boolean": false}
            raise self._fail("delete", answer)

    def _list(self, path: str) -> list[dict[str, Any]] | None:
        """LISTSTATUS of a folder; None when it does not exist or is a file."""
        answer = self._call("list", lambda: self.client.call("GET", path, "LISTSTATUS"))
        if answer.status == 404:
            return None
        doc = answer.doc()
        if answer.status != 200 or not isinstance(doc, dict):
            raise self._fail("list", answer)
        entries = (doc.get("FileStatuses") or {}).get("FileStatus") or []
        if len(entries) == 1 and entries[0].get("pathSuffix") == "":
            return None  # the path is a file
        return [entry for entry in entries if entry.get("pathSuffix")]

    def names(self, files: bool) -> list[str]:
        return [
            str(entry["pathSuffix"])
            for entry in self._list(self.path) or []
            if (entry.get("type") == "DIRECTORY") != files
        ]

    def file_count(self) -> int:
        answer = self._call("list", lambda: self.client.call("GET", self.path, "GETCONTENTSUMMARY"))
        if answer.status == 404:
            return 0
        doc = answer.doc()
        summary = doc.get("ContentSummary") if isinstance(doc, dict) else None
        if answer.status != 200 or not isinstance(summary, dict):
            raise self._fail("list", answer)
        return int(summary.get("fileCount", 0))

    def tree(self, uri: str) -> list[tuple[str, int]]:
        found = []
        pending = [(self.path, uri.rstrip("/"))]
        while pending:
            path, named = pending.pop()
            for entry in self._list(path) or []:
                child = f"{path.rstrip('/')}/{entry['pathSuffix']}"
                child_named = f"{named}/{entry['pathSuffix']}"
                if entry.get("type") == "DIRECTORY":
                    pending.append((child, child_named))
                else:
                    found.append((child_named, int(entry.get("length", 0))))
        return sorted(found)

    def listing(self, uri: str) -> list[Listed]:
        found = []
        pending = [(self.path, uri.rstrip("/"))]
        while pending:
            path, named = pending.pop()
            for entry in self._list(path) or []:
                child = f"{path.rstrip('/')}/{entry['pathSuffix']}"
                child_named = f"{named}/{entry['pathSuffix']}"
                if entry.get("type") == "DIRECTORY":
                    pending.append((child, child_named))
                else:
                    modified = str(entry.get("modificationTime", ""))
                    content = f"{entry.get('length', 0)}:{modified}"
                    found.append(Listed(child_named, content, modified))
        return sorted(found, key=lambda listed: listed.location)
