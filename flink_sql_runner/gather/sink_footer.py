"""What a file sink's readers read today, told by the plan itself where it can, so that a plan
of a changed job starts no Spark to read a sink.

The same walk as the runner's (runner/sink_walk.py's `history_of`: the sink's claims, Spark's
file-sink log, the newest file it committed), on the deployer's storage; the newest file's
schema is read from its footer's last bytes (runner/parquet_footer.py). Only where that answer
is Spark's own: a parquet file Spark wrote, directly in the sink's folder (a file in a partition
folder has columns its path gives). Anything else, and any failure, returns None: the probe
reads the sink with Spark, as before, and says what it finds.
"""

from __future__ import annotations

import posixpath
from typing import Any

from flink_sql_runner._runner.parquet_footer import MAX_FOOTER, footer_length, spark_read_fields
from flink_sql_runner._runner.schema_rules import Field
from flink_sql_runner._runner.sink_walk import NotReadHere, history_of
from flink_sql_runner.errors import FsrError
from flink_sql_runner.read.formats import FILE_FORMATS
from flink_sql_runner.stores.s3uri import is_s3_uri
from flink_sql_runner.stores.storage import Storage, local_path

#: The bytes read from a file's end first: a footer of a streaming batch's file fits (one row
#: group, a few dozen columns: a few KB); a longer one is read again at its length.
FIRST_READ = 64 * 1024


class _AsRunnerStorage:
    """The deployer's storage with the two calls the runner's walk makes."""

    def __init__(self, storage: Storage):
        self.storage = storage

    def names(self, location: str) -> list[str]:
        return self.storage.file_names(location) + self.storage.dir_names(location)

    def read(self, location: str) -> str | None:
        return self.storage.read_text(location)


def sink_history_here(storage: Storage, fmt: str | None, path: str) -> dict[str, Any] | None:
    """The runner's `sink_history` of a file sink whose format is given by its short name, or
    None: Spark must read it. A parquet file's schema is read from its footer; json, csv and
    text files keep none (their claims say it); orc and avro files are read by Spark."""
    if fmt not in FILE_FORMATS:
        return None
    try:
        return history_of(
            _AsRunnerStorage(storage), fmt, path, lambda at: _footer_fields(storage, fmt, at, path)
        )
    except NotReadHere:
        return None
    except (FsrError, OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # a sink the walk cannot read here: Spark's read says why


def _footer_fields(storage: Storage, fmt: str, location: str, base: str) -> list[Field]:
    if fmt != "parquet" or not _directly_in(location, base):
        raise NotReadHere(location)
    try:
        fields = _read_footer(storage, location)
    except FsrError:
        fields = None  # a failed read is Spark's to try, and to tell
    if fields is None:
        raise NotReadHere(location)
    return fields


def _read_footer(storage: Storage, location: str) -> list[Field] | None:
    tail = storage.read_tail(location, FIRST_READ)
    if tail is None:
        return None
    length = footer_length(tail)
    if length is not None and FIRST_READ < length + 8 <= MAX_FOOTER + 8 and len(tail) == FIRST_READ:
        tail = storage.read_tail(location, length + 8)
    return None if tail is None else spark_read_fields(tail)


def _directly_in(location: str, folder: str) -> bool:
    """Whether the file at `location` (as Spark's log writes it) is directly in `folder`."""
    if location == folder or folder.rstrip("/") == "":
        return False
    if is_s3_uri(location) and is_s3_uri(folder):
        return _s3_key_path(location) == _s3_key_path(folder.rstrip("/") + "/x")
    if is_s3_uri(location) or is_s3_uri(folder) or "://" in location.replace("file://", ""):
        return False
    try:
        file, home = local_path(location), local_path(folder)
    except FsrError:
        return False
    return posixpath.normpath(str(file.parent)) == posixpath.normpath(str(home))


def _s3_key_path(uri: str) -> str:
    """A file's folder on S3, the same for s3:// and s3a://."""
    rest = uri.split("://", 1)[1]
    return rest.rsplit("/", 1)[0]
